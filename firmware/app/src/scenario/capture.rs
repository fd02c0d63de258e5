//! `dma-stream`: frames arrive on their own. A camera, emulated on the
//! board's hardware timer, writes each frame into a FREE capture buffer a
//! chunk per interrupt, as a DMA does with its half- and full-transfer
//! interrupts, at the frame rate in the board's time, while inference,
//! post-processing and upload run in thread mode. A frame that finds no FREE
//! buffer is dropped and counted, never written over a held one. A lower
//! housekeeping interrupt, which the camera's preempts, completes the uploads
//! and drains the log ring to the transport. Every inferred frame must give
//! the answer one inference of its input gives on its own.
//!
//! Two self-tests hand the model a buffer the camera still writes:
//! `selftest-capture-filling` infers on the buffer being filled,
//! `selftest-zero-copy` captures into the input tensor itself and releases
//! the buffer when inference starts. With the lifecycle's checks each ends
//! naming the buffer and its state; with them compiled out the answers
//! differ from single-frame's.

use core::cell::RefCell;
use core::fmt::Write;
use core::sync::atomic::{AtomicU8, Ordering};

use arena::lifecycle::{Buffers, LifecycleError, State};
use arena::{Category, LogRing};
use critical_section::Mutex;
use hilmem_protocol::{exit, metric, Frame};

use super::{fail, fail_with_tflm_messages, pool_failure, report, report_figures, send, Rig, Text, LOG_RING_BYTES};
use crate::platform::clock;
use crate::{config, platform, tflm};

/// Chunks a frame arrives in: a DMA's half- and full-transfer interrupts,
/// twice.
const CHUNKS: u32 = 4;
/// The housekeeping interrupt's period.
const HOUSEKEEPING_US: u32 = 2_000;
/// Capture buffers the firmware can hold (the model's setting chooses how
/// many it uses).
const BUFFERS: usize = config::CAPTURE_BUFFERS;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Capture,
    /// A self-test: inference takes the buffer still being filled.
    InferWhileFilling,
    /// A self-test: the input tensor is a capture buffer, released when
    /// inference starts.
    ZeroCopy,
}

/// A capture buffer's memory, written by the camera's interrupt and read by
/// the thread and the housekeeping: the lifecycle decides which of them may
/// touch it, and the self-tests break its rules on purpose (in the
/// unchecked build they do touch it at once). So the memory is only ever
/// reached here, a byte at a time through atomics, as a DMA's buffer is
/// memory someone else may be writing: never through a Rust reference.
#[derive(Clone, Copy)]
struct Block {
    at: *mut u8,
    len: usize,
}

// SAFETY: a `Block` is an address; its memory is reached through `bytes`
// only, whichever context holds the copy.
unsafe impl Send for Block {}

impl Block {
    /// Its bytes in `range`, as atomics.
    fn bytes(&self, range: core::ops::Range<usize>) -> impl Iterator<Item = &AtomicU8> {
        assert!(range.start <= range.end && range.end <= self.len, "past the end of a capture buffer");
        range.map(|i| {
            // SAFETY: `at` is a capture buffer of `len` bytes (a pool block
            // or the input tensor), valid for the whole run, and `i` is
            // below `len`; `u8` and `AtomicU8` have the same size and
            // alignment; every access the firmware's Rust makes to it while
            // the camera runs is atomic (this one). The one non-atomic
            // access that can meet them is TFLM reading its input tensor
            // in `selftest-zero-copy` built unchecked, the hazard that
            // self-test exists to show, on a single-core board where the
            // camera is an interrupt.
            unsafe { AtomicU8::from_ptr(self.at.add(i)) }
        })
    }

    /// Writes `data` from byte `offset` on.
    fn write(&self, offset: usize, data: &[u8]) {
        for (byte, &b) in self.bytes(offset..offset + data.len()).zip(data) {
            byte.store(b, Ordering::Relaxed);
        }
    }

    /// Reads its first `to.len()` bytes into `to`.
    fn read(&self, to: &mut [u8]) {
        let len = to.len();
        for (b, byte) in to.iter_mut().zip(self.bytes(0..len)) {
            *b = byte.load(Ordering::Relaxed);
        }
    }

    /// The CRC-32 of its bytes.
    fn crc32(&self) -> u32 {
        hilmem_protocol::crc32_of(self.bytes(0..self.len).map(|byte| byte.load(Ordering::Relaxed)))
    }
}

/// What the camera's and the housekeeping's interrupts share with the
/// thread.
struct Capture {
    buffers: Buffers<BUFFERS>,
    memory: [Block; BUFFERS],
    /// Chunk interrupts so far: the clock of the lifecycle's timestamps.
    tick: u32,
    /// Frames the camera makes in all.
    frames: u32,
    /// The buffer the frame arriving now is written into, if it found one.
    filling: Option<usize>,
    /// Filled buffers with their frame number, oldest first.
    ready: [Option<(usize, u32)>; BUFFERS],
    uploads: [bool; BUFFERS],
    log: LogRing<'static>,
    captured: u32,
    dropped: u32,
    in_flight_peak: usize,
    /// A lifecycle error in an interrupt, for the thread to report.
    failure: Option<LifecycleError>,
}

