//! A model file on its own: what can be known from the `.tflite` bytes
//! before anything is built. Uses only the helpers at the crate root.

pub mod analysis;
pub mod fuzz;
pub mod planner;
pub mod resolver;
pub mod tail;
pub mod tflite;
