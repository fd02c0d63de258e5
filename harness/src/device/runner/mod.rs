//! Runners deploy an image and start it; transports carry what it says.
//!
//! Every combination hands the harness a [`Target`]: lines in, bytes out, and
//! how the program ended. [`drive`] holds the conversation with any of them,
//! so everything downstream of the lines is board-independent. A new runner
//! or transport is one module here that implements [`Target`] and one arm in
//! [`start`].

mod child;
mod lines;
pub mod noise;
pub mod probe;
mod pty;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use hilmem_protocol::Frame;

use crate::children;
use crate::config::board::{Board, Runner, Transport};
use crate::config::hardware::Selector;
use crate::device::session::Session;

pub const QEMU: &str = "qemu-system-arm";

/// Longest single wait for output before checking whether the target ended.
const POLL: Duration = Duration::from_millis(50);
/// How often a long run says it is still running.
const HEARTBEAT: Duration = Duration::from_secs(10);
/// How long a target may take to exit after closing its output.
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// How long the output may stay open after the target ended, by default.
pub const OUTPUT_GRACE: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error("cannot start {program}: {source}{hint}")]
    Spawn { program: String, source: std::io::Error, hint: &'static str },
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    #[error("{0}")]
    Pty(String),
    #[error(transparent)]
    Probe(#[from] probe::ProbeError),
    #[error("the run was cancelled; the target was stopped")]
    Cancelled,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// The firmware left with this exit status (see `hilmem_protocol::exit`).
    Exited(i32),
    /// The program died without an exit status (a signal, a vanished pipe).
    Died(String),
    /// No end within this timeout; the target was stopped.
    TimedOut(Duration),
}

/// What one run produced.
#[derive(Debug)]
pub struct Run {
    pub session: Session,
    pub ending: Ending,
    /// The runner's own diagnostics (QEMU's standard error, ...).
    pub diagnostics: String,
    /// The process that ran the image, for runners that start one.
    pub process: Option<u32>,
}

/// What a target had to say when asked.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    Line(String),
    /// Nothing within the wait.
    Idle,
    /// The output is closed for good.
    Closed,
}

/// A started image.
pub trait Target {
    /// The next line of output, waiting at most `wait`. `Closed` comes only
    /// after every byte the program sent has been handed out, so a program
    /// that has ended is read until then.
    fn next(&mut self, wait: Duration) -> Result<Next, RunnerError>;
    /// Sends bytes to the firmware's input.
    fn send(&mut self, bytes: &[u8]) -> Result<(), RunnerError>;
    /// How the program ended, if it has.
    fn ended(&mut self) -> Result<Option<Ending>, RunnerError>;
    /// Stops the program and releases what it holds; safe to call twice.
    fn stop(&mut self);
    /// The runner's own diagnostics, waiting at most `wait` for the rest
    /// of them once the program has ended.
    fn diagnostics(&mut self, wait: Duration) -> String;
    fn process(&self) -> Option<u32>;
}

/// How a run is carried out, beyond the profile: settings from the command
/// line, and the grace the end of a run is read within.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Debug probe to use, overriding the profile's.
    pub probe: Option<Selector>,
    /// A noisy link between the target and the harness (for testing).
    pub noise: Option<noise::Noise>,
    /// How many times the firmware sends each frame after the command, so
    /// that over a noisy link one whole copy is enough.
    pub copies: u8,
    /// How long the output may stay open after the target ended: the end of
    /// a run is read to the end of its stream, unless something the target
    /// started still holds it after this long.
    pub grace: Duration,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions { probe: None, noise: None, copies: 1, grace: OUTPUT_GRACE }
    }
}

/// Deploys `elf` on the board and starts it (a QEMU board at `icount_shift`,
/// if any), behind a noisy link when the options ask for one.
pub fn start(
    board: &Board,
    elf: &Path,
    options: &RunOptions,
    icount_shift: Option<u8>,
) -> Result<Box<dyn Target>, RunnerError> {
    let target = start_target(board, elf, options, icount_shift)?;
    Ok(match options.noise {
        Some(noise) => Box::new(noise::Noisy::new(target, noise)),
        None => target,
    })
}

