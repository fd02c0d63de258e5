//! The conversation with the harness and the scenarios themselves.

use core::cell::Cell;
use core::fmt::Write;
use core::mem::MaybeUninit;

use arena::{ArenaBuffer, Pool};
use hilmem_protocol::{exit, parse_line, Frame, Line, MAX_LINE, MAX_PAYLOAD};

use crate::platform::{self, Stack};
use crate::{config, tflm};

/// The tensor arena. On bare metal it has its own section (placed by the
/// board's `memory.x`, in RAM or in a region of its own) and is not zeroed at
/// boot: it is painted before use. The harness finds it in the ELF by this name
/// to keep it out of `static_ram_bytes`.
#[no_mangle]
#[cfg_attr(target_os = "none", link_section = ".hilmem_arena")]
static mut HILMEM_ARENA: MaybeUninit<ArenaBuffer<{ config::ARENA_BYTES }>> = MaybeUninit::uninit();
static ARENA_TAKEN: critical_section::Mutex<Cell<bool>> = critical_section::Mutex::new(Cell::new(false));

/// Cache-line alignment for pool buffers.
const CACHE_LINE: usize = 32;

/// Room for the largest input frame (the pool is aligned; one frame is in
/// flight at a time).
const POOL_BYTES: usize = config::LARGEST_INPUT_BYTES;

/// Backing store of the pool for buffers outside the arena (the input frame),
/// cache-line aligned so that a block's padding depends only on the blocks
/// before it, not on where the linker put the pool.
#[repr(C, align(32))] // CACHE_LINE
struct PoolMemory([u8; POOL_BYTES]);
static mut POOL_MEMORY: PoolMemory = PoolMemory([0; POOL_BYTES]);

fn send(frame: Frame) {
    // Frames are built from bounded fields; a frame too long to encode is a
    // firmware bug, caught by the panic handler.
    frame.write_line(platform::write).expect("frame too long");
    platform::write(b"\n");
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
            Line::Frame(Ok(Frame::Run { scenario })) => return run(scenario, &stack),
            Line::Frame(Ok(_)) => return fail("command", 0, "expected a Run frame"),
            Line::Frame(Err(_)) => return fail("command", 0, "corrupt command frame"),
        }
    }
}

fn run(scenario: &str, stack: &Stack) -> i32 {
    match scenario {
        "single-frame" => single_frame(stack),
        // Self-tests of the harness: each ends the run the way a broken
        // firmware or a bad line would, so the runners' handling of it can
        // be tested.
        "selftest-panic" => panic!("self-test panic"),
        "selftest-hardfault" => platform::fault(),
        "selftest-garbage" => {
            platform::write(b"\x00\xff noise \x1b[2J\n");
            platform::write(b"~hm1 0301 00000000\n");
            exit::OK
        }
        "selftest-hang" => loop {
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

fn take_arena() -> &'static mut [u8] {
    let taken = critical_section::with(|cs| ARENA_TAKEN.borrow(cs).replace(true));
    assert!(!taken, "arena taken twice");
    // SAFETY: handed out once (checked above); any bit pattern is a valid u8.
    unsafe {
        let arena = core::ptr::addr_of_mut!(HILMEM_ARENA) as *mut u8;
        core::slice::from_raw_parts_mut(arena, config::ARENA_BYTES)
    }
}

fn take_pool() -> Pool<'static> {
    // SAFETY: called once per boot, from `single_frame` after `take_arena`
    // (which panics on a second call).
    Pool::new(unsafe { &mut (*core::ptr::addr_of_mut!(POOL_MEMORY)).0 })
}

/// Loads the model, runs one inference per configured input and reports the
/// memory record and the model's answers.
fn single_frame(stack: &Stack) -> i32 {
    let arena = take_arena();
    let mut pool = take_pool();
    arena::paint(arena);
    let arena_ptr: *const u8 = arena.as_ptr();

    tflm::clear_messages();
    if let Err(e) = tflm::load(config::MODEL, arena) {
        return fail_with_tflm_messages("load", e);
    }

    let mut answers = [(0u32, 0f32); config::INPUTS.len()];
    for (answer, (name, data)) in answers.iter_mut().zip(config::INPUTS) {
        // The input frame is staged in a pool buffer, as a camera or
        // microphone driver would fill it, then copied into the tensor.
        let frame = match pool.alloc(data.len(), CACHE_LINE) {
            Ok(frame) => frame,
            Err(e) => {
                let mut detail = Text::<128>::new();
                let _ = write!(detail, "input `{name}`: {e}");
                return fail("input", 0, detail.as_str());
            }
        };
        frame.copy_from_slice(data);
        if let Err((want, got)) = tflm::set_input(0, frame) {
            let mut detail = Text::<128>::new();
            let _ = write!(detail, "input `{name}` has {got} bytes; the model's input tensor takes {want}");
            return fail("input", 0, detail.as_str());
        }
        pool.free(frame).expect("pool is freed in order");
        tflm::clear_messages();
        if let Err(e) = tflm::invoke() {
            return fail_with_tflm_messages("invoke", e);
        }
        match tflm::top_output() {
            Ok(top) => *answer = top,
            Err(e) => return fail("output", e.code, e.what()),
        }
    }

    // Measure before formatting anything: reporting has its own stack cost.
    let stack_peak = stack.peak();
    // SAFETY: inference is over; the arena is only read.
    let arena = unsafe { core::slice::from_raw_parts(arena_ptr, config::ARENA_BYTES) };
    let metrics = [
        ("arena_capacity_bytes", config::ARENA_BYTES as i64),
        ("arena_used_bytes", i64::from(tflm::arena_used_bytes())),
        ("arena_touched_bytes", arena::touched_bytes(arena) as i64),
        ("heap_peak_bytes", pool.peak() as i64),
        ("stack_peak_bytes", stack_peak as i64),
    ];
    for (name, value) in metrics {
        send(Frame::Metric { name, value });
    }
    if let Some(rss) = platform::rss_peak_bytes() {
        send(Frame::Metric { name: "rss_peak_bytes", value: rss });
    }
    for ((name, _), (class, value)) in config::INPUTS.iter().zip(answers) {
        send(Frame::Output { input: name, class, value });
    }
    send(Frame::Done { ok: true });
    exit::OK
}
