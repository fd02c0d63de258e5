//! `multi-model`: several models resident at once, each in an arena of its
//! own or all in one (TFLM's multi-tenant allocation), run one after another
//! frame by frame; reports the set's arena and each model's part of it.
//!
//! A set may have one model infer from an interrupt (a keyword model every
//! N ms over a vision model): it then preempts the others' inferences. In a
//! shared arena every inference first takes the arena for its model, and
//! one that begins while another holds it ends the run naming both
//! (`selftest-shared-preemption` preempts in a shared arena on purpose).

use core::cell::RefCell;
use core::fmt::Write;

use arena::owner::{Overlap, Owner};
use critical_section::Mutex;
use hilmem_protocol::{exit, metric, Frame};

use super::{fail, fail_with_tflm_messages, least_arena, report, report_figures, send, Rig, Text};
use crate::platform::clock;
use crate::{config, tflm};

/// How often `selftest-shared-preemption` infers from an interrupt, with
/// the set's last model.
const SELFTEST_EVERY_US: u32 = 5_000;

/// The model that infers from the interrupt, and what it did.
struct Preempting {
    slot: usize,
    /// Its answer, once it has one.
    answer: Option<(u32, f32)>,
    inferences: u32,
    /// Its inferences that began while another model's ran.
    preemptions: u32,
    /// The model the thread is inferring with, if any.
    thread_inferring: Option<usize>,
    owner: Owner,
    overlap: Option<Overlap>,
    failure: Option<tflm::Error>,
}

static PREEMPTING: Mutex<RefCell<Option<Preempting>>> = Mutex::new(RefCell::new(None));

fn with<R>(f: impl FnOnce(&mut Preempting) -> R) -> R {
    critical_section::with(|cs| f(PREEMPTING.borrow_ref_mut(cs).as_mut().expect("preemption set up")))
}

/// The interrupt's inference: its model on its first input, in its slot,
/// the thread's slot selected again after.
fn infer_from_interrupt() {
    let slot = with(|p| {
        if p.overlap.is_some() || p.failure.is_some() {
            return None;
        }
        let shared = config::SHARED_ARENA.then(|| p.owner.take(p.slot));
        if let Some(Err(overlap)) = shared {
            p.overlap = Some(overlap);
            return None;
        }
        p.inferences += 1;
        p.preemptions += u32::from(p.thread_inferring.is_some());
        Some(p.slot)
    });
    let Some(slot) = slot else { return };
    let (_, _, _, data, _) = config::RESIDENTS[slot];
    let thread_slot = tflm::selected();
    let inferred = tflm::select(slot as u32).and_then(|()| tflm::answer_for(data));
    let _ = tflm::select(thread_slot);
    with(|p| {
        p.owner.give_back(slot);
        match inferred {
            Ok(answer) => p.answer = Some(answer),
            Err(e) => p.failure = Some(e),
        }
    });
}

/// The run's end, naming the two models an overlap in a shared arena set
/// at once.
fn overlapped(overlap: Overlap) -> i32 {
    clock::stop();
    let name = |slot: usize| config::RESIDENTS[slot].0;
    let mut detail = Text::<192>::new();
    let _ = write!(
        detail,
        "`{}` began an inference from an interrupt while `{}` was inferring in their shared arena",
        name(overlap.preempting),
        name(overlap.running)
    );
    fail("arena", 0, detail.as_str())
}

