//! `cargo xtask hil`: measure the firmware's memory on one or more boards.

use std::time::Duration;

use anyhow::{Context, Result};
use harness::config::board;
use harness::config::hardware::Selector;
use harness::device::runner::noise::Noise;
use harness::report::outputs::{self, PageFrom};
use harness::run::{self, Options};
use harness::tflm::tree::Kernels;
use harness::verdict::approval;
use harness::verdict::baseline::Source;
use harness::verdict::compare::{self, Policy};
use harness::{doctor, fsutil, report, Workspace};

use crate::cancel;
use crate::progress::Progress;

#[derive(clap::Args)]
pub struct Args {
    /// Board profile from boards/ (repeat for several, or `all-emulated` for every board that needs no hardware).
    #[arg(long = "board", default_value = board::DEFAULT_BOARD)]
    boards: Vec<String>,
    /// Model or set from the models file (repeat for several; default: all).
    #[arg(long = "model")]
    models: Vec<String>,
    /// Scenario to run (repeat for several; default: all, multi-model for the sets), or a firmware self-test (`selftest-*`).
    #[arg(long = "scenario")]
    scenarios: Vec<String>,
    /// Frames of the streaming and multi-model scenarios.
    #[arg(long, default_value_t = harness::run::measurement::DEFAULT_FRAMES)]
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
    /// Directory for the results, reports and pending baselines [default: target/hilmem].
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    /// Directory of the approved baselines [default: baselines/ at the repository root].
    #[arg(long)]
    baselines: Option<std::path::PathBuf>,
    /// Compare with the baselines as committed at this git revision instead of
    /// the work tree; `auto`: on a pull request (GITHUB_BASE_REF set), the merge
    /// base with its target branch, otherwise the work tree.
    #[arg(long)]
    against: Option<String>,
    /// Also fail on new, missing and improved figures.
    #[arg(long)]
    strict: bool,
    /// Also write the HTML report (report.html, as `cargo xtask report` does).
    #[arg(long)]
    report: bool,
    /// `auto`: size every model's arena from the analyzer's prediction plus
    /// the board's safety margin (as `arena_bytes = "auto"` in the models file).
    #[arg(long, value_enum)]
    arena: Option<ArenaFlag>,
    /// The TFLM to build against: a tflite-micro checkout (with its
    /// third-party downloads) or a tree made by create_tflm_tree.py, or
    /// `bundled` [default: HILMEM_TFLM_DIR, else `[tflm] path` in the models
    /// file, else the bundled 2020 archive].
    #[arg(long)]
    tflm: Option<String>,
    /// The kernels every model is built with: TFLM's `reference` kernels
    /// or ARM's `cmsis-nn` (a tflite-micro checkout with its CMSIS-NN
    /// downloads, a Cortex-M board) [default: the models file's `kernels`,
    /// else reference].
    #[arg(long, value_parser = ["reference", "cmsis-nn"])]
    kernels: Option<String>,
    /// Run again, up to this many times, a run that failed on the way from
    /// the target (a corrupt frame, frames lost, a board that reset); a
    /// failed check is never run again.
    #[arg(long, default_value_t = 0)]
    retries: u32,
    /// Run every scenario this many times from fresh boots: a figure that
    /// varies is shown with its least and largest value, and fails on the
    /// emulated boards, whose figures are deterministic.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    /// For testing how runs survive a noisy link: damage each byte the
    /// firmware sends with this probability (0.001 is 0.1%), dropping,
    /// flipping or doubling it.
    #[arg(long, value_parser = noise_rate)]
    link_noise: Option<u32>,
    /// Have the firmware send every frame after the command this many times
    /// (1 to 16) under its one number: over a noisy link, one whole copy of
    /// each frame is enough (a frame all of whose copies were damaged still
    /// fails the run, on the way from the target).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=16))]
    frame_copies: u8,
    /// Build the images and record what needs no target (sizes from the ELF,
    /// footprint by component, predicted and least arena, the fit in the
    /// board's regions), compared with the baselines; run nothing.
    #[arg(long, conflicts_with_all = ["scenarios", "no_build", "repeat", "retries", "link_noise", "frame_copies"])]
    build_only: bool,
    /// For boards behind a debug probe: build and check each image as
    /// --build-only does, then say what deploying it would do (the probe
    /// chosen, the flash ranges written, the RTT control block) without
    /// touching a probe; exit 2 when it could not be deployed now.
    #[arg(long, conflicts_with_all = ["scenarios", "no_build", "repeat", "retries", "link_noise", "frame_copies"])]
    dry_run: bool,
}

