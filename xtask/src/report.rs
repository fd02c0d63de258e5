//! `cargo xtask report`: the last run as one self-contained HTML page.

use anyhow::{Context, Result};
use harness::report::page;
use harness::run::{self, results::Results};
use harness::verdict::compare::Comparison;
use harness::Workspace;

use harness::exit;

#[derive(clap::Args)]
pub struct Args {
    /// Directory of the run's results.json and comparison.json; the page is written there [default: target/hilmem].
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    /// Models file the run used [default: hil.toml at the repository root].
    #[arg(long)]
    config: Option<std::path::PathBuf>,
    /// Directory of the approved baselines, whose git history the trends show [default: baselines/].
    #[arg(long)]
    baselines: Option<std::path::PathBuf>,
}

pub fn run(args: Args) -> Result<i32> {
    let ws = Workspace::from_source();
    let out = args.out.unwrap_or_else(|| ws.results_dir());
    let read = |name: &str| -> Result<String> {
        let path = out.join(name);
        std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}; run `cargo xtask hil` first", path.display()))
    };
    let mut results: Results =
        serde_json::from_str(&read("results.json")?).context("results.json is not a hilmem run")?;
    let comparison: Comparison =
        serde_json::from_str(&read("comparison.json")?).context("comparison.json is not a hilmem comparison")?;
    let models_file = args.config.unwrap_or_else(|| ws.models_file());
    let baselines = args.baselines.unwrap_or_else(|| ws.baselines_dir());
    results.models = page::gather::saved_run_models(&results, &models_file)?;
    let boards = run::resolve_boards(&ws, &results.boards)?;
    let path = page::write(&ws, results, comparison, &boards, &baselines, &out)
        .with_context(|| format!("cannot write the report into {}", out.display()))?;
    println!("{}", ws.shown(&path));
    Ok(exit::OK)
}
