//! Why a run is not a measurement, and the measurement when it is: the
//! checks of what the target said (its identity, its ending, the figures it
//! owes) that turn one run into a record or into the reason there is none.

use std::collections::BTreeMap;
use std::path::PathBuf;

use hilmem_protocol::exit;

use crate::config::board::Board;
use crate::config::fit::predicts_for;
use crate::config::models::{Model, ModelSpec};
use crate::device::runner::{Ending, Run, RunnerError};
use crate::image::elf::{ElfError, ImageSizes};
use crate::image::firmware::{BuildError, Firmware};
use crate::image::footprint::FootprintError;
use crate::model::analysis::{Analysis, SetAnalysis, Sharing};
use crate::model::tflite::ReadError;
use crate::run::measurement::{
    checks, clock_note, of_resident, ArenaPrediction, Measurement, Recorded, TflmBreakdown, NOT_REPORTED, RECORDED,
};
use hilmem_protocol::metric;
use hilmem_protocol::scenario::{DMA_STREAM, DMA_STREAM_SLOW, MULTI_MODEL, SINGLE_FRAME};

/// The note a single-frame record on a 32-bit board carries instead of a
/// prediction: why there is none.
pub const NOT_PREDICTED: &str = "arena_not_predicted";

/// The note of a capture record that names the clock it ran at.
pub const CLOCK: &str = "clock";

/// The least an exception stacks on a Cortex-M (8 words), which a stack
/// bound adds to the thread's peak at the least.
const MIN_EXCEPTION_FRAME: i64 = 32;

/// Lines of firmware output shown when a run goes wrong.
const TAIL_LINES: usize = 12;

/// Why one board, model and scenario produced no measurement.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Build(#[from] BuildError),
    #[error(transparent)]
    Elf(#[from] ElfError),
    #[error(transparent)]
    Footprint(#[from] FootprintError),
    #[error("{context}: {0}", context = .1)]
    Runner(RunnerError, String),
    #[error("{context}: {}: {detail} (stage `{stage}`, status {code})", stage_meaning(stage))]
    Firmware { context: String, stage: String, code: i32, detail: String },
    #[error("{context}: {what}\n{tail}")]
    Target { context: String, what: String, tail: String },
    #[error("{context}: corrupt frame on the wire ({error}): {line}")]
    Wire { context: String, line: String, error: String },
    /// A frame numbered after one that never arrived.
    #[error(
        "{context}: frame {seq} was lost on the link: a later frame arrived before it ({damaged} damaged frame \
         lines)\n{tail}"
    )]
    Lost { context: String, seq: u16, damaged: usize, tail: String },
    /// The firmware says it finished (exit status 0), but the harness did not
    /// hear all of it: the link lost frames.
    #[error("{context}: {what}, though the firmware finished: the link lost it\n{tail}")]
    Link { context: String, what: String, tail: String },
    #[error("{context}: refusing to deploy {elf}: it was built as `{found}`, expected `{expected}`")]
    WrongImage { context: String, elf: PathBuf, found: String, expected: String },
    #[error("{context}: no image at {elf}; run without --no-build first")]
    NotBuilt { context: String, elf: PathBuf },
    #[error("{context}: no image to run: {error}")]
    Image { context: String, error: String },
    /// The last of several tries, each failed on the way from the target.
    #[error("{last} (after {tries} tries)")]
    Retried { tries: usize, last: Box<RunError> },
    /// "auto" with no predicted least arena: the boot that measures it
    /// failed, or said nothing of it.
    #[error(
        "board `{board}`, model `{model}`: `arena_bytes = \"auto\"`: the least arena is not predicted ({why}); the \
         first boot that measures it, in the board's {budget}-byte budget for the arena, failed: {failed}"
    )]
    FirstBoot { board: String, model: String, why: String, budget: u32, failed: String },
}

impl RunError {
    /// Whether the run failed on the way from the target rather than on it
    /// (a corrupt or out-of-sequence frame, such as the second hello of a
    /// board that reset; a frame lost; the link itself failing): worth
    /// running again. A failed check is not an error
    /// at all, so it is never run again.
    pub fn is_transport(&self) -> bool {
        matches!(
            self,
            RunError::Wire { .. }
                | RunError::Lost { .. }
                | RunError::Link { .. }
                | RunError::Runner(RunnerError::Io { .. }, _)
        )
    }
}

fn stage_meaning(stage: &str) -> &'static str {
    // A set's stages name its model: "load `name`".
    match stage.split(' ').next().unwrap_or(stage) {
        "board" => "the firmware refused to run on this board",
        "load" => "TFLM could not load the model",
        "input" => "the input could not be fed to the model",
        "invoke" => "inference failed",
        "output" => "the output could not be read",
        "command" => "the firmware refused the harness's command",
        "least" => "the search for the least arena failed",
        _ => "the firmware stopped",
    }
}

/// Names the board, model and scenario in a message.
pub fn context(board: &Board, model: &ModelSpec, scenario: &str) -> String {
    format!("board `{}`, model `{}`, scenario `{scenario}`", board.name, model.name)
}

