//! The hilmem wire format, shared by the firmware (no_std) and the harness.
//!
//! Firmware output is a stream of text lines. Most are free-form log lines kept
//! for diagnostics; a line that starts with [`MARK`] is a frame:
//!
//! ```text
//! ~hm<version> <payload as lowercase hex> <CRC-32 of the payload, 8 hex digits>
//! ```
//!
//! The payload is the frame's sequence number (two bytes), one tag byte and
//! the frame's fields: integers little endian, booleans as one byte 0 or 1,
//! strings as a length byte and UTF-8. A frame whose version, hex, checksum
//! or fields are wrong decodes to a [`FrameError`], never to a value. The
//! host sends commands the same way.
//!
//! The firmware numbers its frames 0, 1, 2, ... from boot, so the receiver
//! knows when one went missing, and after a [`Frame::Run`] that asks for
//! copies sends each frame that many times under its one number: over a
//! noisy link, a frame counts when any of its copies arrives whole.
#![no_std]

use core::fmt;

/// Start of every frame line.
pub const MARK: &str = "~hm";
/// Wire format version carried by every frame.
pub const VERSION: u8 = 2;
/// Largest payload in bytes.
pub const MAX_PAYLOAD: usize = 255;
/// Longest frame line without its newline: mark, version digit, two spaces,
/// hex payload and checksum.
pub const MAX_LINE: usize = MARK.len() + 1 + 1 + 2 * MAX_PAYLOAD + 1 + 8;