fn start_target(
    board: &Board,
    elf: &Path,
    options: &RunOptions,
    icount_shift: Option<u8>,
) -> Result<Box<dyn Target>, RunnerError> {
    match (&board.runner, &board.transport) {
        (Runner::Qemu { .. }, Transport::Pty) => {
            Ok(Box::new(pty::QemuPty::start(&qemu_args(board, elf, icount_shift))?))
        }
        (Runner::Qemu { .. }, _) => {
            let mut command = Command::new(QEMU);
            command.args(qemu_args(board, elf, icount_shift)).args(STDIO_UART);
            Ok(Box::new(child::Stdio::start(command, QEMU, QEMU_HINT)?))
        }
        (Runner::Host, _) => Ok(Box::new(child::Stdio::start(Command::new(elf), &elf.display().to_string(), "")?)),
        (Runner::ProbeRs { chip, probe }, _) => {
            let selector = probe_selector(probe.as_deref(), options)?;
            Ok(Box::new(probe::ProbeTarget::start(chip, selector.as_ref(), elf)?))
        }
    }
}

/// The probe a run asks for: the command line's, else the profile's
/// (`profile`), else any single one (None).
pub fn probe_selector(profile: Option<&str>, options: &RunOptions) -> Result<Option<Selector>, probe::ProbeError> {
    Ok(match (&options.probe, profile) {
        (Some(chosen), _) => Some(chosen.clone()),
        (None, Some(profile)) => Some(Selector::parse(profile)?),
        (None, None) => None,
    })
}

/// QEMU arguments that put the UART on standard input and output.
pub const STDIO_UART: [&str; 4] = ["-monitor", "none", "-serial", "stdio"];

/// QEMU's arguments for running `elf` on a QEMU board, less the UART's.
/// With `icount_shift`, the board's time is the instructions it executed,
/// 2^shift ns each, also while it sleeps (`sleep=off`: a `wfi` skips to the
/// next timer), so interrupts land on the same instruction every run.
pub fn qemu_args(board: &Board, elf: &Path, icount_shift: Option<u8>) -> Vec<String> {
    let Runner::Qemu { machine, .. } = &board.runner else {
        panic!("board {} is not a QEMU board", board.name);
    };
    let mut args: Vec<String> =
        ["-machine", machine, "-cpu", board.cpu.name, "-display", "none"].into_iter().map(String::from).collect();
    args.extend(["-semihosting-config".into(), "enable=on,target=native".into()]);
    if let Some(shift) = icount_shift {
        args.extend(["-icount".into(), format!("shift={shift},sleep=off")]);
    }
    args.extend(["-kernel".into(), elf.display().to_string()]);
    args
}

/// Serial ports present on this machine.
pub fn serial_ports() -> Vec<String> {
    serialport::available_ports().map(|ports| ports.into_iter().map(|p| p.port_name).collect()).unwrap_or_default()
}

const QEMU_HINT: &str = "; install it with `cargo xtask doctor` (Debian/Ubuntu package qemu-system-arm)";

/// Holds the conversation: waits for `Hello`, sends `Run` for `scenario`
/// (with `frames` for the streaming scenarios, and the `copies` of each
/// frame the firmware is to send), collects everything until the program
/// ends or `timeout` passes (then the target is stopped). Once the program
/// has ended, its output is read to the end of the stream, for at most the
/// options' grace.
pub fn drive(
    target: &mut dyn Target,
    scenario: &str,
    frames: u32,
    timeout: Duration,
    options: &RunOptions,
    still_running: &dyn Fn(Duration),
) -> Result<Run, RunnerError> {
    let started = Instant::now();
    let mut limit = Limit::new(timeout, target.process());
    let mut told = Duration::ZERO;
    let _driven = children::Driven::start();
    let mut session = Session::new(options.copies);
    let mut command_sent = false;
    let mut read_whole = true;
    let ending = loop {
        if children::cancelled() {
            target.stop();
            return Err(RunnerError::Cancelled);
        }
        let Some(left) = limit.left() else {
            target.stop();
            break Ending::TimedOut(timeout);
        };
        if started.elapsed() >= told + HEARTBEAT {
            told += HEARTBEAT;
            still_running(told);
        }
        match target.next(left.min(POLL)) {
            Ok(Next::Line(line)) => {
                session.feed(&line);
                // A frame lost (or a damaged hello: the firmware waits for
                // the command it would have answered) means the run cannot
                // become a record: stop it at once.
                if session.lost_a_frame() || (session.hello.is_none() && !session.corrupt.is_empty()) {
                    target.stop();
                    break Ending::Died("stopped at a lost frame".into());
                }
                if session.hello.is_some() && !command_sent {
                    let mut command = Vec::new();
                    Frame::Run { scenario, frames, copies: options.copies }
                        .write_lines(0, 1, |b| command.extend_from_slice(b))
                        .expect("scenario names are short");
                    if let Err(e) = target.send(&command) {
                        target.stop();
                        return Err(e);
                    }
                    command_sent = true;
                }
            }
            Ok(Next::Idle) => {
                if let Some(ending) = target.ended()? {
                    read_whole = read_to_end(target, &mut session, options.grace)?;
                    break ending;
                }
            }
            Ok(Next::Closed) => break wait_for_end(target)?,
            Err(e) => {
                target.stop();
                return Err(e);
            }
        }
    };
    target.stop();
    let mut diagnostics = target.diagnostics(options.grace);
    if !read_whole {
        diagnostics.push_str(&format!(
            "the target's output was still open {:.1} s after it ended (a process it started holds it?): \
             read no further\n",
            options.grace.as_secs_f64()
        ));
    }
    Ok(Run { session, ending, diagnostics, process: target.process() })
}