/// Turns what a run said into a measurement, or into the reason there is none.
pub fn record(
    board: &Board,
    model: &Model,
    firmware: &Firmware,
    sizes: ImageSizes,
    scenario: &str,
    run: &Run,
) -> Result<Measurement, RunError> {
    let spec = &model.spec;
    let context = context(board, spec, scenario);
    let session = &run.session;
    let tail = || {
        let mut lines = session.tail(TAIL_LINES);
        lines.extend(run.diagnostics.lines().map(|l| format!("runner: {l}")));
        if lines.is_empty() {
            "(the target printed nothing)".to_owned()
        } else {
            format!("last lines from the target:\n  {}", lines.join("\n  "))
        }
    };
    let target = |what: String| RunError::Target { context: context.clone(), what, tail: tail() };
    // What is missing when the firmware exited 0 was lost on the way.
    let missing = |what: String| match run.ending {
        Ending::Exited(exit::OK) => RunError::Link { context: context.clone(), what, tail: tail() },
        _ => target(what),
    };

    if let Some(seq) = session.lost {
        return Err(RunError::Lost { context, seq, damaged: session.corrupt.len(), tail: tail() });
    }
    // With copies, a damaged line costs nothing when every frame arrived in
    // another copy, to the last; sent once, it was a frame.
    if let Some(bad) = session.corrupt.first().filter(|_| session.copies == 1 || session.done.is_none()) {
        return Err(RunError::Wire { context, line: bad.line.clone(), error: bad.error.to_string() });
    }
    if let Some(line) = session.unexpected.first() {
        return Err(RunError::Wire { context, line: line.clone(), error: "frame out of sequence".into() });
    }
    match &run.ending {
        Ending::TimedOut(limit) => {
            let expected = if session.hello.is_none() {
                "a Hello frame after boot"
            } else if session.metrics.is_empty() {
                "the scenario's Metric frames after the Run command"
            } else {
                "a Done frame and the firmware's exit"
            };
            return Err(target(format!(
                "no answer within {} s (expected {expected}); the target was stopped (a long run, such as a \
                 soak of many --frames, needs a longer --timeout)",
                limit.as_secs_f32()
            )));
        }
        Ending::Died(how) => return Err(target(format!("the target died: {how}"))),
        Ending::Exited(exit::PANIC) => return Err(target("the firmware panicked".into())),
        Ending::Exited(exit::HARD_FAULT) => return Err(target("the firmware hit a HardFault".into())),
        Ending::Exited(_) => {}
    }
    if let Some(f) = &session.failure {
        return Err(RunError::Firmware { context, stage: f.stage.clone(), code: f.code, detail: f.detail.clone() });
    }
    let Some(hello) = &session.hello else {
        return Err(missing("the firmware never said hello (expected a Hello frame after boot)".into()));
    };
    if hello.board != board.name || hello.model != spec.name {
        return Err(target(format!("the image is for board `{}`, model `{}`", hello.board, hello.model)));
    }
    if u64::from(hello.arena_capacity) != sizes.arena_capacity_bytes {
        return Err(target(format!(
            "the firmware reports a {} byte arena but its ELF symbol is {} bytes",
            hello.arena_capacity, sizes.arena_capacity_bytes
        )));
    }
    if session.done != Some(true) || run.ending != Ending::Exited(exit::OK) {
        return Err(missing(format!(
            "the run did not finish cleanly (expected Done and exit 0, got {:?})",
            run.ending
        )));
    }
    // Each model of a set reports its part of the arena, and in an arena of
    // its own, may report its least arena.
    let of_residents = |figure: &str| -> Vec<String> {
        let models = spec.set.iter().flat_map(|set| &set.models);
        models.map(|m| of_resident(&m.name, figure)).collect()
    };
    let (residents, resident_least) = (of_residents(metric::ARENA_USED_BYTES), of_residents(metric::LEAST_ARENA_BYTES));
    for (name, line) in &session.metric_frames {
        let why = if metric::FROM_IMAGE.contains(&name.as_str()) {
            "hilmem reads that figure from the model file and the ELF, never from the firmware"
        } else if !metric::REPORTABLE.contains(&name.as_str())
            && !residents.contains(name)
            && !resident_least.contains(name)
        {
            "no firmware figure has that name"
        } else {
            continue;
        };
        return Err(target(format!("the firmware reported `{name}` ({line}): {why}")));
    }

    let mut metrics = image_figures(firmware, sizes);
    // A host process has its peak resident set; a Cortex-M board its
    // handlers' stack and the stack's bound.
    let platform: &[&str] = match sizes.flash_bytes {
        None => &[metric::RSS_PEAK_BYTES],
        Some(_) => &metric::FROM_CORTEX_M,
    };
    let interrupt: &[&str] = match spec.set.as_ref().and_then(|set| set.interrupt) {
        Some(_) if scenario == MULTI_MODEL => &[metric::INTERRUPT_INFERENCES, metric::PREEMPTIONS],
        _ => &[],
    };
    let required = metric::FROM_FIRMWARE.iter().chain(metric::required_by(scenario)).chain(platform).chain(interrupt);
    for name in required.copied().chain(residents.iter().map(String::as_str)) {
        if !session.metrics.contains_key(name) {
            return Err(missing(format!("the firmware did not report `{name}`")));
        }
    }
    // Everything the firmware reported (each a reportable figure, checked
    // above) is part of the record.
    metrics.extend(session.metrics.iter().map(|(name, value)| (name.clone(), *value)));
    if let Some(&bound) = metrics.get(metric::STACK_BOUND_BYTES) {
        let parts = metrics[metric::STACK_PEAK_BYTES] + metrics[metric::INTERRUPT_STACK_PEAK_BYTES];
        if bound < parts + MIN_EXCEPTION_FRAME {
            return Err(target(format!(
                "the firmware's stack bound ({bound} bytes) is less than the thread's and the handlers' peaks \
                 ({parts} bytes) and an exception frame"
            )));
        }
    }
    // TFLM's split of the arena, from the lines it printed (see
    // [`owners`]). Those lines carry no checksum: each must add up to the
    // figure that came in a checked frame, or one of them was damaged on
    // the way.
    let splits = prints(&session.log)
        .iter()
        .map(|lines| Ok((printed(lines, HEAD_USAGE)?, printed(lines, TAIL_USAGE)?)))
        .collect::<Result<Vec<_>, String>>()
        .and_then(|splits| owners(spec, splits))
        .map_err(|what| missing(format!("TFLM did not print {what}")))?;
    for (owner, (head, tail)) in splits {
        let name = |figure: &str| owner.map_or_else(|| figure.to_owned(), |model| of_resident(model, figure));
        let (used_name, used) = (name(metric::ARENA_USED_BYTES), metrics[&name(metric::ARENA_USED_BYTES)]);
        if head + tail != used {
            return Err(missing(format!(
                "TFLM's printed head and tail ({head} + {tail} bytes) do not add up to its {used_name} ({used})"
            )));
        }
        metrics.insert(name(metric::ARENA_HEAD_BYTES), head);
        metrics.insert(name(metric::ARENA_TAIL_BYTES), tail);
    }
    // The analyzer predicts for 32-bit Arm, for the firmware's TFLM; where
    // it cannot, the record says why.
    let mut notes = session.notes.clone();
    if matches!(scenario, DMA_STREAM | DMA_STREAM_SLOW) {
        notes.insert(CLOCK.into(), clock_note(board, scenario));
    }
    let mut arena_prediction = None;
    if (scenario == SINGLE_FRAME || scenario == MULTI_MODEL) && predicts_for(board) {
        let cannot = |e: ReadError| target(format!("the analyzer cannot predict the arena of the model it ran: {e}"));
        match predict(model, firmware).map_err(cannot)?.arena {
            Ok(predicted) => {
                arena_prediction = Some(ArenaPrediction {
                    predicted_bytes: predicted as i64,
                    measured_bytes: metrics[metric::ARENA_USED_BYTES],
                })
            }
            Err(caveats) => {
                notes.insert(NOT_PREDICTED.into(), caveats);
            }
        }
    }
    let checks = checks(spec, scenario, session);
    if let Some(check) = checks.iter().find(|c| c.detail == NOT_REPORTED) {
        return Err(missing(format!("the firmware did not report the {}", check.name)));
    }
    Ok(Measurement {
        board: board.name.clone(),
        model: spec.name.clone(),
        scenario: scenario.into(),
        metrics,
        notes,
        checks,
        arena_prediction,
        tflm_breakdown: None,
        resident_breakdowns: Default::default(),
        spread: Default::default(),
        footprint: None,
    })
}

