//! `multi-model`: several models resident at once, each in an arena of its
//! own or all in one (TFLM's multi-tenant allocation), run one after another
//! frame by frame; reports the set's arena and each model's part of it.

use core::fmt::Write;

use hilmem_protocol::{exit, Frame};

use super::{fail, fail_with_tflm_messages, report, report_figures, send, Rig, Text};
use crate::{config, tflm};

#[inline(never)]
pub fn run(mut rig: Rig, frames: u32) -> i32 {
    let residents = &config::RESIDENTS;
    if residents.is_empty() {
        return fail("command", 0, "multi-model needs an image built for a set of models");
    }
    arena::paint(rig.arena);
    // Each model's part of the arena: what it added when it was loaded (in
    // a shared arena, TFLM reports the allocator's total).
    let (mut used, mut total) = ([0u32; config::RESIDENT_COUNT], 0u32);
    let mut start = 0;
    for (slot, &(name, model, _, _, own)) in residents.iter().enumerate() {
        if let Err(e) = tflm::select(slot as u32) {
            return fail("load", e.code, e.what());
        }
        tflm::clear_messages();
        // SAFETY: the models are 'static; each arena slice (or the shared
        // arena) is used only by TFLM from here to the end of the run.
        let loaded = unsafe {
            match (config::SHARED_ARENA, slot) {
                (true, 0) => tflm::load(model, rig.arena),
                (true, _) => tflm::load_shared(model),
                (false, _) => {
                    start += own;
                    tflm::load(model, &mut rig.arena[start - own..start])
                }
            }
        };
        if let Err(e) = loaded {
            let mut stage = Text::<80>::new();
            let _ = write!(stage, "load `{name}`");
            return fail_with_tflm_messages(stage.as_str(), e);
        }
        let now = tflm::arena_used_bytes();
        (used[slot], total) = if config::SHARED_ARENA { (now - total, now) } else { (now, total + now) };
    }
    // Frame by frame, each model in turn on its first input.
    let mut answers = [(0u32, 0f32); config::RESIDENT_COUNT];
    for _ in 0..frames {
        for (slot, &(name, _, _, data, _)) in residents.iter().enumerate() {
            if let Err(e) = tflm::select(slot as u32) {
                return fail("input", e.code, e.what());
            }
            match rig.frame(name, data) {
                Ok(a) => answers[slot] = a,
                Err(status) => return status,
            }
        }
    }
    // The set's arena: the shared allocator's total, or the sum of the
    // separate ones.
    let figures =
        rig.figures().map(|(name, value)| (name, if name == "arena_used_bytes" { total.into() } else { value }));
    report_figures(&figures);
    report(&[("frames", i64::from(frames))]);
    for (slot, &(name, _, _, _, _)) in residents.iter().enumerate() {
        let mut metric = Text::<96>::new();
        let _ = write!(metric, "{name}_arena_used_bytes");
        send(Frame::Metric { name: metric.as_str(), value: used[slot].into() });
    }
    for (slot, &(name, _, _, _, _)) in residents.iter().enumerate() {
        let (class, value) = answers[slot];
        send(Frame::Output { input: name, class, value });
    }
    send(Frame::Done { ok: true });
    exit::OK
}
