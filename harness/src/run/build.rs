//! The build record: what an image is without running it. Its figures from
//! the model file and the ELF, the analyzer's arena prediction and least
//! arena, its footprint by component, and whether it lies inside its
//! board's regions and its arena holds the model within the budget.

use std::collections::BTreeMap;

use crate::config::board::Board;
use crate::config::fit::predicts_for;
use crate::config::models::Model;
use crate::image::elf::{self, Image, ImageSizes};
use crate::image::firmware::{map_path, Firmware};
use crate::image::footprint;
use crate::model::tflite::ReadError;
use crate::run::measurement::{Check, Measurement, BUILD};
use crate::run::record::{context, image_figures, predict, RunError, NOT_PREDICTED};
use hilmem_protocol::metric;

/// The build record's note of how "auto" sized the arena.
pub const ARENA_SOURCE: &str = "arena";

/// The record of an image that needs no running target: its figures from
/// the model file and the ELF, the analyzer's arena prediction and least
/// arena, its footprint by component, and checks that it lies inside its
/// board's regions (failed with the overflow in bytes) and that its arena
/// holds the predicted use within the board's budget. With it, whether the
/// image lies inside its regions (one that does not is not run).
pub fn record(
    board: &Board,
    model: &Model,
    firmware: &Firmware,
    sizes: ImageSizes,
) -> Result<(Measurement, bool), RunError> {
    let spec = &model.spec;
    let mut metrics = image_figures(firmware, sizes);
    let mut notes = BTreeMap::new();
    let image = Image::read(&firmware.elf)?;
    let mut checks: Vec<Check> = elf::placement(&image, &board.layout)?
        .into_iter()
        .map(|used| Check {
            name: format!("{} inside {}", used.what, used.region),
            passed: used.overflow() == 0,
            detail: used.describe(),
        })
        .collect();
    let placed = checks.iter().all(|c| c.passed);
    let capacity = sizes.arena_capacity_bytes as i64;
    let budget = i64::from(board.budget.tensor_arena_bytes);
    checks.push(Check {
        name: "arena within the board's budget".into(),
        passed: capacity <= budget,
        detail: format!("{capacity} of the {budget} bytes the budget of board `{}` sets aside", board.name),
    });
    if predicts_for(board) {
        let context = context(board, spec, BUILD);
        let cannot =
            |e: ReadError| RunError::Image { context, error: format!("the analyzer cannot read the model: {e}") };
        let prediction = predict(model, firmware).map_err(cannot)?;
        match &prediction.arena {
            Ok(predicted) => _ = metrics.insert(metric::PREDICTED_ARENA_BYTES.into(), *predicted as i64),
            Err(caveats) => _ = notes.insert(NOT_PREDICTED.into(), caveats.clone()),
        }
        if let Some(least) = prediction.least {
            metrics.insert(metric::PREDICTED_LEAST_ARENA_BYTES.into(), least as i64);
        }
        // What the arena must hold: the least arena where predicted, else
        // at least what TFLM will use.
        let holds = match (prediction.least, prediction.arena) {
            (Some(least), _) => Some(("the least arena AllocateTensors accepts", least, "least")),
            (None, Ok(predicted)) => Some(("the predicted use", predicted, "predicted")),
            (None, Err(_)) => None,
        };
        if let Some((what, bytes, said)) = holds {
            checks.push(Check {
                name: format!("arena holds {what}"),
                passed: bytes as i64 <= capacity,
                detail: format!("{bytes} bytes {said}, {capacity} in the arena"),
            });
        }
    }
    if let Some(source) = &model.arena_source {
        notes.insert(ARENA_SOURCE.into(), source.clone());
    }
    let footprint = footprint::of(&image, &map_path(&firmware.elf), &board.layout, &sizes)?;
    let record = Measurement {
        board: board.name.clone(),
        model: spec.name.clone(),
        scenario: BUILD.into(),
        metrics,
        notes,
        checks,
        arena_prediction: None,
        tflm_breakdown: None,
        resident_breakdowns: Default::default(),
        spread: Default::default(),
        footprint: Some(footprint),
    };
    Ok((record, placed))
}
