//! The least arena: the highest of what stays and of what is borrowed
//! beside the tail while TFLM allocates.

use crate::model::planner::{Planner, BUFFER_ALIGNMENT};
use crate::model::tail::LeastArena;

use super::replay::Prediction;
use super::{ALLOCATION_INFO, GREEDY_BYTES_PER_BUFFER, REQUESTS_AHEAD, SCRATCH_REQUEST};

/// The least arena today's allocator accepts for a model of `tensors`
/// tensors whose tail is `tail`, planned into a head of `head` bytes from
/// `planned` buffers with `planner`: the highest of what stays (head and
/// tail) and of what it borrows beside the tail standing then, with nothing
/// handed out over memory still held: each kernel's `Prepare` (its
/// temporaries above the head of scratch-buffer requests), the planner's
/// `AllocationInfo` array (which the variables, allocated while it is
/// held, must clear in today's TFLM) and the greedy planner's arrays in
/// what remains, 16-byte aligned.
pub fn least_arena(tail: &Prediction, tensors: usize, planned: usize, head: usize, planner: Planner) -> LeastArena {
    let b = &tail.borrowing;
    let requests = SCRATCH_REQUEST.bytes * (b.requests + REQUESTS_AHEAD);
    // One subgraph's offset into the entries, then the entries.
    let entries = ALLOCATION_INFO.bytes * (tensors + b.requests);
    let info_end = requests + 4 + entries;
    let planner_bytes = match planner {
        Planner::Greedy | Planner::Offline => GREEDY_BYTES_PER_BUFFER * planned,
        Planner::Linear => 0,
    };
    let (info_aligned, tail_aligned) =
        (info_end.next_multiple_of(BUFFER_ALIGNMENT), b.planning_tail.next_multiple_of(BUFFER_ALIGNMENT));
    let planning = format!(
        "planning: {requests} B of scratch-buffer requests, 4 B of subgraph offsets and {entries} B of \
         AllocationInfo ({info_aligned} B aligned), then {planner_bytes} B of the planner's arrays, beside a {}-byte \
         tail ({tail_aligned} B aligned)",
        b.planning_tail
    );
    let mut candidates = vec![
        (head + tail.bytes, format!("what stays: a {head}-byte head and a {}-byte tail", tail.bytes)),
        (info_aligned + planner_bytes + tail_aligned, planning),
    ];
    if let Some(p) = b.prepare {
        candidates.push((
            p.bytes(),
            format!(
                "the Prepare of operator {}: {} B of scratch-buffer requests and {} B of temporary tensors, beside a \
                 {}-byte tail",
                p.step, p.requests_head, p.temporaries, p.tail
            ),
        ));
    }
    // The first of the highest: what stays, where it ties.
    let (bytes, set_by) = candidates.into_iter().rev().max_by_key(|(bytes, _)| *bytes).expect("candidates");
    LeastArena { bytes: bytes.next_multiple_of(BUFFER_ALIGNMENT), set_by }
}
