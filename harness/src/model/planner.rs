//! TFLM's memory plan for a model, computed on the host: tensor lifetimes as
//! the bundled TFLM (2020) derives them, and its greedy planner reproduced
//! step for step, so the planned arena head is known before anything runs.

use crate::model::tflite::{Model, ReadError};

/// TFLM aligns every planned buffer to this.
pub const BUFFER_ALIGNMENT: usize = 16;

/// A buffer a kernel asks for in the planned head, alive during its step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scratch {
    pub step: i32,
    pub bytes: usize,
}

/// A buffer the planner places: its aligned size and the operator steps
/// from which it is written until its last read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Buffer {
    /// The tensor's index; past the last tensor, the scratch buffers in the
    /// order kernels requested them.
    pub tensor: usize,
    pub bytes: usize,
    pub first: i32,
    pub last: i32,
}

/// The planned tensors of subgraph 0, in tensor order, as TFLM's
/// `AllocationInfoBuilder::AddTensors` selects them (no data in the model,
/// not a variable, and written by an operator or fed as an input), then the
/// kernels' scratch buffers.
pub fn buffers(model: &Model, scratch: &[Scratch]) -> Result<Vec<Buffer>, ReadError> {
    let err = |why: String| ReadError { at: "plan", why };
    let sg = model.subgraphs.first().ok_or_else(|| err("the model has no subgraph".into()))?;
    let n = sg.tensors.len();
    let (mut first, mut last) = (vec![-1i32; n], vec![-1i32; n]);
    for &i in &sg.inputs {
        first[i as usize] = 0;
    }
    let ops = sg.operators.len() as i32;
    for &o in &sg.outputs {
        last[o as usize] = ops - 1;
    }
    for (step, op) in sg.operators.iter().enumerate().rev() {
        let step = step as i32;
        for &i in op.inputs.iter().filter(|&&i| i >= 0) {
            let l = &mut last[i as usize];
            if *l == -1 || *l < step {
                *l = step;
            }
        }
        for &o in op.outputs.iter().filter(|&&o| o >= 0) {
            let f = &mut first[o as usize];
            if *f == -1 || *f > step {
                *f = step;
            }
        }
    }
    let mut planned = Vec::new();
    for (i, t) in sg.tensors.iter().enumerate() {
        let constant = model.buffers.get(t.buffer as usize).is_some_and(|&len| len > 0);
        let read_only = first[i] == -1 && last[i] != -1;
        if constant || t.is_variable || read_only {
            continue;
        }
        if first[i] == -1 || last[i] == -1 {
            return Err(err(format!("tensor {i} (`{}`) is never both written and read", t.name)));
        }
        let bytes =
            t.bytes().ok_or_else(|| err(format!("tensor {i} (`{}`) has type {} of unknown size", t.name, t.kind)))?;
        planned.push(Buffer {
            tensor: i,
            bytes: bytes.div_ceil(BUFFER_ALIGNMENT) * BUFFER_ALIGNMENT,
            first: first[i],
            last: last[i],
        });
    }
    planned.extend(scratch.iter().enumerate().map(|(k, s)| Buffer {
        tensor: n + k,
        bytes: s.bytes.next_multiple_of(BUFFER_ALIGNMENT),
        first: s.step,
        last: s.step,
    }));
    Ok(planned)
}