/// One record on the wire.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Frame<'a> {
    /// Device to host after boot: who is running, then it waits for [`Frame::Run`].
    Hello { board: &'a str, model: &'a str, arena_capacity: u32, stack_size: u32 },
    /// Host to device: run one scenario; `frames` is the length of the
    /// streaming scenarios (ignored by single-frame); `copies` is how many
    /// times the device sends each frame from here on (0 counts as 1).
    Run { scenario: &'a str, frames: u32, copies: u8 },
    /// One named figure of the measurement record.
    Metric { name: &'a str, value: i64 },
    /// The scenario could not run; `stage` says where it stopped.
    Failure { stage: &'a str, code: i32, detail: &'a str },
    /// What the model answered for one input: the index of the largest output
    /// element and the first output element, dequantized.
    Output { input: &'a str, class: u32, value: f32 },
    /// A named piece of text in the record, such as the OTA gate's decision.
    Note { name: &'a str, text: &'a str },
    /// Where TFLM placed a tensor's data: its offset from the arena's start.
    Placement { tensor: u32, offset: u32 },
    /// Last frame of a run.
    Done { ok: bool },
}

/// Frames of a streaming scenario counted as warm-up: after them, the
/// firmware's watermarks must not move.
pub const WARM_UP_FRAMES: u32 = 4;

/// The figures' names, which both sides use and baselines are stored
/// under: stable.
pub mod metric {
    /// Size of the `.tflite` flatbuffer.
    pub const MODEL_BYTES: &str = "model_bytes";
    /// What the image puts in flash, from the ELF.
    pub const FLASH_BYTES: &str = "flash_bytes";
    /// `.data` + `.bss` + `.uninit` without the arena, from the ELF.
    pub const STATIC_RAM_BYTES: &str = "static_ram_bytes";
    /// The configured arena, from the ELF.
    pub const ARENA_CAPACITY_BYTES: &str = "arena_capacity_bytes";
    /// The buffer pool's backing store, from the ELF (part of
    /// [`STATIC_RAM_BYTES`]).
    pub const POOL_CAPACITY_BYTES: &str = "pool_capacity_bytes";
    /// The analyzer's prediction of [`ARENA_USED_BYTES`], in the build
    /// record.
    pub const PREDICTED_ARENA_BYTES: &str = "predicted_arena_bytes";
    /// The least arena the analyzer finds `AllocateTensors` accepts, in the
    /// build record.
    pub const PREDICTED_LEAST_ARENA_BYTES: &str = "predicted_least_arena_bytes";
    /// The least arena `AllocateTensors` accepts, found by the firmware in
    /// the single frame's boot (a binary search at the arena's alignment).
    pub const LEAST_ARENA_BYTES: &str = "least_arena_bytes";
    /// TFLM's `arena_used_bytes()` after `AllocateTensors`.
    pub const ARENA_USED_BYTES: &str = "arena_used_bytes";
    /// Planned (non-persistent) part of the arena, as TFLM reports it.
    pub const ARENA_HEAD_BYTES: &str = "arena_head_bytes";
    /// Persistent part of the arena, as TFLM reports it.
    pub const ARENA_TAIL_BYTES: &str = "arena_tail_bytes";
    /// Bytes of the painted arena that were written, observed.
    pub const ARENA_TOUCHED_BYTES: &str = "arena_touched_bytes";
    /// Peak bytes in use in the firmware's pool.
    pub const HEAP_PEAK_BYTES: &str = "heap_peak_bytes";
    /// Painted-stack high-water mark.
    pub const STACK_PEAK_BYTES: &str = "stack_peak_bytes";
    /// Peak resident set of a host-board process, from the kernel (VmHWM).
    pub const RSS_PEAK_BYTES: &str = "rss_peak_bytes";
    /// Frames a streaming scenario ran.
    pub const FRAMES: &str = "frames";
    /// Growth of the pool (outside OTA staging) after warm-up: a leak.
    pub const HEAP_GROWTH_BYTES: &str = "heap_growth_bytes";
    /// 1 when the gate accepted the update, 0 when it refused it.
    pub const OTA_ACCEPTED: &str = "ota_accepted";
    /// Peak of the buffer that receives the update.
    pub const OTA_STAGING_PEAK_BYTES: &str = "ota_staging_peak_bytes";
    /// Peaks of the pool's other categories.
    pub const POOL_INPUT_FRAME_PEAK_BYTES: &str = "pool_input_frame_peak_bytes";
    pub const POOL_PREPROCESS_PEAK_BYTES: &str = "pool_preprocess_peak_bytes";
    pub const POOL_POSTPROCESS_PEAK_BYTES: &str = "pool_postprocess_peak_bytes";
    pub const POOL_LOG_PEAK_BYTES: &str = "pool_log_peak_bytes";
    /// State changes of the managed buffers in a streaming scenario.
    pub const LIFECYCLE_TRANSITIONS: &str = "lifecycle_transitions";
    /// The log ring's peak, and what it dropped when full.
    pub const LOG_RING_PEAK_BYTES: &str = "log_ring_peak_bytes";
    pub const LOG_DROPPED_BYTES: &str = "log_dropped_bytes";
    /// The capture scenario's frames: those the camera wrote into a buffer,
    /// those that found none, and those inferred.
    pub const FRAMES_CAPTURED: &str = "frames_captured";
    pub const FRAMES_DROPPED: &str = "frames_dropped";
    pub const FRAMES_INFERRED: &str = "frames_inferred";
    /// Its capture buffers, and the most of them in use at once.
    pub const CAPTURE_BUFFERS: &str = "capture_buffers";
    pub const CAPTURE_BUFFERS_PEAK: &str = "capture_buffers_peak";
    /// The deepest the interrupt handlers nested.
    pub const INTERRUPT_NESTING_PEAK: &str = "interrupt_nesting_peak";
    /// On a Cortex-M board: the handlers' stack (the main stack, with the
    /// frames nested exceptions stacked), and what the stack must hold: the
    /// thread's peak, one exception frame landing at it (with the FP
    /// context) and the handlers' peak.
    pub const INTERRUPT_STACK_PEAK_BYTES: &str = "interrupt_stack_peak_bytes";
    pub const STACK_BOUND_BYTES: &str = "stack_bound_bytes";
    /// In a set whose model infers from an interrupt: its inferences, and
    /// those that began while another model's ran.
    pub const INTERRUPT_INFERENCES: &str = "interrupt_inferences";
    pub const PREEMPTIONS: &str = "preemptions";

    /// The figures the host reads from the model file and the ELF: a
    /// firmware that reports one is refused, so the linker's facts never
    /// depend on the firmware telling the truth about itself.
    pub const FROM_IMAGE: [&str; 5] =
        [MODEL_BYTES, FLASH_BYTES, STATIC_RAM_BYTES, ARENA_CAPACITY_BYTES, POOL_CAPACITY_BYTES];

    /// Every figure a firmware may report; any other name is refused.
    pub const REPORTABLE: [&str; 27] = [
        ARENA_USED_BYTES,
        ARENA_TOUCHED_BYTES,
        HEAP_PEAK_BYTES,
        STACK_PEAK_BYTES,
        RSS_PEAK_BYTES,
        FRAMES,
        HEAP_GROWTH_BYTES,
        OTA_ACCEPTED,
        OTA_STAGING_PEAK_BYTES,
        POOL_INPUT_FRAME_PEAK_BYTES,
        POOL_PREPROCESS_PEAK_BYTES,
        POOL_POSTPROCESS_PEAK_BYTES,
        POOL_LOG_PEAK_BYTES,
        LIFECYCLE_TRANSITIONS,
        LOG_RING_PEAK_BYTES,
        LOG_DROPPED_BYTES,
        FRAMES_CAPTURED,
        FRAMES_DROPPED,
        FRAMES_INFERRED,
        CAPTURE_BUFFERS,
        CAPTURE_BUFFERS_PEAK,
        INTERRUPT_NESTING_PEAK,
        INTERRUPT_STACK_PEAK_BYTES,
        STACK_BOUND_BYTES,
        INTERRUPT_INFERENCES,
        PREEMPTIONS,
        LEAST_ARENA_BYTES,
    ];

    /// The figures every run on a Cortex-M board must report besides
    /// [`FROM_FIRMWARE`].
    pub const FROM_CORTEX_M: [&str; 2] = [INTERRUPT_STACK_PEAK_BYTES, STACK_BOUND_BYTES];

    /// The figures every firmware run must report.
    pub const FROM_FIRMWARE: [&str; 9] = [
        ARENA_USED_BYTES,
        ARENA_TOUCHED_BYTES,
        HEAP_PEAK_BYTES,
        STACK_PEAK_BYTES,
        POOL_INPUT_FRAME_PEAK_BYTES,
        POOL_PREPROCESS_PEAK_BYTES,
        POOL_POSTPROCESS_PEAK_BYTES,
        POOL_LOG_PEAK_BYTES,
        OTA_STAGING_PEAK_BYTES,
    ];

    /// The figures a scenario must report besides [`FROM_FIRMWARE`] (and,
    /// in the multi-model scenario, [`write_of_resident`] `ARENA_USED_BYTES` for each
    /// model).
    pub fn required_by(scenario: &str) -> &'static [&'static str] {
        match scenario {
            crate::scenario::STREAM | crate::scenario::LOG_HEAVY => &[FRAMES, HEAP_GROWTH_BYTES],
            crate::scenario::CONCURRENT_OTA => &[FRAMES, OTA_ACCEPTED, OTA_STAGING_PEAK_BYTES],
            crate::scenario::MULTI_MODEL => &[FRAMES],
            crate::scenario::DMA_STREAM | crate::scenario::DMA_STREAM_SLOW => &[
                FRAMES,
                FRAMES_CAPTURED,
                FRAMES_DROPPED,
                FRAMES_INFERRED,
                CAPTURE_BUFFERS,
                CAPTURE_BUFFERS_PEAK,
                INTERRUPT_NESTING_PEAK,
                LOG_RING_PEAK_BYTES,
                LOG_DROPPED_BYTES,
            ],
            _ => &[],
        }
    }

    /// In the multi-model scenario, a figure of one model of the set:
    /// [`ARENA_USED_BYTES`], what it added to the set's arena when it was
    /// loaded (the record's own is the set's), [`LEAST_ARENA_BYTES`], and in
    /// separate arenas [`ARENA_HEAD_BYTES`] and [`ARENA_TAIL_BYTES`], TFLM's
    /// split of it: `<model>_<figure>`, written into `out`.
    pub fn write_of_resident(out: &mut impl core::fmt::Write, model: &str, figure: &str) -> core::fmt::Result {
        write!(out, "{model}_{figure}")
    }
}

/// The names of the scenarios and self-tests: what the harness sends in a
/// [`Frame::Run`], what the firmware runs, and what records are kept under.
pub mod scenario {
    /// One inference per configured input.
    pub const SINGLE_FRAME: &str = "single-frame";
    /// Many frames through the managed double-buffered pipeline.
    pub const STREAM: &str = "stream";
    /// The stream with heavy formatted logging into a ring buffer.
    pub const LOG_HEAVY: &str = "log-heavy";
    /// The stream while a model update arrives, is checked and maybe activated.
    pub const CONCURRENT_OTA: &str = "concurrent-ota";
    /// A set's models resident at once, run in turn frame by frame.
    pub const MULTI_MODEL: &str = "multi-model";
    /// Frames written by a camera's DMA from interrupts while the model infers,
    /// at the board's clock.
    pub const DMA_STREAM: &str = "dma-stream";
    /// The same at a slower clock (low voltage, high temperature): the
    /// camera's frame rate stays, so more frames arrive during one inference.
    pub const DMA_STREAM_SLOW: &str = "dma-stream-slow";
    /// Every scenario, in the order they run.
    pub const SCENARIOS: [&str; 7] =
        [SINGLE_FRAME, STREAM, LOG_HEAVY, CONCURRENT_OTA, DMA_STREAM, DMA_STREAM_SLOW, MULTI_MODEL];

    /// A panic.
    pub const PANIC: &str = "selftest-panic";
    /// A HardFault.
    pub const HARD_FAULT: &str = "selftest-hardfault";
    /// A firmware that never ends.
    pub const HANG: &str = "selftest-hang";
    /// Garbage on the wire, then a frame with a wrong checksum.
    pub const GARBAGE: &str = "selftest-garbage";
    /// A figure only the linker knows, claimed by the firmware.
    pub const LINKER_FIGURE: &str = "selftest-linker-figure";
    /// An allocation from a heap, which the bare-metal firmware has none of.
    pub const OPERATOR_NEW: &str = "selftest-operator-new";
    /// The capture scenario handing the model a buffer the camera is still
    /// filling.
    pub const CAPTURE_FILLING: &str = "selftest-capture-filling";
    /// The capture scenario inferring in place, without the buffer's
    /// lifecycle.
    pub const ZERO_COPY: &str = "selftest-zero-copy";
    /// A set in a shared arena whose last model infers from an interrupt over
    /// the others, which the arena's owner check must refuse.
    pub const SHARED_PREEMPTION: &str = "selftest-shared-preemption";
    /// The single frame, reporting the stack after formatting its report.
    pub const STACK_REPORT: &str = "selftest-stack-report";
    /// The concurrent update arriving corrupt.
    pub const OTA_CORRUPT: &str = "selftest-ota-corrupt";

    /// The self-tests a board's runner and transport must report as what
    /// they are: each ends the run the way a broken firmware or link would
    /// (a panic, a HardFault, a hang, garbage on the wire, a figure only the
    /// linker knows, an allocation from a heap), so none may become a
    /// measurement. `hil --scenario` runs them.
    pub const SELF_TESTS: [&str; 9] =
        [PANIC, HARD_FAULT, HANG, GARBAGE, LINKER_FIGURE, OPERATOR_NEW, CAPTURE_FILLING, ZERO_COPY, SHARED_PREEMPTION];
}

/// Exit statuses the firmware leaves through semihosting (or its host-process
/// equivalent), so a runner learns how a target ended without waiting.
pub mod exit {
    /// The scenario ran and every check passed.
    pub const OK: i32 = 0;
    /// The scenario stopped early and said why in a `Failure` frame.
    pub const FAILED: i32 = 1;
    /// The firmware panicked.
    pub const PANIC: i32 = 101;
    /// A HardFault (or another fault escalated to it).
    pub const HARD_FAULT: i32 = 102;
}

const TAG_HELLO: u8 = 1;
const TAG_RUN: u8 = 2;
const TAG_METRIC: u8 = 3;
const TAG_FAILURE: u8 = 4;
const TAG_DONE: u8 = 5;
const TAG_OUTPUT: u8 = 6;
const TAG_NOTE: u8 = 7;
const TAG_PLACEMENT: u8 = 8;

/// Why a frame line was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// The line carries a version this build does not speak.
    Version { found: u8 },
    /// The line does not have the `~hm<v> <hex> <crc>` shape.
    Shape,
    /// A character that is not a lowercase hex digit.
    Hex,
    /// The payload does not match its checksum.
    Checksum { expected: u32, computed: u32 },
    /// The payload ends inside a field.
    Truncated,
    /// Bytes left over after the last field.
    Trailing,
    /// The tag names no frame type.
    UnknownTag(u8),
    /// A string field is not UTF-8.
    Utf8,
    /// A boolean field other than 0 or 1.
    Bool(u8),
    /// Encoding: the payload would exceed [`MAX_PAYLOAD`] (or a string 255 bytes).
    TooLong,
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Version { found } => {
                write!(f, "frame version {found}, this build speaks version {VERSION}")
            }
            FrameError::Shape => f.write_str("frame line is not `~hm<version> <hex> <crc32>`"),
            FrameError::Hex => f.write_str("frame holds a character that is not lowercase hex"),
            FrameError::Checksum { expected, computed } => {
                write!(f, "frame checksum mismatch: line says {expected:08x}, payload gives {computed:08x}")
            }
            FrameError::Truncated => f.write_str("frame payload ends inside a field"),
            FrameError::Trailing => f.write_str("frame payload has bytes after its last field"),
            FrameError::UnknownTag(tag) => write!(f, "frame tag {tag} is not a known frame type"),
            FrameError::Utf8 => f.write_str("frame string field is not UTF-8"),
            FrameError::Bool(b) => write!(f, "frame boolean field holds {b}, not 0 or 1"),
            FrameError::TooLong => write!(f, "frame payload exceeds {MAX_PAYLOAD} bytes"),
        }
    }
}