/// A probability from 0 to 1, in parts per million.
fn noise_rate(text: &str) -> Result<u32, String> {
    match text.parse::<f64>() {
        Ok(rate) if (0.0..=1.0).contains(&rate) => Ok((rate * 1e6).round() as u32),
        _ => Err(format!("`{text}`: give a probability from 0 to 1, such as 0.001")),
    }
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ArenaFlag {
    Auto,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Format {
    Table,
    Json,
    Markdown,
    Junit,
}

pub fn run(args: Args) -> Result<i32> {
    let ws = Workspace::from_source();
    let boards = run::resolve_boards(&ws, &args.boards)?;
    doctor::ensure(&doctor::needs(&boards, false), ws.root(), true, &mut |line| eprintln!("{line}"))?;

    let mut options = Options::new(&ws, boards);
    options.models = args.models;
    if !args.scenarios.is_empty() {
        options.scenarios = args.scenarios;
    }
    options.frames = args.frames;
    options.arena_auto = args.arena.is_some();
    options.tflm = args.tflm;
    options.kernels = args.kernels.as_deref().and_then(Kernels::named);
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
    options.build_only = args.build_only || args.dry_run;
    // Boards behind a debug probe with none attached: said once, their
    // images built and compared as --build-only, nothing flashed; the run's
    // other boards run.
    let absent = if options.build_only { Vec::new() } else { run::unattached(&options.boards, &options.run)? };
    options.unattached = absent.iter().map(|(board, _)| board.clone()).collect();
    options.retries = args.retries;
    options.repeat = args.repeat;
    options.run.noise = args.link_noise.map(|per_million| Noise { per_million, seed: 1 });
    options.run.copies = args.frame_copies;
    let baselines_dir = args.baselines.unwrap_or_else(|| ws.baselines_dir());
    let source = match resolve_against(&ws, args.against)? {
        Some(rev) => Source::Revision { dir: baselines_dir.clone(), rev },
        None => Source::WorkTree(baselines_dir.clone()),
    };
    let policy = Policy::load(&baselines_dir)?;

    // One run at a time writes into an output directory; others may run
    // beside it with their own --out.
    let out = args.out.unwrap_or_else(|| ws.results_dir());
    let lock = out.join(".hilmem.lock");
    let _lock = fsutil::Lock::try_take(&lock)
        .with_context(|| format!("cannot take the lock {}", lock.display()))?
        .with_context(|| {
            format!(
                "another hilmem run is writing into {} (lock {}); wait for it, or give this run its own --out",
                out.display(),
                lock.display()
            )
        })?;
    cancel::install();
    let results = {
        let progress = Progress::new();
        run::run(&ws, &options, &|event| progress.show(event))?
    };
    let started = std::time::Instant::now();
    let comparison = compare::compare(&results, &source, &policy)?;
    let page = args.report.then_some(PageFrom { boards: &options.boards, baselines_dir: &baselines_dir });
    let saved = outputs::save(&ws, &out, &results, &comparison, args.strict, page)?;
    if let Some(page) = &saved.page {
        eprintln!("report: {}", ws.shown(page));
    }
    eprintln!(
        "compared {} figures and wrote the reports in {:.1} ms",
        comparison.rows.len(),
        started.elapsed().as_secs_f64() * 1000.0
    );

    match args.format {
        Format::Table => {
            println!("{}\n\n{}", report::terminal::table(&results), report::terminal::comparison_table(&comparison))
        }
        Format::Json => println!("{}", results.to_json()),
        Format::Markdown => println!("{}", report::markdown::report(&results, &comparison)),
        Format::Junit => println!("{}", report::junit::report(&results, &comparison, args.strict)),
    }
    eprintln!("results, comparison.json, report.md, junit.xml: {}", ws.shown(&out));
    if !saved.pending.is_empty() {
        eprintln!(
            "{} pending baseline change(s) under {}; review them with `cargo xtask baseline review`",
            saved.pending.len(),
            ws.shown(&approval::pending_dir(&out))
        );
    }
    if !absent.is_empty() {
        for line in outputs::unattached_lines(&absent, &report::verdict_line(&results, &comparison)) {
            eprintln!("{line}");
        }
    }
    let undeployable = args.dry_run && !show_deploys(&ws, &run::dry_run(&ws, &options)?);
    Ok(outputs::status(&results, &comparison, args.strict, undeployable, !absent.is_empty()))
}

/// What `--dry-run` found for each image; whether every one could be
/// deployed now.
fn show_deploys(ws: &Workspace, deploys: &[run::Deploy]) -> bool {
    let mut all = true;
    for d in deploys {
        let image = format!("{}/{}", d.board, d.model);
        match &d.plan {
            Err(e) => {
                all = false;
                eprintln!("{image}: cannot deploy {}: {e}", ws.shown(&d.elf));
            }
            Ok(plan) => {
                let writes: Vec<String> = plan
                    .writes
                    .iter()
                    .map(|(start, bytes, region)| format!("{bytes} bytes at {start:#010x} ({region})"))
                    .collect();
                eprintln!("{image}: would flash {} to the {}: {}", ws.shown(&d.elf), plan.chip, writes.join(", "));
                eprintln!("{image}: RTT control block at {:#010x}, in {}", plan.rtt.0, plan.rtt.1);
                match &plan.probe {
                    Ok(probe) => eprintln!("{image}: probe: {probe}"),
                    Err(e) => {
                        all = false;
                        eprintln!("{image}: probe: {e}; nothing was flashed");
                    }
                }
            }
        }
    }
    all
}

/// The revision `--against` names, with `auto` resolved.
fn resolve_against(ws: &Workspace, against: Option<String>) -> Result<Option<String>> {
    match against.as_deref() {
        Some("auto") => match std::env::var("GITHUB_BASE_REF").ok().filter(|b| !b.is_empty()) {
            Some(base) => Ok(Some(harness::gitrepo::merge_base(ws.root(), &format!("origin/{base}"))?)),
            None => Ok(None),
        },
        _ => Ok(against),
    }
}
