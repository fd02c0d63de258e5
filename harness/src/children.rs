//! Everything a run starts, so that none outlives it: every program
//! (emulators, host programs, cargo) leads a process group of its own, gets
//! the parent-death signal, and is registered until it is reaped; every
//! target being driven (a program, or a core behind a debug probe) counts
//! itself while it runs. A cancelled run asks the targets to stop (each
//! stops its own: kills its program, or halts its core and releases the
//! probe) and kills what programs remain.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static CANCELLED: AtomicBool = AtomicBool::new(false);
static DRIVEN: AtomicUsize = AtomicUsize::new(0);

/// Whether the run has been cancelled: a target being driven stops.
pub fn cancelled() -> bool {
    CANCELLED.load(Ordering::SeqCst)
}

/// Held while a target is driven.
pub struct Driven(());

impl Driven {
    pub fn start() -> Driven {
        DRIVEN.fetch_add(1, Ordering::SeqCst);
        Driven(())
    }
}

impl Drop for Driven {
    fn drop(&mut self) {
        DRIVEN.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The programs started and not yet reaped: pid and name.
static RUNNING: Mutex<BTreeMap<u32, String>> = Mutex::new(BTreeMap::new());

/// Prepares `command` for a program a run starts. On Linux the program leads
/// a process group of its own (so stopping it stops what it started, such
/// as cargo's compilers), gets SIGKILL when the thread that started it ends
/// (the parent-death signal: also when this process is killed outright),
/// and does not inherit the signals this process keeps blocked for its own
/// handling of cancellation.
pub fn guard(command: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: between fork and exec the closure calls only
        // async-signal-safe functions.
        unsafe {
            command.pre_exec(move || {
                let mut all: libc::sigset_t = std::mem::zeroed();
                libc::sigfillset(&mut all);
                libc::pthread_sigmask(libc::SIG_UNBLOCK, &all, std::ptr::null_mut());
                if libc::setpgid(0, 0) != 0 || libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The parent died before the signal was set: nobody waits.
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
    }
}

/// Records a started program until [`reaped`].
pub fn started(pid: u32, program: &str) {
    RUNNING.lock().unwrap_or_else(|e| e.into_inner()).insert(pid, program.to_owned());
}

/// Forgets a program that has been waited for.
pub fn reaped(pid: u32) {
    RUNNING.lock().unwrap_or_else(|e| e.into_inner()).remove(&pid);
}

/// Kills the process group of a program started by [`guard`] (its own
/// group, whose number stays taken while anything in it lives).
pub fn kill_group(pid: u32) {
    // SAFETY: a plain system call; the group is the child's own.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::kill(-(pid as libc::pid_t), libc::SIGKILL);
    }
}

/// Cancels the run: asks every driven target to stop and waits for them
/// (up to `wait`), then kills every program still registered and waits for
/// their owners to reap them. Returns what was running (`name (pid N)`) and
/// how many programs and targets were still not done when the wait ended.
pub fn stop_all(wait: Duration) -> (Vec<String>, usize) {
    let deadline = Instant::now() + wait;
    let running = RUNNING.lock().unwrap_or_else(|e| e.into_inner()).clone();
    CANCELLED.store(true, Ordering::SeqCst);
    while DRIVEN.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    for &pid in RUNNING.lock().unwrap_or_else(|e| e.into_inner()).keys() {
        kill_group(pid);
    }
    let left = loop {
        let left = RUNNING.lock().unwrap_or_else(|e| e.into_inner()).len() + DRIVEN.load(Ordering::SeqCst);
        if left == 0 || Instant::now() >= deadline {
            break left;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    (running.into_iter().map(|(pid, name)| format!("{name} (pid {pid})")).collect(), left)
}
