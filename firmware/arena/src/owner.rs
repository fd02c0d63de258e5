//! Who infers in an arena: two models that share one may infer one after
//! the other only, so each inference takes the arena for its model and
//! gives it back, and one that begins while another holds it is refused,
//! naming both (a check, not luck: their plans would overwrite each
//! other's live tensors).

use core::fmt;

/// The model inferring in a shared arena, if any.
#[derive(Debug, Default)]
pub struct Owner {
    holder: Option<usize>,
}

/// An inference that began while another held the arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overlap {
    /// The model whose inference was running.
    pub running: usize,
    /// The model whose inference began over it.
    pub preempting: usize,
}

impl Owner {
    pub const fn new() -> Owner {
        Owner { holder: None }
    }

    /// Takes the arena for `model`'s inference.
    pub fn take(&mut self, model: usize) -> Result<(), Overlap> {
        match self.holder {
            Some(running) => Err(Overlap { running, preempting: model }),
            None => {
                self.holder = Some(model);
                Ok(())
            }
        }
    }

    /// Gives the arena back after `model`'s inference.
    pub fn give_back(&mut self, model: usize) {
        if self.holder == Some(model) {
            self.holder = None;
        }
    }
}

impl fmt::Display for Overlap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "model {}'s inference began while model {}'s ran in their shared arena",
            self.preempting, self.running
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_inference_at_a_time_holds_the_arena() {
        let mut owner = Owner::new();
        owner.take(0).unwrap();
        assert_eq!(owner.take(1), Err(Overlap { running: 0, preempting: 1 }));
        assert_eq!(owner.take(0), Err(Overlap { running: 0, preempting: 0 }), "not twice either");
        // Only its holder gives it back.
        owner.give_back(1);
        assert_eq!(owner.take(1), Err(Overlap { running: 0, preempting: 1 }));
        owner.give_back(0);
        owner.take(1).unwrap();
        owner.give_back(1);
        owner.take(0).unwrap();
    }
}
