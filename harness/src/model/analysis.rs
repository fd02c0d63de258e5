//! A model's memory analysis, as `cargo xtask analyze` shows it: the plans
//! (lifetimes; TFLM's linear and greedy plans, hilmem's, and the lower
//! bound) and the arena the chosen TFLM generation and planner will use on
//! 32-bit Arm.

use crate::model::planner::{
    buffers, greedy, head_bytes, hilmem, linear_bytes, lower_bound, overlap, place, Buffer, Planner, Ties,
};
use crate::model::tail::cmsis_nn::KernelPath;
use crate::model::tail::{current, tfmicro2020};
use crate::model::tflite::{self, Model, ReadError};
use crate::tflm::bundled;
use crate::tflm::tree::Generation;

/// One planned buffer of an [`Analysis`]: a tensor, or a kernel's scratch
/// buffer.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PlannedTensor {
    pub index: usize,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub shape: Vec<i32>,
    /// Aligned as TFLM plans it.
    pub bytes: usize,
    pub first_step: i32,
    pub last_step: i32,
    pub greedy_offset: usize,
    /// Where hilmem's plan puts it (for a scratch buffer, where TFLM places
    /// it around that plan).
    pub hilmem_offset: usize,
}

/// A model's memory plan, as `cargo xtask analyze` shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Analysis {
    pub model: String,
    /// The TFLM generation predicted for: `2020` or `current`.
    pub tflm: &'static str,
    /// The kernels predicted for: `reference`, or CMSIS-NN's on a code path.
    pub kernels: String,
    #[serde(skip)]
    pub kernel_path: KernelPath,
    /// The converter's description, and the names of the metadata entries.
    pub description: Option<String>,
    pub metadata: Vec<String>,
    /// `NAME vN` for each operator code.
    pub operators: Vec<String>,
    pub operator_count: usize,
    pub tensor_count: usize,
    pub planned: Vec<PlannedTensor>,
    pub linear_bytes: usize,
    /// The planned head: what TFLM's greedy plan needs (with no offline
    /// plan).
    pub greedy_bytes: usize,
    /// The head with hilmem's plan (never above greedy).
    pub hilmem_bytes: usize,
    pub lower_bound_bytes: usize,
    /// The head with the offline plan the model carries, if it has one and
    /// the TFLM generation reads it.
    pub model_plan_bytes: Option<usize>,
    /// The planner the tail and the predicted arena are for.
    pub planner: Planner,
    /// hilmem's plan as TFLM's offline plan: an offset per tensor of the
    /// model, -1 for those TFLM does not plan.
    #[serde(skip)]
    pub offline_plan: Vec<i32>,
    /// The persistent tail TFLM allocates (None when not predicted; the
    /// caveats say why).
    pub tail_bytes: Option<usize>,
    /// What TFLM's `arena_used_bytes()` will say with the planner: head
    /// plus tail.
    pub predicted_arena_bytes: Option<usize>,
    /// The least arena `AllocateTensors` accepts (preparing and planning
    /// borrow room beyond head plus tail), and what sets it.
    pub predicted_least_arena_bytes: Option<usize>,
    pub least_arena_set_by: Option<String>,
    /// What the prediction leaves out, when anything.
    pub caveats: Vec<String>,
    /// The step where the most bytes are alive, and the tensors alive there.
    pub peak_step: i32,
    pub live_at_peak: Vec<usize>,
}

/// How models resident together hold their arenas: each its own, or one
/// shared through TFLM's multi-tenant allocation (the persistent parts
/// stack, the planned head is reused).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Sharing {
    Separate,
    Shared,
}

/// The arena of models resident together, predicted for 32-bit Arm both
/// ways: the set's total, and what each model adds to it in load order (in
/// a shared arena, its persistent part and any growth of the head), as the
/// firmware's multi-model scenario reports them. Only today's TFLM can share
/// an arena.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SetAnalysis {
    pub models: Vec<String>,
    pub separate_bytes: usize,
    pub separate_parts: Vec<usize>,
    pub shared_bytes: Option<usize>,
    pub shared_parts: Option<Vec<usize>>,
}

