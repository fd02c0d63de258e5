//! A model against a board: the least arena the analyzer predicts, plus the
//! board's safety margin, against the budget's tensor arena and the RAM
//! region the arena is linked into.

use crate::config::board::{Board, Layout};
use crate::model::analysis::Analysis;
use crate::model::planner::BUFFER_ALIGNMENT;

/// Why there is no least arena to fit.
#[derive(Debug, thiserror::Error)]
pub enum NotPredicted {
    #[error(
        "board `{board}` runs {target}: the arena prediction is for 32-bit Arm (thumb) targets; {measure}",
        measure = MEASURE
    )]
    Target { board: String, target: String },
    #[error("no least arena for `{model}` on the {tflm} TFLM: {why}; {measure}", measure = MEASURE)]
    Model { model: String, tflm: &'static str, why: String },
}

/// What to do where the least arena is not predicted.
const MEASURE: &str = "a run that boots the board measures it in a first boot (not `--build-only`, and not for a \
                       model of a set), or give `arena_bytes`";

/// How a model's arena fits a board.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Fit {
    pub board: String,
    /// The least arena TFLM accepts for the model.
    pub predicted_least_arena_bytes: usize,
    pub safety_margin_percent: u32,
    /// The minimum plus the board's safety margin, in 16-byte steps: what
    /// `arena_bytes = "auto"` builds with.
    pub suggested_arena_bytes: usize,
    /// What the board's memory budget sets aside for the arena.
    pub budget_arena_bytes: usize,
    /// The memory region the arena is linked into, and its size.
    pub region: &'static str,
    pub region_bytes: usize,
}

impl Fit {
    pub fn fits(&self) -> bool {
        self.suggested_arena_bytes <= self.budget_arena_bytes && self.suggested_arena_bytes <= self.region_bytes
    }
}

/// Whether the prediction (made for the bundled TFLM on 32-bit Arm) holds
/// for `board`'s firmware.
pub fn predicts_for(board: &Board) -> bool {
    board.target.starts_with("thumb")
}

/// The arena to build for a least arena of `least` bytes: that plus
/// `margin_percent`, in 16-byte steps.
pub fn with_margin(least: usize, margin_percent: u32) -> usize {
    (least + (least * margin_percent as usize).div_ceil(100)).next_multiple_of(BUFFER_ALIGNMENT)
}

/// The arena `analysis`'s model needs on `board`, against the board's budget
/// and RAM.
pub fn fit(analysis: &Analysis, board: &Board) -> Result<Fit, NotPredicted> {
    let (Layout::BareMetal(map), true) = (&board.layout, predicts_for(board)) else {
        return Err(NotPredicted::Target { board: board.name.clone(), target: board.target.clone() });
    };
    let minimum = analysis.predicted_least_arena_bytes.ok_or_else(|| NotPredicted::Model {
        model: analysis.model.clone(),
        tflm: analysis.tflm,
        why: analysis.caveats.join("; "),
    })?;
    let margin = board.budget.safety_margin_percent;
    let suggested = with_margin(minimum, margin);
    // A region of its own holds only the arena; in RAM the stack's budget
    // is taken off (static data is not known before the build).
    let (region, region_bytes) = match map.arena {
        Some(arena) => ("ARENA", arena.length),
        None => ("RAM", map.ram.length.saturating_sub(map.stack_bytes)),
    };
    Ok(Fit {
        board: board.name.clone(),
        predicted_least_arena_bytes: minimum,
        safety_margin_percent: margin,
        suggested_arena_bytes: suggested,
        budget_arena_bytes: board.budget.tensor_arena_bytes as usize,
        region,
        region_bytes: region_bytes as usize,
    })
}
