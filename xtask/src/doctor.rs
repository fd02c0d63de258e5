//! `cargo xtask doctor`: check and install the toolchain.

use anyhow::Result;
use harness::config::board;
use harness::{doctor, Workspace};

use harness::exit;

pub fn run() -> Result<i32> {
    let ws = Workspace::from_source();
    let needs = doctor::needs(&board::load_all(&ws)?, false);
    doctor::ensure(&needs, ws.root(), false, &mut |line| eprintln!("{line}"))?;
    Ok(exit::OK)
}
