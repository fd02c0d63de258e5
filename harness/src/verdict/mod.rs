//! Measurements against approved figures: the baselines in git (work tree or
//! any revision), the tolerance policy and a verdict per figure, and the
//! approval of pending candidates. Uses [`crate::run`]'s records; renders
//! nothing.

pub mod approval;
pub mod baseline;
pub mod compare;
