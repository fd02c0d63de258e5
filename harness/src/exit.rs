//! Exit statuses of every command, and the status a `hil` run ends with.

/// Everything ran and nothing regressed.
pub const OK: i32 = 0;
/// A measurement failed its checks (a regression), or a model does not fit
/// the board it was analysed for.
pub const REGRESSION: i32 = 1;
/// Infrastructure or configuration error: a bad file, a failed build, a
/// target that faulted or hung, a missing tool.
pub const ERROR: i32 = 2;
/// Cancelled by SIGINT (128 + 2), as a shell reports it.
pub const CANCELLED_SIGINT: i32 = 130;
/// Cancelled by SIGTERM (128 + 15), what CI systems send on a cancelled job.
pub const CANCELLED_SIGTERM: i32 = 143;
