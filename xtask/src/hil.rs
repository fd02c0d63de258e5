//! `cargo xtask hil`: measure the firmware's memory on a board.

use std::time::Duration;

use anyhow::{Context, Result};
use harness::hil::{self, Event, Options};
use harness::{board, doctor, report, Workspace};

use crate::exit;

#[derive(clap::Args)]
pub struct Args {
    /// Board profile from boards/.
    #[arg(long, default_value = board::DEFAULT_BOARD)]
    board: String,
    /// Model from the models file (repeat for several; default: all).
    #[arg(long = "model")]
    models: Vec<String>,
    /// Models file [default: hil.toml at the repository root].
    #[arg(long)]
    config: Option<std::path::PathBuf>,
    /// Output on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Longest time one scenario may run, in seconds.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Format {
    Table,
    Json,
}

pub fn run(args: Args) -> Result<i32> {
    let ws = Workspace::from_source();
    let board = board::Board::load(&ws, &args.board)?;
    let needs = doctor::needs(std::slice::from_ref(&board.target), false);
    doctor::ensure(&needs, ws.root(), true, &mut |line| eprintln!("{line}"))?;

    let options = Options {
        board: args.board,
        models_file: args.config.unwrap_or_else(|| ws.models_file()),
        models: args.models,
        timeout: Duration::from_secs(args.timeout),
    };
    let results = hil::run(&ws, &options, &mut show_progress)?;
    let path = hil::save(&ws, &results).context("cannot write the results")?;
    match args.format {
        Format::Table => println!("{}", report::table(&results)),
        Format::Json => println!("{}", report::json(&results)),
    }
    eprintln!("results: {}", path.strip_prefix(ws.root()).unwrap_or(&path).display());
    Ok(if !results.failed.is_empty() {
        exit::ERROR
    } else if !results.all_checks_passed() {
        exit::REGRESSION
    } else {
        exit::OK
    })
}

fn show_progress(event: Event) {
    match event {
        Event::Building { board, model, index, total } => {
            eprintln!("[{}/{total}] {board}/{model}: building", index + 1)
        }
        Event::BuildOutput(line) if line.starts_with("Compiling") => eprintln!("      {line}"),
        Event::BuildOutput(_) => {}
        Event::Running { board, model, scenario } => eprintln!("      {board}/{model}: running {scenario}"),
    }
}