/// Offsets of `buffers` as TFLM's `GreedyMemoryPlanner` places them: largest
/// first (a stable sort), each at the lowest offset that clears every buffer
/// it overlaps in time, found by walking those buffers in offset order (ties
/// in the order they were placed) for the first gap that is large enough.
///
/// TFLM walks a list of every placed buffer for each new one, which is
/// quadratic; here an index of the placed buffers alive at each step finds
/// the ones that overlap, so the cost follows how many buffers meet in time.
pub fn greedy(buffers: &[Buffer]) -> Vec<usize> {
    let mut offsets = vec![0; buffers.len()];
    let mut order: Vec<usize> = (0..buffers.len()).collect();
    order.sort_by(|&a, &b| buffers[b].bytes.cmp(&buffers[a].bytes));
    let steps = buffers.iter().map(|b| b.last + 1).max().unwrap_or(0).max(0) as usize;
    // Placed buffers by step, as (placement number, buffer).
    let mut alive: Vec<Vec<(usize, usize)>> = vec![Vec::new(); steps];
    let mut seen = vec![usize::MAX; buffers.len()];
    let mut met: Vec<(usize, usize, usize)> = Vec::new();
    for (placed, &id) in order.iter().enumerate() {
        let wanted = buffers[id];
        let span = wanted.first as usize..=wanted.last as usize;
        met.clear();
        for &(number, other) in alive[span.clone()].iter().flatten() {
            if seen[other] != placed {
                seen[other] = placed;
                met.push((offsets[other], number, other));
            }
        }
        met.sort_unstable();
        let mut offset = 0;
        for &(at, _, other) in &met {
            if at >= offset && at - offset >= wanted.bytes {
                break;
            }
            offset = offset.max(at + buffers[other].bytes);
        }
        offsets[id] = offset;
        for step in span {
            alive[step].push((placed, id));
        }
    }
    offsets
}

/// The planned arena head: the highest end of a placed buffer.
pub fn head_bytes(buffers: &[Buffer], offsets: &[usize]) -> usize {
    buffers.iter().zip(offsets).map(|(b, o)| o + b.bytes).max().unwrap_or(0)
}

/// The arena without reuse: every planned buffer side by side.
pub fn linear_bytes(buffers: &[Buffer]) -> usize {
    buffers.iter().map(|b| b.bytes).sum()
}