static CAPTURE: Mutex<RefCell<Option<Capture>>> = Mutex::new(RefCell::new(None));

fn with<R>(f: impl FnOnce(&mut Capture) -> R) -> R {
    critical_section::with(|cs| f(CAPTURE.borrow_ref_mut(cs).as_mut().expect("capture set up")))
}

/// The camera's interrupt: the next chunk of the frame arriving now.
fn capture_chunk() {
    let inputs = &config::INPUTS;
    let write = with(|c| {
        let (frame, chunk) = (c.tick / CHUNKS, c.tick % CHUNKS);
        c.tick += 1;
        if frame >= c.frames {
            return None;
        }
        if chunk == 0 {
            match c.buffers.acquire_for_writer(c.tick) {
                Ok(buffer) => c.filling = Some(buffer),
                Err(_) => {
                    c.filling = None;
                    c.dropped += 1;
                }
            }
            c.in_flight_peak = c.in_flight_peak.max(c.buffers.in_use());
        }
        let buffer = c.filling?;
        let data = inputs[frame as usize % inputs.len()].1;
        let part = data.len().div_ceil(CHUNKS as usize);
        let range = (chunk as usize * part).min(data.len())..((chunk as usize + 1) * part).min(data.len());
        Some((c.memory[buffer], data, range, buffer, frame, chunk + 1 == CHUNKS))
    });
    let Some((block, data, range, buffer, frame, last)) = write else { return };
    // Outside the critical section, as a DMA writes while the thread runs.
    block.write(range.start, &data[range]);
    if last {
        with(|c| {
            c.filling = None;
            c.buffers.written(buffer);
            c.captured += 1;
            if let Some(slot) = c.ready.iter_mut().find(|s| s.is_none()) {
                *slot = Some((buffer, frame));
            }
        });
    }
}

/// The housekeeping interrupt: the oldest upload goes out (its checksum
/// stands for sending it: the buffer is read through, outside the critical
/// section, where the camera's interrupt preempts it) and the buffer is
/// FREE again; then the log ring drains to the transport a piece at a time.
fn housekeeping() {
    let upload = with(|c| c.uploads.iter().position(|&u| u).map(|buffer| (buffer, c.memory[buffer])));
    if let Some((buffer, block)) = upload {
        // An UPLOAD_PENDING buffer is the uploader's: the camera takes FREE
        // ones only.
        let sent = block.crc32();
        with(|c| {
            c.uploads[buffer] = false;
            if let Err(e) = c.buffers.advance(buffer, State::Free, c.tick) {
                c.failure.get_or_insert(e);
            }
            let _ = writeln!(c.log, "buffer {buffer} uploaded, crc {sent:08x}");
        });
    }
    let mut piece = [0u8; 96];
    let len = with(|c| c.log.take(&mut piece));
    platform::write(&piece[..len]);
}

/// A line for the log ring.
fn log(args: core::fmt::Arguments) {
    with(|c| {
        let _ = c.log.write_fmt(args);
    });
}

