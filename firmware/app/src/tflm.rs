//! A safe face over the TFLM shim, and the `DebugLog` hook that turns TFLM's
//! messages into log lines and remembers the last one for failure reports.

use core::cell::RefCell;

use critical_section::Mutex;
use tflm_sys::{status, tensor_type, Tensor};

use crate::platform;

/// Room for TFLM's messages about one step; the failure frame carries them.
const MESSAGE_BYTES: usize = 200;

/// What TFLM said since [`clear_messages`], messages joined by "; ".
struct Messages {
    text: [u8; MESSAGE_BYTES],
    len: usize,
    /// TFLM ends each message with a separate "\r\n".
    at_message_start: bool,
}

static MESSAGES: Mutex<RefCell<Messages>> =
    Mutex::new(RefCell::new(Messages { text: [0; MESSAGE_BYTES], len: 0, at_message_start: true }));

impl Messages {
    fn push(&mut self, bytes: &[u8]) {
        let n = bytes.len().min(MESSAGE_BYTES - self.len);
        self.text[self.len..self.len + n].copy_from_slice(&bytes[..n]);
        self.len += n;
    }
}

/// Whether TFLM's messages are dropped (while the firmware tries arenas TFLM
/// is meant to refuse).
static QUIET: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Runs `f` with TFLM's messages dropped.
pub fn quietly<R>(f: impl FnOnce() -> R) -> R {
    QUIET.store(true, core::sync::atomic::Ordering::SeqCst);
    let result = f();
    QUIET.store(false, core::sync::atomic::Ordering::SeqCst);
    result
}

/// TFLM's logging hook, through the shim's `DebugLog`: it calls this with the
/// message text, then with "\r\n".
#[no_mangle]
extern "C" fn hm_debug_log(s: *const core::ffi::c_char) {
    if QUIET.load(core::sync::atomic::Ordering::SeqCst) {
        return;
    }
    // SAFETY: TFLM passes NUL-terminated strings.
    let bytes = unsafe { core::ffi::CStr::from_ptr(s) }.to_bytes();
    platform::write(bytes);
    critical_section::with(|cs| {
        let mut messages = MESSAGES.borrow_ref_mut(cs);
        if bytes == b"\r\n" {
            messages.at_message_start = true;
            return;
        }
        if messages.at_message_start && messages.len > 0 {
            messages.push(b"; ");
        }
        messages.at_message_start = false;
        messages.push(bytes);
    });
}

/// Forgets what TFLM said so far; call before a step whose errors matter.
pub fn clear_messages() {
    critical_section::with(|cs| {
        let mut messages = MESSAGES.borrow_ref_mut(cs);
        messages.len = 0;
        messages.at_message_start = true;
    });
}

/// Calls `f` with what TFLM said since [`clear_messages`] (empty if nothing).
pub fn with_messages<R>(f: impl FnOnce(&str) -> R) -> R {
    critical_section::with(|cs| {
        let messages = MESSAGES.borrow_ref(cs);
        let text = &messages.text[..messages.len];
        let text = match core::str::from_utf8(text) {
            Ok(t) => t,
            Err(e) => core::str::from_utf8(&text[..e.valid_up_to()]).unwrap(),
        };
        f(text)
    })
}

/// Why TFLM refused.
#[derive(Clone, Copy)]
pub struct Error {
    pub code: i32,
}

impl Error {
    /// TFLM was refused memory (in AllocateTensors, or, for a probe's
    /// interpreter, in Invoke).
    pub fn refused_memory(&self) -> bool {
        self.code == status::ALLOCATE
    }

    pub fn what(&self) -> &'static str {
        match self.code {
            status::VERIFY => "model is not a valid TFLite flatbuffer",
            status::SCHEMA => "model schema version differs from TFLM's",
            status::INIT => "interpreter initialisation failed",
            status::ALLOCATE => "AllocateTensors failed",
            status::INVOKE => "Invoke failed",
            status::NO_TENSOR => "no such tensor",
            status::NOT_LOADED => "no model loaded",
            _ => "unknown shim status",
        }
    }
}

fn check(code: i32) -> Result<(), Error> {
    if code == status::OK {
        Ok(())
    } else {
        Err(Error { code })
    }
}

/// The slot [`select`] chose last.
static SELECTED: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);

/// Makes `slot` (one per model the image holds) the one the other calls act
/// on; slot 0 is chosen at boot.
pub fn select(slot: u32) -> Result<(), Error> {
    // SAFETY: plain setter, checked by the shim.
    check(unsafe { tflm_sys::hm_tflm_select(slot) })?;
    SELECTED.store(slot, core::sync::atomic::Ordering::SeqCst);
    Ok(())
}

