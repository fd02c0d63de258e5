//! `cargo xtask boards`: the board profiles, and the probes and serial ports
//! attached right now.

use anyhow::Result;
use harness::spec::board;
use harness::target::runner::{self, probe};
use harness::{report, Workspace};

use crate::exit;

pub fn run() -> Result<i32> {
    let ws = Workspace::from_source();
    let boards = board::load_all(&ws)?;
    println!("{}", report::boards(&boards, &probe::attached(), &runner::serial_ports()));
    Ok(exit::OK)
}
