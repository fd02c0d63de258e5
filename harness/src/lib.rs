//! hilmem's library: everything a `cargo xtask` command does is a function here
//! that a test can call.
//!
//! The folders follow a run's data, and each may use only the ones before it
//! (a test over this source tree keeps that true):
//!
//! 1. [`tflm`]: a TFLM source tree: its API, generation and sources, the
//!    operators it registers, what the bundled TFLM knows.
//! 2. [`model`]: a `.tflite` file on its own: reader, writer, the arena plan
//!    and tail the analyzer predicts, the op resolver it needs.
//! 3. [`config`]: what to measure: board profiles, the models file, and a
//!    model's fit on a board.
//! 4. [`image`]: what an image is before it runs: the firmware build, the
//!    ELF's facts and the footprint by component.
//! 5. [`device`]: an image running on a board: the runners and transports,
//!    the decoded session.
//! 6. [`run`]: the run over boards, models and scenarios, and the
//!    measurement records it produces.
//! 7. [`verdict`]: records against the approved baselines in git.
//! 8. [`report`]: tables, JSON, Markdown, JUnit and the HTML page.
//!
//! Beside them, [`workspace`], [`strict_toml`], [`fsutil`], [`fuzz`],
//! [`children`], [`gitrepo`], [`exit`] and [`timings`] are helpers any folder may use
//! (and that use none of them); [`doctor`]
//! (the machine's tools), [`bench`] (what hilmem costs) and [`sweep`]
//! (TFLM's history, a tree a month) use the folders.

pub mod bench;
pub mod children;
pub mod config;
pub mod device;
pub mod doctor;
pub mod exit;
pub mod fsutil;
pub mod fuzz;
pub mod gitrepo;
pub mod image;
pub mod model;
pub mod report;
pub mod run;
pub mod strict_toml;
pub mod sweep;
pub mod tflm;
pub mod timings;
pub mod verdict;
pub mod workspace;

pub use workspace::Workspace;