/// The slot the calls act on now: what an interrupt that infers with another
/// model selects again before it returns.
pub fn selected() -> u32 {
    SELECTED.load(core::sync::atomic::Ordering::SeqCst)
}

/// Loads `model` into the chosen slot over slot 0's allocator and arena:
/// TFLM's multi-tenant allocation (today's TFLM only).
///
/// # Safety
/// As [`load`], for slot 0's arena.
pub unsafe fn load_shared(model: &[u8]) -> Result<(), Error> {
    // SAFETY: as the caller says; the shim reads `model.len()` bytes.
    check(unsafe { tflm_sys::hm_tflm_load_shared(model.as_ptr(), model.len() as u32) })
}

/// Verifies the model, builds the chosen slot's interpreter over `arena`
/// and allocates tensors. The slot's interpreter built before is destroyed.
///
/// # Safety
/// `model` and `arena` must stay valid, and the arena untouched by anyone
/// else, until the next `load` (the interpreter keeps pointers to both).
pub unsafe fn load(model: &[u8], arena: &mut [u8]) -> Result<(), Error> {
    // SAFETY: as the caller says; the shim reads `model.len()` bytes and
    // uses the arena's `arena.len()`.
    check(unsafe { tflm_sys::hm_tflm_load(model.as_ptr(), model.len() as u32, arena.as_mut_ptr(), arena.len() as u32) })
}

/// Destroys the chosen slot's interpreter: from here TFLM no longer reads
/// its arena (which may then be painted or lent to someone else).
pub fn unload() {
    // SAFETY: the shim destroys only an interpreter it built.
    unsafe { tflm_sys::hm_tflm_unload() }
}

/// As [`load`], over an allocator that refuses what would land on memory
/// TFLM still holds, where the tree's allocator takes the arena's: an arena
/// too small is refused rather than corrupted (the search for the least
/// arena probes with it).
///
/// # Safety
/// As [`load`].
pub unsafe fn probe(model: &[u8], arena: &mut [u8]) -> Result<(), Error> {
    // SAFETY: as the caller says; the shim reads `model.len()` bytes and
    // uses the arena's `arena.len()`.
    check(unsafe {
        tflm_sys::hm_tflm_probe(model.as_ptr(), model.len() as u32, arena.as_mut_ptr(), arena.len() as u32)
    })
}

pub fn invoke() -> Result<(), Error> {
    // SAFETY: the shim checks that a model is loaded.
    check(unsafe { tflm_sys::hm_tflm_invoke() })
}

/// Allocates once through C++ `operator new` (a self-test: on bare metal
/// that ends the run).
#[cfg(target_os = "none")]
pub fn selftest_operator_new() {
    // SAFETY: allocates and frees 16 bytes.
    unsafe { tflm_sys::hm_selftest_operator_new() }
}

pub fn arena_used_bytes() -> u32 {
    // SAFETY: plain query.
    unsafe { tflm_sys::hm_tflm_arena_used_bytes() }
}

fn describe(getter: unsafe extern "C" fn(u32, *mut Tensor) -> i32, index: u32) -> Result<Tensor, Error> {
    let mut t = Tensor::EMPTY;
    // SAFETY: `t` is a valid out-pointer.
    check(unsafe { getter(index, &mut t) })?;
    Ok(t)
}

/// Where TFLM placed each tensor whose data lies in `arena`: (tensor index,
/// offset from the arena's start), in tensor order.
pub fn placements(arena: &[u8]) -> impl Iterator<Item = (u32, u32)> + '_ {
    // SAFETY: plain query.
    let count = unsafe { tflm_sys::hm_tflm_tensors() };
    let range = arena.as_ptr_range();
    (0..count).filter_map(move |i| {
        let data = describe(tflm_sys::hm_tflm_tensor, i).ok()?.data as *const u8;
        range.contains(&data).then(|| (i, (data as usize - range.start as usize) as u32))
    })
}

/// Copies `data` into input tensor `index`; the sizes must match exactly.
pub fn set_input(index: u32, data: &[u8]) -> Result<(), (u32, u32)> {
    let t = describe(tflm_sys::hm_tflm_input, index).map_err(|_| (0, data.len() as u32))?;
    if t.bytes as usize != data.len() {
        return Err((t.bytes, data.len() as u32));
    }
    // SAFETY: the tensor's buffer holds `t.bytes` bytes in the arena.
    unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), t.data as *mut u8, data.len()) };
    Ok(())
}

