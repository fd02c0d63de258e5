//! Runs a firmware image under QEMU system emulation, with the UART on QEMU's
//! stdio and semihosting for the exit status.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use hilmem_protocol::Frame;

use crate::session::Session;

pub const QEMU: &str = "qemu-system-arm";

#[derive(Debug, thiserror::Error)]
pub enum QemuError {
    #[error(
        "cannot start {QEMU}: {source}; install it with `cargo xtask doctor` (Debian/Ubuntu package qemu-system-arm)"
    )]
    Spawn { source: std::io::Error },
    #[error("lost contact with {QEMU}: {source}")]
    Io { source: std::io::Error },
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The firmware left with this exit status (see `hilmem_protocol::exit`).
    Exited(i32),
    /// QEMU died without an exit status (a signal).
    Killed,
    /// No end within this timeout; QEMU was killed.
    TimedOut(Duration),
}

/// What one run produced.
#[derive(Debug)]
pub struct Run {
    pub session: Session,
    pub ending: Ending,
    /// QEMU's own diagnostics.
    pub stderr: String,
}

/// Boots `elf` on `machine`, sends the `Run` command for `scenario` once the
/// firmware says hello, and collects its output until it exits or `timeout`
/// passes.
pub fn run(machine: &str, elf: &Path, scenario: &str, timeout: Duration) -> Result<Run, QemuError> {
    let mut child = Command::new(QEMU)
        .args(["-machine", machine, "-display", "none", "-monitor", "none", "-serial", "stdio"])
        .args(["-semihosting-config", "enable=on,target=native", "-kernel"])
        .arg(elf)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| QemuError::Spawn { source })?;
    let started = Instant::now();

    let (lines_tx, lines) = mpsc::channel();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    std::thread::spawn(move || loop {
        let mut line = Vec::new();
        match stdout.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                if lines_tx.send(String::from_utf8_lossy(&line).into_owned()).is_err() {
                    break;
                }
            }
        }
    });
    let mut stderr_pipe = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr_pipe.read_to_string(&mut text);
        text
    });

    // Held open until the end: closing it would read as end of input.
    let mut stdin = child.stdin.take().unwrap();
    let mut command_sent = false;
    let mut session = Session::default();
    let ending = loop {
        let left = timeout.saturating_sub(started.elapsed());
        match lines.recv_timeout(left) {
            Ok(line) => {
                session.feed(&line);
                if session.hello.is_some() && !command_sent {
                    let mut command = Vec::new();
                    Frame::Run { scenario }
                        .write_line(|b| command.extend_from_slice(b))
                        .expect("scenario names are short");
                    command.push(b'\n');
                    if let Err(source) = stdin.write_all(&command).and_then(|()| stdin.flush()) {
                        let _ = child.kill();
                        let _ = child.wait();
                        return Err(QemuError::Io { source });
                    }
                    command_sent = true;
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                let _ = child.wait();
                break Ending::TimedOut(timeout);
            }
            Err(RecvTimeoutError::Disconnected) => {
                let status = child.wait().map_err(|source| QemuError::Io { source })?;
                break status.code().map_or(Ending::Killed, Ending::Exited);
            }
        }
    };
    let stderr = stderr.join().unwrap_or_default();
    Ok(Run { session, ending, stderr })
}