impl SetAnalysis {
    /// From each member's analysis (for the image's TFLM and planner) and
    /// model, in load order; None when a member's arena is not predicted.
    pub fn of(members: &[(&Analysis, &Model)]) -> Result<Option<SetAnalysis>, ReadError> {
        let mut models = Vec::new();
        let mut separate_parts = Vec::new();
        let mut shared_parts = Vec::new();
        let (mut head, mut tail) = (0, 0);
        for (i, (a, model)) in members.iter().enumerate() {
            let (Some(used), Some(own_tail)) = (a.predicted_arena_bytes, a.tail_bytes) else { return Ok(None) };
            models.push(a.model.clone());
            separate_parts.push(used);
            let tflm = Generation::named(a.tflm).filter(|g| g.todays_allocator());
            if let Some(tflm) = tflm {
                let before = head + tail;
                head = head.max(used - own_tail);
                tail =
                    if i == 0 { own_tail } else { current::predict_joining(model, tail, a.kernel_path, tflm)?.bytes };
                shared_parts.push(head + tail - before);
            }
        }
        let shared = shared_parts.len() == members.len();
        Ok(Some(SetAnalysis {
            models,
            separate_bytes: separate_parts.iter().sum(),
            separate_parts,
            shared_bytes: shared.then_some(head + tail),
            shared_parts: shared.then_some(shared_parts),
        }))
    }

    /// The set's predicted arena with `sharing`, where predicted.
    pub fn bytes(&self, sharing: Sharing) -> Option<usize> {
        match sharing {
            Sharing::Separate => Some(self.separate_bytes),
            Sharing::Shared => self.shared_bytes,
        }
    }
}

/// Why a TFLM of the years between is not predicted.
pub const BETWEEN: &str = "the analyzer models the allocator of the 2020 TFLM and today's (from late 2022: given its \
                           planner, over a SingleArenaBufferAllocator, able to say its own objects' tail); this TFLM's \
                           is neither, and its tail is not modelled";

/// The tail a least arena is derived from, by the allocator's generation.
enum LeastFrom {
    Tfmicro2020(tfmicro2020::Prediction),
    Current(current::Prediction),
}