impl core::error::Error for FrameError {}

/// CRC-32 (IEEE 802.3, as in zlib) of `data`.
pub fn crc32(data: &[u8]) -> u32 {
    crc32_of(data.iter().copied())
}

/// CRC-32 of the bytes `data` yields (memory read a byte at a time).
pub fn crc32_of(data: impl IntoIterator<Item = u8>) -> u32 {
    let mut crc = !0u32;
    for byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

struct Writer<'b> {
    buf: &'b mut [u8],
    len: usize,
}

impl Writer<'_> {
    fn bytes(&mut self, data: &[u8]) -> Result<(), FrameError> {
        let end = self.len + data.len();
        if end > self.buf.len() {
            return Err(FrameError::TooLong);
        }
        self.buf[self.len..end].copy_from_slice(data);
        self.len = end;
        Ok(())
    }
    fn str(&mut self, s: &str) -> Result<(), FrameError> {
        let len = u8::try_from(s.len()).map_err(|_| FrameError::TooLong)?;
        self.bytes(&[len])?;
        self.bytes(s.as_bytes())
    }
}

struct Reader<'b> {
    buf: &'b [u8],
}

impl<'b> Reader<'b> {
    fn take(&mut self, n: usize) -> Result<&'b [u8], FrameError> {
        if n > self.buf.len() {
            return Err(FrameError::Truncated);
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, FrameError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, FrameError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn i32(&mut self) -> Result<i32, FrameError> {
        Ok(self.u32()? as i32)
    }
    fn i64(&mut self) -> Result<i64, FrameError> {
        Ok(i64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn bool(&mut self) -> Result<bool, FrameError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(FrameError::Bool(other)),
        }
    }
    fn str(&mut self) -> Result<&'b str, FrameError> {
        let len = self.u8()? as usize;
        core::str::from_utf8(self.take(len)?).map_err(|_| FrameError::Utf8)
    }
}

