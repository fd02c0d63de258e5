//! The conversation with the harness, and what every scenario shares: the
//! tensor arena, the buffer pool, the painted stack, and the report.

mod capture;
mod least_arena;
mod multi_model;
mod single_frame;
mod stream;

use core::cell::Cell;
use core::fmt::Write;
use core::mem::MaybeUninit;

use arena::{ArenaBuffer, Category, Pool, CACHE_LINE};
use hilmem_protocol::{exit, metric, parse_line, scenario, Frame, Line, Numbered, MAX_LINE, MAX_PAYLOAD};

use crate::platform::{self, Stack};
use crate::{config, tflm};

/// The tensor arena. On bare metal it has its own section (placed by the
/// board's `memory.x`, in RAM or in a region of its own) and is not zeroed at
/// boot: it is painted before use. The harness finds it in the ELF by this name
/// to keep it out of `static_ram_bytes`.
#[no_mangle]
#[cfg_attr(target_os = "none", link_section = ".hilmem_arena")]
static mut HILMEM_ARENA: MaybeUninit<ArenaBuffer<{ config::ARENA_BYTES }>> = MaybeUninit::uninit();

/// Bytes of the log ring of the log-heavy scenario.
const LOG_RING_BYTES: usize = 2048;
/// Blocks the pool keeps track of at once.
const POOL_BLOCKS: usize = 32;

const fn max(a: usize, b: usize) -> usize {
    if a > b {
        a
    } else {
        b
    }
}

const fn lines(bytes: usize) -> usize {
    bytes.div_ceil(CACHE_LINE) * CACHE_LINE
}

/// Room for everything the scenarios keep in the pool at once: the input
/// frames in flight (two, or the capture buffers) and a pre-processing copy,
/// the post-processing buffer (the board's budget for it), the log ring and
/// the OTA staging buffer, plus one spare kilobyte.
const POOL_BYTES: usize = (max(config::CAPTURE_BUFFERS, 2) + 1) * lines(config::LARGEST_INPUT_BYTES)
    + lines(config::BUDGET.postprocess_bytes as usize)
    + lines(LOG_RING_BYTES)
    + lines(config::OTA_MODEL_BYTES)
    + 1024;

/// Backing store of the pool, cache-line aligned so that where the linker put
/// it changes nothing. The harness reads its size from the ELF by this name.
#[repr(C, align(32))] // CACHE_LINE
struct PoolMemory([u8; POOL_BYTES]);
#[no_mangle]
static mut HILMEM_POOL: PoolMemory = PoolMemory([0; POOL_BYTES]);

/// Whether the static memory has been handed out (once per boot).
static TAKEN: critical_section::Mutex<Cell<bool>> = critical_section::Mutex::new(Cell::new(false));

/// What a scenario works with.
pub struct Rig<'s> {
    arena: &'static mut [u8],
    pool: Pool<'static, POOL_BLOCKS>,
    stack: &'s Stack,
}