/// One inference of the chosen slot's model on `data` (its input tensor's
/// bytes exactly), and its answer, with nothing but the arena: what a model
/// inferring from an interrupt does.
pub fn answer_for(data: &[u8]) -> Result<(u32, f32), Error> {
    set_input(0, data).map_err(|_| Error { code: status::NO_TENSOR })?;
    invoke()?;
    let output = output()?;
    // SAFETY: as in `Output::copy_to`, for the time the answer is read.
    let bytes = unsafe { core::slice::from_raw_parts(output.data, output.len) };
    Ok(output.answer(bytes))
}

/// Input tensor 0's memory in the arena, where a zero-copy capture would
/// write: its address and length (empty when there is no input tensor).
/// Only an address: TFLM reads and writes that memory in [`invoke`], and it
/// is TFLM's again after the next load.
pub fn input_region() -> (*mut u8, usize) {
    match describe(tflm_sys::hm_tflm_input, 0) {
        Ok(t) => (t.data as *mut u8, t.bytes as usize),
        Err(_) => (core::ptr::null_mut(), 0),
    }
}

/// Output tensor 0: how to read it, and where its bytes are in the arena
/// (an address: the next [`invoke`] writes them).
pub struct Output {
    kind: i32,
    scale: f32,
    zero_point: i32,
    data: *const u8,
    len: usize,
}

pub fn output() -> Result<Output, Error> {
    let t = describe(tflm_sys::hm_tflm_output, 0)?;
    let readable = [
        tensor_type::FLOAT32,
        tensor_type::UINT8,
        tensor_type::INT8,
        tensor_type::INT16,
        tensor_type::INT32,
        tensor_type::BOOL,
    ];
    if !readable.contains(&t.kind) {
        return Err(Error { code: status::NO_TENSOR });
    }
    Ok(Output {
        kind: t.kind,
        scale: t.scale,
        zero_point: t.zero_point,
        data: t.data as *const u8,
        len: t.bytes as usize,
    })
}

impl Output {
    /// The tensor's size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Copies the tensor's bytes into `to`, which holds exactly as many.
    pub fn copy_to(&self, to: &mut [u8]) {
        assert!(to.len() == self.len, "an output copy of another size");
        // SAFETY: TFLM's output tensor holds `len` bytes in the arena until
        // the next load, and nothing writes them while they are copied: the
        // thread reads between its own TFLM calls, and a model inferring
        // from an interrupt writes its own slot's arena (a shared arena is
        // held by one model at a time, `arena::owner`); `to` is another
        // buffer.
        unsafe { core::ptr::copy_nonoverlapping(self.data, to.as_mut_ptr(), self.len) };
    }

    /// The answer in `data` (the tensor's bytes or a copy of them): the index
    /// of the largest element and the first element, dequantized (a bool as
    /// 0 or 1).
    pub fn answer(&self, data: &[u8]) -> (u32, f32) {
        let dequant = |q: i32| (q - self.zero_point) as f32 * self.scale;
        let word = |c: &[u8]| [c[0], c[1], c[2], c[3]];
        match self.kind {
            tensor_type::FLOAT32 => {
                let v = data.chunks_exact(4).map(|c| f32::from_ne_bytes(word(c)));
                (argmax(v.clone()), v.clone().next().unwrap_or(0.0))
            }
            tensor_type::UINT8 => (argmax(data.iter().copied()), data.first().map_or(0.0, |&q| dequant(q.into()))),
            tensor_type::BOOL => (argmax(data.iter().copied()), data.first().map_or(0.0, |&b| f32::from(b))),
            tensor_type::INT8 => {
                let v = data.iter().map(|&b| b as i8);
                (argmax(v.clone()), v.clone().next().map_or(0.0, |q| dequant(q.into())))
            }
            tensor_type::INT16 => {
                let v = data.chunks_exact(2).map(|c| i16::from_ne_bytes([c[0], c[1]]));
                (argmax(v.clone()), v.clone().next().map_or(0.0, |q| dequant(q.into())))
            }
            _ => {
                let v = data.chunks_exact(4).map(|c| i32::from_ne_bytes(word(c)));
                (argmax(v.clone()), v.clone().next().map_or(0.0, |q| q as f32))
            }
        }
    }
}

fn argmax<T: PartialOrd>(values: impl Iterator<Item = T>) -> u32 {
    let mut best: Option<(usize, T)> = None;
    for (i, v) in values.enumerate() {
        if best.as_ref().is_none_or(|(_, b)| v > *b) {
            best = Some((i, v));
        }
    }
    best.map_or(0, |(i, _)| i as u32)
}
