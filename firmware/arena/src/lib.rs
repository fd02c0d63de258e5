//! The Rust arena layer: where the firmware's memory discipline lives.
//!
//! Everything here is plain logic over byte slices, so it is unit-tested on the
//! host; the firmware supplies the slices (the static tensor arena, the unused
//! part of the stack, the pool's backing store).
//!
//! - [`paint`] fills memory with [`PAINT`] before it is handed to its user, and
//!   [`touched_bytes`] / [`untouched_prefix`] later read back how much of it
//!   was actually written.
//! - [`ArenaBuffer`] is the aligned static home of the tensor arena.
//! - [`Pool`] hands out cache-line aligned blocks for the buffers outside the
//!   arena, with a high-water mark per [`Category`].
//! - [`lifecycle`] moves managed frame buffers through their cycle.
//! - [`owner`] keeps two models that share an arena from inferring at once.
//! - [`budget`] holds a board's memory budget and the safety gate; [`ota`]
//!   the checks a model update must pass.
//! - [`LogRing`] buffers log text until the transport drains it.
//!
//! With the `instrument` feature off, nothing is painted or measured (the
//! figures read zero); that build exists to weigh the machinery.
#![no_std]

pub mod budget;
pub mod lifecycle;
mod log_ring;
pub mod ota;
pub mod owner;
mod pool;

pub use log_ring::LogRing;
pub use pool::{Category, Pool, PoolError, Usage, CACHE_LINE};

/// The byte written over memory before it is used; chosen to be unlikely as
/// tensor data, pointer or small integer.
pub const PAINT: u8 = 0xA5;

/// Alignment of the tensor arena; TFLM wants at least 16 bytes.
pub const ARENA_ALIGN: usize = 16;

/// The tensor arena: a byte array with the alignment TFLM wants.
#[repr(C, align(16))]
pub struct ArenaBuffer<const N: usize>(pub [u8; N]);

/// Fills `mem` with [`PAINT`].
pub fn paint(mem: &mut [u8]) {
    if cfg!(feature = "instrument") {
        mem.fill(PAINT);
    }
}

/// Bytes of a painted region that have been written since it was painted.
///
/// TFLM fills its arena from both ends (planned tensors from the bottom,
/// persistent data from the top), so the untouched part is the gap in the
/// middle: the longest run of paint. A written byte that happens to equal the
/// paint only shortens some other run and does not change the result.
pub fn touched_bytes(mem: &[u8]) -> usize {
    if !cfg!(feature = "instrument") {
        return 0;
    }
    let mut longest = 0;
    let mut run = 0;
    for &byte in mem {
        if byte == PAINT {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    mem.len() - longest
}

/// Length of the run of paint at the start of `mem`.
///
/// For a descending stack whose unused part starts at its lowest address, this
/// is the part the stack never reached.
pub fn untouched_prefix(mem: &[u8]) -> usize {
    if !cfg!(feature = "instrument") {
        return mem.len();
    }
    mem.iter().take_while(|&&b| b == PAINT).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_paint_is_untouched() {
        let mut mem = [0u8; 256];
        paint(&mut mem);
        assert_eq!(touched_bytes(&mem), 0);
        assert_eq!(untouched_prefix(&mem), 256);
    }

    #[test]
    fn head_and_tail_writes_both_count() {
        let mut mem = [0u8; 1024];
        paint(&mut mem);
        mem[..300].fill(1);
        mem[1024 - 100..].fill(2);
        assert_eq!(touched_bytes(&mem), 400);
    }

    #[test]
    fn written_bytes_equal_to_the_paint_do_not_hide_usage() {
        let mut mem = [0u8; 1024];
        paint(&mut mem);
        for (i, b) in mem[..512].iter_mut().enumerate() {
            *b = if i % 3 == 0 { PAINT } else { 0 };
        }
        assert_eq!(touched_bytes(&mem), 512);
    }

    #[test]
    fn a_single_write_in_the_middle_splits_the_gap() {
        let mut mem = [0u8; 100];
        paint(&mut mem);
        mem[40] = 0;
        // The longest run is 59 bytes (41..100); 41 bytes are counted as touched.
        assert_eq!(touched_bytes(&mem), 41);
    }

    #[test]
    fn stack_depth_is_measured_from_the_top() {
        let mut stack = [0u8; 512];
        paint(&mut stack);
        stack[512 - 200..].fill(0x11);
        assert_eq!(untouched_prefix(&stack), 312);
        stack[0] = 0;
        assert_eq!(untouched_prefix(&stack), 0);
    }

    #[test]
    fn arena_buffer_is_aligned() {
        let arena = ArenaBuffer([PAINT; 100]);
        assert_eq!(arena.0.as_ptr() as usize % ARENA_ALIGN, 0);
        assert_eq!(core::mem::align_of::<ArenaBuffer<3>>(), ARENA_ALIGN);
        assert_eq!(touched_bytes(&arena.0), 0);
    }
}
