//! What a run measures, read and validated at the edge: board profiles
//! (`boards/`) against the hardware hilmem knows, the models file
//! (`hil.toml`) with each model's file read and checked once, and a model's
//! fit on a board. Uses [`crate::model`].

pub mod board;
pub mod fit;
pub mod hardware;
pub mod models;
pub mod runtime;