impl<'a> Frame<'a> {
    /// Writes the frame's tag and fields into `buf` and returns their length.
    pub fn encode_payload(&self, buf: &mut [u8]) -> Result<usize, FrameError> {
        let mut w = Writer { buf, len: 0 };
        match *self {
            Frame::Hello { board, model, arena_capacity, stack_size } => {
                w.bytes(&[TAG_HELLO])?;
                w.str(board)?;
                w.str(model)?;
                w.bytes(&arena_capacity.to_le_bytes())?;
                w.bytes(&stack_size.to_le_bytes())?;
            }
            Frame::Run { scenario, frames, copies } => {
                w.bytes(&[TAG_RUN])?;
                w.str(scenario)?;
                w.bytes(&frames.to_le_bytes())?;
                w.bytes(&[copies])?;
            }
            Frame::Note { name, text } => {
                w.bytes(&[TAG_NOTE])?;
                w.str(name)?;
                w.str(text)?;
            }
            Frame::Placement { tensor, offset } => {
                w.bytes(&[TAG_PLACEMENT])?;
                w.bytes(&tensor.to_le_bytes())?;
                w.bytes(&offset.to_le_bytes())?;
            }
            Frame::Metric { name, value } => {
                w.bytes(&[TAG_METRIC])?;
                w.str(name)?;
                w.bytes(&value.to_le_bytes())?;
            }
            Frame::Failure { stage, code, detail } => {
                w.bytes(&[TAG_FAILURE])?;
                w.str(stage)?;
                w.bytes(&code.to_le_bytes())?;
                w.str(detail)?;
            }
            Frame::Output { input, class, value } => {
                w.bytes(&[TAG_OUTPUT])?;
                w.str(input)?;
                w.bytes(&class.to_le_bytes())?;
                w.bytes(&value.to_bits().to_le_bytes())?;
            }
            Frame::Done { ok } => w.bytes(&[TAG_DONE, ok as u8])?,
        }
        Ok(w.len)
    }

