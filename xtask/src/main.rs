//! `cargo xtask`: the hilmem command line. Each subcommand is a module; the
//! work itself is done by the `harness` library.

mod analyze;
mod baseline;
mod bench;
mod boards;
mod cancel;
mod ci;
mod docs;
mod doctor;
mod fuzz;
mod hil;
mod matrix;
mod mutants;
mod progress;
mod report;
mod sweep;
mod test;

use clap::{Parser, Subcommand};
use harness::exit;

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    about = "hilmem: hardware-in-the-loop memory regression tests for TFLM firmware"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build the reference firmware, run the scenarios, report memory figures.
    #[command(
        after_help = "Example: cargo xtask hil --board qemu-m7 --model hello_world --report\nChapter: Getting started (book/src/getting-started.md)"
    )]
    Hil(hil::Args),
    /// A model's memory plan and predicted arena, before building: tensors, lifetimes, TFLM's greedy plan, the tail, the least arena, and with --board the fit.
    #[command(
        after_help = "Example: cargo xtask analyze person_detection --board nucleo-h743\nChapter: The analyzer and the planners (book/src/analyzer.md)"
    )]
    Analyze(analyze::Args),
    /// Show, diff, trace and approve baselines.
    #[command(
        after_help = "Example: cargo xtask baseline approve --board qemu-m7 --model hello_world\nChapter: Baselines, approval and CI (book/src/baselines.md)"
    )]
    Baseline(baseline::Args),
    /// Time a full emulated run against bare QEMU runs of the same images.
    #[command(
        after_help = "Example: cargo xtask bench --least-arena\nChapter: What it costs (book/src/performance.md)"
    )]
    Bench(bench::Args),
    /// Damage the example models and keep each new kind of reader error in the test corpus.
    #[command(after_help = "Example: cargo xtask fuzz\nChapter: Tests and CI (book/src/testing.md)")]
    Fuzz(fuzz::Args),
    /// Exactly what CI runs: formatting, lints, workflow files, tests, and every emulated board against the baselines.
    #[command(after_help = "Example: cargo xtask ci --test-tflm ../tflm\nChapter: Tests and CI (book/src/testing.md)")]
    Ci(ci::Args),
    /// The last run as one self-contained HTML page: arena layouts, memory stack-ups, trends and the comparison.
    #[command(after_help = "Example: cargo xtask report\nChapter: Reports (book/src/reports.md)")]
    Report(report::Args),
    /// Mutation testing of the trust boundary (record, session decoder, verdict, tolerances, approval, frame parser).
    #[command(after_help = "Example: cargo xtask mutants\nChapter: Tests and CI (book/src/testing.md)")]
    Mutants(mutants::Args),
    /// The CI job matrix of the boards, as JSON.
    #[command(after_help = "Example: cargo xtask matrix\nChapter: Boards (book/src/boards.md)")]
    Matrix(matrix::Args),
    /// List the board profiles and the probes and serial ports attached now.
    #[command(after_help = "Example: cargo xtask boards\nChapter: Boards (book/src/boards.md)")]
    Boards(boards::Args),
    /// Check (and install where possible) the toolchain the firmware needs.
    #[command(after_help = "Example: cargo xtask doctor\nChapter: Getting started (book/src/getting-started.md)")]
    Doctor,
    /// Run the whole test suite, after the doctor's set-up.
    #[command(
        after_help = "Example: cargo xtask test --test-tflm ../tflm\nChapter: Tests and CI (book/src/testing.md)"
    )]
    Test(test::Args),
    /// Build the book, check its links, and check (or with --update write) the outputs it shows.
    #[command(
        after_help = "Example: cargo xtask docs --update --tflm ../tflm\nChapter: Reference (book/src/reference.md)"
    )]
    Docs(docs::Args),
    /// TFLM's history, one tree a month from clones of its repositories, each run with hello_world on the default board.
    #[command(
        after_help = "Example: cargo xtask sweep --repo tflite-micro --libraries libs\nChapter: Choosing the TFLM (book/src/tflm.md)"
    )]
    Sweep(sweep::Args),
}

fn main() {
    let cli = Cli::parse();
    if let Err(err) = check_checkout() {
        eprintln!("error: {err:#}");
        std::process::exit(exit::ERROR);
    }
    let result = match cli.command {
        Command::Hil(args) => hil::run(args),
        Command::Analyze(args) => analyze::run(args),
        Command::Baseline(args) => baseline::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Boards(args) => boards::run(args),
        Command::Ci(args) => ci::run(args),
        Command::Docs(args) => docs::run(args),
        Command::Fuzz(args) => fuzz::run(args),
        Command::Matrix(args) => matrix::run(args),
        Command::Mutants(args) => mutants::run(args),
        Command::Report(args) => report::run(args),
        Command::Doctor => doctor::run(),
        Command::Test(args) => test::run(args),
        Command::Sweep(args) => sweep::run(args),
    };
    let code = result.unwrap_or_else(|err| {
        eprintln!("error: {err:#}");
        exit::ERROR
    });
    std::process::exit(code);
}

/// Refuses to run for another checkout than the one this binary was built
/// from. `cargo xtask` says which checkout it runs the binary for (in
/// `CARGO_MANIFEST_DIR`); two checkouts sharing one cargo target directory
/// (a global `CARGO_TARGET_DIR`, or worktrees of one repository) could
/// otherwise run each other's binary, which would read and write the other
/// checkout's models, baselines and results.
fn check_checkout() -> anyhow::Result<()> {
    let built = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let Some(run_for) = std::env::var_os("CARGO_MANIFEST_DIR") else { return Ok(()) };
    let same = |a: &std::path::Path, b: &std::path::Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    if same(built, std::path::Path::new(&run_for)) {
        return Ok(());
    }
    anyhow::bail!(
        "this xtask binary was built from the checkout at {} but runs for the one at {} \
         (two checkouts sharing one cargo target directory?); give each checkout its own \
         CARGO_TARGET_DIR, or build again here with `cargo build -p xtask`",
        built.parent().unwrap_or(built).display(),
        std::path::Path::new(&run_for).parent().unwrap_or(std::path::Path::new(&run_for)).display()
    )
}
