//! Cancellation of a run: SIGINT and SIGTERM (also sent when the process
//! that started `cargo xtask` dies: the parent-death signal) stop every
//! program the run started, wait for outputs being written to be complete,
//! and end the process with the conventional status (130, 143) and one line
//! saying what was cancelled.

use std::time::Duration;

use harness::{children, fsutil};

use harness::exit;

/// How long the stopped programs' owners get to reap them.
const REAP_WAIT: Duration = Duration::from_secs(2);

/// From here on, SIGINT and SIGTERM cancel the run. Call it before the run
/// starts any thread: the signals are blocked in every thread (and, by
/// [`children::guard`], unblocked again in the programs it starts) and taken
/// by one thread of their own.
pub fn install() {
    #[cfg(target_os = "linux")]
    // SAFETY: plain system calls on a local signal set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        // If cargo (running `cargo xtask`) is killed, cancel too.
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
        std::thread::spawn(move || {
            let mut signal = 0;
            libc::sigwait(&set, &mut signal);
            cancel(signal);
        });
    }
}

#[cfg(target_os = "linux")]
fn cancel(signal: i32) -> ! {
    let (name, status) = match signal {
        libc::SIGINT => ("SIGINT", exit::CANCELLED_SIGINT),
        _ => ("SIGTERM", exit::CANCELLED_SIGTERM),
    };
    // Outputs being written are finished first; none is started after.
    let _writing = fsutil::writing();
    let (stopped, left) = children::stop_all(REAP_WAIT);
    let stopped = match stopped.len() {
        0 => "no target was running".to_owned(),
        _ => format!("stopped {}", stopped.join(", ")),
    };
    let unreaped = if left > 0 { format!(" ({left} not reaped yet)") } else { String::new() };
    eprintln!("cancelled by {name}: {stopped}{unreaped}; outputs are as the last complete run left them");
    std::process::exit(status)
}
