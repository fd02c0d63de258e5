//! `cargo xtask matrix`: the CI job matrix, from the board profiles (JSON
//! for a workflow's `strategy.matrix`), so no workflow lists boards by hand.

use anyhow::Result;
use harness::config::board;
use harness::Workspace;

use harness::exit;

#[derive(clap::Args)]
pub struct Args {
    /// Which boards: those behind a debug probe (self-hosted runners), or
    /// those that need no hardware (hosted runners).
    #[arg(long, value_enum, default_value_t = Kind::Real)]
    kind: Kind,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Kind {
    Real,
    Emulated,
}

pub fn run(args: Args) -> Result<i32> {
    let ws = Workspace::from_source();
    let include: Vec<serde_json::Value> = board::load_all(&ws)?
        .into_iter()
        .filter(|b| b.is_emulated() == (args.kind == Kind::Emulated))
        .filter_map(|b| Some(serde_json::json!({ "board": b.name, "label": b.ci_label? })))
        .collect();
    println!("{}", serde_json::json!({ "include": include }));
    Ok(exit::OK)
}