impl Analysis {
    /// The analysis of `model` for a TFLM of generation `tflm` built with
    /// `kernels`, whose image plans with `planner`. The 2020 TFLM has only
    /// its greedy planner, reads no offline plan and is built with its
    /// reference kernels.
    pub fn of(
        name: &str,
        model: &Model,
        tflm: Generation,
        kernels: KernelPath,
        planner: Planner,
    ) -> Result<Analysis, ReadError> {
        let err = |why: String| ReadError { at: "plan", why };
        let sg = model.subgraphs.first().ok_or_else(|| err("the model has no subgraph".into()))?;
        if tflm == Generation::Tfmicro2020 && planner != Planner::Greedy {
            return Err(err(format!("the 2020 TFLM has no {planner} planner")));
        }
        if tflm == Generation::Tfmicro2020 && kernels != KernelPath::Reference {
            return Err(err("the 2020 TFLM is built with its reference kernels only".into()));
        }
        let mut caveats = Vec::new();
        // The planned buffers (with the kernels' scratch buffers), the tail,
        // and the tail of either generation the least arena is derived from.
        let (buffers, tail, least_from) = match tflm {
            Generation::Tfmicro2020 => {
                let tail = tfmicro2020::predict(model)?;
                let svdf = sg
                    .operators
                    .iter()
                    .filter(|op| model.operator_codes[op.opcode_index as usize].builtin == tfmicro2020::SVDF)
                    .count();
                if svdf > 0 {
                    caveats.push(format!(
                        "{svdf} SVDF operator(s) request scratch buffers in the head that the plan leaves out"
                    ));
                }
                (buffers(model, &[])?, Some(tail.bytes), Some(LeastFrom::Tfmicro2020(tail)))
            }
            Generation::Between => {
                caveats.push(format!("no arena prediction: {BETWEEN}; the head leaves out any scratch buffers"));
                (buffers(model, &[])?, None, None)
            }
            Generation::Tflm2023 | Generation::Current => match current::not_predicted(model, kernels, tflm) {
                Some(why) => {
                    caveats.push(format!("no arena prediction: {why}; the head leaves out any scratch buffers"));
                    (buffers(model, &[])?, None, None)
                }
                None => {
                    let tail = current::predict(model, current::Allocator::Plain, planner, kernels, tflm)?;
                    (buffers(model, &tail.scratch)?, Some(tail.bytes), Some(LeastFrom::Current(tail)))
                }
            },
        };
        let ties = match tflm {
            Generation::Tfmicro2020 => Ties::Added,
            Generation::Between | Generation::Tflm2023 | Generation::Current => Ties::Reversed,
        };
        let offsets = greedy(&buffers, ties);
        let greedy = head_bytes(&buffers, &offsets);
        let plan = hilmem(&buffers, sg.tensors.len(), ties);
        let hilmem_offsets = place(&buffers, &plan, ties);
        if let Some((a, b)) = overlap(&buffers, &hilmem_offsets) {
            return Err(err(format!(
                "hilmem's plan would put tensors {} and {} in the same bytes while both are alive",
                buffers[a].tensor, buffers[b].tensor
            )));
        }
        let mut offline_plan = vec![-1; sg.tensors.len()];
        for (b, at) in buffers.iter().zip(&plan) {
            if let Some(at) = at {
                offline_plan[b.tensor] = *at as i32;
            }
        }
        let model_plan_bytes = match (&model.offline_plan, tflm) {
            (Some(given), tflm) if tflm.todays_allocator() => {
                Some(model_plan_head(&buffers, given, sg.tensors.len(), ties, &mut caveats))
            }
            _ => None,
        };
        // The greedy planner follows the model's own offline plan where it
        // has one; for `offline` that is hilmem's, written in.
        let hilmem_bytes = head_bytes(&buffers, &hilmem_offsets);
        let head = match planner {
            Planner::Linear => linear_bytes(&buffers),
            Planner::Greedy => model_plan_bytes.unwrap_or(greedy),
            Planner::Offline => model_plan_bytes.unwrap_or(hilmem_bytes),
        };
        let least = least_from.map(|from| match from {
            LeastFrom::Tfmicro2020(tail) => tfmicro2020::least_arena(&tail, greedy, buffers.len()),
            // The planner is given every buffer with bytes to place.
            LeastFrom::Current(tail) => {
                let planned = buffers.iter().filter(|b| b.bytes > 0).count();
                current::least_arena(&tail, sg.tensors.len(), planned, head, planner)
            }
        });
        let least = match current::least_set_by_eval(model, tflm) {
            Some(why) => {
                caveats.push(why.to_owned());
                None
            }
            None => least,
        };
        let (lower, peak_step) = lower_bound(&buffers);
        let planned = buffers
            .iter()
            .zip(offsets.iter().zip(&hilmem_offsets))
            .map(|(b, (&offset, &hilmem_offset))| planned(model, b, offset, hilmem_offset))
            .collect();
        Ok(Analysis {
            model: name.to_owned(),
            tflm: tflm.name(),
            kernels: kernels.name(),
            kernel_path: kernels,
            description: model.description.clone(),
            metadata: model.metadata.iter().map(|(name, _)| name.clone()).collect(),
            operators: model
                .operator_codes
                .iter()
                .map(|c| format!("{} v{}", bundled::builtin_name(c.builtin), c.version))
                .collect(),
            operator_count: sg.operators.len(),
            tensor_count: sg.tensors.len(),
            planned,
            linear_bytes: linear_bytes(&buffers),
            greedy_bytes: greedy,
            hilmem_bytes,
            lower_bound_bytes: lower,
            model_plan_bytes,
            planner,
            offline_plan,
            tail_bytes: tail,
            predicted_arena_bytes: tail.map(|tail| head + tail),
            predicted_least_arena_bytes: least.as_ref().map(|l| l.bytes),
            least_arena_set_by: least.map(|l| l.set_by),
            caveats,
            peak_step,
            live_at_peak: buffers
                .iter()
                .filter(|b| b.first <= peak_step && peak_step <= b.last)
                .map(|b| b.tensor)
                .collect(),
        })
    }

