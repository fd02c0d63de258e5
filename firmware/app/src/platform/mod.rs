//! Board support. Every platform offers the same functions to the rest of the
//! firmware: `init`, `write`, `read_byte`, `Stack` (painted at start,
//! measured on demand), `clock` (the periodic work a scenario hands to
//! interrupts), `cpu_part`, `rss_peak_bytes`, `fault` and `exit`.

#[cfg(target_os = "none")]
mod cortex_m;
#[cfg(target_os = "none")]
pub use cortex_m::*;

#[cfg(all(target_os = "none", feature = "cmsdk"))]
mod cmsdk;
#[cfg(all(target_os = "none", feature = "cmsdk"))]
pub use cmsdk::{init, read_byte, write};

#[cfg(all(target_os = "none", feature = "rtt"))]
mod rtt;
#[cfg(all(target_os = "none", feature = "rtt"))]
pub use rtt::{init, read_byte, write};

#[cfg(not(target_os = "none"))]
mod host;
#[cfg(not(target_os = "none"))]
pub use host::*;

#[cfg(all(target_os = "none", not(any(feature = "cmsdk", feature = "rtt"))))]
compile_error!("a bare-metal build needs a transport feature: `cmsdk` or `rtt`");
#[cfg(all(feature = "cmsdk", feature = "rtt"))]
compile_error!("choose one transport feature: `cmsdk` or `rtt`");