/// The figures of the image itself: the model's size, and what the linker
/// fixed in the ELF.
pub(super) fn image_figures(firmware: &Firmware, sizes: ImageSizes) -> BTreeMap<String, i64> {
    let mut metrics = BTreeMap::new();
    metrics.insert(metric::MODEL_BYTES.into(), firmware.model_bytes as i64);
    if let Some(flash) = sizes.flash_bytes {
        metrics.insert(metric::FLASH_BYTES.into(), flash as i64);
    }
    metrics.insert(metric::STATIC_RAM_BYTES.into(), sizes.static_ram_bytes as i64);
    metrics.insert(metric::ARENA_CAPACITY_BYTES.into(), sizes.arena_capacity_bytes as i64);
    metrics.insert(metric::POOL_CAPACITY_BYTES.into(), sizes.pool_capacity_bytes as i64);
    metrics
}

/// What the analyzer says of an image's arena.
pub(super) struct Prediction {
    /// The arena TFLM will use for the model (or set), or the caveats that
    /// keep the analyzer from a prediction.
    pub arena: Result<usize, String>,
    /// The least arena `AllocateTensors` accepts, for a single model where
    /// the analyzer knows it.
    pub least: Option<usize>,
}

/// The analyzer's prediction of the arena TFLM will use for the image's
/// model (or set).
pub(super) fn predict(model: &Model, firmware: &Firmware) -> Result<Prediction, ReadError> {
    let spec = &model.spec;
    let (predicted, caveats, least) = match &spec.set {
        None => {
            let analysis = Analysis::of(&spec.name, &model.parsed, firmware.tflm, firmware.kernels, spec.planner)?;
            (analysis.predicted_arena_bytes, analysis.caveats, analysis.predicted_least_arena_bytes)
        }
        Some(set) => {
            let analyses = model
                .residents
                .iter()
                .map(|m| Analysis::of(&m.spec.name, &m.parsed, firmware.tflm, firmware.kernels, m.spec.planner))
                .collect::<Result<Vec<_>, _>>()?;
            let members: Vec<_> = analyses.iter().zip(&model.residents).map(|(a, m)| (a, &m.parsed)).collect();
            let predicted = SetAnalysis::of(&members)?.and_then(|s| s.bytes(set.sharing));
            (predicted, analyses.into_iter().flat_map(|a| a.caveats).collect(), None)
        }
    };
    Ok(Prediction { arena: predicted.ok_or_else(|| caveats.join("; ")), least })
}

/// TFLM's breakdown from a run of the recording image (already a record:
/// the run was checked like any other), with whose it is ([`owners`]).
pub fn tflm_breakdowns<'s>(
    board: &Board,
    spec: &'s ModelSpec,
    run: &Run,
) -> Result<Vec<(Option<&'s str>, TflmBreakdown)>, RunError> {
    prints(&run.session.log)
        .into_iter()
        .map(breakdown_in)
        .collect::<Result<Vec<_>, _>>()
        .and_then(|breakdowns| owners(spec, breakdowns))
        .map_err(|what| RunError::Target {
            context: context(board, spec, if spec.set.is_some() { MULTI_MODEL } else { SINGLE_FRAME }),
            what: format!("the recording image did not print {what}"),
            tail: format!("last lines from the target:\n  {}", run.session.tail(TAIL_LINES).join("\n  ")),
        })
}

/// The first line of each of TFLM's prints of its split of the arena (the
/// 2020 TFLM's order, which the shim keeps).
const HEAD_USAGE: &str = "Head usage: ";
const TAIL_USAGE: &str = "Tail usage: ";

/// Each time TFLM printed its split of the arena, in order: the log cut
/// before each `Head usage:` line.
fn prints(log: &[String]) -> Vec<&[String]> {
    let starts: Vec<usize> = (0..log.len()).filter(|&i| log[i].starts_with(HEAD_USAGE)).collect();
    let ends = starts.iter().skip(1).copied().chain([log.len()]);
    starts.iter().zip(ends).map(|(&start, end)| &log[start..end]).collect()
}

/// Whose split each of TFLM's prints (read as `T`) is: a model's is its
/// last print; a set's models' (in separate arenas) are the first ones, one
/// per model in load order: today's TFLM prints at each load (the shim
/// does), the 2020 TFLM at each call of `arena_used_bytes`, which the
/// firmware makes after each load and once more at the end. A shared
/// arena's prints are one allocator's running totals, and none is kept.
fn owners<T>(spec: &ModelSpec, mut prints: Vec<T>) -> Result<Vec<(Option<&str>, T)>, String> {
    match &spec.set {
        None => prints.pop().map(|last| vec![(None, last)]).ok_or_else(|| format!("`{HEAD_USAGE}N bytes`")),
        Some(set) if set.sharing == Sharing::Shared => Ok(Vec::new()),
        Some(set) if prints.len() < set.models.len() => Err(format!(
            "its split for each of the set's {} models (`{HEAD_USAGE}N bytes` {} times)",
            set.models.len(),
            prints.len()
        )),
        Some(set) => Ok(set.models.iter().map(|m| Some(m.name.as_str())).zip(prints).collect()),
    }
}