/// No plan can do better: the most bytes alive at one step, and that step
/// (the first, on a tie). One sweep over the steps.
pub fn lower_bound(buffers: &[Buffer]) -> (usize, i32) {
    let steps = buffers.iter().map(|b| b.last + 1).max().unwrap_or(0).max(0) as usize;
    let mut change = vec![0i64; steps + 1];
    for b in buffers {
        change[b.first as usize] += b.bytes as i64;
        change[b.last as usize + 1] -= b.bytes as i64;
    }
    let (mut alive, mut best) = (0i64, (0, 0));
    for (step, delta) in change.iter().enumerate() {
        alive += delta;
        if alive as usize > best.0 {
            best = (alive as usize, step as i32);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(bytes: usize, first: i32, last: i32) -> Buffer {
        Buffer { tensor: 0, bytes, first, last }
    }

    /// TFLM's `GreedyMemoryPlanner::CalculateOffsetsIfNeeded`, transcribed
    /// (a linked list of every placed buffer in offset order, walked from
    /// the start for each new buffer): the reference `greedy` must match.
    fn tflm_reference(buffers: &[Buffer]) -> Vec<usize> {
        struct Entry {
            offset: usize,
            buffer: usize,
            next: Option<usize>,
        }
        let mut offsets = vec![0; buffers.len()];
        let mut order: Vec<usize> = (0..buffers.len()).collect();
        order.sort_by(|&a, &b| buffers[b].bytes.cmp(&buffers[a].bytes));
        let Some((&largest, rest)) = order.split_first() else { return offsets };
        let mut entries = vec![Entry { offset: 0, buffer: largest, next: None }];
        let overlaps = |e: &Entry, b: &Buffer| !(buffers[e.buffer].first > b.last || b.first > buffers[e.buffer].last);
        for &id in rest {
            let wanted = buffers[id];
            let next_active = |entries: &[Entry], after: Option<usize>| {
                let mut candidate = match after {
                    None => Some(0),
                    Some(e) => entries[e].next,
                };
                while let Some(c) = candidate {
                    if overlaps(&entries[c], &wanted) {
                        return Some(c);
                    }
                    candidate = entries[c].next;
                }
                None
            };
            let mut prior: Option<usize> = None;
            let mut offset = 0usize;
            loop {
                let next = next_active(&entries, prior);
                if let Some(p) = prior {
                    offset = offset.max(entries[p].offset + buffers[entries[p].buffer].bytes);
                }
                let Some(n) = next else { break };
                if entries[n].offset as i64 - offset as i64 >= wanted.bytes as i64 {
                    break;
                }
                prior = Some(n);
            }
            offsets[id] = offset;
            let new = entries.len();
            entries.push(Entry { offset, buffer: id, next: None });
            let mut current = 0;
            loop {
                match entries[current].next {
                    None => {
                        entries[current].next = Some(new);
                        break;
                    }
                    Some(n) if entries[n].offset > offset => {
                        entries[new].next = Some(n);
                        entries[current].next = Some(new);
                        break;
                    }
                    Some(n) => current = n,
                }
            }
        }
        offsets
    }

    /// Random lifetimes and sizes (many ties, many gaps): the indexed
    /// `greedy` places every buffer where TFLM's list walk does, and its head
    /// lies between the lower bound and linear.
    #[test]
    fn greedy_places_as_tflm_does_on_random_graphs() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n) as i32
        };
        for _ in 0..500 {
            let count = 1 + next(60) as usize;
            let steps = 1 + next(20);
            let buffers: Vec<Buffer> = (0..count)
                .map(|i| {
                    let first = next(steps as u64);
                    let last = first + next((steps - first) as u64);
                    Buffer { tensor: i, bytes: 16 * next(8) as usize, first, last }
                })
                .collect();
            let offsets = greedy(&buffers);
            assert_eq!(offsets, tflm_reference(&buffers), "{buffers:?}");
            let head = head_bytes(&buffers, &offsets);
            assert!(lower_bound(&buffers).0 <= head && head <= linear_bytes(&buffers), "{buffers:?}");
        }
    }

    #[test]
    fn a_chain_reuses_memory_two_apart() {
        // t0 -> op0 -> t1 -> op1 -> t2 -> op2 -> t3
        let buffers = [b(64, 0, 0), b(64, 0, 1), b(64, 1, 2), b(64, 2, 2)];
        let offsets = greedy(&buffers);
        assert_eq!(offsets, [0, 64, 0, 64]);
        assert_eq!(head_bytes(&buffers, &offsets), 128);
    }

    #[test]
    fn branches_and_equal_sizes_are_placed_in_tensor_order() {
        // Three tensors alive together (a concatenation's inputs and output).
        let buffers = [b(32, 0, 1), b(32, 0, 1), b(64, 1, 1)];
        let offsets = greedy(&buffers);
        assert_eq!(offsets, [64, 96, 0]);
        assert_eq!(head_bytes(&buffers, &offsets), 128);
    }

    #[test]
    fn a_gap_left_by_a_dead_tensor_is_filled() {
        let buffers = [b(128, 0, 0), b(48, 1, 3), b(32, 0, 2), b(16, 3, 3)];
        let offsets = greedy(&buffers);
        // 128 at 0 (step 0); 48 fits at 0 from step 1; 32 (steps 0-2) must
        // clear both: 128; 16 (step 3) clears the 48 only: 48.
        assert_eq!(offsets, [0, 0, 128, 48]);
        assert_eq!(head_bytes(&buffers, &offsets), 160);
    }

    #[test]
    fn linear_is_the_sum_and_the_bound_never_exceeds_greedy() {
        let cases: [&[Buffer]; 3] = [
            &[b(64, 0, 0), b(64, 0, 1), b(64, 1, 2), b(64, 2, 2)],
            &[b(32, 0, 1), b(32, 0, 1), b(64, 1, 1)],
            &[b(128, 0, 0), b(48, 1, 3), b(32, 0, 2), b(16, 3, 3)],
        ];
        for buffers in cases {
            let head = head_bytes(buffers, &greedy(buffers));
            assert_eq!(linear_bytes(buffers), buffers.iter().map(|b| b.bytes).sum::<usize>());
            assert!(lower_bound(buffers).0 <= head && head <= linear_bytes(buffers), "{buffers:?}");
        }
        assert_eq!(lower_bound(cases[0]), (128, 0));
        assert_eq!(lower_bound(cases[2]), (160, 0));
    }

    #[test]
    fn nothing_to_plan_is_an_empty_plan() {
        assert!(greedy(&[]).is_empty());
        assert_eq!(head_bytes(&[], &[]), 0);
    }
}
