//! `cargo xtask fuzz`: damage the example models and keep every new kind of
//! reader error in the corpus the tests replay.

use anyhow::{Context, Result};
use harness::model::fuzz;
use harness::spec::models;
use harness::Workspace;

use crate::exit;

#[derive(clap::Args)]
pub struct Args {
    /// Damaged inputs per example model.
    #[arg(long, default_value_t = 20_000)]
    cases: usize,
    /// Seed of the damage; another seed explores other inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

const MAX_SEED_BYTES: usize = 32 * 1024;

pub fn run(args: Args) -> Result<i32> {
    let ws = Workspace::from_source();
    // The small example models: person_detection (236 KB) would make every
    // corpus file as large.
    let mut seeds = Vec::new();
    for spec in models::load(&ws.models_file())?.models {
        let bytes = spec.parse()?.bytes;
        if bytes.len() <= MAX_SEED_BYTES {
            seeds.push((spec.name.clone(), bytes));
        }
    }
    let corpus = ws.root().join("harness/tests/corpus");
    let report = fuzz::run(&seeds, args.seed, args.cases, &corpus)
        .with_context(|| format!("cannot keep the corpus in {}", corpus.display()))?;
    println!(
        "{} damaged inputs, {} refused, {} kinds of error; {} new in {}",
        report.cases,
        report.errors,
        report.kinds.len(),
        report.kept.len(),
        corpus.display()
    );
    for file in &report.kept {
        println!("  kept {}", file.strip_prefix(ws.root()).unwrap_or(file).display());
    }
    Ok(exit::OK)
}
