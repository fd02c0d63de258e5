//! The firmware logic as a Linux program: standard input and output stand in
//! for the UART, the scenario runs on a thread whose stack is painted, and the
//! kernel's accounting gives the peak resident set.

use std::io::{Read, Write};

use hilmem_protocol::exit;

use crate::config::STACK_BYTES;

pub fn init() {
    std::panic::set_hook(Box::new(|info| {
        let _ = writeln!(std::io::stdout(), "\npanic: {info}");
        exit(exit::PANIC);
    }));
}

pub fn write(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(bytes);
    if bytes.ends_with(b"\n") {
        let _ = out.flush();
    }
}

/// Blocks until the harness sends a byte; the end of input ends the program.
pub fn read_byte() -> u8 {
    let _ = std::io::stdout().flush();
    let mut byte = [0u8];
    match std::io::stdin().read_exact(&mut byte) {
        Ok(()) => byte[0],
        Err(_) => exit(exit::FAILED),
    }
}

/// Bytes below the stack pointer left alone while painting.
const PAINT_GUARD: usize = 4096;
/// Bytes below the stack pointer not read for the peak: the frames of the
/// call that reads the paint. (Reading only below the paint guard would floor
/// the peak at the reading depth plus 4 KiB.)
const READ_GUARD: usize = 256;

/// The scenario thread's stack, `[bottom, top)`.
pub struct Stack {
    bottom: usize,
    top: usize,
}

fn stack_pointer() -> usize {
    let marker = 0u8;
    std::hint::black_box(&marker) as *const u8 as usize
}

impl Stack {
    /// Paints the unused part of the calling thread's stack.
    ///
    /// # Safety
    /// Call once, first thing on the thread: the stack below the caller's
    /// frame is overwritten.
    pub unsafe fn paint() -> Stack {
        let mut addr: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        // SAFETY: the attributes are a plain C struct that
        // `pthread_getattr_np` fills for the calling thread (zeroed is a
        // valid start), read by `pthread_attr_getstack` into two locals, and
        // destroyed once.
        unsafe {
            let mut attr: libc::pthread_attr_t = std::mem::zeroed();
            assert_eq!(libc::pthread_getattr_np(libc::pthread_self(), &mut attr), 0);
            assert_eq!(libc::pthread_attr_getstack(&attr, &mut addr, &mut size), 0);
            libc::pthread_attr_destroy(&mut attr);
        }
        // The lowest page is the guard page.
        let bottom = addr as usize + page_size();
        let stack = Stack { bottom, top: addr as usize + size };
        stack.repaint();
        stack
    }

    /// Paints the stack below the caller's frame (again): what ran deeper
    /// before no longer counts.
    #[inline(never)]
    pub fn repaint(&self) {
        let end = stack_pointer() - PAINT_GUARD;
        let mut p = self.bottom as *mut u8;
        while cfg!(feature = "instrument") && (p as usize) < end {
            // SAFETY: [bottom, sp - guard) is this thread's stack below
            // every live frame.
            unsafe { std::ptr::write_volatile(p, arena::PAINT) };
            p = p.wrapping_add(1);
        }
    }

    pub fn size(&self) -> usize {
        self.top - self.bottom
    }

    /// Deepest extent of the stack since it was painted, in bytes from the top.
    pub fn peak(&self) -> usize {
        let reach = stack_pointer().saturating_sub(READ_GUARD).max(self.bottom);
        // SAFETY: [bottom, sp - guard) is this thread's stack below every live frame.
        let unused = unsafe { std::slice::from_raw_parts(self.bottom as *const u8, reach - self.bottom) };
        self.size() - arena::untouched_prefix(unused)
    }
}

/// What a stack that reached `peak` must hold: on a host, the peak (a
/// process has no exception frames to add).
pub fn stack_bound(peak: usize) -> usize {
    peak
}

fn page_size() -> usize {
    // SAFETY: plain query.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

/// No CPUID on the host: any x86_64 will do.
pub fn cpu_part() -> u16 {
    0
}

/// The kernel's peak resident set size of this process (VmHWM).
pub fn rss_peak_bytes() -> Option<i64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: i64 =
        status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kib * 1024)
}

/// Faults on purpose: a write through a null pointer (SIGSEGV).
pub fn fault() -> ! {
    // SAFETY: not safe at all; that is the point.
    unsafe { std::ptr::write_volatile(std::ptr::null_mut::<u8>(), 0) };
    unreachable!()
}

pub fn exit(status: i32) -> ! {
    let _ = std::io::stdout().flush();
    std::process::exit(status)
}

/// Runs `serve` on a thread with the configured stack, painted first.
pub fn run(serve: fn(Stack) -> i32) -> ! {
    init();
    let thread = std::thread::Builder::new().stack_size(STACK_BYTES).spawn(move || {
        // SAFETY: first thing on a fresh thread.
        let stack = unsafe { Stack::paint() };
        serve(stack)
    });
    let status = thread.expect("cannot start the scenario thread").join().unwrap_or(exit::PANIC);
    exit(status)
}

/// Time on the host: the capture and the housekeeping are threads that
/// call their work at their periods, for as long as the clock runs (no
/// interrupt, no nesting, no scaled clock).
pub mod clock {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Mutex;
    use std::thread::JoinHandle;
    use std::time::{Duration, Instant};

    static RUNNING: AtomicBool = AtomicBool::new(false);
    static THREADS: Mutex<Vec<JoinHandle<()>>> = Mutex::new(Vec::new());

    /// Calls `work` every `us` microseconds of wall time until [`stop`].
    fn every(us: u32, work: fn()) -> JoinHandle<()> {
        std::thread::spawn(move || {
            let period = Duration::from_micros(u64::from(us));
            let mut next = Instant::now() + period;
            while RUNNING.load(Ordering::SeqCst) {
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
                if RUNNING.load(Ordering::SeqCst) {
                    work();
                }
                next += period;
            }
        })
    }

    pub fn start(capture: (u32, fn()), housekeeping: (u32, fn())) -> Result<(), &'static str> {
        RUNNING.store(true, Ordering::SeqCst);
        let mut threads = THREADS.lock().unwrap_or_else(|e| e.into_inner());
        threads.push(every(capture.0, capture.1));
        threads.push(every(housekeeping.0, housekeeping.1));
        Ok(())
    }

    /// Stops both threads and waits for them: nothing runs after this.
    pub fn stop() {
        RUNNING.store(false, Ordering::SeqCst);
        let threads = std::mem::take(&mut *THREADS.lock().unwrap_or_else(|e| e.into_inner()));
        for thread in threads {
            let _ = thread.join();
        }
    }

    /// Lets the other threads run a little.
    pub fn wait() {
        std::thread::sleep(Duration::from_micros(100));
    }

    /// No interrupts, so no nesting.
    pub fn nesting_peak() -> u32 {
        0
    }
}
