//! `single-frame`: load the model, run one inference per configured input,
//! report the memory record and the model's answers.

use core::fmt::Write;

use hilmem_protocol::{exit, metric, Frame};

use super::{fail_with_tflm_messages, least_arena, report, report_figures, send, Rig, Text};
use crate::{config, tflm};

/// Runs the scenario. With `stack_after_report` (a self-test), it also says
/// in a note what the stack reached once the report was formatted, which the
/// reported figure, read before, must not include.
#[inline(never)]
pub fn run(mut rig: Rig, stack_after_report: bool) -> i32 {
    let (name, data) = config::INPUTS[0];
    let least = match least_arena::search(rig.arena, config::MODEL, name, data) {
        Ok(least) => least,
        Err(status) => return status,
    };
    // What the search ran deeper than the scenario does not count.
    rig.stack.repaint();
    if let Err(e) = rig.load_painted(config::MODEL) {
        return fail_with_tflm_messages("load", e);
    }
    let mut answers = [(0u32, 0f32); config::INPUTS.len()];
    for (answer, (name, data)) in answers.iter_mut().zip(config::INPUTS) {
        match rig.frame(name, data) {
            Ok(a) => *answer = a,
            Err(status) => return status,
        }
    }
    report_figures(&rig.figures());
    if let Some(least) = least {
        report(&[(metric::LEAST_ARENA_BYTES, i64::from(least))]);
    }
    for (tensor, offset) in tflm::placements(rig.arena) {
        send(Frame::Placement { tensor, offset });
    }
    for ((name, _), (class, value)) in config::INPUTS.iter().zip(answers) {
        send(Frame::Output { input: name, class, value });
    }
    if stack_after_report {
        note_stack(&rig);
    }
    send(Frame::Done { ok: true });
    exit::OK
}

/// A function of its own, so that its buffer does not enlarge the scenario's
/// frame (and with it the figure).
#[inline(never)]
fn note_stack(rig: &Rig) {
    let mut text = Text::<16>::new();
    let _ = write!(text, "{}", rig.stack.peak());
    send(Frame::Note { name: "stack_after_report_bytes", text: text.as_str() });
}
