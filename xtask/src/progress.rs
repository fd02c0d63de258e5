//! What a run shows while it goes, on standard error: on a terminal, bars
//! counting the images built and the scenario runs done, the step under
//! way beside each; elsewhere (CI, a pipe, a file), a line per step.

use std::io::IsTerminal;
use std::time::Duration;

use harness::children;
use harness::image::firmware::Variant;
use harness::run::Event;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

pub enum Progress {
    Lines,
    Bars { multi: MultiProgress, images: ProgressBar, runs: ProgressBar },
}

impl Progress {
    /// Bars when standard error is a terminal and `CI` is not set, lines
    /// otherwise.
    pub fn new() -> Progress {
        if !std::io::stderr().is_terminal() || std::env::var_os("CI").is_some() {
            return Progress::Lines;
        }
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template("{prefix:>6} [{bar:24}] {pos}/{len} {elapsed:>4} {wide_msg}")
            .expect("the template is valid")
            .progress_chars("=> ");
        let bar = |prefix| multi.add(ProgressBar::new(0).with_style(style.clone()).with_prefix(prefix));
        let (images, runs) = (bar("images"), bar("runs"));
        Progress::Bars { multi, images, runs }
    }

    pub fn show(&self, event: Event) {
        let line = line(&event);
        let Progress::Bars { multi, images, runs } = self else {
            if let Some(line) = line {
                eprintln!("{line}");
            }
            return;
        };
        match event {
            Event::Planned { images: built, runs: run } => {
                // Drawn from here on, ticking for the time each has taken.
                for (bar, length) in [(images, built), (runs, run)] {
                    bar.set_length(length as u64);
                    bar.set_position(0);
                    bar.enable_steady_tick(Duration::from_millis(250));
                }
            }
            Event::Built { board, model, ok } => {
                images.inc(1);
                images.set_message(format!("{board}/{model}: {}", if ok { "built" } else { "not built" }));
            }
            Event::Building { .. } | Event::BuildOutput { .. } => {
                if let Some(line) = line {
                    images.set_message(line);
                }
            }
            Event::Running { .. } | Event::StillRunning { .. } => runs.set_message(line.unwrap_or_default()),
            Event::Finished { .. } | Event::Skipped { .. } => {
                runs.inc(1);
                // What each run came to stays above the bars.
                if let Some(line) = line {
                    _ = multi.println(&line);
                    runs.set_message(line);
                }
            }
        }
    }
}

/// The bars stay where they stood, counts and all, above what follows.
impl Drop for Progress {
    fn drop(&mut self) {
        if let Progress::Bars { images, runs, .. } = self {
            images.abandon();
            runs.abandon();
            // The last bar's line is left without its end.
            eprintln!();
        }
    }
}

/// The line an event makes, if it makes one.
fn line(event: &Event) -> Option<String> {
    Some(match *event {
        Event::Planned { .. } | Event::Built { .. } => return None,
        Event::Building { board, model, variant: Variant::Recording, .. } => {
            format!("{board}/{model}: building the image over TFLM's recording allocator, for its breakdown")
        }
        Event::Building { board, model, arena_bytes, budget_bytes, .. } => {
            let over = if arena_bytes > budget_bytes {
                format!(", over the board's {budget_bytes}-byte arena budget")
            } else {
                String::new()
            };
            format!("{board}/{model}: building with a {arena_bytes}-byte arena{over}")
        }
        Event::BuildOutput { board, line } if line.starts_with("Compiling") => format!("{board}: {line}"),
        Event::BuildOutput { .. } => return None,
        Event::Running { board, model, scenario } => format!("{board}/{model}: running {scenario}"),
        Event::StillRunning { board, model, scenario, elapsed } => {
            format!("{board}/{model}: {scenario} still running after {} s", elapsed.as_secs())
        }
        Event::Finished { board, model, scenario, ok } => {
            let how = match (ok, children::cancelled()) {
                (true, _) => "done",
                (false, true) => "cancelled",
                (false, false) => "FAILED",
            };
            format!("{board}/{model}: {scenario} {how}")
        }
        Event::Skipped { board, model, scenario, why } => format!("{board}/{model}: {scenario} not run: {why}"),
    })
}
