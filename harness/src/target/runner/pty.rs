//! QEMU with its UART on a pseudo-terminal, read through the serial port
//! driver, as a real board's UART would be.
//!
//! Bytes the guest writes while nobody has the pty open are lost, so QEMU
//! starts paused (`-S`); the harness opens the pty QEMU reports on its monitor,
//! then lets the guest run with the monitor's `cont`.

use std::io::{Read, Write};
use std::process::{ChildStdin, Command};
use std::sync::mpsc;
use std::time::Duration;

use serialport::SerialPort;

use super::child::{line_reader, Process};
use super::lines::LineBuffer;
use super::{Ending, Next, RunnerError, Target, QEMU, QEMU_HINT};

/// How long QEMU may take to report its pty.
const PTY_WAIT: Duration = Duration::from_secs(10);
const BAUD: u32 = 115_200;

pub struct QemuPty {
    process: Process,
    monitor: Option<ChildStdin>,
    port: Box<dyn SerialPort>,
    lines: LineBuffer,
    closed: bool,
}

impl QemuPty {
    pub fn start(args: &[String]) -> Result<QemuPty, RunnerError> {
        let mut command = Command::new(QEMU);
        command.args(args).args(["-serial", "pty", "-monitor", "stdio", "-S"]);
        let mut process = Process::spawn(command, QEMU, QEMU_HINT)?;

        // The monitor's output: find the pty among it, and keep draining it.
        let monitor_output = line_reader(process.stdout().unwrap());
        let (tx, pty_path) = mpsc::channel();
        std::thread::spawn(move || {
            for line in monitor_output {
                if let Some(rest) = line.split("char device redirected to ").nth(1) {
                    let _ = tx.send(rest.split_whitespace().next().unwrap_or_default().to_owned());
                }
            }
        });
        let path = pty_path
            .recv_timeout(PTY_WAIT)
            .map_err(|_| RunnerError::Pty(format!("{QEMU} did not report its pty within {PTY_WAIT:?}")))?;
        let port = serialport::new(&path, BAUD)
            .timeout(Duration::from_millis(10))
            .open()
            .map_err(|e| RunnerError::Pty(format!("cannot open QEMU's pty {path}: {e}")))?;
        let mut target =
            QemuPty { monitor: process.stdin(), process, port, lines: LineBuffer::default(), closed: false };
        target.monitor_command("cont")?;
        Ok(target)
    }

    fn monitor_command(&mut self, command: &str) -> Result<(), RunnerError> {
        let monitor = self.monitor.as_mut().expect("monitor is open until stop");
        writeln!(monitor, "{command}")
            .and_then(|()| monitor.flush())
            .map_err(|source| RunnerError::Io { what: format!("cannot send `{command}` to QEMU's monitor"), source })
    }
}

impl Target for QemuPty {
    fn next(&mut self, wait: Duration) -> Result<Next, RunnerError> {
        if let Some(line) = self.lines.pop() {
            return Ok(Next::Line(line));
        }
        if self.closed {
            return Ok(self.lines.rest().map_or(Next::Closed, Next::Line));
        }
        let mut buf = [0u8; 512];
        self.port.set_timeout(wait.max(Duration::from_millis(1))).map_err(|e| RunnerError::Pty(e.to_string()))?;
        match self.port.read(&mut buf) {
            Ok(0) => self.closed = true,
            Ok(n) => self.lines.push(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            // The other end is gone: QEMU exited.
            Err(_) => self.closed = true,
        }
        match self.lines.pop() {
            Some(line) => Ok(Next::Line(line)),
            None if self.closed => Ok(self.lines.rest().map_or(Next::Closed, Next::Line)),
            None => Ok(Next::Idle),
        }
    }

    fn send(&mut self, bytes: &[u8]) -> Result<(), RunnerError> {
        self.port
            .write_all(bytes)
            .and_then(|()| self.port.flush())
            .map_err(|source| RunnerError::Io { what: "cannot write to QEMU's pty".into(), source })
    }

    fn ended(&mut self) -> Result<Option<Ending>, RunnerError> {
        self.process.ended()
    }

    fn stop(&mut self) {
        self.monitor = None;
        self.process.stop();
    }

    fn diagnostics(&mut self) -> String {
        self.process.diagnostics()
    }

    fn process(&self) -> Option<u32> {
        Some(self.process.id())
    }
}
