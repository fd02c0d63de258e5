//! QEMU with its UART on a pseudo-terminal, read through the serial port
//! driver, as a real board's UART would be.
//!
//! The harness makes the pty pair and hands QEMU the terminal side; it keeps
//! the master side for the whole run, and the terminal side open as long as
//! QEMU runs. Holding the master from before QEMU starts means nothing the
//! guest writes early is lost. Holding the terminal side keeps the master
//! from hanging up while QEMU runs. Once QEMU has ended the harness lets go
//! of it: with no terminal side open, the master's reader still gets every
//! byte QEMU wrote (Linux keeps them for it, unlike for a terminal-side
//! reader), then the end of the stream, so the end of a run is read to its
//! end however late the harness reads it.
//!
//! The serial port driver refuses to read a hung-up port, so the rest after
//! QEMU's end is read from the master directly.

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::process::Command;
use std::time::{Duration, Instant};

use serialport::{SerialPort, TTYPort};

use super::child::Process;
use super::lines::LineBuffer;
use super::{Ending, Next, RunnerError, Target, QEMU, QEMU_HINT};

pub struct QemuPty {
    process: Process,
    master: TTYPort,
    /// The terminal side QEMU opened too; held until QEMU has ended, so the
    /// master does not hang up while it runs.
    terminal: Option<TTYPort>,
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
        Ok(QemuPty { process, master, terminal: Some(terminal), lines: LineBuffer::default() })
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
            if self.terminal.is_none() {
                match read_hung_up(&self.master, &mut buf, left)? {
                    Some(0) => return Ok(self.lines.rest().map_or(Next::Closed, Next::Line)),
                    Some(n) => self.lines.push(&buf[..n]),
                    None => return Ok(Next::Idle),
                }
                continue;
            }
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
        let ended = self.process.ended()?;
        if ended.is_some() {
            // Nothing writes to the terminal side any more: let go of it,
            // so the master's output ends after the last byte QEMU wrote.
            self.terminal = None;
        }
        Ok(ended)
    }

    fn stop(&mut self) {
        self.process.stop();
    }

    fn diagnostics(&mut self, wait: Duration) -> String {
        self.process.diagnostics(wait)
    }

    fn process(&self) -> Option<u32> {
        Some(self.process.id())
    }
}

/// Reads the master side of a pty whose terminal side is closed: `Some(n)`
/// bytes, `Some(0)` at the end (Linux says EIO once the rest is read), or
/// `None` when nothing came within `wait`.
fn read_hung_up(master: &TTYPort, buf: &mut [u8], wait: Duration) -> Result<Option<usize>, RunnerError> {
    let fd = master.as_raw_fd();
    let error = |source| RunnerError::Io { what: "cannot read QEMU's pty".into(), source };
    let mut poll = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    let millis = i32::try_from(wait.as_millis()).unwrap_or(i32::MAX);
    // SAFETY: one valid pollfd, and a buffer of the length given.
    match unsafe { libc::poll(&mut poll, 1, millis) } {
        0 => return Ok(None),
        n if n < 0 => return Err(error(std::io::Error::last_os_error())),
        _ => {}
    }
    match unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) } {
        n if n >= 0 => Ok(Some(n as usize)),
        _ => match std::io::Error::last_os_error() {
            e if e.raw_os_error() == Some(libc::EIO) => Ok(Some(0)),
            e if e.kind() == std::io::ErrorKind::Interrupted => Ok(None),
            e => Err(error(e)),
        },
    }
}
