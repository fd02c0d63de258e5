//! `cargo xtask boards`: the board profiles, and the probes and serial ports
//! attached right now.

use anyhow::Result;
use harness::config::board;
use harness::device::runner::{self, probe};
use harness::{report, Workspace};

use harness::exit;

#[derive(clap::Args)]
pub struct Args {
    /// Only the board profiles, not what is attached to this machine.
    #[arg(long)]
    profiles: bool,
}

pub fn run(args: Args) -> Result<i32> {
    let ws = Workspace::from_source();
    println!("{}", report::terminal::boards(&board::load_all(&ws)?));
    if !args.profiles {
        println!("\n{}", report::terminal::attached(&probe::attached(), &runner::serial_ports()));
    }
    Ok(exit::OK)
}
