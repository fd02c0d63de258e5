//! `cargo xtask analyze`: a model's memory plan before anything is built.

use anyhow::{Context, Result};
use harness::{models, report, tflite, Workspace};

use crate::exit;

#[derive(clap::Args)]
pub struct Args {
    /// A model of hil.toml, or the path of a .tflite file.
    model: String,
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
    let missing = tflite::unsupported(&model);
    println!("{}", report::analysis(&args.model, &model)?);
    if !missing.is_empty() {
        println!("the bundled TFLM does not register: {}", missing.join(", "));
        return Ok(exit::ERROR);
    }
    Ok(exit::OK)
}