    /// What greedy saves over linear, in percent of linear.
    pub fn saved_percent(&self) -> f64 {
        if self.linear_bytes == 0 {
            0.0
        } else {
            (self.linear_bytes - self.greedy_bytes) as f64 * 100.0 / self.linear_bytes as f64
        }
    }
}

/// A planned buffer as the analysis lists it: a tensor, or the scratch
/// buffer of the operator at its step.
/// The head TFLM plans with the offline plan a model carries: its offsets
/// fixed, the rest placed around them. A plan that does not give an offset
/// per tensor is TFLM's to refuse (the run shows its message), and one that
/// puts two live tensors in the same bytes TFLM would follow: both are
/// caveats.
fn model_plan_head(buffers: &[Buffer], given: &[i32], tensors: usize, ties: Ties, caveats: &mut Vec<String>) -> usize {
    if given.len() != tensors {
        caveats.push(format!(
            "the model's offline plan has {} offsets for {tensors} tensors: TFLM refuses it",
            given.len()
        ));
    }
    let fixed: Vec<Option<usize>> = buffers
        .iter()
        .map(|b| given.get(b.tensor).filter(|_| b.tensor < tensors).and_then(|&at| usize::try_from(at).ok()))
        .collect();
    let offsets = place(buffers, &fixed, ties);
    if let Some((a, b)) = overlap(buffers, &offsets) {
        caveats.push(format!(
            "the model's offline plan puts tensors {} and {} in the same bytes while both are alive",
            buffers[a].tensor, buffers[b].tensor
        ));
    }
    head_bytes(buffers, &offsets)
}

