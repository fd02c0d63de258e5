//! An image running on a board: the runners and transports that deploy and
//! drive it, the decoded session of one run, and the wire decoder as a
//! fuzzing subject. Uses [`crate::image`] and [`crate::config`].

pub mod runner;
pub mod session;
pub mod wire;
