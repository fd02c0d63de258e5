//! `cargo xtask doctor`: check and install the toolchain.

use anyhow::Result;
use harness::{board, doctor, Workspace};

use crate::exit;

/// Rust targets of every board profile.
pub fn board_targets(ws: &Workspace) -> Result<Vec<String>> {
    let mut targets = Vec::new();
    for name in board::names(&ws.boards_dir()) {
        let target = board::Board::load(ws, &name)?.target;
        if !targets.contains(&target) {
            targets.push(target);
        }
    }
    Ok(targets)
}

pub fn run() -> Result<i32> {
    let ws = Workspace::from_source();
    let needs = doctor::needs(&board_targets(&ws)?, false);
    doctor::ensure(&needs, ws.root(), false, &mut |line| eprintln!("{line}"))?;
    Ok(exit::OK)
}