fn planned(model: &Model, b: &Buffer, offset: usize, hilmem_offset: usize) -> PlannedTensor {
    let sg = &model.subgraphs[0];
    let (name, kind, shape) = match sg.tensors.get(b.tensor) {
        Some(t) => (t.name.clone(), tflite::type_name(t.kind), t.shape.clone()),
        None => {
            let op = &sg.operators[b.first as usize];
            let code = model.operator_codes[op.opcode_index as usize].builtin;
            (format!("scratch of {} at step {}", bundled::builtin_name(code), b.first), "scratch", vec![])
        }
    };
    PlannedTensor {
        index: b.tensor,
        name,
        kind,
        shape,
        bytes: b.bytes,
        first_step: b.first,
        last_step: b.last,
        greedy_offset: offset,
        hilmem_offset,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tflite::{Operator, OperatorCode, Subgraph, Tensor};

    const FLOAT32: u8 = 0;

    fn tensor(name: &str, shape: &[i32], buffer: u32) -> Tensor {
        Tensor::plain(name, shape, FLOAT32, buffer)
    }

    fn op(inputs: &[i32], outputs: &[i32]) -> Operator {
        Operator::plain(0, inputs, outputs)
    }

    /// A graph written with the flatbuffers builder and read back, so the
    /// whole path from file to plan is exercised; analysed for the 2020 TFLM.
    fn analyse(tensors: Vec<Tensor>, operators: Vec<Operator>, inputs: &[i32], outputs: &[i32]) -> Analysis {
        analyse_for(Generation::Tfmicro2020, tensors, operators, inputs, outputs)
    }

    fn analyse_for(
        tflm: Generation,
        tensors: Vec<Tensor>,
        operators: Vec<Operator>,
        inputs: &[i32],
        outputs: &[i32],
    ) -> Analysis {
        let model = Model {
            version: 3,
            description: None,
            metadata: vec![],
            operator_codes: vec![OperatorCode { builtin: 0, custom: None, version: 1 }], // ADD
            subgraphs: vec![Subgraph { tensors, inputs: inputs.to_vec(), outputs: outputs.to_vec(), operators }],
            buffers: vec![0, 64],
            offline_plan: None,
        };
        Analysis::of(
            "synthetic",
            &tflite::read(&tflite::write(&model)).unwrap(),
            tflm,
            KernelPath::Reference,
            Planner::Greedy,
        )
        .unwrap()
    }

    fn offsets(a: &Analysis) -> Vec<(usize, usize, usize)> {
        a.planned.iter().map(|t| (t.index, t.bytes, t.greedy_offset)).collect()
    }

    /// Two branches from one input, joined by a concatenation (with a
    /// zero-size third input), then a scalar. Placed by hand, largest first:
    /// t3 (48) at 0; t0 (32, steps 0-1) beside t3 in time, at 0; t1 (32,
    /// 0-2) clears t3 and t0: 48; t2 (16, 1-2) clears t3, t0, t1: 80; t4
    /// (16, step 3) only meets t3: 48; t5 (0 bytes) fits the first gap: 0.
    #[test]
    fn branches_a_concatenation_and_zero_size_and_scalar_tensors() {
        let a = analyse(
            vec![
                tensor("in", &[1, 8], 0),
                tensor("left", &[1, 8], 0),
                tensor("right", &[1, 4], 0),
                tensor("joined", &[1, 12], 0),
                tensor("scalar", &[], 0),
                tensor("empty", &[0], 0),
                tensor("weights", &[1, 8], 1),
            ],
            vec![op(&[0, 6], &[1]), op(&[0], &[2, 5]), op(&[1, 2, 5], &[3]), op(&[3], &[4])],
            &[0],
            &[4],
        );
        assert_eq!(offsets(&a), [(0, 32, 0), (1, 32, 48), (2, 16, 80), (3, 48, 0), (4, 16, 48), (5, 0, 0)]);
        assert_eq!((a.greedy_bytes, a.linear_bytes, a.lower_bound_bytes, a.peak_step), (96, 144, 96, 2));
        assert_eq!(a.live_at_peak, [1, 2, 3, 5]);
        assert_eq!(a.planned.iter().find(|t| t.index == 4).unwrap().shape, Vec::<i32>::new());
    }

    fn two_adds_with_a_constant_and_a_variable() -> (Vec<Tensor>, Vec<Operator>) {
        let mut state = tensor("state", &[1, 4], 0);
        state.is_variable = true;
        let tensors = vec![
            tensor("a", &[1, 4], 0),
            tensor("b", &[1, 4], 0),
            tensor("c", &[1, 4], 0),
            tensor("k", &[16], 1),
            state,
        ];
        (tensors, vec![op(&[0, 3, 4], &[1]), op(&[0, 1], &[2])])
    }

    /// Equal sizes keep tensor order (TFLM's sort is stable), and a constant
    /// (tensor 3, its buffer has data) and a variable are never planned.
    #[test]
    fn equal_sizes_constants_and_variables() {
        let (tensors, operators) = two_adds_with_a_constant_and_a_variable();
        let a = analyse(tensors, operators, &[0], &[2]);
        assert_eq!(offsets(&a), [(0, 16, 0), (1, 16, 16), (2, 16, 32)]);
        assert_eq!((a.greedy_bytes, a.lower_bound_bytes), (48, 48));
        // The tail by hand: the allocator (20), five TfLiteTensors (320), two
        // NodeAndRegistrations (80), two TfLiteAddParams (8): 428; then the
        // variable's 16 bytes, 16-aligned: 448.
        assert_eq!((a.tail_bytes, a.predicted_arena_bytes), (Some(448), Some(48 + 448)));
    }

    /// The same graph on today's TFLM, the tail by hand: its three allocator
    /// objects (36 + 44 + 36), the builtin-data allocator (8) and one
    /// SubgraphAllocations (8): 132; five TfLiteEvalTensors (60): 192; two
    /// NodeAndRegistrations (64): 256; two TfLiteAddParams (2 each): 260;
    /// two OpDataAdd (60 each, 16-aligned): 384; the variable (16): 400;
    /// the input's pointer array (4, 16-aligned): 416 and its TfLiteTensor
    /// (32): 448; the output's: 464 and 496.
    ///
    /// The least arena, by hand: each ADD's Prepare takes three float
    /// temporaries (96) above the 144 bytes of requests, beside the 384
    /// bytes of tail before the variable: 624. Planning takes the requests,
    /// a subgraph offset (4) and five AllocationInfo (120): 268, beside the
    /// same tail: 652; then, 16-aligned (272), the greedy planner's 40 bytes
    /// for each of its three buffers (120) beside the tail with the
    /// variable (400): 792, 800 in 16-byte steps, above the 544 that stay.
    #[test]
    fn the_current_tail_of_a_small_graph() {
        let (tensors, operators) = two_adds_with_a_constant_and_a_variable();
        let a = analyse_for(Generation::Current, tensors, operators, &[0], &[2]);
        assert_eq!(
            (a.tflm, a.greedy_bytes, a.tail_bytes, a.predicted_arena_bytes),
            ("current", 48, Some(496), Some(544))
        );
        assert_eq!(a.predicted_least_arena_bytes, Some(800));
        let set_by = a.least_arena_set_by.unwrap();
        assert!(
            set_by.starts_with("planning: 144 B of scratch-buffer requests, 4 B of subgraph offsets and 120 B"),
            "{set_by}"
        );
        assert!(a.caveats.is_empty(), "{:?}", a.caveats);
    }

    /// An operator whose kernel the current prediction does not know: the
    /// plan stands, the arena is not predicted, and the caveat names it.
    #[test]
    fn an_unknown_kernel_is_named_and_not_guessed() {
        let model = Model {
            version: 3,
            description: None,
            metadata: vec![],
            operator_codes: vec![OperatorCode { builtin: 0, custom: Some("MyOp".into()), version: 1 }],
            subgraphs: vec![Subgraph {
                tensors: vec![tensor("in", &[1, 4], 0), tensor("out", &[1, 4], 0)],
                inputs: vec![0],
                outputs: vec![1],
                operators: vec![op(&[0], &[1])],
            }],
            buffers: vec![0],
            offline_plan: None,
        };
        let a = Analysis::of("m", &model, Generation::Current, KernelPath::Reference, Planner::Greedy).unwrap();
        assert_eq!((a.greedy_bytes, a.tail_bytes, a.predicted_arena_bytes), (32, None, None));
        assert!(a.caveats[0].contains("the kernels of MyOp allocate"), "{:?}", a.caveats);
    }

    /// A tensor that is written but never read has no lifetime TFLM accepts.
    #[test]
    fn a_tensor_written_and_never_read_is_an_error() {
        let model = Model {
            version: 3,
            description: None,
            metadata: vec![],
            operator_codes: vec![OperatorCode { builtin: 0, custom: None, version: 1 }],
            subgraphs: vec![Subgraph {
                tensors: vec![tensor("in", &[1], 0), tensor("out", &[1], 0), tensor("dangling", &[1], 0)],
                inputs: vec![0],
                outputs: vec![1],
                operators: vec![op(&[0], &[1, 2])],
            }],
            buffers: vec![0],
            offline_plan: None,
        };
        let e = Analysis::of("m", &model, Generation::Tfmicro2020, KernelPath::Reference, Planner::Greedy)
            .unwrap_err()
            .to_string();
        assert!(e.contains("tensor 2 (`dangling`)"), "{e}");
    }
}
