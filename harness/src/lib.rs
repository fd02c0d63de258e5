//! hilmem's library: everything a `cargo xtask` command does is a function here
//! that a test can call.
//!
//! The flow of one run: [`board`] and [`models`] read the configuration,
//! [`firmware`] builds the reference firmware for a board and model, [`runner`]
//! deploys and runs it and hands its output to [`session`], which decodes the protocol
//! frames; [`elf`] reads the sizes the linker fixed; [`hil`] puts these together
//! into [`measurement::Measurement`] records, and [`report`] shows them.

pub mod analysis;
pub mod baseline;
pub mod bench;
pub mod board;
pub mod compare;
pub mod doctor;
pub mod elf;
pub mod firmware;
pub mod fsutil;
pub mod fuzz;
pub mod gitrepo;
pub mod hil;
pub mod measurement;
pub mod models;
pub mod page;
pub mod planner;
pub mod report;
pub mod runner;
pub mod session;
pub mod strict_toml;
pub mod svg;
pub mod tail;
pub mod tflite;
pub mod tflm_ops;
pub mod workspace;

pub use workspace::Workspace;
