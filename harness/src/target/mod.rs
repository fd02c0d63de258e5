//! An image on a board: the firmware build, the facts the linker fixed in
//! the ELF and its map (sizes, placement, footprint by component), the runners and transports that deploy and drive it, and the
//! decoded session of one run, and the wire decoder as a fuzzing subject.
//! Uses [`crate::spec`] and [`crate::model`].

pub mod elf;
pub mod firmware;
pub mod footprint;
pub mod runner;
pub mod session;
pub mod wire;
