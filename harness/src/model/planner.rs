//! Memory plans for a model, computed on the host: tensor lifetimes as TFLM
//! derives them; its greedy planner reproduced step for step (with or
//! without an offline plan), so the planned arena head is known before
//! anything runs; the linear plan and the lower bound; and hilmem's own plan,
//! which TFLM takes as the model's offline plan.

use crate::model::tflite::{Model, ReadError, VAR_HANDLE};

/// The plan an image's TFLM uses for the arena head: a build setting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Planner {
    /// TFLM's `GreedyMemoryPlanner`, its default.
    #[default]
    Greedy,
    /// TFLM's `LinearMemoryPlanner`: every buffer after the last, no reuse.
    Linear,
    /// TFLM's greedy planner given hilmem's plan ([`hilmem`]) as the
    /// model's offline plan.
    Offline,
}

impl Planner {
    pub const ALL: [Planner; 3] = [Planner::Greedy, Planner::Linear, Planner::Offline];

    pub fn name(self) -> &'static str {
        match self {
            Planner::Greedy => "greedy",
            Planner::Linear => "linear",
            Planner::Offline => "offline",
        }
    }
}

impl std::fmt::Display for Planner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

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
    // A resource handle's data is its VAR_HANDLE kernel's, set at Prepare,
    // before TFLM plans: not planned.
    let handles: Vec<i32> = sg
        .operators
        .iter()
        .filter(|op| model.operator_codes.get(op.opcode_index as usize).is_some_and(|c| c.builtin == VAR_HANDLE))
        .flat_map(|op| op.outputs.iter().copied())
        .collect();
    let mut planned = Vec::new();
    for (i, t) in sg.tensors.iter().enumerate() {
        let constant = model.buffers.get(t.buffer as usize).is_some_and(|&len| len > 0);
        let read_only = first[i] == -1 && last[i] != -1;
        if constant || t.is_variable || read_only || handles.contains(&(i as i32)) {
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

/// How a TFLM generation's greedy planner orders buffers of equal size: the
/// 2020 TFLM keeps the order they were added in; today's gathers the buffers
/// it plans itself from the back of its list, so equal sizes go in reverse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ties {
    Added,
    Reversed,
}

/// Offsets of `buffers` as TFLM's `GreedyMemoryPlanner` places them, with no
/// offline plan.
pub fn greedy(buffers: &[Buffer], ties: Ties) -> Vec<usize> {
    place(buffers, &vec![None; buffers.len()], ties)
}

/// Offsets of `buffers` as TFLM's `GreedyMemoryPlanner` places them when
/// some have an offset fixed by an offline plan: those first, where the plan
/// puts them, in the order they were added; then the others largest first
/// (a stable sort, ties as `ties` says), each at the lowest offset that
/// clears every buffer it overlaps in time, found by walking those buffers
/// in offset order (ties in the order they were placed) for the first gap
/// that is large enough.
pub fn place(buffers: &[Buffer], fixed: &[Option<usize>], ties: Ties) -> Vec<usize> {
    let mut order: Vec<usize> = (0..buffers.len()).filter(|&i| fixed[i].is_some()).collect();
    let mut planned: Vec<usize> = (0..buffers.len()).filter(|&i| fixed[i].is_none()).collect();
    if ties == Ties::Reversed {
        planned.reverse();
    }
    planned.sort_by(|&a, &b| buffers[b].bytes.cmp(&buffers[a].bytes));
    order.extend(planned);
    first_fit(buffers, &order, fixed)
}

/// Places `buffers` in `order`, each at its `fixed` offset or else at the
/// lowest offset that clears the buffers placed before it that it meets in
/// time.
///
/// TFLM walks a list of every placed buffer for each new one, which is
/// quadratic; here an index of the placed buffers alive at each step finds
/// the ones that overlap, so the cost follows how many buffers meet in time.
fn first_fit(buffers: &[Buffer], order: &[usize], fixed: &[Option<usize>]) -> Vec<usize> {
    let mut offsets = vec![0; buffers.len()];
    let steps = buffers.iter().map(|b| b.last + 1).max().unwrap_or(0).max(0) as usize;
    // Placed buffers by step, as (placement number, buffer).
    let mut alive: Vec<Vec<(usize, usize)>> = vec![Vec::new(); steps];
    let mut seen = vec![usize::MAX; buffers.len()];
    let mut met: Vec<(usize, usize, usize)> = Vec::new();
    for (placed, &id) in order.iter().enumerate() {
        let wanted = buffers[id];
        let span = wanted.first as usize..=wanted.last as usize;
        offsets[id] = match fixed[id] {
            Some(offset) => offset,
            None => {
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
                offset
            }
        };
        for step in span {
            alive[step].push((placed, id));
        }
    }
    offsets
}

/// hilmem's plan: an offset for each of the first `tensors` buffers (the
/// model's tensors; the kernels' scratch buffers after them have none, TFLM
/// places those around the plan), to be written as the model's offline plan.
///
/// The search: the tensors placed first fit in a few orders (by size, as
/// greedy does; by first step; by size times lifetime; by lifetime; by last
/// step), then up to [`SEARCH_ROUNDS`] orders made from the best by swapping
/// two tensors, each judged by the head TFLM's planner ends with once it has
/// placed the scratch buffers too; it stops at the lower bound. When no
/// order beats TFLM's own greedy plan, the plan fixes nothing and TFLM plans
/// as it would without one, so the plan is never worse than greedy.
pub fn hilmem(buffers: &[Buffer], tensors: usize, ties: Ties) -> Vec<Option<usize>> {
    let greedy_head = head_bytes(buffers, &greedy(buffers, ties));
    let bound = lower_bound(buffers).0;
    let ids: Vec<usize> = (0..buffers.len()).filter(|&i| buffers[i].tensor < tensors).collect();
    let none = vec![None; buffers.len()];
    let plan_of = |order: &[usize]| -> Vec<Option<usize>> {
        let offsets = first_fit(buffers, order, &none);
        let mut plan = none.clone();
        for &i in order {
            plan[i] = Some(offsets[i]);
        }
        plan
    };
    let head_of = |plan: &[Option<usize>]| head_bytes(buffers, &place(buffers, plan, ties));
    let key = |f: &dyn Fn(&Buffer) -> (i64, i64)| {
        let mut order = ids.clone();
        order.sort_by_key(|&i| f(&buffers[i]));
        order
    };
    let life = |b: &Buffer| i64::from(b.last - b.first + 1);
    let orders = [
        key(&|b| (-(b.bytes as i64), 0)),
        key(&|b| (i64::from(b.first), -(b.bytes as i64))),
        key(&|b| (-(b.bytes as i64) * life(b), 0)),
        key(&|b| (-life(b), -(b.bytes as i64))),
        key(&|b| (-i64::from(b.last), -(b.bytes as i64))),
    ];
    let (mut best, mut best_plan, mut best_head) = (Vec::new(), none.clone(), greedy_head);
    for order in orders {
        let plan = plan_of(&order);
        let head = head_of(&plan);
        if head < best_head || best.is_empty() && head == best_head {
            (best, best_plan, best_head) = (order, plan, head);
        }
        if best_head == bound {
            return best_plan;
        }
    }
    if best.len() < 2 {
        return best_plan;
    }
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    for _ in 0..SEARCH_ROUNDS {
        let r = xorshift(&mut state);
        let (a, b) = ((r % best.len() as u64) as usize, ((r >> 32) % best.len() as u64) as usize);
        let mut order = best.clone();
        order.swap(a, b);
        let plan = plan_of(&order);
        let head = head_of(&plan);
        if head < best_head {
            (best, best_plan, best_head) = (order, plan, head);
            if best_head == bound {
                break;
            }
        }
    }
    best_plan
}

/// The next number of a deterministic pseudo-random sequence (xorshift64).
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// How many swapped orders [`hilmem`] tries after the sorted ones.
pub const SEARCH_ROUNDS: usize = 200;

/// Two buffers alive at one step whose bytes overlap, if a plan has any: a
/// plan with such a pair lets one tensor overwrite another that is still to
/// be read. One sweep over the steps, sorting what is alive at each.
pub fn overlap(buffers: &[Buffer], offsets: &[usize]) -> Option<(usize, usize)> {
    let steps = buffers.iter().map(|b| b.last + 1).max().unwrap_or(0).max(0) as usize;
    let mut alive: Vec<Vec<usize>> = vec![Vec::new(); steps];
    for (i, b) in buffers.iter().enumerate().filter(|(_, b)| b.bytes > 0) {
        for step in b.first..=b.last {
            alive[step as usize].push(i);
        }
    }
    for mut here in alive {
        here.sort_by_key(|&i| offsets[i]);
        // The buffer reaching furthest so far, which a later start must clear.
        let mut reach: Option<usize> = None;
        for i in here {
            if let Some(r) = reach {
                if offsets[i] < offsets[r] + buffers[r].bytes {
                    return Some((r, i));
                }
                if offsets[i] + buffers[i].bytes > offsets[r] + buffers[r].bytes {
                    reach = Some(i);
                }
            } else {
                reach = Some(i);
            }
        }
    }
    None
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

    /// `least` to `least + more - 1` buffers over up to `steps` steps, each
    /// of `16 * (smallest + 0..8)` bytes with a random lifetime.
    fn random_buffers(state: &mut u64, least: usize, more: u64, steps: u64, smallest: usize) -> Vec<Buffer> {
        let mut next = |n: u64| xorshift(state) % n;
        let count = least + next(more) as usize;
        let steps = 1 + next(steps);
        (0..count)
            .map(|i| {
                let first = next(steps);
                let last = first + next(steps - first);
                Buffer { tensor: i, bytes: 16 * (smallest + next(8) as usize), first: first as i32, last: last as i32 }
            })
            .collect()
    }

    /// Random lifetimes and sizes (many ties, many gaps): the indexed
    /// `greedy` places every buffer where TFLM's list walk does, and its head
    /// lies between the lower bound and linear.
    #[test]
    fn greedy_places_as_tflm_does_on_random_graphs() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..500 {
            let buffers = random_buffers(&mut state, 1, 60, 20, 0);
            let offsets = greedy(&buffers, Ties::Added);
            assert_eq!(offsets, tflm_reference(&buffers), "{buffers:?}");
            let head = head_bytes(&buffers, &offsets);
            assert!(lower_bound(&buffers).0 <= head && head <= linear_bytes(&buffers), "{buffers:?}");
        }
    }

    #[test]
    fn a_chain_reuses_memory_two_apart() {
        // t0 -> op0 -> t1 -> op1 -> t2 -> op2 -> t3
        let buffers = [b(64, 0, 0), b(64, 0, 1), b(64, 1, 2), b(64, 2, 2)];
        let offsets = greedy(&buffers, Ties::Added);
        assert_eq!(offsets, [0, 64, 0, 64]);
        assert_eq!(head_bytes(&buffers, &offsets), 128);
    }

    #[test]
    fn branches_and_equal_sizes_are_placed_in_tensor_order() {
        // Three tensors alive together (a concatenation's inputs and output).
        let buffers = [b(32, 0, 1), b(32, 0, 1), b(64, 1, 1)];
        let offsets = greedy(&buffers, Ties::Added);
        assert_eq!(offsets, [64, 96, 0]);
        assert_eq!(head_bytes(&buffers, &offsets), 128);
    }

    #[test]
    fn a_gap_left_by_a_dead_tensor_is_filled() {
        let buffers = [b(128, 0, 0), b(48, 1, 3), b(32, 0, 2), b(16, 3, 3)];
        let offsets = greedy(&buffers, Ties::Added);
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
            let head = head_bytes(buffers, &greedy(buffers, Ties::Added));
            assert_eq!(linear_bytes(buffers), buffers.iter().map(|b| b.bytes).sum::<usize>());
            assert!(lower_bound(buffers).0 <= head && head <= linear_bytes(buffers), "{buffers:?}");
        }
        assert_eq!(lower_bound(cases[0]), (128, 0));
        assert_eq!(lower_bound(cases[2]), (160, 0));
    }

    /// Today's TFLM places equal sizes in reverse; offline offsets are
    /// placed first, where the plan says, and the rest around them.
    #[test]
    fn ties_and_fixed_offsets_are_placed_as_tflm_does() {
        let buffers = [b(32, 0, 1), b(32, 0, 1), b(64, 1, 1)];
        assert_eq!(greedy(&buffers, Ties::Reversed), [96, 64, 0]);
        // Tensor 1 fixed at 0: the 64 goes above it, tensor 0 above that.
        assert_eq!(place(&buffers, &[None, Some(0), None], Ties::Reversed), [96, 0, 32]);
    }

    /// Lifetimes where placing by size leaves a hole: greedy needs 160
    /// bytes, the most alive at once is 144, and hilmem's plan reaches it.
    #[test]
    fn hilmem_reaches_the_lower_bound_where_greedy_does_not() {
        let buffers = [b(32, 2, 2), b(64, 1, 2), b(64, 1, 1), b(48, 2, 2)];
        let greedy_head = head_bytes(&buffers, &greedy(&buffers, Ties::Reversed));
        let plan = hilmem(&buffers, 4, Ties::Reversed);
        let offsets = place(&buffers, &plan, Ties::Reversed);
        assert_eq!((greedy_head, head_bytes(&buffers, &offsets), lower_bound(&buffers).0), (160, 144, 144));
        assert!(plan.iter().all(Option::is_some));
        assert_eq!(overlap(&buffers, &offsets), None);
    }

    /// Random graphs with scratch buffers: no plan (greedy in either order,
    /// hilmem's with TFLM placing the scratch buffers around it) puts two
    /// live buffers in the same bytes; hilmem's head lies between the lower
    /// bound and greedy's; and moving one buffer onto a live neighbour is
    /// always caught.
    #[test]
    fn no_plan_overlaps_live_tensors_on_random_graphs() {
        let mut state = 0xD1B5_4A32_D192_ED03u64;
        let mut improved = 0;
        for _ in 0..500 {
            let buffers = random_buffers(&mut state, 2, 40, 16, 1);
            let count = buffers.len();
            let tensors = count - (xorshift(&mut state) % 3) as usize;
            for ties in [Ties::Added, Ties::Reversed] {
                let greedy_offsets = greedy(&buffers, ties);
                assert_eq!(overlap(&buffers, &greedy_offsets), None, "{buffers:?}");
                let plan = hilmem(&buffers, tensors, ties);
                assert!(plan[tensors..].iter().all(Option::is_none), "scratch buffers are TFLM's to place");
                let offsets = place(&buffers, &plan, ties);
                assert_eq!(overlap(&buffers, &offsets), None, "{buffers:?}");
                let head = head_bytes(&buffers, &offsets);
                let greedy_head = head_bytes(&buffers, &greedy_offsets);
                assert!(lower_bound(&buffers).0 <= head && head <= greedy_head, "{buffers:?}");
                improved += usize::from(head < greedy_head);
                // Put a buffer at the start of another alive with it.
                let pair = (0..count).flat_map(|i| (0..count).map(move |j| (i, j))).find(|&(i, j)| {
                    i != j && buffers[i].first <= buffers[j].last && buffers[j].first <= buffers[i].last
                });
                if let Some((i, j)) = pair {
                    let mut broken = offsets.clone();
                    broken[i] = broken[j];
                    assert!(overlap(&buffers, &broken).is_some(), "{buffers:?}");
                }
            }
        }
        assert!(improved > 0, "hilmem's plan never beat greedy on 1,000 graphs");
    }

    #[test]
    fn nothing_to_plan_is_an_empty_plan() {
        assert!(greedy(&[], Ties::Reversed).is_empty());
        assert!(hilmem(&[], 0, Ties::Reversed).is_empty());
        assert_eq!(head_bytes(&[], &[]), 0);
    }
}
