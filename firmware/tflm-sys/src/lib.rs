//! Raw bindings to the C shim over TensorFlow Lite for Microcontrollers.
//!
//! The firmware must provide two C symbols: `hm_debug_log(const char*)`, which
//! the shim calls with each piece of text TFLM reports (its `DebugLog`, in
//! either generation's form, forwards there), and, on bare metal,
//! `hm_cxx_fatal(const char*)`, called if C++ code tries to allocate.
#![no_std]

use core::ffi::c_void;

/// Status codes returned by the shim.
pub mod status {
    pub const OK: i32 = 0;
    pub const VERIFY: i32 = 1;
    pub const SCHEMA: i32 = 2;
    pub const INIT: i32 = 3;
    pub const ALLOCATE: i32 = 4;
    pub const INVOKE: i32 = 5;
    pub const NO_TENSOR: i32 = 6;
    pub const NOT_LOADED: i32 = 7;
}

/// `TfLiteType` values the firmware interprets.
pub mod tensor_type {
    pub const FLOAT32: i32 = 1;
    pub const INT32: i32 = 2;
    pub const UINT8: i32 = 3;
    pub const BOOL: i32 = 6;
    pub const INT16: i32 = 7;
    pub const INT8: i32 = 9;
}

pub const MAX_DIMS: usize = 6;

/// A tensor as the shim describes it.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Tensor {
    pub data: *mut c_void,
    pub bytes: u32,
    pub kind: i32,
    pub rank: i32,
    pub dims: [i32; MAX_DIMS],
    pub scale: f32,
    pub zero_point: i32,
}

impl Tensor {
    pub const EMPTY: Tensor = Tensor {
        data: core::ptr::null_mut(),
        bytes: 0,
        kind: 0,
        rank: 0,
        dims: [0; MAX_DIMS],
        scale: 0.0,
        zero_point: 0,
    };
}

extern "C" {
    pub fn hm_tflm_select(slot: u32) -> i32;
    pub fn hm_tflm_load_shared(model: *const u8, model_len: u32) -> i32;
    pub fn hm_tflm_load(model: *const u8, model_len: u32, arena: *mut u8, arena_len: u32) -> i32;
    pub fn hm_tflm_probe(model: *const u8, model_len: u32, arena: *mut u8, arena_len: u32) -> i32;
    pub fn hm_tflm_unload();
    pub fn hm_tflm_invoke() -> i32;
    pub fn hm_tflm_arena_used_bytes() -> u32;
    pub fn hm_tflm_tensors() -> u32;
    pub fn hm_tflm_tensor(index: u32, out: *mut Tensor) -> i32;
    pub fn hm_tflm_inputs() -> u32;
    pub fn hm_tflm_outputs() -> u32;
    pub fn hm_tflm_input(index: u32, out: *mut Tensor) -> i32;
    pub fn hm_tflm_output(index: u32, out: *mut Tensor) -> i32;
    pub fn hm_tflm_schema_version() -> i32;
    /// Bare metal only.
    #[cfg(target_os = "none")]
    pub fn hm_selftest_operator_new();
}
