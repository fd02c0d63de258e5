//! `cargo xtask analyze`: a model's memory plan before anything is built.

use anyhow::{Context, Result};
use harness::planner::Analysis;
use harness::{models, report, tflite, Workspace};

use crate::exit;

#[derive(clap::Args)]
pub struct Args {
    /// A model of hil.toml, or the path of a .tflite file.
    model: String,
    /// Output on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Format {
    Table,
    Json,
}

pub fn run(args: Args) -> Result<i32> {
    let ws = Workspace::from_source();
    let file = ws.models_file();
    let path = match models::load(&file)?.into_iter().find(|m| m.name == args.model) {
        Some(spec) => spec.file,
        None => std::path::PathBuf::from(&args.model),
    };
    let bytes = std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let model = tflite::read(&bytes).with_context(|| format!("{} is not a TFLite flatbuffer", path.display()))?;
    let analysis = Analysis::of(&args.model, &model)?;
    match args.format {
        Format::Table => println!("{}", report::analysis(&analysis)),
        Format::Json => println!("{}", serde_json::to_string_pretty(&analysis).expect("analysis serializes")),
    }
    Ok(if analysis.unsupported.is_empty() { exit::OK } else { exit::ERROR })
}