/// The breakdown one print of the recording image holds: its head, tail
/// and allocator objects, and one line per allocation type; else what is
/// missing.
fn breakdown_in(lines: &[String]) -> Result<TflmBreakdown, String> {
    let mut recorded = std::collections::BTreeMap::new();
    for name in RECORDED {
        let prefix = format!("Recorded {name}: ");
        // "<used> used, <requested> requested, <count> allocations"
        let numbers: Option<Vec<i64>> = lines.iter().rev().find_map(|l| l.strip_prefix(&prefix)).and_then(|rest| {
            let words: Vec<&str> = rest.split(", ").collect();
            let units = ["used", "requested", "allocations"];
            (words.len() == units.len())
                .then(|| words.iter().zip(units).map(|(w, unit)| w.strip_suffix(unit)?.trim().parse().ok()).collect())
                .flatten()
        });
        let Some(&[used_bytes, requested_bytes, count]) = numbers.as_deref() else {
            return Err(format!("`{prefix}U used, R requested, C allocations`"));
        };
        recorded.insert(name.to_owned(), Recorded { used_bytes, requested_bytes, count });
    }
    Ok(TflmBreakdown {
        head_bytes: printed(lines, HEAD_USAGE)?,
        tail_bytes: printed(lines, TAIL_USAGE)?,
        allocator_bytes: printed(lines, "Allocator objects: ")?,
        recorded,
    })
}

