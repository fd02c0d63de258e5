//! Targets that are local processes: the [`Process`] bookkeeping shared by
//! them, and [`Stdio`], whose standard input and output are the firmware's
//! UART (QEMU with `-serial stdio`, or the host build of the firmware).

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{ChildStdin, ChildStdout, Command};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{Ending, Next, RunnerError, Target};
use crate::children;

/// A started program: its exit status once known, and its standard error.
/// It is started guarded ([`children::guard`]) and registered until reaped.
pub struct Process {
    child: std::process::Child,
    ended: Option<Ending>,
    /// Whether its process group has been killed.
    stopped: bool,
    stderr: Stderr,
}

/// A program's standard error, read to its end on a thread of its own.
struct Stderr {
    text: Arc<Mutex<Vec<u8>>>,
    /// Closed (disconnected) when the stream has ended.
    closed: Receiver<()>,
}

impl Stderr {
    fn read(mut pipe: impl Read + Send + 'static) -> Stderr {
        let text = Arc::new(Mutex::new(Vec::new()));
        let (done, closed) = mpsc::channel::<()>();
        let shared = Arc::clone(&text);
        std::thread::spawn(move || {
            let _done = done;
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = pipe.read(&mut buf) {
                shared.lock().unwrap_or_else(|e| e.into_inner()).extend_from_slice(&buf[..n]);
            }
        });
        Stderr { text, closed }
    }

    /// What it said, waiting at most `wait` for its end.
    fn text(&self, wait: Duration) -> String {
        let closed = matches!(self.closed.recv_timeout(wait), Err(RecvTimeoutError::Disconnected));
        let mut text = String::from_utf8_lossy(&self.text.lock().unwrap_or_else(|e| e.into_inner())).into_owned();
        if !closed {
            text.push_str(&format!(
                "(its standard error was still open {:.1} s after it ended: read no further)\n",
                wait.as_secs_f64()
            ));
        }
        text
    }
}

impl Process {
    /// Starts `command` with all three standard streams piped.
    pub fn spawn(mut command: Command, program: &str, hint: &'static str) -> Result<Process, RunnerError> {
        use std::process::Stdio;
        children::guard(&mut command);
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| RunnerError::Spawn { program: program.to_owned(), source, hint })?;
        children::started(child.id(), program);
        let stderr = Stderr::read(child.stderr.take().unwrap());
        Ok(Process { child, ended: None, stopped: false, stderr })
    }

    pub fn stdin(&mut self) -> Option<ChildStdin> {
        self.child.stdin.take()
    }

    pub fn stdout(&mut self) -> Option<ChildStdout> {
        self.child.stdout.take()
    }

    pub fn ended(&mut self) -> Result<Option<Ending>, RunnerError> {
        if self.ended.is_none() {
            let status = self
                .child
                .try_wait()
                .map_err(|source| RunnerError::Io { what: "cannot wait for the target process".into(), source })?;
            self.ended = status.map(|s| s.code().map_or_else(|| Ending::Died(s.to_string()), Ending::Exited));
            if self.ended.is_some() {
                children::reaped(self.child.id());
            }
        }
        Ok(self.ended.clone())
    }

    /// Kills the program and whatever it started (its process group, so
    /// that nothing it left behind holds its output open), and reaps it.
    pub fn stop(&mut self) {
        if !self.stopped {
            // Once, as the run ends.
            self.stopped = true;
            children::kill_group(self.child.id());
        }
        if self.ended.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
            children::reaped(self.child.id());
        }
    }

    /// Its standard error, waiting at most `wait` for the end of it.
    pub fn diagnostics(&mut self, wait: Duration) -> String {
        self.stderr.text(wait)
    }

    pub fn id(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Lines read from `stream` on a thread of their own, so reads can time out.
fn line_reader(stream: impl Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    let mut stream = BufReader::new(stream);
    std::thread::spawn(move || loop {
        let mut line = Vec::new();
        match stream.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                if tx.send(String::from_utf8_lossy(&line).into_owned()).is_err() {
                    break;
                }
            }
        }
    });
    rx
}

/// A program whose standard input and output carry the firmware's UART.
pub struct Stdio {
    process: Process,
    input: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Stdio {
    pub fn start(command: Command, program: &str, hint: &'static str) -> Result<Stdio, RunnerError> {
        let mut process = Process::spawn(command, program, hint)?;
        let lines = line_reader(process.stdout().unwrap());
        Ok(Stdio { input: process.stdin(), process, lines })
    }
}

impl Target for Stdio {
    fn next(&mut self, wait: Duration) -> Result<Next, RunnerError> {
        match self.lines.recv_timeout(wait) {
            Ok(line) => Ok(Next::Line(line)),
            Err(RecvTimeoutError::Timeout) => Ok(Next::Idle),
            Err(RecvTimeoutError::Disconnected) => Ok(Next::Closed),
        }
    }

    fn send(&mut self, bytes: &[u8]) -> Result<(), RunnerError> {
        let input = self.input.as_mut().expect("input is open until stop");
        input
            .write_all(bytes)
            .and_then(|()| input.flush())
            .map_err(|source| RunnerError::Io { what: "cannot write to the target's input".into(), source })
    }

    fn ended(&mut self) -> Result<Option<Ending>, RunnerError> {
        self.process.ended()
    }

    fn stop(&mut self) {
        self.input = None;
        self.process.stop();
    }

    fn diagnostics(&mut self, wait: Duration) -> String {
        self.process.diagnostics(wait)
    }

    fn process(&self) -> Option<u32> {
        Some(self.process.id())
    }
}
