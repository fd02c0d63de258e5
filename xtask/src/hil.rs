//! `cargo xtask hil`: measure the firmware's memory on one or more boards.

use std::time::Duration;

use anyhow::{Context, Result};
use harness::hil::{self, Event, Options};
use harness::runner::probe::Selector;
use harness::{board, doctor, report, Workspace};

use crate::exit;

#[derive(clap::Args)]
pub struct Args {
    /// Board profile from boards/ (repeat for several, or `all-emulated` for every board that needs no hardware).
    #[arg(long = "board", default_value = board::DEFAULT_BOARD)]
    boards: Vec<String>,
    /// Model from the models file (repeat for several; default: all).
    #[arg(long = "model")]
    models: Vec<String>,
    /// Scenario to run (repeat for several; default: all four).
    #[arg(long = "scenario")]
    scenarios: Vec<String>,
    /// Frames of the streaming scenarios.
    #[arg(long, default_value_t = harness::measurement::DEFAULT_FRAMES)]
    frames: u32,
    /// Models file [default: hil.toml at the repository root].
    #[arg(long)]
    config: Option<std::path::PathBuf>,
    /// Output on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Longest time one scenario may run, in seconds [default: the board profile's].
    #[arg(long)]
    timeout: Option<u64>,
    /// Run the images of the last build without building.
    #[arg(long)]
    no_build: bool,
    /// Debug probe for real boards, VID:PID[:SERIAL] (overrides the profile).
    #[arg(long)]
    probe: Option<String>,
    /// Boards measured at once [default: the number of cores].
    #[arg(long)]
    jobs: Option<usize>,
    /// Directory for results.json [default: target/hilmem].
    #[arg(long)]
    out: Option<std::path::PathBuf>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Format {
    Table,
    Json,
}

pub fn run(args: Args) -> Result<i32> {
    let ws = Workspace::from_source();
    let boards = hil::resolve_boards(&ws, &args.boards)?;
    doctor::ensure(&doctor::needs(&boards, false), ws.root(), true, &mut |line| eprintln!("{line}"))?;

    let mut options = Options::new(&ws, args.boards);
    options.models = args.models;
    if !args.scenarios.is_empty() {
        options.scenarios = args.scenarios;
    }
    options.frames = args.frames;
    if let Some(config) = args.config {
        options.models_file = config;
    }
    options.timeout = args.timeout.map(Duration::from_secs);
    options.build = !args.no_build;
    if let Some(jobs) = args.jobs {
        options.jobs = jobs;
    }
    if let Some(probe) = &args.probe {
        options.run.probe = Some(Selector::parse(probe)?);
    }
    let results = hil::run(&ws, &options, &show_progress)?;
    let out = args.out.unwrap_or_else(|| ws.results_dir());
    let path = hil::save(&out, &results).with_context(|| format!("cannot write the results into {}", out.display()))?;
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
        Event::Building { board, model } => eprintln!("{board}/{model}: building"),
        Event::BuildOutput { board, line } if line.starts_with("Compiling") => eprintln!("{board}: {line}"),
        Event::BuildOutput { .. } => {}
        Event::Running { board, model, scenario } => eprintln!("{board}/{model}: running {scenario}"),
        Event::Finished { board, model, scenario, ok } => {
            eprintln!("{board}/{model}: {scenario} {}", if ok { "done" } else { "FAILED" })
        }
    }
}