/// What is left of a run's time limit. The limit is of the target's own
/// time: what its process ran, or waited for anything but a processor (a
/// hung firmware's idle emulator counts). The time it was ready to run and
/// waited for a processor, on a machine busier than it has cores, does not
/// count: Linux's scheduler statistics say how long (the most any of the
/// process's threads waited), read only once the wall clock alone has
/// reached the limit, and at most every [`POLL`] after. A target without a
/// process (a real board), or a system without those statistics, has the
/// limit in wall time.
struct Limit {
    started: Instant,
    limit: Duration,
    process: Option<u32>,
    /// The most the process's threads had waited for a processor, as last
    /// read, and when.
    waited: Duration,
    read: Option<Instant>,
}

impl Limit {
    fn new(limit: Duration, process: Option<u32>) -> Limit {
        Limit { started: Instant::now(), limit, process, waited: Duration::ZERO, read: None }
    }

    /// None once the limit is reached.
    fn left(&mut self) -> Option<Duration> {
        let spent = |waited| self.started.elapsed().saturating_sub(waited);
        if spent(self.waited) >= self.limit && self.read.is_none_or(|at| at.elapsed() >= POLL) {
            self.waited = self.process.map_or(Duration::ZERO, waited_for_a_processor);
            self.read = Some(Instant::now());
        }
        self.limit.checked_sub(spent(self.waited))
    }
}

/// The longest time any thread of process `pid` has waited, ready to run,
/// for a processor (the second figure of `/proc/PID/task/TID/schedstat`);
/// zero where that cannot be read.
fn waited_for_a_processor(pid: u32) -> Duration {
    let Ok(threads) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Duration::ZERO };
    threads
        .filter_map(|thread| std::fs::read_to_string(thread.ok()?.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().nth(1)?.parse::<u64>().ok())
        .max()
        .map_or(Duration::ZERO, Duration::from_nanos)
}

/// Reads what a target that has ended still has in flight, to the end of
/// its output: whether the output closed within `grace`. A transport
/// delivers what the firmware sent before the end with some delay (a pipe
/// read on a thread of its own, a pty's buffer), more on a busy machine.
fn read_to_end(target: &mut dyn Target, session: &mut Session, grace: Duration) -> Result<bool, RunnerError> {
    let deadline = Instant::now() + grace;
    loop {
        match target.next(deadline.saturating_duration_since(Instant::now()))? {
            Next::Line(line) => session.feed(&line),
            Next::Closed => return Ok(true),
            Next::Idle if Instant::now() >= deadline => return Ok(false),
            Next::Idle => {}
        }
    }
}