    /// Reads a frame's tag and fields; every byte must belong to a field.
    pub fn decode_payload(payload: &'a [u8]) -> Result<Frame<'a>, FrameError> {
        let mut r = Reader { buf: payload };
        let frame = match r.u8()? {
            TAG_HELLO => {
                Frame::Hello { board: r.str()?, model: r.str()?, arena_capacity: r.u32()?, stack_size: r.u32()? }
            }
            TAG_RUN => Frame::Run { scenario: r.str()?, frames: r.u32()?, copies: r.u8()? },
            TAG_NOTE => Frame::Note { name: r.str()?, text: r.str()? },
            TAG_METRIC => Frame::Metric { name: r.str()?, value: r.i64()? },
            TAG_PLACEMENT => Frame::Placement { tensor: r.u32()?, offset: r.u32()? },
            TAG_FAILURE => Frame::Failure { stage: r.str()?, code: r.i32()?, detail: r.str()? },
            TAG_OUTPUT => Frame::Output { input: r.str()?, class: r.u32()?, value: f32::from_bits(r.u32()?) },
            TAG_DONE => Frame::Done { ok: r.bool()? },
            tag => return Err(FrameError::UnknownTag(tag)),
        };
        if !r.buf.is_empty() {
            return Err(FrameError::Trailing);
        }
        Ok(frame)
    }

    /// Writes the frame, numbered `seq`, as one line (without the newline)
    /// through `out`.
    pub fn write_line(&self, seq: u16, out: impl FnMut(&[u8])) -> Result<(), FrameError> {
        self.write_copies(seq, 1, b"", out)
    }

    /// Writes the frame, numbered `seq`, as `copies` lines (at least one),
    /// each ending in a newline, through `out`; the payload is encoded once.
    pub fn write_lines(&self, seq: u16, copies: u8, out: impl FnMut(&[u8])) -> Result<(), FrameError> {
        self.write_copies(seq, copies.max(1), b"\n", out)
    }

    fn write_copies(&self, seq: u16, copies: u8, end: &[u8], mut out: impl FnMut(&[u8])) -> Result<(), FrameError> {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut payload = [0u8; MAX_PAYLOAD];
        payload[..SEQ_BYTES].copy_from_slice(&seq.to_le_bytes());
        let len = SEQ_BYTES + self.encode_payload(&mut payload[SEQ_BYTES..])?;
        let payload = &payload[..len];
        let crc = crc32(payload).to_be_bytes();
        for _ in 0..copies {
            out(MARK.as_bytes());
            out(&[b'0' + VERSION, b' ']);
            for &byte in payload {
                out(&[HEX[(byte >> 4) as usize], HEX[(byte & 15) as usize]]);
            }
            out(b" ");
            for byte in crc {
                out(&[HEX[(byte >> 4) as usize], HEX[(byte & 15) as usize]]);
            }
            out(end);
        }
        Ok(())
    }
}

/// Bytes of the sequence number at the start of every payload.
const SEQ_BYTES: usize = 2;

/// A frame and its number in its sender's stream.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Numbered<'a> {
    pub seq: u16,
    pub frame: Frame<'a>,
}

