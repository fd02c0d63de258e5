//! What a TFLM is, read from its source tree: the tree itself (where it is,
//! the API its headers declare, its generation, its sources and flags as its
//! Makefile lists them), the operators it registers, and what the bundled
//! 2020 TFLM knows. The lowest stage: uses only the helpers at the crate
//! root.

pub mod bundled;
pub mod registry;

/// The tree itself: the `tflm-tree` crate, which the firmware's build script
/// compiles TFLM with.
pub use tflm_tree as tree;
