//! QEMU with its UART on a pseudo-terminal, read through the serial port
//! driver, as a real board's UART would be.
//!
//! The harness makes the pty pair and hands QEMU the terminal side; it keeps
//! the master side for the whole run, and the terminal side open as well.
//! Holding the master from before QEMU starts means nothing the guest writes
//! early is lost. Holding it after QEMU exits matters as much: when the side
//! that wrote closes, Linux keeps unread bytes for the master's reader but
//! discards them for a terminal-side reader, so a harness that read QEMU's
//! own pty could lose the end of a run it was slow to read. With the terminal
//! side also held, the master never hangs up: the output is over when QEMU
//! has ended and nothing is left to read.

use std::io::{Read, Write};
use std::process::Command;
use std::time::{Duration, Instant};

use serialport::{SerialPort, TTYPort};

use super::child::Process;
use super::lines::LineBuffer;
use super::{Ending, Next, RunnerError, Target, QEMU, QEMU_HINT};

pub struct QemuPty {
    process: Process,
    master: TTYPort,
    /// The terminal side QEMU opened too; held so the master never hangs up.
    _terminal: TTYPort,
    lines: LineBuffer,
}

impl QemuPty {
    pub fn start(args: &[String]) -> Result<QemuPty, RunnerError> {
        let (master, terminal) =
            TTYPort::pair().map_err(|e| RunnerError::Pty(format!("cannot make a pseudo-terminal pair: {e}")))?;
        let path = terminal.name().ok_or_else(|| RunnerError::Pty("the pseudo-terminal has no path".into()))?;
        let mut command = Command::new(QEMU);
        command.args(args).args(["-monitor", "none", "-serial", &path]);
        let process = Process::spawn(command, QEMU, QEMU_HINT)?;
        Ok(QemuPty { process, master, _terminal: terminal, lines: LineBuffer::default() })
    }
}

impl Target for QemuPty {
    fn next(&mut self, wait: Duration) -> Result<Next, RunnerError> {
        let deadline = Instant::now() + wait;
        let mut buf = [0u8; 512];
        loop {
            if let Some(line) = self.lines.pop() {
                return Ok(Next::Line(line));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            self.master.set_timeout(left.max(Duration::from_millis(1))).map_err(|e| RunnerError::Pty(e.to_string()))?;
            match self.master.read(&mut buf) {
                Ok(n) => self.lines.push(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return Ok(Next::Idle),
                Err(source) => return Err(RunnerError::Io { what: "cannot read QEMU's pty".into(), source }),
            }
        }
    }

    fn send(&mut self, bytes: &[u8]) -> Result<(), RunnerError> {
        self.master
            .write_all(bytes)
            .and_then(|()| self.master.flush())
            .map_err(|source| RunnerError::Io { what: "cannot write to QEMU's pty".into(), source })
    }

    fn ended(&mut self) -> Result<Option<Ending>, RunnerError> {
        self.process.ended()
    }

    fn stop(&mut self) {
        self.process.stop();
    }

    fn diagnostics(&mut self) -> String {
        self.process.diagnostics()
    }

    fn process(&self) -> Option<u32> {
        Some(self.process.id())
    }
}
