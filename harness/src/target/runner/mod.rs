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
use crate::spec::board::{Board, Runner, Transport};
use crate::spec::hardware::Selector;
use crate::target::session::Session;

pub const QEMU: &str = "qemu-system-arm";

/// Longest single wait for output before checking whether the target ended.
const POLL: Duration = Duration::from_millis(50);
/// How often a long run says it is still running.
const HEARTBEAT: Duration = Duration::from_secs(10);
/// How long a target may take to exit after closing its output.
const EXIT_GRACE: Duration = Duration::from_secs(2);

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
    /// The next line of output, waiting at most `wait`.
    fn next(&mut self, wait: Duration) -> Result<Next, RunnerError>;
    /// Sends bytes to the firmware's input.
    fn send(&mut self, bytes: &[u8]) -> Result<(), RunnerError>;
    /// How the program ended, if it has.
    fn ended(&mut self) -> Result<Option<Ending>, RunnerError>;
    /// Stops the program and releases what it holds; safe to call twice.
    fn stop(&mut self);
    /// The runner's own diagnostics so far.
    fn diagnostics(&mut self) -> String;
    fn process(&self) -> Option<u32>;
}

/// Settings that come from the command line rather than the profile.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Debug probe to use, overriding the profile's.
    pub probe: Option<Selector>,
    /// A noisy link between the target and the harness (for testing).
    pub noise: Option<noise::Noise>,
    /// How many times the firmware sends each frame after the command, so
    /// that over a noisy link one whole copy is enough.
    pub copies: u8,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions { probe: None, noise: None, copies: 1 }
    }
}

/// Deploys `elf` on the board and starts it, behind a noisy link when the
/// options ask for one.
pub fn start(board: &Board, elf: &Path, options: &RunOptions) -> Result<Box<dyn Target>, RunnerError> {
    let target = start_target(board, elf, options)?;
    Ok(match options.noise {
        Some(noise) => Box::new(noise::Noisy::new(target, noise)),
        None => target,
    })
}

fn start_target(board: &Board, elf: &Path, options: &RunOptions) -> Result<Box<dyn Target>, RunnerError> {
    match (&board.runner, &board.transport) {
        (Runner::Qemu { .. }, Transport::Pty) => Ok(Box::new(pty::QemuPty::start(&qemu_args(board, elf))?)),
        (Runner::Qemu { .. }, _) => {
            let mut command = Command::new(QEMU);
            command.args(qemu_args(board, elf)).args(STDIO_UART);
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
pub fn qemu_args(board: &Board, elf: &Path) -> Vec<String> {
    let Runner::Qemu { machine, icount_shift } = &board.runner else {
        panic!("board {} is not a QEMU board", board.name);
    };
    let mut args: Vec<String> =
        ["-machine", machine, "-cpu", board.cpu.name, "-display", "none"].into_iter().map(String::from).collect();
    args.extend(["-semihosting-config".into(), "enable=on,target=native".into()]);
    if let Some(shift) = icount_shift {
        args.extend(["-icount".into(), format!("shift={shift}")]);
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
/// ends or `timeout` passes (then the target is stopped).
pub fn drive(
    target: &mut dyn Target,
    scenario: &str,
    frames: u32,
    copies: u8,
    timeout: Duration,
    still_running: &dyn Fn(Duration),
) -> Result<Run, RunnerError> {
    let started = Instant::now();
    let mut told = Duration::ZERO;
    let _driven = children::Driven::start();
    let mut session = Session::new(copies);
    let mut command_sent = false;
    let ending = loop {
        if children::cancelled() {
            target.stop();
            return Err(RunnerError::Cancelled);
        }
        let Some(left) = timeout.checked_sub(started.elapsed()) else {
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
                    Frame::Run { scenario, frames, copies }
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
                    // Whatever was still in flight.
                    while let Next::Line(line) = target.next(Duration::ZERO)? {
                        session.feed(&line);
                    }
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
    Ok(Run { session, ending, diagnostics: target.diagnostics(), process: target.process() })
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
