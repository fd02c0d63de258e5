//! hilmem's library: everything a `cargo xtask` command does is a function here
//! that a test can call.
//!
//! The folders follow a run's data, and each may use only the ones before it
//! (a test over this source tree keeps that true):
//!
//! 1. [`model`]: a `.tflite` file on its own: reader, writer, TFLM's operator
//!    tables, the arena plan and tail the analyzer predicts.
//! 2. [`config`]: what to measure: board profiles, the models file, and a
//!    model's fit on a board.
//! 3. [`image`]: what an image is before it runs: the firmware build, the
//!    ELF's facts and the footprint by component.
//! 4. [`device`]: an image running on a board: the runners and transports,
//!    the decoded session.
//! 5. [`run`]: the run over boards, models and scenarios, and the
//!    measurement records it produces.
//! 6. [`verdict`]: records against the approved baselines in git.
//! 7. [`report`]: tables, JSON, Markdown, JUnit and the HTML page.
//!
//! Beside them, [`workspace`], [`strict_toml`], [`fsutil`], [`fuzz`],
//! [`children`] and [`gitrepo`] are helpers any folder may use (and that
//! use none of them); [`doctor`]
//! (the machine's tools), [`bench`] (what hilmem costs) and [`sweep`]
//! (TFLM's history, a tree a month) use the folders.

pub mod bench;
pub mod children;
pub mod config;
pub mod device;
pub mod doctor;
pub mod fsutil;
pub mod fuzz;
pub mod gitrepo;
pub mod image;
pub mod model;
pub mod report;
pub mod run;
pub mod strict_toml;
pub mod sweep;
pub mod verdict;
pub mod workspace;

pub use workspace::Workspace;