/// One line of firmware output, classified.
#[derive(Debug, PartialEq)]
pub enum Line<'a> {
    /// Free-form text.
    Log(&'a str),
    /// A frame line, decoded into the caller's buffer, or why it was rejected.
    Frame(Result<Numbered<'a>, FrameError>),
}

fn hex_digit(c: u8) -> Result<u8, FrameError> {
    match c {
        b'0'..=b'9' => Ok(c - b'0'),
        b'a'..=b'f' => Ok(c - b'a' + 10),
        _ => Err(FrameError::Hex),
    }
}

/// Classifies a line (without its line ending) and decodes a frame into `buf`.
pub fn parse_line<'a>(line: &'a str, buf: &'a mut [u8; MAX_PAYLOAD]) -> Line<'a> {
    match line.strip_prefix(MARK) {
        None => Line::Log(line),
        Some(rest) => Line::Frame(decode_frame(rest, buf)),
    }
}

fn decode_frame<'a>(rest: &str, buf: &'a mut [u8; MAX_PAYLOAD]) -> Result<Numbered<'a>, FrameError> {
    let rest = rest.as_bytes();
    let version = match rest.first() {
        Some(d @ b'0'..=b'9') => d - b'0',
        _ => return Err(FrameError::Shape),
    };
    if version != VERSION {
        return Err(FrameError::Version { found: version });
    }
    let mut fields = rest[1..].split(|&b| b == b' ');
    let (Some(b""), Some(hex), Some(crc), None) = (fields.next(), fields.next(), fields.next(), fields.next()) else {
        return Err(FrameError::Shape);
    };
    if hex.len() % 2 != 0 || hex.len() / 2 > MAX_PAYLOAD || crc.len() != 8 {
        return Err(FrameError::Shape);
    }
    let len = hex.len() / 2;
    for (i, pair) in hex.chunks_exact(2).enumerate() {
        buf[i] = hex_digit(pair[0])? << 4 | hex_digit(pair[1])?;
    }
    let mut expected = 0u32;
    for &c in crc {
        expected = expected << 4 | u32::from(hex_digit(c)?);
    }
    let payload = &buf[..len];
    let computed = crc32(payload);
    if computed != expected {
        return Err(FrameError::Checksum { expected, computed });
    }
    let (seq, body) = payload.split_at_checked(SEQ_BYTES).ok_or(FrameError::Truncated)?;
    Ok(Numbered { seq: u16::from_le_bytes([seq[0], seq[1]]), frame: Frame::decode_payload(body)? })
}

/// The over-the-air update package: a header, then the model.
///
/// ```text
/// magic "HMOT" | version | min arena | max arena | min free heap | model bytes | model CRC-32
/// ```
/// (each field a little-endian u32 after the magic).
pub mod ota {
    use core::fmt;

    pub const MAGIC: [u8; 4] = *b"HMOT";
    pub const HEADER_BYTES: usize = 28;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Header {
        pub version: u32,
        pub min_arena_bytes: u32,
        pub max_arena_bytes: u32,
        pub min_free_heap_bytes: u32,
        pub model_bytes: u32,
        pub model_crc32: u32,
    }

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum PackageError {
        Short,
        Magic,
        Length { header: u32, received: u32 },
        Crc { header: u32, computed: u32 },
    }