fn wait_for_end(target: &mut dyn Target) -> Result<Ending, RunnerError> {
    let closed = Instant::now();
    while closed.elapsed() < EXIT_GRACE {
        if let Some(ending) = target.ended()? {
            return Ok(ending);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    target.stop();
    Ok(Ending::Died("closed its output but did not exit".into()))
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;

    /// A run's frames as lines: hello, one figure, done.
    fn frames() -> Vec<String> {
        let frames = [
            Frame::Hello { board: "b", model: "m", arena_capacity: 1024, stack_size: 2048 },
            Frame::Metric { name: "arena_used_bytes", value: 512 },
            Frame::Done { ok: true },
        ];
        frames
            .iter()
            .enumerate()
            .map(|(seq, frame)| {
                let mut line = Vec::new();
                frame.write_lines(seq as u16, 1, |b| line.extend_from_slice(b)).unwrap();
                String::from_utf8(line).unwrap()
            })
            .collect()
    }

    /// A target that has exited before its transport delivered its last
    /// lines: the hello comes first; once its exit has been seen, the rest
    /// arrives only after `lag` more waits with nothing, then the output
    /// closes (a pipe read on a thread the machine is slow to run).
    struct Late {
        before: VecDeque<String>,
        after: VecDeque<String>,
        lag: usize,
        exited: bool,
    }

    impl Target for Late {
        fn next(&mut self, _: Duration) -> Result<Next, RunnerError> {
            if let Some(line) = self.before.pop_front() {
                return Ok(Next::Line(line));
            }
            if !self.exited {
                return Ok(Next::Idle);
            }
            if self.lag > 0 {
                self.lag -= 1;
                return Ok(Next::Idle);
            }
            Ok(self.after.pop_front().map_or(Next::Closed, Next::Line))
        }
        fn send(&mut self, _: &[u8]) -> Result<(), RunnerError> {
            Ok(())
        }
        fn ended(&mut self) -> Result<Option<Ending>, RunnerError> {
            self.exited = self.before.is_empty();
            Ok(self.exited.then_some(Ending::Exited(0)))
        }
        fn stop(&mut self) {}
        fn diagnostics(&mut self, _: Duration) -> String {
            String::new()
        }
        fn process(&self) -> Option<u32> {
            None
        }
    }

    const SOON: Duration = Duration::from_secs(10);

    #[test]
    fn lines_that_arrive_after_the_exit_is_seen_are_read() {
        let mut lines = frames();
        let after: VecDeque<String> = lines.split_off(1).into();
        let mut target = Late { before: lines.into(), after, lag: 3, exited: false };
        let run = drive(&mut target, "single-frame", 0, SOON, &RunOptions::default(), &|_| {}).unwrap();
        assert_eq!(run.ending, Ending::Exited(0));
        assert_eq!((run.session.done, run.session.metrics.len()), (Some(true), 1), "{:#?}", run.session);
        assert!(run.diagnostics.is_empty(), "{}", run.diagnostics);
    }

    /// A shell script as the target, its standard output carrying `frames`.
    fn shell(script: &str) -> Box<dyn Target> {
        let mut command = Command::new("sh");
        command.args(["-c", script]);
        Box::new(child::Stdio::start(command, "sh", "").unwrap())
    }

    fn printf(lines: &[String]) -> String {
        format!("printf '{}'", lines.concat().replace('\n', "\\n"))
    }

    /// A script that says hello, waits for the command as the firmware
    /// does, then sends the rest of `lines`.
    fn after_the_command(lines: &[String]) -> String {
        format!("{}; read run; {}", printf(&lines[..1]), printf(&lines[1..]))
    }

    /// A real program that exits at once, leaving the rest of its run to a
    /// process it started, which writes it later: the run is read to the
    /// end of its output, whatever the machine's load.
    #[test]
    fn a_programs_output_is_read_to_its_end_not_to_its_exit() {
        let mut lines = frames();
        let rest = lines.split_off(1);
        let script = format!("{}; read run; (sleep 0.3; {}) & exit 0", printf(&lines), printf(&rest));
        let run = drive(shell(&script).as_mut(), "single-frame", 0, SOON, &RunOptions::default(), &|_| {}).unwrap();
        assert_eq!(run.ending, Ending::Exited(0));
        assert_eq!(run.session.done, Some(true), "{:#?}", run.session);
        assert!(!run.diagnostics.contains("still open"), "{}", run.diagnostics);
    }

    /// A process the target started and left behind holding its output open:
    /// reading stops after the grace, says so, and the leftover process is
    /// stopped with the target (it is in the target's process group).
    #[test]
    fn an_output_held_open_past_the_grace_is_named_and_its_holder_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("holder");
        let script = format!("{}; sleep 30 & echo $! > {}; exit 0", after_the_command(&frames()), pid_file.display());
        let options = RunOptions { grace: Duration::from_millis(300), ..RunOptions::default() };
        let run = drive(shell(&script).as_mut(), "single-frame", 0, SOON, &options, &|_| {}).unwrap();
        assert_eq!((run.ending, run.session.done), (Ending::Exited(0), Some(true)), "{:#?}", run.session);
        assert!(
            run.diagnostics.contains("the target's output was still open 0.3 s after it ended"),
            "{}",
            run.diagnostics
        );
        let holder = std::fs::read_to_string(&pid_file).unwrap();
        let gone = Instant::now();
        while alive(holder.trim()) {
            assert!(gone.elapsed() < SOON, "the process holding the output (pid {holder}) is still running");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// A process that left the target's group holds its standard error: the
    /// run ends all the same once the grace is over, and says so.
    #[test]
    fn a_standard_error_held_open_past_the_grace_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("holder");
        // The holder writes its pid once it has left the group; the script
        // waits for that before it exits.
        let script = format!(
            "{}; setsid sh -c 'echo $$ > {file}; exec sleep 30' > /dev/null & \
             while [ ! -s {file} ]; do sleep 0.01; done; exit 0",
            after_the_command(&frames()),
            file = pid_file.display()
        );
        let options = RunOptions { grace: Duration::from_millis(300), ..RunOptions::default() };
        let run = drive(shell(&script).as_mut(), "single-frame", 0, SOON, &options, &|_| {}).unwrap();
        let holder = std::fs::read_to_string(&pid_file).unwrap();
        // SAFETY: a plain system call, to the process this test started.
        unsafe { libc::kill(holder.trim().parse().unwrap(), libc::SIGKILL) };
        assert_eq!((run.ending, run.session.done), (Ending::Exited(0), Some(true)), "{:#?}", run.session);
        assert!(!run.diagnostics.contains("the target's output"), "{}", run.diagnostics);
        assert!(
            run.diagnostics.contains("its standard error was still open 0.3 s after it ended"),
            "{}",
            run.diagnostics
        );
    }

    /// Busy loops, all on one processor (the first this test may use),
    /// stopped when dropped.
    struct Busy(Vec<std::process::Child>);

    impl Busy {
        fn on_one_processor(loops: usize) -> Busy {
            // SAFETY: `set` is a plain bit set the call fills for this thread.
            let first = unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                assert_eq!(libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set), 0);
                (0..libc::CPU_SETSIZE as usize).find(|&cpu| libc::CPU_ISSET(cpu, &set)).unwrap()
            };
            let spawn = || {
                Command::new("taskset")
                    .args(["-c", &first.to_string(), "sh", "-c", "while :; do :; done"])
                    .spawn()
                    .unwrap()
            };
            Busy((0..loops).map(|_| spawn()).collect())
        }
    }

    impl Drop for Busy {
        fn drop(&mut self) {
            for child in &mut self.0 {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }

    /// Over a second, each of three busy loops on one processor waits for it
    /// about two thirds of the time; a sleeping process waits for none.
    #[test]
    fn the_time_a_process_waited_for_a_processor_is_read() {
        let mut sleeping = Command::new("sleep").arg("30").spawn().unwrap();
        let state = |pid: u32| std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        while !state(sleeping.id()).rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('S')) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let busy = Busy::on_one_processor(3);
        let before = (waited_for_a_processor(busy.0[0].id()), waited_for_a_processor(sleeping.id()));
        std::thread::sleep(Duration::from_secs(1));
        let busy_waited = waited_for_a_processor(busy.0[0].id()) - before.0;
        let sleeping_waited = waited_for_a_processor(sleeping.id()) - before.1;
        assert!(busy_waited >= Duration::from_millis(300), "{busy_waited:?}");
        assert!(sleeping_waited < Duration::from_millis(50), "{sleeping_waited:?}");
        assert_eq!(waited_for_a_processor(u32::MAX), Duration::ZERO, "no such process");
        let _ = sleeping.kill();
        let _ = sleeping.wait();
    }

    /// A target that says nothing and never ends, with its process, if any.
    pub(super) struct Silent(pub(super) Option<u32>);

    impl Target for Silent {
        fn next(&mut self, wait: Duration) -> Result<Next, RunnerError> {
            std::thread::sleep(wait);
            Ok(Next::Idle)
        }
        fn send(&mut self, _: &[u8]) -> Result<(), RunnerError> {
            Ok(())
        }
        fn ended(&mut self) -> Result<Option<Ending>, RunnerError> {
            Ok(None)
        }
        fn stop(&mut self) {}
        fn diagnostics(&mut self, _: Duration) -> String {
            String::new()
        }
        fn process(&self) -> Option<u32> {
            self.0
        }
    }

    /// A target whose process waits for a processor most of the time (on a
    /// machine busier than it has cores) has its time limit of its own time:
    /// a limit of 1 s lasts past 2 s of wall time (its process ran at most
    /// a third of it), and the silent target is still stopped at it.
    #[test]
    fn the_time_limit_leaves_out_the_time_the_target_waited_for_a_processor() {
        let busy = Busy::on_one_processor(3);
        let started = Instant::now();
        let run = drive(
            &mut Silent(Some(busy.0[0].id())),
            "single-frame",
            0,
            Duration::from_secs(1),
            &RunOptions::default(),
            &|_| {},
        )
        .unwrap();
        assert_eq!(run.ending, Ending::TimedOut(Duration::from_secs(1)));
        assert!(started.elapsed() >= Duration::from_secs(2), "{:?}", started.elapsed());
    }

    /// Whether process `pid` exists and is not a zombie.
    fn alive(pid: &str) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|stat| stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')))
    }
}
