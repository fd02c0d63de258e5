//! Integration tests of the harness: the real firmware, built for the default
//! board and run under QEMU.

mod analyzer;
mod architecture;
mod build_only;
mod capture;
mod current_tflm;
mod failures;
mod firmware_runs;
mod layers;
mod operator_models;
mod real_boards;
mod scenarios;
mod snapshots;
mod support;