    impl fmt::Display for PackageError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                PackageError::Short => f.write_str("package shorter than its header"),
                PackageError::Magic => f.write_str("package does not start with HMOT"),
                PackageError::Length { header, received } => {
                    write!(f, "header announces {header} model bytes, {received} arrived")
                }
                PackageError::Crc { header, computed } => {
                    write!(f, "model CRC {computed:08x} differs from the header's {header:08x}")
                }
            }
        }
    }

    impl Header {
        /// The header for `model` with the given metadata.
        pub fn for_model(model: &[u8], version: u32, min_arena: u32, max_arena: u32, min_free_heap: u32) -> Header {
            Header {
                version,
                min_arena_bytes: min_arena,
                max_arena_bytes: max_arena,
                min_free_heap_bytes: min_free_heap,
                model_bytes: model.len() as u32,
                model_crc32: super::crc32(model),
            }
        }

        pub fn encode(&self) -> [u8; HEADER_BYTES] {
            let mut out = [0u8; HEADER_BYTES];
            out[..4].copy_from_slice(&MAGIC);
            let fields = [
                self.version,
                self.min_arena_bytes,
                self.max_arena_bytes,
                self.min_free_heap_bytes,
                self.model_bytes,
                self.model_crc32,
            ];
            for (i, field) in fields.iter().enumerate() {
                out[4 + 4 * i..8 + 4 * i].copy_from_slice(&field.to_le_bytes());
            }
            out
        }

        pub fn decode(bytes: &[u8]) -> Result<Header, PackageError> {
            let bytes = bytes.get(..HEADER_BYTES).ok_or(PackageError::Short)?;
            if bytes[..4] != MAGIC {
                return Err(PackageError::Magic);
            }
            let field = |i: usize| u32::from_le_bytes(bytes[4 + 4 * i..8 + 4 * i].try_into().unwrap());
            Ok(Header {
                version: field(0),
                min_arena_bytes: field(1),
                max_arena_bytes: field(2),
                min_free_heap_bytes: field(3),
                model_bytes: field(4),
                model_crc32: field(5),
            })
        }

        /// Checks that `model` is what the header announces.
        pub fn verify(&self, model: &[u8]) -> Result<(), PackageError> {
            if model.len() as u32 != self.model_bytes {
                return Err(PackageError::Length { header: self.model_bytes, received: model.len() as u32 });
            }
            let computed = super::crc32(model);
            if computed != self.model_crc32 {
                return Err(PackageError::Crc { header: self.model_crc32, computed });
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::String;
    use std::vec::Vec;

    fn line(frame: &Frame) -> String {
        numbered(7, frame)
    }

    fn numbered(seq: u16, frame: &Frame) -> String {
        let mut bytes = Vec::new();
        frame.write_line(seq, |b| bytes.extend_from_slice(b)).unwrap();
        String::from_utf8(bytes).unwrap()
    }

    /// A frame line for an arbitrary payload after a sequence number of 0,
    /// with a correct checksum.
    fn line_for_payload(payload: &[u8]) -> String {
        let hex: String = payload.iter().map(|b| std::format!("{b:02x}")).collect();
        let mut numbered = std::vec![0, 0];
        numbered.extend_from_slice(payload);
        std::format!("~hm2 0000{hex} {:08x}", crc32(&numbered))
    }

    fn parse(text: &str) -> Result<Frame<'static>, FrameError> {
        parse_numbered(text).map(|n| n.frame)
    }

    fn parse_numbered(text: &str) -> Result<Numbered<'static>, FrameError> {
        let buf = std::boxed::Box::leak(std::boxed::Box::new([0u8; MAX_PAYLOAD]));
        let text = std::boxed::Box::leak(String::from(text).into_boxed_str());
        match parse_line(text, buf) {
            Line::Frame(result) => result,
            Line::Log(log) => panic!("parsed as a log line: {log}"),
        }
    }

    #[test]
    fn crc32_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
        assert_eq!(crc32_of(b"123456789".iter().copied()), 0xCBF4_3926);
    }

    #[test]
    fn every_frame_type_round_trips() {
        let frames = [
            Frame::Hello { board: "qemu-m7", model: "person_detection", arena_capacity: 96 * 1024, stack_size: 65536 },
            Frame::Run { scenario: "single-frame", frames: 0, copies: 1 },
            Frame::Run { scenario: "stream", frames: 32, copies: 6 },
            Frame::Note {
                name: "ota_gate",
                text: "rejected: its least arena is 7024 bytes, the firmware's arena 3072",
            },
            Frame::Metric { name: "arena_used_bytes", value: 84_312 },
            Frame::Metric { name: "heap_growth_bytes", value: -16 },
            Frame::Placement { tensor: 7, offset: 55_280 },
            Frame::Failure { stage: "load", code: 4, detail: "AllocateTensors failed" },
            Frame::Output { input: "x=pi/2", class: 0, value: 0.99 },
            Frame::Done { ok: false },
            Frame::Done { ok: true },
        ];
        for frame in frames {
            let text = line(&frame);
            assert!(text.len() <= MAX_LINE);
            assert_eq!(parse(&text), Ok(frame), "{text}");
        }
    }

    /// The copies are the one line, each ending in a newline; zero copies
    /// count as one.
    #[test]
    fn copies_are_the_line_repeated() {
        let frame = Frame::Metric { name: "arena_used_bytes", value: 1472 };
        let lines = |copies| {
            let mut bytes = Vec::new();
            frame.write_lines(9, copies, |b| bytes.extend_from_slice(b)).unwrap();
            String::from_utf8(bytes).unwrap()
        };
        let one = numbered(9, &frame) + "\n";
        assert_eq!(lines(3), one.repeat(3));
        assert_eq!((lines(1), lines(0)), (one.clone(), one));
    }

    /// The number comes back as sent, and is covered by the checksum.
    #[test]
    fn the_sequence_number_round_trips_under_the_checksum() {
        let frame = Frame::Done { ok: true };
        for seq in [0, 1, 258, u16::MAX] {
            assert_eq!(parse_numbered(&numbered(seq, &frame)), Ok(Numbered { seq, frame }));
        }
        let text = numbered(1, &frame);
        let renumbered = text.replacen("~hm2 0100", "~hm2 0200", 1);
        assert!(matches!(parse(&renumbered), Err(FrameError::Checksum { .. })), "{renumbered}");
        // A payload too short to hold its number.
        assert_eq!(parse(&std::format!("~hm2 01 {:08x}", crc32(&[1]))), Err(FrameError::Truncated));
    }

    #[test]
    fn log_lines_pass_through() {
        let mut buf = [0u8; MAX_PAYLOAD];
        assert_eq!(
            parse_line("Didn't find op for builtin opcode", &mut buf),
            Line::Log("Didn't find op for builtin opcode")
        );
        assert_eq!(parse_line("", &mut buf), Line::Log(""));
    }

    #[test]
    fn a_flipped_digit_fails_the_checksum() {
        let text = line(&Frame::Metric { name: "stack_peak_bytes", value: 2048 });
        let mut bytes = text.into_bytes();
        let i = 10;
        bytes[i] = if bytes[i] == b'0' { b'1' } else { b'0' };
        let text = String::from_utf8(bytes).unwrap();
        assert!(matches!(parse(&text), Err(FrameError::Checksum { .. })), "{text}");
    }

    #[test]
    fn a_cut_line_is_rejected() {
        let text = line(&Frame::Metric { name: "stack_peak_bytes", value: 2048 });
        for cut in [4, 6, text.len() - 9, text.len() - 1] {
            assert!(parse(&text[..cut]).is_err(), "{}", &text[..cut]);
        }
    }

    #[test]
    fn malformed_lines_get_specific_errors() {
        assert_eq!(parse("~hm1 00 00000000"), Err(FrameError::Version { found: 1 }));
        assert_eq!(parse("~hmx 00 00000000"), Err(FrameError::Shape));
        assert_eq!(parse("~hm2 0 00000000"), Err(FrameError::Shape));
        assert_eq!(parse("~hm2 zz 00000000"), Err(FrameError::Hex));
        assert_eq!(parse("~hm2 06 1234"), Err(FrameError::Shape));
        assert_eq!(parse("~hm2 06 01 00000000"), Err(FrameError::Shape));
        assert_eq!(parse(&line_for_payload(&[])), Err(FrameError::Truncated));
        assert_eq!(parse(&line_for_payload(&[TAG_METRIC, 5, b'a'])), Err(FrameError::Truncated));
        assert_eq!(parse(&line_for_payload(&[TAG_DONE, 1, 0])), Err(FrameError::Trailing));
        assert_eq!(parse(&line_for_payload(&[99])), Err(FrameError::UnknownTag(99)));
        assert_eq!(parse(&line_for_payload(&[TAG_DONE, 7])), Err(FrameError::Bool(7)));
        assert_eq!(parse(&line_for_payload(&[TAG_RUN, 2, 0xff, 0xfe, 0, 0, 0, 0, 1])), Err(FrameError::Utf8));
    }

    #[test]
    fn a_payload_of_max_payload_bytes_decodes_and_one_more_is_refused() {
        // Number, tag, the name's length and byte, the text's length: 6 bytes.
        let text = "t".repeat(MAX_PAYLOAD - 6);
        let frame = Frame::Note { name: "n", text: &text };
        let full = line(&frame);
        assert_eq!(full.len(), MAX_LINE);
        assert_eq!(parse(&full), Ok(frame));
        assert_eq!(parse(&line_for_payload(&[TAG_DONE; MAX_PAYLOAD + 1])), Err(FrameError::Shape));
    }

    #[test]
    fn ota_headers_round_trip_and_catch_damage() {
        use super::ota::{Header, PackageError};
        let model = b"TFL3 pretend model";
        let header = Header::for_model(model, 2, 1536, 2048, 512);
        let bytes = header.encode();
        assert_eq!(Header::decode(&bytes), Ok(header));
        assert_eq!(header.verify(model), Ok(()));
        assert!(matches!(header.verify(b"TFL3 pretend modeL"), Err(PackageError::Crc { .. })));
        assert_eq!(header.verify(b"short"), Err(PackageError::Length { header: 18, received: 5 }));
        assert_eq!(Header::decode(&bytes[..27]), Err(PackageError::Short));
        let mut bad = bytes;
        bad[0] = b'X';
        assert_eq!(Header::decode(&bad), Err(PackageError::Magic));
    }

    #[test]
    fn oversized_fields_are_refused_when_encoding() {
        let long = "x".repeat(300);
        let frame = Frame::Run { scenario: &long, frames: 1, copies: 1 };
        assert_eq!(frame.write_line(0, |_| {}), Err(FrameError::TooLong));
        let detail = "y".repeat(250);
        let frame = Frame::Failure { stage: "load", code: 1, detail: &detail };
        assert_eq!(frame.write_line(0, |_| {}), Err(FrameError::TooLong));
    }
}
