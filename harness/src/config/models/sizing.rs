//! The arena a model is built with: as configured, or "auto" from the
//! analyzer's prediction and the board's margin.

use crate::config::board::Board;
use crate::config::fit;
use crate::model::analysis::{Analysis, Sharing};
use crate::model::tail::cmsis_nn::KernelPath;
use crate::tflm::tree::{Generation, Kernels};

use super::read::not_tflite;
use super::{Arena, Model, ModelSpec, ModelsError};

impl Model {
    /// The arena to build for `board` and a TFLM of generation `tflm`: as
    /// configured, or for "auto" the analyzer's suggestion for the board.
    /// CMSIS-NN's kernels need a Cortex-M board.
    pub fn arena_bytes(&self, board: &Board, tflm: Generation) -> Result<u32, ModelsError> {
        if self.spec.kernels == Kernels::CmsisNn && board.tflm_arch.is_none() {
            return Err(ModelsError::Kernels {
                model: self.spec.name.clone(),
                kernels: self.spec.kernels.name(),
                why: format!("board `{}` is a host; CMSIS-NN's kernels are built for a Cortex-M core", board.name),
            });
        }
        if self.spec.set.as_ref().is_some_and(|set| set.sharing == Sharing::Separate) {
            return self.residents.iter().map(|m| m.arena_bytes(board, tflm)).sum();
        }
        match self.spec.arena {
            Arena::Bytes(bytes) => Ok(bytes),
            Arena::Auto => {
                let kernels = KernelPath::of(self.spec.kernels, board.tflm_arch.as_deref());
                let analysis = Analysis::of(&self.spec.name, &self.parsed, tflm, kernels, self.spec.planner)
                    .map_err(|e| not_tflite(&self.spec.name, &self.spec.file, e))?;
                let fit = fit::fit(&analysis, board)
                    .map_err(|source| ModelsError::Auto { model: self.spec.name.clone(), source })?;
                Ok(fit.suggested_arena_bytes as u32)
            }
        }
    }

    /// This model with its arena resolved for `board`, so that "auto" is
    /// analysed once per board rather than by every step that needs the size.
    pub fn sized_for(&self, board: &Board, tflm: Generation) -> Result<Model, ModelsError> {
        let bytes = self.arena_bytes(board, tflm)?;
        let source = (self.spec.arena == Arena::Auto && self.spec.set.is_none()).then(|| {
            format!(
                "auto: the predicted least arena plus the {}% margin of board `{}`",
                board.budget.safety_margin_percent, board.name
            )
        });
        let residents = self.residents.iter().map(|m| m.sized_for(board, tflm)).collect::<Result<_, _>>()?;
        Ok(Model { residents, ..self.with_arena(bytes, source) })
    }

    /// This model with an arena of `bytes`, sized as `source` says.
    pub fn with_arena(&self, bytes: u32, source: Option<String>) -> Model {
        Model {
            spec: ModelSpec { arena: Arena::Bytes(bytes), ..self.spec.clone() },
            arena_source: source,
            ..self.clone()
        }
    }

    /// This model with `extra` bytes more in each of its arenas (a set's
    /// models' own arenas too).
    pub fn with_room(&self, extra: u32) -> Model {
        let arena = match self.spec.arena {
            Arena::Bytes(bytes) => Arena::Bytes(bytes + extra),
            Arena::Auto => Arena::Auto,
        };
        let residents = self.residents.iter().map(|m| m.with_room(extra)).collect();
        Model { spec: ModelSpec { arena, ..self.spec.clone() }, residents, ..self.clone() }
    }

    /// The least arena the analyzer predicts for the update this model
    /// receives, on `board` with a TFLM of generation `tflm` and the
    /// model's kernels and planner: the minimum its package carries unless
    /// the models file gives one. None where it is not predicted.
    pub fn update_least_arena(&self, board: &Board, tflm: Generation) -> Option<u32> {
        let kernels = KernelPath::of(self.spec.kernels, board.tflm_arch.as_deref());
        let analysis =
            Analysis::of(&self.spec.ota.model, &self.update.parsed, tflm, kernels, self.spec.planner).ok()?;
        fit::predicts_for(board).then_some(analysis.predicted_least_arena_bytes? as u32)
    }
}
