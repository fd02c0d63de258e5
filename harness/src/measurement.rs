//! The measurement record: one per board, model and scenario, with stable
//! metric names (they are the keys baselines are stored under).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::models::{Expect, ModelSpec};
use crate::session::Output;

/// Stable metric names.
pub mod metric {
    /// Size of the `.tflite` flatbuffer.
    pub const MODEL_BYTES: &str = "model_bytes";
    /// What the image puts in flash, from the ELF.
    pub const FLASH_BYTES: &str = "flash_bytes";
    /// `.data` + `.bss` + `.uninit` without the arena, from the ELF.
    pub const STATIC_RAM_BYTES: &str = "static_ram_bytes";
    /// The configured arena, from the ELF.
    pub const ARENA_CAPACITY_BYTES: &str = "arena_capacity_bytes";
    /// TFLM's `arena_used_bytes()` after `AllocateTensors`.
    pub const ARENA_USED_BYTES: &str = "arena_used_bytes";
    /// Planned (non-persistent) part of the arena, as TFLM reports it.
    pub const ARENA_HEAD_BYTES: &str = "arena_head_bytes";
    /// Persistent part of the arena, as TFLM reports it.
    pub const ARENA_TAIL_BYTES: &str = "arena_tail_bytes";
    /// Bytes of the painted arena that were written, observed.
    pub const ARENA_TOUCHED_BYTES: &str = "arena_touched_bytes";
    /// Peak bytes in use in the firmware's pool.
    pub const HEAP_PEAK_BYTES: &str = "heap_peak_bytes";
    /// Painted-stack high-water mark.
    pub const STACK_PEAK_BYTES: &str = "stack_peak_bytes";
    /// Peak resident set of a host-board process, from the kernel (VmHWM).
    pub const RSS_PEAK_BYTES: &str = "rss_peak_bytes";

    /// The figures every firmware run must report.
    pub const FROM_FIRMWARE: [&str; 4] = [ARENA_USED_BYTES, ARENA_TOUCHED_BYTES, HEAP_PEAK_BYTES, STACK_PEAK_BYTES];
}

/// The scenarios the firmware knows.
pub const SINGLE_FRAME: &str = "single-frame";

/// A functional check of a run, such as the class the model chose.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub name: String,
    pub passed: bool,
    pub detail: String,
}

/// One board, model and scenario: its figures and its checks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    pub board: String,
    pub model: String,
    pub scenario: String,
    pub metrics: BTreeMap<String, i64>,
    pub checks: Vec<Check>,
}

impl Measurement {
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.passed)
    }
}

/// Compares the model's answers with what `hil.toml` expects of them.
pub fn check_outputs(model: &ModelSpec, outputs: &[Output]) -> Vec<Check> {
    model
        .inputs
        .iter()
        .filter_map(|input| {
            let expect = input.expect?;
            let name = format!("output for {}", input.name);
            let Some(out) = outputs.iter().find(|o| o.input == input.name) else {
                return Some(Check { name, passed: false, detail: "the firmware reported no output".into() });
            };
            Some(match expect {
                Expect::Class(class) => {
                    Check { name, passed: out.class == class, detail: format!("class {}, expected {class}", out.class) }
                }
                Expect::Value { value, tolerance } => Check {
                    name,
                    passed: (out.value - value).abs() <= tolerance,
                    detail: format!("value {:.4}, expected {value} ± {tolerance}", out.value),
                },
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::{InputData, InputSpec};

    fn model() -> ModelSpec {
        let input = |name: &str, expect| InputSpec { name: name.into(), data: InputData::Values(vec![0.0]), expect };
        ModelSpec {
            name: "m".into(),
            file: "m.tflite".into(),
            arena_bytes: 64,
            inputs: vec![
                input("a", Some(Expect::Class(1))),
                input("b", Some(Expect::Value { value: 1.0, tolerance: 0.1 })),
                input("c", None),
            ],
        }
    }

    #[test]
    fn answers_are_checked_against_expectations() {
        let out = |input: &str, class, value| Output { input: input.into(), class, value };
        let checks = check_outputs(&model(), &[out("a", 1, 0.0), out("b", 0, 0.95), out("c", 3, 0.0)]);
        assert_eq!(checks.len(), 2);
        assert!(checks.iter().all(|c| c.passed), "{checks:?}");

        let checks = check_outputs(&model(), &[out("a", 2, 0.0), out("b", 0, 1.2)]);
        assert!(!checks[0].passed && checks[0].detail == "class 2, expected 1");
        assert!(!checks[1].passed);

        let checks = check_outputs(&model(), &[]);
        assert!(checks.iter().all(|c| !c.passed && c.detail.contains("no output")));
    }
}