impl<'s> Rig<'s> {
    fn take(stack: &'s Stack) -> Rig<'s> {
        let taken = critical_section::with(|cs| TAKEN.borrow(cs).replace(true));
        assert!(!taken, "static memory taken twice");
        // SAFETY: handed out once (checked above); any bit pattern is a valid
        // u8, and the pool's memory is only reached through the pool.
        unsafe {
            let arena = core::ptr::addr_of_mut!(HILMEM_ARENA) as *mut u8;
            Rig {
                arena: core::slice::from_raw_parts_mut(arena, config::ARENA_BYTES),
                pool: Pool::new(&mut (*core::ptr::addr_of_mut!(HILMEM_POOL)).0),
                stack,
            }
        }
    }

    /// Paints the arena and loads `model` into it.
    fn load_painted(&mut self, model: &'static [u8]) -> Result<(), tflm::Error> {
        tflm::unload();
        arena::paint(self.arena);
        self.load(model)
    }

    /// Loads `model` into the arena (replacing the model there).
    fn load(&mut self, model: &'static [u8]) -> Result<(), tflm::Error> {
        tflm::clear_messages();
        // SAFETY: the model is 'static and the arena is only used by TFLM
        // until the next load.
        unsafe { tflm::load(model, self.arena) }
    }

    /// Feeds `data` to the model through a pre-processing buffer, as a real
    /// pipeline would convert a camera frame, and runs one inference.
    fn infer(&mut self, name: &str, data: &[u8]) -> Result<(), i32> {
        self.infer_with(name, data.len(), &|pre| pre.copy_from_slice(data))
    }

    /// As [`Rig::infer`], for `len` bytes that `fill` writes into the
    /// pre-processing buffer.
    fn infer_with(&mut self, name: &str, len: usize, fill: &dyn Fn(&mut [u8])) -> Result<(), i32> {
        let pre = self.pool.alloc(Category::Preprocess, len).map_err(|e| pool_failure("preprocess", name, e))?;
        fill(pre);
        let fed = tflm::set_input(0, pre);
        self.pool.free(pre).expect("block from this pool");
        if let Err((want, got)) = fed {
            let mut detail = Text::<128>::new();
            let _ = write!(detail, "input `{name}` has {got} bytes; the model's input tensor takes {want}");
            return Err(fail("input", 0, detail.as_str()));
        }
        tflm::clear_messages();
        tflm::invoke().map_err(|e| fail_with_tflm_messages("invoke", e))
    }

    /// One inference on `data`, staged in a pool buffer as a camera or
    /// microphone driver would fill it, and its answer.
    fn frame(&mut self, name: &str, data: &[u8]) -> Result<(u32, f32), i32> {
        let frame = self.pool.alloc(Category::InputFrame, data.len()).map_err(|e| pool_failure("input", name, e))?;
        frame.copy_from_slice(data);
        let result = self.infer(name, frame).and_then(|()| self.answer(name));
        self.pool.free(frame).expect("block from this pool");
        result
    }

    /// Reads the answer through a post-processing buffer.
    fn answer(&mut self, name: &str) -> Result<(u32, f32), i32> {
        let output = tflm::output().map_err(|e| fail("output", e.code, e.what()))?;
        let post = self.pool.alloc(Category::Postprocess, output.len()).map_err(|e| pool_failure("output", name, e))?;
        output.copy_to(post);
        let answer = output.answer(post);
        if !cfg!(feature = "inject-leak") {
            self.pool.free(post).expect("block from this pool");
        }
        Ok(answer)
    }

    /// The memory figures every scenario reports, taken before anything is
    /// formatted (formatting has its own stack cost); on a Cortex-M board
    /// also the handlers' stack and what the stack must hold with them.
    fn figures(&self) -> [(&'static str, i64); FIGURES] {
        let touched = arena::touched_bytes(self.arena) as i64;
        let c = |category| self.pool.category(category).peak as i64;
        let common = [
            (metric::STACK_PEAK_BYTES, self.stack.peak() as i64),
            (metric::ARENA_USED_BYTES, i64::from(tflm::arena_used_bytes())),
            (metric::ARENA_TOUCHED_BYTES, touched),
            (metric::HEAP_PEAK_BYTES, self.pool.usage().peak as i64),
            (metric::POOL_INPUT_FRAME_PEAK_BYTES, c(Category::InputFrame)),
            (metric::POOL_PREPROCESS_PEAK_BYTES, c(Category::Preprocess)),
            (metric::POOL_POSTPROCESS_PEAK_BYTES, c(Category::Postprocess)),
            (metric::POOL_LOG_PEAK_BYTES, c(Category::Log)),
            (metric::OTA_STAGING_PEAK_BYTES, c(Category::OtaStaging)),
        ];
        let mut figures = [("", 0); FIGURES];
        figures[..common.len()].copy_from_slice(&common);
        #[cfg(target_os = "none")]
        {
            figures[common.len()] = (metric::INTERRUPT_STACK_PEAK_BYTES, self.stack.interrupt_peak() as i64);
            figures[common.len() + 1] = (metric::STACK_BOUND_BYTES, platform::stack_bound(common[0].1 as usize) as i64);
        }
        figures
    }
}

/// How many figures [`Rig::figures`] reports on this platform.
const FIGURES: usize = if cfg!(target_os = "none") { 11 } else { 9 };

/// The next frame's number, and how many times each frame is sent (once
/// until a `Run` command asks for copies).
#[derive(Clone, Copy)]
struct Link {
    seq: u16,
    copies: u8,
}

static LINK: critical_section::Mutex<Cell<Link>> = critical_section::Mutex::new(Cell::new(Link { seq: 0, copies: 1 }));

fn send(frame: Frame) {
    let Link { seq, copies } = critical_section::with(|cs| {
        let link = LINK.borrow(cs);
        link.replace(Link { seq: link.get().seq.wrapping_add(1), ..link.get() })
    });
    // Frames are built from bounded fields; a frame too long to encode is a
    // firmware bug, caught by the panic handler.
    frame.write_lines(seq, copies, platform::write).expect("frame too long");
}

/// Sends each figure once (the harness refuses a figure sent twice).
fn report(metrics: &[(&str, i64)]) {
    for &(name, value) in metrics {
        send(Frame::Metric { name, value });
    }
}

/// The memory figures every scenario reports ([`Rig::figures`]), then the
/// process's peak RSS where the platform has one.
fn report_figures(figures: &[(&str, i64)]) {
    report(figures);
    if let Some(rss) = platform::rss_peak_bytes() {
        send(Frame::Metric { name: metric::RSS_PEAK_BYTES, value: rss });
    }
}

fn fail(stage: &str, code: i32, detail: &str) -> i32 {
    send(Frame::Failure { stage, code, detail });
    send(Frame::Done { ok: false });
    exit::FAILED
}

/// Reports a TFLM failure with what TFLM said about it, or the shim's reason
/// when it said nothing.
fn fail_with_tflm_messages(stage: &str, e: tflm::Error) -> i32 {
    tflm::with_messages(|said| fail(stage, e.code, if said.is_empty() { e.what() } else { said }))
}

fn pool_failure(stage: &str, what: &str, e: arena::PoolError) -> i32 {
    let mut detail = Text::<128>::new();
    let _ = write!(detail, "`{what}`: {e}");
    fail(stage, 0, detail.as_str())
}

/// Says hello, waits for a `Run` command and runs that scenario; returns the
/// exit status.
pub fn serve(stack: Stack) -> i32 {
    if platform::cpu_part() != config::CPU_PART {
        let mut detail = Text::<96>::new();
        let _ = write!(
            detail,
            "built for board `{}` (CPUID part {:#x}), running on part {:#x}",
            config::BOARD,
            config::CPU_PART,
            platform::cpu_part()
        );
        return fail("board", 0, detail.as_str());
    }
    send(Frame::Hello {
        board: config::BOARD,
        model: config::MODEL_NAME,
        arena_capacity: config::ARENA_BYTES as u32,
        stack_size: stack.size() as u32,
    });
    let mut line = [0u8; MAX_LINE];
    loop {
        let len = read_line(&mut line);
        let Ok(text) = core::str::from_utf8(&line[..len]) else {
            return fail("command", 0, "command line is not UTF-8");
        };
        let mut payload = [0u8; MAX_PAYLOAD];
        match parse_line(text.trim_end_matches('\r'), &mut payload) {
            Line::Log(_) => continue,
            Line::Frame(Ok(Numbered { frame: Frame::Run { scenario, frames, copies }, .. })) => {
                critical_section::with(|cs| {
                    let link = LINK.borrow(cs);
                    link.set(Link { copies, ..link.get() });
                });
                return run(scenario, frames, &stack);
            }
            Line::Frame(Ok(_)) => return fail("command", 0, "expected a Run frame"),
            Line::Frame(Err(_)) => return fail("command", 0, "corrupt command frame"),
        }
    }
}

fn run(scenario: &str, frames: u32, stack: &Stack) -> i32 {
    match scenario {
        scenario::SINGLE_FRAME => single_frame::run(Rig::take(stack), false),
        scenario::STREAM => stream::run(Rig::take(stack), stream::Mode::Plain, frames),
        scenario::LOG_HEAVY => stream::run(Rig::take(stack), stream::Mode::LogHeavy, frames),
        scenario::CONCURRENT_OTA => stream::run(Rig::take(stack), stream::Mode::ConcurrentOta, frames),
        scenario::MULTI_MODEL => multi_model::run(Rig::take(stack), frames, false),
        scenario::SHARED_PREEMPTION => multi_model::run(Rig::take(stack), frames, true),
        scenario::DMA_STREAM | scenario::DMA_STREAM_SLOW => {
            capture::run(Rig::take(stack), capture::Mode::Capture, frames)
        }
        scenario::CAPTURE_FILLING => capture::run(Rig::take(stack), capture::Mode::InferWhileFilling, frames),
        scenario::ZERO_COPY => capture::run(Rig::take(stack), capture::Mode::ZeroCopy, frames),
        scenario::STACK_REPORT => single_frame::run(Rig::take(stack), true),
        scenario::OTA_CORRUPT => stream::run(Rig::take(stack), stream::Mode::CorruptOta, frames),
        _ => self_test(scenario),
    }
}

/// Self-tests of the harness (besides the two above, which run a scenario
/// with a twist): each ends the run the way a broken firmware or a bad line
/// would, so the runners' handling of it can be tested.
#[inline(never)]
fn self_test(scenario: &str) -> i32 {
    match scenario {
        scenario::PANIC => panic!("self-test panic"),
        scenario::HARD_FAULT => platform::fault(),
        scenario::GARBAGE => {
            platform::write(b"\x00\xff noise \x1b[2J\n");
            platform::write(b"~hm2 00000301 00000000\n");
            exit::OK
        }
        // Claims a figure only the linker knows.
        scenario::LINKER_FIGURE => {
            report(&[(metric::FLASH_BYTES, 1)]);
            send(Frame::Done { ok: true });
            exit::OK
        }
        // Allocates from the C++ heap, which the bare-metal firmware does not
        // have: the runtime's `operator new` ends the run. A host process
        // has a heap.
        scenario::OPERATOR_NEW => {
            #[cfg(target_os = "none")]
            tflm::selftest_operator_new();
            fail("selftest", 0, "operator new returned (a host process has a heap)")
        }
        scenario::HANG => loop {
            core::hint::spin_loop();
        },
        _ => {
            let mut detail = Text::<96>::new();
            let _ = write!(detail, "unknown scenario `{scenario}`");
            fail("command", 0, detail.as_str())
        }
    }
}

/// A fixed-capacity string for failure details; text past the end is cut.
struct Text<const N: usize> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> Text<N> {
    fn new() -> Self {
        Text { buf: [0; N], len: 0 }
    }

    fn as_str(&self) -> &str {
        // Only whole `str`s are copied in, cut at a char boundary.
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl<const N: usize> Write for Text<N> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let mut n = s.len().min(N - self.len);
        while !s.is_char_boundary(n) {
            n -= 1;
        }
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

/// Reads one line (without its newline); a longer line is cut to the buffer.
fn read_line(buf: &mut [u8]) -> usize {
    let mut len = 0;
    loop {
        match platform::read_byte() {
            b'\n' => return len,
            b if len < buf.len() => {
                buf[len] = b;
                len += 1;
            }
            _ => {}
        }
    }
}
