//! `cargo xtask fuzz`: damage the example models and good frame lines, and
//! keep every new kind of reader or wire-decoder error in the corpora the
//! tests replay.

use anyhow::{Context, Result};
use harness::config::models;
use harness::device::wire::{self, WIRE};
use harness::fuzz::{self, Subject};
use harness::model::fuzz::MODELS;
use harness::Workspace;

use harness::exit;

#[derive(clap::Args)]
pub struct Args {
    /// Damaged inputs per seed (each small example model, each frame type).
    #[arg(long, default_value_t = 20_000)]
    cases: usize,
    /// Seed of the damage; another seed explores other inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

const MAX_SEED_BYTES: usize = 32 * 1024;

/// Good inputs by name.
type Seeds = Vec<(String, Vec<u8>)>;

pub fn run(args: Args) -> Result<i32> {
    let ws = Workspace::from_source();
    // The small example models: person_detection (236 KB) would make every
    // corpus file as large.
    let mut models = Vec::new();
    for spec in models::load(&ws.models_file())?.models {
        let bytes = spec.parse()?.bytes;
        if bytes.len() <= MAX_SEED_BYTES {
            models.push((spec.name.clone(), bytes));
        }
    }
    let subjects: [(&str, &Subject, Seeds, &str); 2] = [
        ("models", &MODELS, models, "harness/tests/corpus"),
        ("frame lines", &WIRE, wire::seeds(), "harness/tests/corpus-wire"),
    ];
    for (what, subject, seeds, dir) in subjects {
        let corpus = ws.root().join(dir);
        let report = fuzz::run(subject, &seeds, args.seed, args.cases, &corpus)
            .with_context(|| format!("cannot keep the corpus in {}", corpus.display()))?;
        println!(
            "{what}: {} damaged inputs, {} refused, {} kinds of error; {} new in {dir}",
            report.cases,
            report.errors,
            report.kinds.len(),
            report.kept.len(),
        );
        for file in &report.kept {
            println!("  kept {}", ws.shown(file));
        }
    }
    Ok(exit::OK)
}
