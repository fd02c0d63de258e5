//! `cargo xtask bench`: what the harness costs on top of bare QEMU, and what
//! the arena layer's measurement machinery costs in the firmware.

use anyhow::{Context, Result};
use harness::config::models;
use harness::tflm::tree::Kernels;
use harness::{bench, Workspace};

use harness::exit;

#[derive(clap::Args)]
pub struct Args {
    /// Boards the harness runs at once [default: the number of cores].
    #[arg(long)]
    jobs: Option<usize>,
    /// Only the analyzer: parse and plan person_detection and synthetic
    /// models of 1,000 to 10,000 tensors (builds and runs nothing).
    #[arg(long)]
    analyzer: bool,
    /// Only the firmware's search for the least arena: person_detection's
    /// single frame on qemu-m7, the image with the search against one
    /// without it.
    #[arg(long, conflicts_with = "analyzer")]
    least_arena: bool,
    /// Models file whose models the timed run measures [default: hil.toml at
    /// the repository root].
    #[arg(long)]
    config: Option<std::path::PathBuf>,
    /// The TFLM of the timed run (as `hil --tflm`). The layer's cost is
    /// weighed on the bundled TFLM's person_detection image. With
    /// `--analyzer`, also times `analyze --tflm` on this tree, whole
    /// process, with the tree read and with its facts kept.
    #[arg(long)]
    tflm: Option<String>,
    /// The kernels of the timed run (as `hil --kernels`).
    #[arg(long, value_parser = ["reference", "cmsis-nn"])]
    kernels: Option<String>,
}

pub fn run(args: Args) -> Result<i32> {
    let ws = Workspace::from_source();
    let search = || -> Result<()> {
        let cost = bench::search_cost(&ws, LAYER_COST_MODEL, PAIRED_RUNS, &mut |line| eprintln!("{line}"))?;
        print_paired("the firmware's search for the least arena against an image without it", &cost);
        Ok(())
    };
    if args.least_arena {
        search()?;
        return Ok(exit::OK);
    }
    let mut models = vec![(
        "person_detection".to_owned(),
        models::load(&ws.models_file())?
            .models
            .into_iter()
            .find(|m| m.name == "person_detection")
            .context("no person_detection in hil.toml")?
            .parse()?
            .bytes,
    )];
    models.extend([1_000, 2_000, 5_000, 10_000].map(|n| (format!("synthetic-{n}"), bench::synthetic_model(n))));
    models.push(("branching".into(), bench::branching_model()));
    println!("analyzer, parse + plan, and hilmem's plan search alone (mean of repeated runs, this machine):");
    for t in bench::analyzer(&models)? {
        println!(
            "  {:<18} {:>6} tensors {:>8} bytes  {:>10.3} ms  ({} runs)  search {:>10.3} ms  \
             head: greedy {}, hilmem {}, lower bound {}",
            t.model,
            t.tensors,
            t.bytes,
            t.mean.as_secs_f64() * 1e3,
            t.iterations,
            t.search.as_secs_f64() * 1e3,
            t.greedy_bytes,
            t.hilmem_bytes,
            t.lower_bound_bytes
        );
    }
    if let (true, Some(tree)) = (args.analyzer, &args.tflm) {
        let exe = std::env::current_exe().context("cannot find this program")?;
        let mut with_tree = vec![models[0].clone()];
        with_tree.push(("synthetic-100-ops".into(), bench::synthetic_model(101)));
        println!("analyze --tflm {tree}, whole process (mean of {TREE_RUNS} runs each, alternating):");
        for t in bench::analyze_with_tree(&exe, tree.as_ref(), &with_tree, TREE_RUNS).map_err(anyhow::Error::msg)? {
            println!(
                "  {:<18} tree read {:>8.1} ms   facts kept {:>8.1} ms   ratio {:.1}",
                t.model,
                t.read.as_secs_f64() * 1e3,
                t.kept.as_secs_f64() * 1e3,
                t.ratio()
            );
        }
    }
    if args.analyzer {
        return Ok(exit::OK);
    }
    println!();
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let cost = bench::layer_cost(&ws, LAYER_COST_MODEL, &mut |line| eprintln!("{line}"))?;
    let models_file = args.config.unwrap_or_else(|| ws.models_file());
    let kernels = args.kernels.as_deref().and_then(Kernels::named);
    let report = bench::run(&ws, jobs, &models_file, (args.tflm, kernels), &mut |line| eprintln!("{line}"))?;
    println!("runtime:           {}", report.runtime);
    println!("boards:            {}", report.boards.join(", "));
    println!("images:            {}", report.images);
    println!("hilmem ({} jobs):   {:.2} s", report.jobs, report.hil.as_secs_f64());
    println!("bare qemu, serial: {:.2} s", report.bare.as_secs_f64());
    println!("ratio:             {:.3} (hilmem / (bare / {}); goal <= 1.15)", report.ratio(), report.jobs);
    println!();
    let (icount, shift) = bench::icount_cost(&ws, LAYER_COST_MODEL, PAIRED_RUNS, &mut |line| eprintln!("{line}"))?;
    print_paired(&format!("QEMU with -icount shift={shift} against without"), &icount);
    search()?;
    println!("arena layer measurement machinery ({}/{}, from the ELF):", cost.board, cost.model);
    println!("  flash:      {:+} bytes (goal <= 2048)", cost.flash_bytes());
    println!("  static RAM: {:+} bytes (goal <= 256)", cost.static_ram_bytes());
    Ok(exit::OK)
}

/// Runs each way of `analyze --tflm`'s whole-process timing.
const TREE_RUNS: u32 = 10;

/// Bare QEMU runs each way of the paired timings.
const PAIRED_RUNS: u32 = 5;

fn print_paired(what: &str, p: &bench::Paired) {
    println!("{what} ({}/{}, {}, {} bare runs each, alternating):", p.board, p.model, p.scenario, p.runs);
    println!(
        "  without: {:.2} s   with: {:.2} s   ratio {:.2}   {:.0} ms more a run",
        p.without.as_secs_f64(),
        p.with.as_secs_f64(),
        p.ratio(),
        p.added().as_secs_f64() * 1e3
    );
    println!();
}

/// The model whose image the layer's cost, QEMU's `-icount` and the least
/// arena's search are weighed on.
const LAYER_COST_MODEL: &str = "person_detection";
