//! The checks an over-the-air model update must pass before it is activated.

use core::fmt;

use crate::budget::{Budget, Gate, Health, Refusal};

/// What an update says about the model it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metadata {
    pub version: u32,
    /// Arena the model needs at least, and at most.
    pub min_arena_bytes: u32,
    pub max_arena_bytes: u32,
    /// Heap the model wants left free.
    pub min_free_heap_bytes: u32,
}

/// Why an update was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtaRefusal {
    NotNewer { version: u32, running: u32 },
    Inconsistent { min: u32, max: u32 },
    FreeHeap { free: u32, wanted: u32 },
    Gate(Refusal),
}

impl fmt::Display for OtaRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OtaRefusal::NotNewer { version, running } => {
                write!(f, "version {version} is not newer than the running {running}")
            }
            OtaRefusal::Inconsistent { min, max } => write!(f, "metadata says min arena {min} > max arena {max}"),
            OtaRefusal::FreeHeap { free, wanted } => {
                write!(f, "the model wants {wanted} bytes of free heap, {free} would be free")
            }
            OtaRefusal::Gate(refusal) => write!(f, "{refusal}"),
        }
    }
}

/// Checks an update against the running version, the board's budget and
/// gate, and the memory state (`health.arena_need_bytes` is replaced by the
/// update's minimum arena).
pub fn check(meta: &Metadata, running: u32, budget: &Budget, gate: &Gate, health: &Health) -> Result<(), OtaRefusal> {
    if meta.version <= running {
        return Err(OtaRefusal::NotNewer { version: meta.version, running });
    }
    if meta.min_arena_bytes > meta.max_arena_bytes {
        return Err(OtaRefusal::Inconsistent { min: meta.min_arena_bytes, max: meta.max_arena_bytes });
    }
    if health.free_heap_bytes < meta.min_free_heap_bytes {
        return Err(OtaRefusal::FreeHeap { free: health.free_heap_bytes, wanted: meta.min_free_heap_bytes });
    }
    let health = Health { arena_need_bytes: meta.min_arena_bytes, ..*health };
    gate.decide(budget, &health).map_err(OtaRefusal::Gate)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUDGET: Budget = Budget {
        input_frame_bytes: 1024,
        preprocess_bytes: 1024,
        tensor_arena_bytes: 16384,
        postprocess_bytes: 64,
        system_reserved_bytes: 4096,
        safety_margin_percent: 10,
    };
    const GATE: Gate = Gate { min_free_heap_bytes: 1024, min_stack_margin_percent: 50 };
    const HEALTH: Health = Health {
        free_heap_bytes: 4096,
        stack_bytes: 8192,
        stack_peak_bytes: 1024,
        arena_need_bytes: 0,
        arena_capacity_bytes: 10240,
    };
    const META: Metadata =
        Metadata { version: 2, min_arena_bytes: 1536, max_arena_bytes: 2048, min_free_heap_bytes: 512 };

    #[test]
    fn a_fitting_newer_model_is_accepted() {
        assert_eq!(check(&META, 1, &BUDGET, &GATE, &HEALTH), Ok(()));
    }

    #[test]
    fn each_reason_to_refuse() {
        let cases = [
            (META, 2, HEALTH, OtaRefusal::NotNewer { version: 2, running: 2 }),
            (Metadata { min_arena_bytes: 3000, ..META }, 1, HEALTH, OtaRefusal::Inconsistent { min: 3000, max: 2048 }),
            (
                Metadata { min_free_heap_bytes: 5000, ..META },
                1,
                HEALTH,
                OtaRefusal::FreeHeap { free: 4096, wanted: 5000 },
            ),
            (
                Metadata { min_arena_bytes: 7024, max_arena_bytes: 8000, ..META },
                1,
                Health { arena_capacity_bytes: 3072, ..HEALTH },
                OtaRefusal::Gate(Refusal::ArenaTooSmall { need: 7024, capacity: 3072 }),
            ),
            (
                META,
                1,
                Health { stack_peak_bytes: 6000, ..HEALTH },
                OtaRefusal::Gate(Refusal::StackMargin { percent: 26, min: 50 }),
            ),
        ];
        for (meta, running, health, refusal) in cases {
            assert_eq!(check(&meta, running, &BUDGET, &GATE, &health), Err(refusal));
        }
    }
}