#[inline(never)]
pub fn run(mut rig: Rig, mode: Mode, frames: u32) -> i32 {
    if let Err(e) = rig.load_painted(config::MODEL) {
        return fail_with_tflm_messages("load", e);
    }
    // What one inference of each input gives on its own, as single-frame.
    let mut reference = [(0u32, 0f32); config::INPUTS.len()];
    for (answer, (name, data)) in reference.iter_mut().zip(config::INPUTS) {
        match rig.frame(name, data) {
            Ok(a) => *answer = a,
            Err(status) => return status,
        }
    }
    let log_memory = match rig.pool.alloc(Category::Log, LOG_RING_BYTES) {
        Ok(memory) => memory,
        Err(e) => return pool_failure("log", "log ring", e),
    };
    let mut memory = [Block { at: core::ptr::null_mut(), len: 0 }; BUFFERS];
    for (i, block) in memory.iter_mut().enumerate() {
        if mode == Mode::ZeroCopy && i == 0 {
            // The camera writes into the model's input tensor itself.
            let (at, len) = tflm::input_region();
            *block = Block { at, len };
            continue;
        }
        match rig.pool.alloc(Category::InputFrame, config::LARGEST_INPUT_BYTES) {
            Ok(m) => *block = Block { at: m.as_mut_ptr(), len: m.len() },
            Err(e) => return pool_failure("input", "capture buffer", e),
        }
    }
    critical_section::with(|cs| {
        CAPTURE.borrow_ref_mut(cs).replace(Capture {
            buffers: Buffers::default(),
            memory,
            tick: 0,
            frames,
            filling: None,
            ready: [None; BUFFERS],
            uploads: [false; BUFFERS],
            log: LogRing::new(log_memory),
            captured: 0,
            dropped: 0,
            in_flight_peak: 0,
            failure: None,
        })
    });
    if let Err(why) = clock::start((config::FRAME_PERIOD_US / CHUNKS, capture_chunk), (HOUSEKEEPING_US, housekeeping)) {
        return fail("capture", 0, why);
    }
    let mut answers = reference;
    let mut inferred = 0u32;
    let status = loop {
        let (next, done, failure) = with(|c| {
            let next = match mode {
                Mode::InferWhileFilling => {
                    c.filling.map(|b| (b, (c.tick - 1) / CHUNKS)).filter(|_| c.tick % CHUNKS != 0)
                }
                _ => c.ready.first().copied().flatten(),
            };
            if next.is_some() && mode != Mode::InferWhileFilling {
                c.ready.rotate_left(1);
                c.ready[BUFFERS - 1] = None;
            }
            let done = c.tick / CHUNKS >= c.frames && c.filling.is_none() && c.ready.iter().all(Option::is_none);
            (next, done, c.failure.take())
        });
        if let Some(e) = failure {
            break lifecycle_failure(e);
        }
        let Some((buffer, frame)) = next else {
            if done {
                break None;
            }
            clock::wait();
            continue;
        };
        let (name, data) = config::INPUTS[frame as usize % config::INPUTS.len()];
        if let Err(e) = with(|c| c.buffers.advance(buffer, State::InferRunning, c.tick)) {
            break lifecycle_failure(e);
        }
        log(format_args!("frame {frame}: buffer {buffer} INFER_RUNNING <- `{name}`\n"));
        // The buffer is the thread's while INFER_RUNNING (its writer has let
        // it go, or the unchecked build lets the race happen).
        let block = with(|c| c.memory[buffer]);
        let inference = if mode == Mode::ZeroCopy && buffer == 0 {
            // The frame is already in the input tensor; the buffer is
            // released as if the data were the model's now.
            if let Err(e) = with(|c| c.buffers.advance(buffer, State::Free, c.tick)) {
                break lifecycle_failure(e);
            }
            tflm::clear_messages();
            tflm::invoke().map_err(|e| fail_with_tflm_messages("invoke", e))
        } else {
            rig.infer_with(name, data.len(), &|pre| block.read(pre))
        };
        let answer = match inference.and_then(|()| rig.answer(name)) {
            Ok(answer) => answer,
            Err(status) => break Some(status),
        };
        inferred += 1;
        let input = frame as usize % config::INPUTS.len();
        if answer != reference[input] {
            clock::stop();
            let ((class, value), (want_class, want_value)) = (answer, reference[input]);
            let mut detail = Text::<160>::new();
            let _ = write!(
                detail,
                "frame {frame} of `{name}` answered class {class} ({value}), one inference of it alone class \
                 {want_class} ({want_value})"
            );
            break Some(fail("answers", 0, detail.as_str()));
        }
        answers[input] = answer;
        let moved = with(|c| {
            if c.buffers.state(buffer) == State::Free {
                return Ok(());
            }
            c.buffers.advance(buffer, State::Postprocessing, c.tick)?;
            c.buffers.advance(buffer, State::UploadPending, c.tick)?;
            c.uploads[buffer] = true;
            Ok(())
        });
        if let Err(e) = moved {
            break lifecycle_failure(e);
        }
    };
    clock::stop();
    if let Some(status) = status {
        return status;
    }
    let figures = rig.figures();
    let (captured, dropped, in_flight, log_peak, log_dropped) = with(|c| {
        // What the housekeeping had not drained yet.
        c.log.drain(platform::write);
        (c.captured, c.dropped, c.in_flight_peak, c.log.peak(), c.log.dropped())
    });
    report_figures(&figures);
    report(&[
        (metric::LOG_RING_PEAK_BYTES, log_peak as i64),
        (metric::LOG_DROPPED_BYTES, log_dropped as i64),
        (metric::FRAMES, i64::from(frames)),
        (metric::FRAMES_CAPTURED, i64::from(captured)),
        (metric::FRAMES_DROPPED, i64::from(dropped)),
        (metric::FRAMES_INFERRED, i64::from(inferred)),
        (metric::CAPTURE_BUFFERS, BUFFERS as i64),
        (metric::CAPTURE_BUFFERS_PEAK, in_flight as i64),
        (metric::INTERRUPT_NESTING_PEAK, i64::from(clock::nesting_peak())),
    ]);
    for ((name, _), (class, value)) in config::INPUTS.iter().zip(answers) {
        send(Frame::Output { input: name, class, value });
    }
    send(Frame::Done { ok: true });
    exit::OK
}

/// Ends the run on a lifecycle error, the clock stopped first (nothing may
/// write to the transport meanwhile).
fn lifecycle_failure(e: LifecycleError) -> Option<i32> {
    clock::stop();
    let mut detail = Text::<96>::new();
    let _ = write!(detail, "{e}");
    Some(fail("lifecycle", 0, detail.as_str()))
}
