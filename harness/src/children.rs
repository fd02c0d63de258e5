//! Every program a run starts (emulators, host programs, cargo), so that
//! none outlives it: each leads a process group of its own, gets the
//! parent-death signal, and is registered until it is reaped, so that a
//! cancelled run can stop them all.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

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

/// Kills every registered program's process group and waits up to `wait`
/// for their owners to reap them. Returns what was stopped (`name (pid N)`)
/// and how many were still not reaped when the wait ended.
pub fn stop_all(wait: Duration) -> (Vec<String>, usize) {
    let running = RUNNING.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for &pid in running.keys() {
        // SAFETY: a plain system call; the group is the child's own.
        #[cfg(target_os = "linux")]
        unsafe {
            libc::kill(-(pid as libc::pid_t), libc::SIGKILL);
        }
    }
    let deadline = Instant::now() + wait;
    let left = loop {
        let left = RUNNING.lock().unwrap_or_else(|e| e.into_inner()).len();
        if left == 0 || Instant::now() >= deadline {
            break left;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    (running.into_iter().map(|(pid, name)| format!("{name} (pid {pid})")).collect(), left)
}
