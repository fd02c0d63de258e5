//! What an image is, before any board runs it: the firmware build, the facts
//! the linker fixed in the ELF (sizes, placement, the board and model it was
//! built for) and the footprint by component from its map. Uses
//! [`crate::config`] and [`crate::model`].

pub mod elf;
pub mod firmware;
pub mod footprint;
