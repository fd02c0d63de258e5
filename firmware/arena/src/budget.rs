//! A board's memory budget and the safety gate that decides whether a model
//! may run (or be activated by an update).

use core::fmt;

/// What a board's RAM is planned for. The margin is added on top of the sum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Deserialize), serde(deny_unknown_fields))]
pub struct Budget {
    pub input_frame_bytes: u32,
    pub preprocess_bytes: u32,
    pub tensor_arena_bytes: u32,
    pub postprocess_bytes: u32,
    pub system_reserved_bytes: u32,
    pub safety_margin_percent: u32,
}

impl Budget {
    /// The sum of the planned buffers.
    pub fn planned_bytes(&self) -> u64 {
        [
            self.input_frame_bytes,
            self.preprocess_bytes,
            self.tensor_arena_bytes,
            self.postprocess_bytes,
            self.system_reserved_bytes,
        ]
        .iter()
        .map(|&b| u64::from(b))
        .sum()
    }

    /// The planned bytes plus the safety margin, rounded up.
    pub fn with_margin_bytes(&self) -> u64 {
        let planned = self.planned_bytes();
        planned + (planned * u64::from(self.safety_margin_percent)).div_ceil(100)
    }
}

/// When a model is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Deserialize), serde(deny_unknown_fields))]
pub struct Gate {
    pub min_free_heap_bytes: u32,
    pub min_stack_margin_percent: u32,
}

/// The memory state the gate judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Health {
    /// Bytes still free in the buffer pool.
    pub free_heap_bytes: u32,
    pub stack_bytes: u32,
    pub stack_peak_bytes: u32,
    /// Arena the model needs, and the arena there is.
    pub arena_need_bytes: u32,
    pub arena_capacity_bytes: u32,
}

impl Health {
    /// The part of the stack never reached, in percent of the stack.
    pub fn stack_margin_percent(&self) -> u32 {
        let free = u64::from(self.stack_bytes.saturating_sub(self.stack_peak_bytes));
        (free * 100 / u64::from(self.stack_bytes.max(1))) as u32
    }
}

/// Why the gate refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    ArenaTooSmall { need: u32, capacity: u32 },
    OverBudget { need: u32, budget: u32 },
    FreeHeap { free: u32, min: u32 },
    StackMargin { percent: u32, min: u32 },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::ArenaTooSmall { need, capacity } => {
                write!(f, "its least arena is {need} bytes, the firmware's arena {capacity}")
            }
            Refusal::OverBudget { need, budget } => {
                write!(f, "its least arena is {need} bytes, the board's budget for the arena {budget}")
            }
            Refusal::FreeHeap { free, min } => write!(f, "{free} bytes of heap would be free, the gate wants {min}"),
            Refusal::StackMargin { percent, min } => {
                write!(f, "stack margin {percent}% is below the gate's {min}%")
            }
        }
    }
}

impl Gate {
    /// Accepts a model when its arena fits the firmware and the budget, and
    /// the heap and stack keep the gate's margins.
    pub fn decide(&self, budget: &Budget, health: &Health) -> Result<(), Refusal> {
        let h = health;
        if h.arena_need_bytes > h.arena_capacity_bytes {
            return Err(Refusal::ArenaTooSmall { need: h.arena_need_bytes, capacity: h.arena_capacity_bytes });
        }
        if h.arena_need_bytes > budget.tensor_arena_bytes {
            return Err(Refusal::OverBudget { need: h.arena_need_bytes, budget: budget.tensor_arena_bytes });
        }
        if h.free_heap_bytes < self.min_free_heap_bytes {
            return Err(Refusal::FreeHeap { free: h.free_heap_bytes, min: self.min_free_heap_bytes });
        }
        let percent = h.stack_margin_percent();
        if percent < self.min_stack_margin_percent {
            return Err(Refusal::StackMargin { percent, min: self.min_stack_margin_percent });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUDGET: Budget = Budget {
        input_frame_bytes: 9216,
        preprocess_bytes: 9216,
        tensor_arena_bytes: 98304,
        postprocess_bytes: 1024,
        system_reserved_bytes: 32768,
        safety_margin_percent: 20,
    };
    const GATE: Gate = Gate { min_free_heap_bytes: 4096, min_stack_margin_percent: 25 };
    const HEALTHY: Health = Health {
        free_heap_bytes: 8192,
        stack_bytes: 65536,
        stack_peak_bytes: 2048,
        arena_need_bytes: 90000,
        arena_capacity_bytes: 95232,
    };

    #[test]
    fn budget_arithmetic() {
        assert_eq!(BUDGET.planned_bytes(), 150_528);
        assert_eq!(BUDGET.with_margin_bytes(), 150_528 + 30_106); // 30105.6, rounded up
        let zero = Budget { safety_margin_percent: 0, ..BUDGET };
        assert_eq!(zero.with_margin_bytes(), zero.planned_bytes());
        let huge = Budget { tensor_arena_bytes: u32::MAX, safety_margin_percent: 100, ..BUDGET };
        assert_eq!(huge.with_margin_bytes(), 2 * (u64::from(u32::MAX) + 150_528 - 98_304));
    }

    #[test]
    fn the_stack_margin_is_the_unreached_share() {
        assert_eq!(HEALTHY.stack_margin_percent(), 96);
        assert_eq!(Health { stack_peak_bytes: 65536, ..HEALTHY }.stack_margin_percent(), 0);
        assert_eq!(Health { stack_peak_bytes: 70000, ..HEALTHY }.stack_margin_percent(), 0);
        assert_eq!(Health { stack_bytes: 0, stack_peak_bytes: 0, ..HEALTHY }.stack_margin_percent(), 0);
    }

    #[test]
    fn each_gate_decision() {
        assert_eq!(GATE.decide(&BUDGET, &HEALTHY), Ok(()));
        let cases = [
            (Health { arena_need_bytes: 95233, ..HEALTHY }, Refusal::ArenaTooSmall { need: 95233, capacity: 95232 }),
            (
                Health { arena_need_bytes: 98305, arena_capacity_bytes: 200_000, ..HEALTHY },
                Refusal::OverBudget { need: 98305, budget: 98304 },
            ),
            (Health { free_heap_bytes: 4095, ..HEALTHY }, Refusal::FreeHeap { free: 4095, min: 4096 }),
            (Health { stack_peak_bytes: 49153, ..HEALTHY }, Refusal::StackMargin { percent: 24, min: 25 }),
        ];
        for (health, refusal) in cases {
            assert_eq!(GATE.decide(&BUDGET, &health), Err(refusal));
        }
        // At the limits, accepted.
        let edge = Health { free_heap_bytes: 4096, stack_peak_bytes: 49152, arena_need_bytes: 95232, ..HEALTHY };
        assert_eq!(GATE.decide(&BUDGET, &edge), Ok(()));
    }
}
