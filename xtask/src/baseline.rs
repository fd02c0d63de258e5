//! `cargo xtask baseline`: look at, compare, trace and approve the baselines.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use anyhow::{bail, Result};
use harness::verdict::approval::{self, Filter};
use harness::verdict::baseline::{self, Source};
use harness::verdict::compare::{self, Row};
use harness::{report, Workspace};

use harness::exit;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
    /// Directory of the approved baselines [default: baselines/ at the repository root].
    #[arg(long, global = true)]
    baselines: Option<PathBuf>,
    /// Directory of the run whose pending changes are reviewed [default: target/hilmem].
    #[arg(long, global = true)]
    results: Option<PathBuf>,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Print the approved figures.
    Show {
        #[arg(long)]
        board: Option<String>,
        #[arg(long)]
        model: Option<String>,
    },
    /// Changed figures between a revision and the work tree (or another revision).
    Diff {
        #[arg(long)]
        against: String,
        /// The newer side [default: the work tree].
        #[arg(long)]
        to: Option<String>,
    },
    /// One board and model's figures through every commit that changed them, oldest first.
    History {
        #[arg(long)]
        board: String,
        #[arg(long)]
        model: String,
        #[arg(long)]
        metric: Option<String>,
    },
    /// Accept the pending changes the filter selects, without prompting.
    Approve {
        #[arg(long)]
        board: Option<String>,
        #[arg(long)]
        model: Option<String>,
        #[arg(long)]
        scenario: Option<String>,
        /// Every pending change (required when no filter is given).
        #[arg(long)]
        all: bool,
        /// Commit the written baseline files (and nothing else) with git.
        #[arg(long)]
        commit: bool,
    },
    /// Walk the pending changes one by one: accept, reject or skip.
    Review {
        #[arg(long)]
        commit: bool,
    },
}

pub fn run(args: Args) -> Result<i32> {
    let ws = Workspace::from_source();
    let dir = args.baselines.unwrap_or_else(|| ws.baselines_dir());
    let results = args.results.unwrap_or_else(|| ws.results_dir());
    match args.command {
        Command::Show { board, model } => {
            let source = Source::WorkTree(dir.clone());
            for (b, m) in baseline::list(&source)? {
                if board.as_ref().is_none_or(|x| *x == b) && model.as_ref().is_none_or(|x| *x == m) {
                    let file = source.load(&b, &m)?.expect("listed");
                    println!("{}", report::terminal::baseline(&file));
                }
            }
        }
        Command::Diff { against, to } => {
            let from = Source::Revision { dir: dir.clone(), rev: against };
            let to = match to {
                Some(rev) => Source::Revision { dir: dir.clone(), rev },
                None => Source::WorkTree(dir.clone()),
            };
            let rows = compare::diff(&from, &to)?;
            println!(
                "{}",
                if rows.is_empty() { "no baseline changed".to_owned() } else { report::markdown::diff(&rows) }
            );
        }
        Command::History { board, model, metric } => {
            let history = baseline::history(&dir, &board, &model, metric.as_deref())?;
            println!("{}", report::terminal::history(&history.rows));
            for skipped in &history.unreadable {
                eprintln!("skipped a version that cannot be read: {skipped}");
            }
        }
        Command::Approve { board, model, scenario, all, commit } => {
            if !all && board.is_none() && model.is_none() && scenario.is_none() {
                bail!("say what to approve: --board, --model, --scenario, or --all");
            }
            approve(&results, &dir, &[Filter { board, model, scenario }], commit)?;
        }
        Command::Review { commit } => review(&results, &dir, commit)?,
    }
    Ok(exit::OK)
}

fn approver(dir: &std::path::Path) -> String {
    harness::gitrepo::who(dir).or_else(|| std::env::var("USER").ok()).unwrap_or_else(|| "unknown".into())
}

fn approve(results: &std::path::Path, dir: &std::path::Path, filters: &[Filter], commit: bool) -> Result<()> {
    let approver = approver(dir);
    let message = |diff: &[Row]| report::markdown::approval_message(diff, &approver);
    let approval = approval::approve(results, dir, filters, &approver, commit.then_some(&message))?;
    if approval.files.is_empty() {
        println!("nothing pending matches");
        return Ok(());
    }
    print!("{}", report::markdown::diff(&approval.diff));
    for file in &approval.files {
        println!("wrote {}", file.display());
    }
    if let Some(id) = approval.commit {
        println!("committed {}", &id[..12]);
    }
    Ok(())
}

/// Asks about each pending board, model and scenario in turn.
fn review(results: &std::path::Path, dir: &std::path::Path, commit: bool) -> Result<()> {
    let stdin = std::io::stdin();
    let mut answers = stdin.lock().lines();
    let mut accepted = Vec::new();
    for (board, model, path) in approval::pending(results)? {
        let candidate = baseline::read(&path, &board, &model)?;
        let current = Source::WorkTree(dir.to_owned()).load(&board, &model)?;
        for (scenario, new) in &candidate.scenario {
            let old = current.as_ref().and_then(|c| c.scenario.get(scenario)).cloned().unwrap_or_default();
            let rows = compare::diff_rows(&board, &model, scenario, &old, new);
            if rows.is_empty() {
                continue;
            }
            println!("{}", report::markdown::diff(&rows));
            loop {
                print!("{board}/{model} {scenario}: [a]ccept, [r]eject, [s]kip? ");
                std::io::stdout().flush()?;
                let Some(answer) = answers.next().transpose()? else { bail!("no answer on standard input") };
                match answer.trim() {
                    "a" | "accept" => accepted.push(Filter {
                        board: Some(board.clone()),
                        model: Some(model.clone()),
                        scenario: Some(scenario.clone()),
                    }),
                    "r" | "reject" => approval::reject(results, &board, &model, scenario)?,
                    "s" | "skip" => {}
                    _ => continue,
                }
                break;
            }
        }
    }
    if !accepted.is_empty() {
        approve(results, dir, &accepted, commit)?;
    }
    Ok(())
}