#[inline(never)]
pub fn run(mut rig: Rig, frames: u32, selftest_shared: bool) -> i32 {
    let residents = &config::RESIDENTS;
    if residents.is_empty() {
        return fail("command", 0, "multi-model needs an image built for a set of models");
    }
    let preempting = match selftest_shared {
        true if !config::SHARED_ARENA => return fail("command", 0, "the self-test needs a set in a shared arena"),
        true => Some((residents.len() - 1, SELFTEST_EVERY_US)),
        false => config::INTERRUPT_MODEL,
    };
    // In arenas of their own, each model's least arena, searched in its
    // own; then its interpreter is destroyed before the arena is painted.
    let mut least = [None; config::RESIDENT_COUNT];
    if !config::SHARED_ARENA {
        let mut start = 0;
        for (slot, &(name, model, _, data, own)) in residents.iter().enumerate() {
            if let Err(e) = tflm::select(slot as u32) {
                return fail("load", e.code, e.what());
            }
            least[slot] = match least_arena::search(&mut rig.arena[start..start + own], model, name, data) {
                Ok(least) => least,
                Err(status) => return status,
            };
            tflm::unload();
            start += own;
        }
        rig.stack.repaint();
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
    if let Some((slot, every_us)) = preempting {
        critical_section::with(|cs| {
            PREEMPTING.borrow_ref_mut(cs).replace(Preempting {
                slot,
                answer: None,
                inferences: 0,
                preemptions: 0,
                thread_inferring: None,
                owner: Owner::new(),
                overlap: None,
                failure: None,
            })
        });
        // The housekeeping has nothing to do here.
        if let Err(why) = clock::start((every_us, infer_from_interrupt), (every_us * 64, || {})) {
            return fail("interrupt", 0, why);
        }
    }
    // Frame by frame, each model in turn on its first input (the one that
    // infers from the interrupt does so there).
    let mut answers = [(0u32, 0f32); config::RESIDENT_COUNT];
    for _ in 0..frames {
        for (slot, &(name, _, _, data, _)) in residents.iter().enumerate() {
            if preempting.is_some_and(|(from_interrupt, _)| from_interrupt == slot) {
                continue;
            }
            if let Err(e) = tflm::select(slot as u32) {
                clock::stop();
                return fail("input", e.code, e.what());
            }
            if preempting.is_some() {
                let taken = with(|p| {
                    p.thread_inferring = Some(slot);
                    if config::SHARED_ARENA {
                        p.owner.take(slot)
                    } else {
                        Ok(())
                    }
                });
                if let Err(overlap) = taken {
                    return overlapped(overlap);
                }
            }
            let framed = rig.frame(name, data);
            if preempting.is_some() {
                let (overlap, failure) = with(|p| {
                    p.thread_inferring = None;
                    p.owner.give_back(slot);
                    (p.overlap, p.failure)
                });
                if let Some(overlap) = overlap {
                    return overlapped(overlap);
                }
                if let Some(e) = failure {
                    clock::stop();
                    return fail_with_tflm_messages("interrupt inference", e);
                }
            }
            match framed {
                Ok(a) => answers[slot] = a,
                Err(status) => {
                    clock::stop();
                    return status;
                }
            }
        }
    }
    let mut interrupt_figures = None;
    if let Some((slot, _)) = preempting {
        clock::stop();
        let (answer, inferences, preemptions) = with(|p| (p.answer, p.inferences, p.preemptions));
        let Some(answer) = answer else {
            return fail("interrupt", 0, "the model that infers from an interrupt never ran: give it more frames");
        };
        answers[slot] = answer;
        interrupt_figures = Some([
            (metric::INTERRUPT_INFERENCES, i64::from(inferences)),
            (metric::PREEMPTIONS, i64::from(preemptions)),
        ]);
    }
    // The set's arena: the shared allocator's total, or the sum of the
    // separate ones.
    let figures =
        rig.figures().map(|(name, value)| (name, if name == metric::ARENA_USED_BYTES { total.into() } else { value }));
    report_figures(&figures);
    report(&[(metric::FRAMES, i64::from(frames))]);
    if let Some(figures) = interrupt_figures {
        report(&figures);
    }
    // Each model's own figures, named after it.
    let of_resident = |name: &str, figure: &str, value: i64| {
        let mut named = Text::<96>::new();
        let _ = metric::write_of_resident(&mut named, name, figure);
        send(Frame::Metric { name: named.as_str(), value });
    };
    for (slot, &(name, _, _, _, _)) in residents.iter().enumerate() {
        of_resident(name, metric::ARENA_USED_BYTES, used[slot].into());
        if let Some(least) = least[slot] {
            of_resident(name, metric::LEAST_ARENA_BYTES, least.into());
        }
    }
    for (slot, &(name, _, _, _, _)) in residents.iter().enumerate() {
        let (class, value) = answers[slot];
        send(Frame::Output { input: name, class, value });
    }
    send(Frame::Done { ok: true });
    exit::OK
}