/// A figure TFLM printed as `<prefix><n> bytes` in one print's lines; else
/// the line expected.
fn printed(lines: &[String], prefix: &str) -> Result<i64, String> {
    lines
        .iter()
        .rev()
        .find_map(|line| line.strip_prefix(prefix)?.strip_suffix(" bytes")?.parse().ok())
        .ok_or_else(|| format!("`{prefix}N bytes`"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::models::{self, Model, SetSpec};
    use crate::config::runtime::Runtime;
    use crate::tflm::tree::Generation;
    use crate::Workspace;
    use hilmem_protocol::scenario::STREAM;
    use hilmem_protocol::Frame;

    /// The default board and hello_world, with the image facts a build of
    /// them has, for runs made by hand.
    fn setup() -> (Board, Model, Firmware, ImageSizes) {
        let ws = Workspace::from_source();
        let board = Board::load(&ws, "qemu-m7").unwrap();
        let spec = models::load(&ws.models_file()).unwrap().models.into_iter().find(|m| m.name == "hello_world");
        let model = spec.unwrap().read(&Runtime::bundled()).unwrap();
        let firmware = Firmware {
            elf: "hello_world.elf".into(),
            board: board.name.clone(),
            model: "hello_world".into(),
            model_bytes: model.bytes.len() as u64,
            tflm: Generation::Tfmicro2020,
            tflm_identity: None,
            kernels: Default::default(),
        };
        let sizes = ImageSizes {
            flash_bytes: Some(102_096),
            static_ram_bytes: 29_212,
            arena_capacity_bytes: 3072,
            pool_capacity_bytes: 8192,
        };
        (board, model, firmware, sizes)
    }

    /// The frames as the firmware sends them, numbered from 0.
    fn lines(frames: &[Frame]) -> Vec<String> {
        let line = |(seq, f): (usize, &Frame)| {
            let mut out = Vec::new();
            f.write_line(seq as u16, |b| out.extend_from_slice(b)).unwrap();
            String::from_utf8(out).unwrap()
        };
        frames.iter().enumerate().map(line).collect()
    }

    /// A run that said `lines`, with TFLM's head and tail (48 + 1424 bytes)
    /// after the first, and ended with `ending`.
    fn run_lines(lines: &[String], ending: Ending) -> Run {
        let mut session = crate::device::session::Session::default();
        for (i, line) in lines.iter().enumerate() {
            session.feed(line);
            if i == 0 {
                session.feed("Head usage: 48 bytes");
                session.feed("Tail usage: 1424 bytes");
            }
        }
        Run { session, ending, diagnostics: String::new(), process: None }
    }

    /// A run that said `frames` and ended with `ending`.
    fn run(frames: &[Frame], ending: Ending) -> Run {
        run_lines(&lines(frames), ending)
    }

    fn hello(board: &'static str, model: &'static str, arena: u32) -> Frame<'static> {
        Frame::Hello { board, model, arena_capacity: arena, stack_size: 16384 }
    }

    /// What a Cortex-M board's firmware reports of its stacks: the
    /// handlers' peak, and the bound of the thread's (1472) and theirs with
    /// one exception frame of 108 bytes.
    const STACKS: [(&str, i64); 2] =
        [(metric::INTERRUPT_STACK_PEAK_BYTES, 200), (metric::STACK_BOUND_BYTES, 1472 + 200 + 108)];

    /// What a clean single-frame run of hello_world says, in order.
    fn clean() -> Vec<Frame<'static>> {
        let mut frames = vec![hello("qemu-m7", "hello_world", 3072)];
        frames.extend(metric::FROM_FIRMWARE.iter().map(|&name| Frame::Metric { name, value: 1472 }));
        frames.extend(STACKS.iter().map(|&(name, value)| Frame::Metric { name, value }));
        frames.push(Frame::Output { input: "x-0", class: 0, value: 0.0 });
        frames.push(Frame::Output { input: "x-half-pi", class: 0, value: 1.0 });
        frames.push(Frame::Done { ok: true });
        frames
    }

    fn refused(frames: &[Frame], ending: Ending) -> String {
        let (board, model, firmware, sizes) = setup();
        let run = run(frames, ending);
        record(&board, &model, &firmware, sizes, SINGLE_FRAME, &run).unwrap_err().to_string()
    }

    /// The clean run is a record: the ELF's figures, the firmware's, and on
    /// a 32-bit board the analyzer's prediction beside TFLM's figure.
    #[test]
    fn a_clean_run_is_a_record_with_a_prediction() {
        let (board, model, firmware, sizes) = setup();
        let r =
            record(&board, &model, &firmware, sizes, SINGLE_FRAME, &run(&clean(), Ending::Exited(exit::OK))).unwrap();
        // Exactly the ELF's figures and the firmware's: the prediction is
        // beside them, never one of them.
        let mut expected: std::collections::BTreeMap<String, i64> = [
            (metric::MODEL_BYTES, model.bytes.len() as i64),
            (metric::FLASH_BYTES, 102_096),
            (metric::STATIC_RAM_BYTES, 29_212),
            (metric::ARENA_CAPACITY_BYTES, 3072),
            (metric::POOL_CAPACITY_BYTES, 8192),
            (metric::ARENA_HEAD_BYTES, 48),
            (metric::ARENA_TAIL_BYTES, 1424),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        expected.extend(metric::FROM_FIRMWARE.iter().map(|&name| (name.to_owned(), 1472)));
        expected.extend(STACKS.iter().map(|&(name, value)| (name.to_owned(), value)));
        assert_eq!(r.metrics, expected);
        assert_eq!(r.arena_prediction, Some(ArenaPrediction { predicted_bytes: 1472, measured_bytes: 1472 }));
        assert!(r.passed(), "{:?}", r.checks);
    }

    /// A capture record names the clock it ran at; no other does.
    #[test]
    fn a_capture_record_names_its_clock() {
        let (board, model, firmware, sizes) = setup();
        let mut frames = clean();
        let at = frames.len() - 3;
        let extra = metric::required_by(DMA_STREAM).iter().map(|&name| Frame::Metric { name, value: 2 });
        frames.splice(at..at, extra);
        for (scenario, shift) in [(DMA_STREAM, 1), (DMA_STREAM_SLOW, 4)] {
            let r =
                record(&board, &model, &firmware, sizes, scenario, &run(&frames, Ending::Exited(exit::OK))).unwrap();
            let note = format!("-icount shift={shift}: {} M instructions a second", 1000 >> shift);
            assert_eq!(r.notes.get(CLOCK), Some(&note), "{scenario}");
        }
        let r =
            record(&board, &model, &firmware, sizes, SINGLE_FRAME, &run(&clean(), Ending::Exited(exit::OK))).unwrap();
        assert_eq!(r.notes.get(CLOCK), None);
    }

    /// A Cortex-M board's record has its handlers' stack and the stack's
    /// bound, and a bound less than the thread's and the handlers' peaks and
    /// the least exception frame is a firmware not telling the truth.
    #[test]
    fn a_cortex_m_record_has_its_stacks_and_a_bound_that_holds_them() {
        for name in metric::FROM_CORTEX_M {
            let without: Vec<Frame> =
                clean().into_iter().filter(|f| !matches!(f, Frame::Metric { name: n, .. } if *n == name)).collect();
            let err = refused(&without, Ending::Exited(exit::OK));
            assert!(err.contains(&format!("the firmware did not report `{name}`")), "{err}");
        }
        let with_bound = |bound: i64| -> Vec<Frame> {
            clean()
                .into_iter()
                .map(|f| match f {
                    Frame::Metric { name, .. } if name == metric::STACK_BOUND_BYTES => {
                        Frame::Metric { name, value: bound }
                    }
                    f => f,
                })
                .collect()
        };
        let (board, model, firmware, sizes) = setup();
        let least = 1472 + 200 + 32;
        let r =
            record(&board, &model, &firmware, sizes, SINGLE_FRAME, &run(&with_bound(least), Ending::Exited(exit::OK)));
        assert_eq!(r.unwrap().metrics[metric::STACK_BOUND_BYTES], least);
        let err = refused(&with_bound(least - 1), Ending::Exited(exit::OK));
        assert!(
            err.contains(
                "the firmware's stack bound (1703 bytes) is less than the thread's and the handlers' peaks \
                          (1672 bytes) and an exception frame"
            ),
            "{err}"
        );
    }

    /// TFLM's printed head and tail come as log lines, without a checksum:
    /// a line damaged on the way no longer adds up to the checked
    /// `arena_used_bytes`, or is not found, and the run is the link's fault
    /// (run again with `--retries`), never a record with a wrong or missing
    /// figure.
    #[test]
    fn a_damaged_head_or_tail_line_is_the_links_fault_not_a_figure() {
        let (board, model, firmware, sizes) = setup();
        let with_log = |head: &str, tail: &str| {
            let mut run = run(&clean(), Ending::Exited(exit::OK));
            run.session.log.clear();
            run.session.feed(head);
            run.session.feed(tail);
            record(&board, &model, &firmware, sizes, SINGLE_FRAME, &run)
        };
        let r = with_log("Head usage: 48 bytes", "Tail usage: 1424 bytes").unwrap();
        assert_eq!((r.metrics[metric::ARENA_HEAD_BYTES], r.metrics[metric::ARENA_TAIL_BYTES]), (48, 1424));
        let err = with_log("Head usage: 488 bytes", "Tail usage: 1424 bytes").unwrap_err();
        assert!(err.is_transport(), "{err}");
        assert!(err.to_string().contains("(488 + 1424 bytes) do not add up to its arena_used_bytes (1472)"), "{err}");
        let err = with_log("Head usage: 48 bytes", "Tail usagf: 1424 bytes").unwrap_err();
        assert!(err.is_transport(), "{err}");
        assert!(err.to_string().contains("TFLM did not print `Tail usage: N bytes`"), "{err}");
    }

    /// Where the analyzer has no prediction (a current TFLM and a kernel it
    /// does not know), the record says why; where it cannot analyse the
    /// model at all, there is no record.
    #[test]
    fn a_missing_prediction_is_named_and_a_failed_one_is_an_error() {
        let (board, mut model, mut firmware, sizes) = setup();
        firmware.tflm = Generation::Current;
        model.parsed.operator_codes[0].custom = Some("MyOp".into());
        let r =
            record(&board, &model, &firmware, sizes, SINGLE_FRAME, &run(&clean(), Ending::Exited(exit::OK))).unwrap();
        assert_eq!(r.arena_prediction, None);
        assert!(r.notes[NOT_PREDICTED].contains("the kernels of MyOp allocate"), "{:?}", r.notes);
        model.parsed.subgraphs.clear();
        let e = record(&board, &model, &firmware, sizes, SINGLE_FRAME, &run(&clean(), Ending::Exited(exit::OK)));
        assert!(e.unwrap_err().to_string().contains("the analyzer cannot predict the arena of the model it ran: "));
    }

    /// Each way a run is not a measurement, named with what was expected
    /// and what came.
    #[test]
    fn every_refusal_names_what_was_expected_and_what_came() {
        let with = |f: &dyn Fn(&mut Vec<Frame<'static>>)| {
            let mut frames = clean();
            f(&mut frames);
            frames
        };
        let ok = Ending::Exited(exit::OK);
        let cases: Vec<(Vec<Frame>, Ending, &str)> = vec![
            (
                with(&|f| f[0] = hello("qemu-m4", "hello_world", 3072)),
                ok.clone(),
                "the image is for board `qemu-m4`, model `hello_world`",
            ),
            (with(&|f| f[0] = hello("qemu-m7", "magic_wand", 3072)), ok.clone(), "model `magic_wand`"),
            (
                with(&|f| f[0] = hello("qemu-m7", "hello_world", 4096)),
                ok.clone(),
                "reports a 4096 byte arena but its ELF symbol is 3072 bytes",
            ),
            (with(&|f| *f.last_mut().unwrap() = Frame::Done { ok: false }), ok.clone(), "expected Done and exit 0"),
            (
                with(&|f| {
                    f.pop();
                }),
                ok.clone(),
                "expected Done and exit 0",
            ),
            (clean(), Ending::Exited(3), "got Exited(3)"),
            (clean(), Ending::Exited(exit::PANIC), "the firmware panicked"),
            (clean(), Ending::Exited(exit::HARD_FAULT), "HardFault"),
            (clean(), Ending::Died("signal 9".into()), "the target died: signal 9"),
            (
                with(&|f| {
                    f.remove(1);
                }),
                ok.clone(),
                "the firmware did not report `arena_used_bytes`",
            ),
            (
                with(&|f| f.insert(0, Frame::Metric { name: "stack_peak_bytes", value: 1 })),
                ok.clone(),
                "frame out of sequence",
            ),
            (
                with(&|f| f.insert(2, Frame::Metric { name: "arena_used_bytes", value: 1 })),
                ok.clone(),
                "frame out of sequence",
            ),
            (
                with(&|f| f.insert(1, Frame::Metric { name: "flash_bytes", value: 1 })),
                ok.clone(),
                "the firmware reported `flash_bytes` (~hm",
            ),
            (
                with(&|f| f.insert(1, Frame::Metric { name: "static_ram_bytes", value: 1 })),
                ok.clone(),
                "reads that figure from the model file and the ELF",
            ),
            (
                with(&|f| f.insert(1, Frame::Metric { name: "made_up_bytes", value: 1 })),
                ok.clone(),
                "no firmware figure has that name",
            ),
        ];
        for (frames, ending, expected) in cases {
            let e = refused(&frames, ending.clone());
            assert!(e.contains(expected), "expected `{expected}` in: {e}");
            assert!(e.contains("board `qemu-m7`, model `hello_world`, scenario `single-frame`"), "{e}");
        }
        let timed_out = refused(&clean()[..1], Ending::TimedOut(std::time::Duration::from_secs(5)));
        assert!(timed_out.contains("no answer within 5 s (expected the scenario's Metric frames"), "{timed_out}");
        let silent = refused(&[], Ending::TimedOut(std::time::Duration::from_secs(5)));
        assert!(
            silent.contains("expected a Hello frame after boot") && silent.contains("the target printed nothing"),
            "{silent}"
        );
    }

    /// A frame missing from the numbers (the hello, a figure, an answer) was
    /// lost on the link, whatever the ending; so was the Done, or what TFLM
    /// printed, when the firmware finished (exit 0). Such a run is worth
    /// running again, and so is a corrupt frame. The Done missing with
    /// another ending, a wrong answer, or a firmware failure are not.
    #[test]
    fn frames_lost_on_the_way_are_the_links_fault() {
        let (board, model, firmware, sizes) = setup();
        let without = |i: usize, ending: Ending| {
            let mut lines = lines(&clean());
            lines.remove(i);
            record(&board, &model, &firmware, sizes, SINGLE_FRAME, &run_lines(&lines, ending)).unwrap_err()
        };
        let ok = Ending::Exited(exit::OK);
        let outputs = clean().iter().position(|f| matches!(f, Frame::Output { .. })).unwrap();
        for i in [0, 1, outputs] {
            for ending in [ok.clone(), Ending::Died("stopped at a lost frame".into())] {
                let e = without(i, ending);
                assert!(matches!(e, RunError::Lost { .. }) && e.is_transport(), "{i}: {e}");
                let expected = format!("frame {i} was lost on the link: a later frame arrived before it");
                assert!(e.to_string().contains(&expected), "{e}");
            }
        }
        let e = without(clean().len() - 1, ok.clone());
        assert!(matches!(e, RunError::Link { .. }) && e.to_string().contains("the link lost it"), "no Done: {e}");
        let mut corrupt = run(&clean(), ok.clone());
        corrupt.session.feed("~hm2 0102 00000000");
        let e = record(&board, &model, &firmware, sizes, SINGLE_FRAME, &corrupt).unwrap_err();
        assert!(matches!(e, RunError::Wire { .. }) && e.is_transport(), "{e}");
        for ending in [Ending::Exited(exit::FAILED), Ending::TimedOut(std::time::Duration::from_secs(1))] {
            let e = without(clean().len() - 1, ending);
            assert!(!e.is_transport(), "{e}");
        }
        let error = |frames: &[Frame], ending: Ending| {
            record(&board, &model, &firmware, sizes, SINGLE_FRAME, &run(frames, ending)).unwrap_err()
        };
        let failure = [hello("qemu-m7", "hello_world", 3072), Frame::Failure { stage: "load", code: 4, detail: "x" }];
        assert!(!error(&failure, Ending::Exited(exit::FAILED)).is_transport());
        let mut wrong = clean();
        wrong[outputs] = Frame::Output { input: "x-0", class: 0, value: 0.9 };
        let answered = record(&board, &model, &firmware, sizes, SINGLE_FRAME, &run(&wrong, ok)).unwrap();
        assert!(!answered.passed(), "a wrong answer is a failed check, not an error");
    }

    /// With copies asked for, damaged lines cost nothing while a copy of
    /// every frame arrived, the Done included: the record is the clean
    /// run's. Without the Done, a damaged line is the link's fault.
    #[test]
    fn with_copies_a_damaged_copy_costs_nothing() {
        let (board, model, firmware, sizes) = setup();
        let ok = Ending::Exited(exit::OK);
        let clean_record = record(&board, &model, &firmware, sizes, SINGLE_FRAME, &run(&clean(), ok.clone())).unwrap();
        let copied = |frames: usize| {
            let mut session = crate::device::session::Session::new(2);
            session.log = vec!["Head usage: 48 bytes".into(), "Tail usage: 1424 bytes".into()];
            for (i, line) in lines(&clean()).into_iter().take(frames).enumerate() {
                // The hello is sent once; of the rest, every other frame's
                // first copy is damaged.
                if i > 0 && i % 2 == 0 {
                    session.feed(&line.replacen("~hm2 ", "~hm2 0", 1));
                }
                session.feed(&line);
                if i > 0 && i % 2 == 1 {
                    session.feed(&line);
                }
            }
            assert!(!session.corrupt.is_empty() && session.lost.is_none());
            record(&board, &model, &firmware, sizes, SINGLE_FRAME, &Run { session, ..run(&[], ok.clone()) })
        };
        let r = copied(clean().len()).unwrap();
        assert_eq!((r.metrics, r.checks), (clean_record.metrics, clean_record.checks));
        let e = copied(clean().len() - 1).unwrap_err();
        assert!(matches!(e, RunError::Wire { .. }) && e.is_transport(), "{e}");
    }

    /// A failure the firmware reports is an error that says, for each
    /// stage, what failed, and quotes the firmware's detail.
    #[test]
    fn a_firmware_failure_names_its_stage() {
        let stages = [
            ("board", "the firmware refused to run on this board"),
            ("load", "TFLM could not load the model"),
            ("input", "the input could not be fed to the model"),
            ("invoke", "inference failed"),
            ("output", "the output could not be read"),
            ("command", "the firmware refused the harness's command"),
            ("least arena", "the search for the least arena failed"),
            ("selftest", "the firmware stopped"),
        ];
        for (stage, meaning) in stages {
            let frames = [
                hello("qemu-m7", "hello_world", 3072),
                Frame::Failure { stage, code: 3, detail: "what it said" },
                Frame::Done { ok: false },
            ];
            let e = refused(&frames, Ending::Exited(exit::FAILED));
            let expected = format!("scenario `single-frame`: {meaning}: what it said (stage `{stage}`, status 3)");
            assert!(e.ends_with(&expected), "expected `{expected}` in: {e}");
        }
    }

    /// The prediction is made for the single frame on a 32-bit board only.
    #[test]
    fn only_the_single_frame_carries_a_prediction() {
        let (board, model, firmware, sizes) = setup();
        let mut frames = clean();
        let streamed = [
            Frame::Metric { name: metric::FRAMES, value: 16 },
            Frame::Metric { name: metric::HEAP_GROWTH_BYTES, value: 0 },
        ];
        frames.splice(1..1, streamed);
        let r = record(&board, &model, &firmware, sizes, STREAM, &run(&frames, Ending::Exited(exit::OK))).unwrap();
        assert_eq!((r.arena_prediction, r.notes.get(NOT_PREDICTED)), (None, None));
    }

    fn log(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|l| (*l).to_owned()).collect()
    }

    const HEAD: [&str; 3] = ["Head usage: 48 bytes", "Tail usage: 1004 bytes", "Allocator objects: 236 bytes"];

    /// Every allocation type's line is read, with the head, tail and
    /// allocator objects; TFLM's own chatter around them is ignored.
    #[test]
    fn the_recording_image_lines_make_a_breakdown() {
        let mut lines = log(&HEAD);
        lines.push("some TFLM message".into());
        for (i, name) in RECORDED.iter().enumerate() {
            lines.push(format!("Recorded {name}: {} used, {} requested, {i} allocations", 16 * i, 12 * i));
        }
        let b = breakdown_in(&lines).unwrap();
        assert_eq!((b.head_bytes, b.tail_bytes, b.allocator_bytes), (48, 1004, 236));
        assert_eq!(b.recorded["persistent_buffers"], Recorded { used_bytes: 48, requested_bytes: 36, count: 3 });
        assert_eq!(b.recorded.len(), RECORDED.len());
    }

    /// A set's image prints TFLM's split per model, in load order (the
    /// 2020 TFLM once more at the end): each print is read on its own, a
    /// print that lacks a line is named even when another printed it, and
    /// the first prints are the set's models', one each.
    #[test]
    fn each_print_of_a_set_makes_its_own_breakdown() {
        let print = |head: i64, missing: Option<&str>| {
            let mut lines = log(&[&format!("Head usage: {head} bytes"), "Tail usage: 1004 bytes"]);
            lines.push("Allocator objects: 236 bytes".into());
            lines.extend(
                RECORDED.iter().map(|name| format!("Recorded {name}: {head} used, 1 requested, 1 allocations")),
            );
            lines.retain(|l| missing.is_none_or(|m| !l.starts_with(m)));
            lines
        };
        let mut printed = log(&["booted"]);
        printed.extend(print(48, None));
        printed.push("some TFLM message".into());
        printed.extend(print(96, None));
        let breakdowns: Vec<TflmBreakdown> = prints(&printed).into_iter().map(|p| breakdown_in(p).unwrap()).collect();
        assert_eq!(breakdowns.iter().map(|b| b.head_bytes).collect::<Vec<_>>(), [48, 96]);
        assert_eq!(breakdowns[1].recorded["op_data"].used_bytes, 96);

        let (_, model, _, _) = setup();
        let member = |name: &str| ModelSpec { name: name.into(), ..model.spec.clone() };
        let mut set = ModelSpec { name: "pair".into(), ..model.spec.clone() };
        set.set = Some(SetSpec { models: vec![member("a"), member("b")], sharing: Sharing::Separate, interrupt: None });
        let owned = owners(&set, vec![1, 2, 3]).unwrap();
        assert_eq!(owned, [(Some("a"), 1), (Some("b"), 2)]);
        assert_eq!(owners(&model.spec, vec![1, 2]).unwrap(), [(None, 2)]);
        let fewer = owners(&set, vec![1]).unwrap_err();
        assert_eq!(fewer, "its split for each of the set's 2 models (`Head usage: N bytes` 1 times)");
        set.set.as_mut().unwrap().sharing = Sharing::Shared;
        assert!(owners(&set, vec![1, 2]).unwrap().is_empty());

        printed.extend(print(16, Some("Recorded op_data")));
        let third = prints(&printed)[2];
        assert_eq!(breakdown_in(third).unwrap_err(), "`Recorded op_data: U used, R requested, C allocations`");
    }

    /// A set whose model infers from an interrupt reports how often it did
    /// and how often it preempted another: a record without them is refused.
    #[test]
    fn a_set_with_an_interrupt_model_reports_its_inferences() {
        let (board, mut model, firmware, sizes) = setup();
        let member = |name: &str| ModelSpec { name: name.into(), ..model.spec.clone() };
        let (a, b) = (member("a"), member("b"));
        model.spec = ModelSpec { name: "pair".into(), ..model.spec.clone() };
        model.spec.set = Some(SetSpec { models: vec![a, b], sharing: Sharing::Separate, interrupt: Some((1, 20)) });
        let frames = |interrupt: bool| -> Vec<Frame<'static>> {
            let mut frames = vec![hello("qemu-m7", "pair", 3072)];
            frames.extend(metric::FROM_FIRMWARE.iter().map(|&name| Frame::Metric { name, value: 1472 }));
            frames.extend(STACKS.iter().map(|&(name, value)| Frame::Metric { name, value }));
            frames.push(Frame::Metric { name: metric::FRAMES, value: 16 });
            frames.push(Frame::Metric { name: "a_arena_used_bytes", value: 736 });
            frames.push(Frame::Metric { name: "b_arena_used_bytes", value: 736 });
            if interrupt {
                frames.push(Frame::Metric { name: metric::INTERRUPT_INFERENCES, value: 40 });
                frames.push(Frame::Metric { name: metric::PREEMPTIONS, value: 12 });
            }
            frames.push(Frame::Output { input: "a", class: 0, value: 0.0 });
            frames.push(Frame::Output { input: "b", class: 0, value: 0.0 });
            frames.push(Frame::Done { ok: true });
            frames
        };
        let recorded = |model: &Model, frames: &[Frame]| {
            let lines = lines(frames);
            let mut session = crate::device::session::Session::default();
            for (i, line) in lines.iter().enumerate() {
                session.feed(line);
                if i == 0 {
                    for print in ["Head usage: 32 bytes", "Tail usage: 704 bytes"].repeat(2) {
                        session.feed(print);
                    }
                }
            }
            let run = Run { session, ending: Ending::Exited(exit::OK), diagnostics: String::new(), process: None };
            record(&board, model, &firmware, sizes, MULTI_MODEL, &run)
        };
        let r = recorded(&model, &frames(true)).unwrap();
        assert_eq!((r.metrics[metric::INTERRUPT_INFERENCES], r.metrics[metric::PREEMPTIONS]), (40, 12));
        // Each model's least arena, where the firmware found it, is its own
        // figure of the record; another model's name is no figure.
        let with = |name: &'static str| {
            let mut frames = frames(true);
            frames.insert(frames.len() - 1, Frame::Metric { name, value: 1088 });
            frames
        };
        let r = recorded(&model, &with("b_least_arena_bytes")).unwrap();
        assert_eq!(r.metrics["b_least_arena_bytes"], 1088);
        let err = recorded(&model, &with("c_least_arena_bytes")).unwrap_err().to_string();
        assert!(err.contains("`c_least_arena_bytes` (") && err.contains("no firmware figure has that name"), "{err}");
        let err = recorded(&model, &frames(false)).unwrap_err().to_string();
        assert!(err.contains("the firmware did not report `interrupt_inferences`"), "{err}");
        // A set without an interrupt model needs neither.
        model.spec.set.as_mut().unwrap().interrupt = None;
        assert!(recorded(&model, &frames(false)).is_ok());
    }

    /// A run of the recording image gives the model's breakdown from its
    /// last print; a run that printed none is the target's fault, named
    /// with the board, model and scenario and the last lines it sent.
    #[test]
    fn a_recording_run_gives_the_models_breakdown_or_names_what_it_did_not_print() {
        let (board, model, _, _) = setup();
        let run = |fed: &[String]| {
            let mut session = crate::device::session::Session::default();
            fed.iter().for_each(|line| session.feed(line));
            Run { session, ending: Ending::Exited(exit::OK), diagnostics: String::new(), process: None }
        };
        let booted = || [lines(&[hello("qemu-m7", "hello_world", 3072)]), log(&["booted"])].concat();
        let mut printed = booted();
        printed.extend(log(&HEAD));
        printed.extend(RECORDED.iter().map(|name| format!("Recorded {name}: 8 used, 4 requested, 2 allocations")));
        let breakdowns = tflm_breakdowns(&board, &model.spec, &run(&printed)).unwrap();
        assert_eq!(breakdowns.len(), 1);
        let (owner, b) = &breakdowns[0];
        assert_eq!((*owner, b.head_bytes, b.tail_bytes, b.allocator_bytes), (None, 48, 1004, 236));
        assert_eq!(b.recorded["op_data"], Recorded { used_bytes: 8, requested_bytes: 4, count: 2 });

        let err = tflm_breakdowns(&board, &model.spec, &run(&booted())).unwrap_err().to_string();
        assert!(err.contains("qemu-m7") && err.contains("hello_world") && err.contains("single-frame"), "{err}");
        assert!(err.contains("the recording image did not print `Head usage: N bytes`"), "{err}");
        assert!(err.contains("last lines from the target:\n  ~hm") && err.ends_with("\n  booted"), "{err}");
    }

    /// A missing or garbled line names what was expected.
    #[test]
    fn a_missing_or_garbled_line_is_named() {
        let mut lines = log(&HEAD);
        for name in RECORDED.iter().skip(1) {
            lines.push(format!("Recorded {name}: 1 used, 1 requested, 1 allocations"));
        }
        let e = breakdown_in(&lines).unwrap_err();
        assert_eq!(e, "`Recorded eval_tensors: U used, R requested, C allocations`");
        lines.push("Recorded eval_tensors: 12 used, twelve requested, 1 allocations".into());
        assert_eq!(breakdown_in(&lines).unwrap_err(), e);
        lines.push("Recorded eval_tensors: 12 used, 12 requested, 1 allocations".into());
        lines.retain(|l| !l.starts_with("Tail usage"));
        assert_eq!(breakdown_in(&lines).unwrap_err(), "`Tail usage: N bytes`");
    }
}
