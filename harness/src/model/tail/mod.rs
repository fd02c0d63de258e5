//! The persistent tail of the arena, predicted: what TFLM allocates from the
//! arena's end for a model, in its order and with its alignment, for 32-bit
//! Arm. Each generation allocates differently, so each has its module: its
//! C++ types as arm-none-eabi-g++ lays them out (tests compile the types and
//! check every entry) and the order its allocator and kernels follow.

pub mod cmsis_nn;
pub mod current;
pub mod tfmicro2020;

use crate::model::tflite::{Tensor, INT8};

/// A C++ type of TFLM on 32-bit Arm, and the source that declares it where
/// it is private to one (a kernel's `OpData` often is).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub cxx: &'static str,
    pub bytes: usize,
    pub align: usize,
    pub private_to: Option<&'static str>,
}

const fn layout(cxx: &'static str, bytes: usize, align: usize) -> Layout {
    Layout { cxx, bytes, align, private_to: None }
}

/// A type declared in `source` (a path in the tree), not in a header.
const fn private(source: &'static str, cxx: &'static str, bytes: usize, align: usize) -> Layout {
    Layout { cxx, bytes, align, private_to: Some(source) }
}

/// The least arena `AllocateTensors` accepts, in the 16-byte steps hilmem's
/// arena sizes come in, and what sets it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LeastArena {
    pub bytes: usize,
    pub set_by: String,
}

/// The tail as it grows down from the arena's end (which hilmem keeps
/// 16-byte aligned, so alignment relative to the end is absolute).
#[derive(Default, Clone, Copy)]
struct Tail(usize);

impl Tail {
    fn alloc(&mut self, bytes: usize, align: usize) {
        self.0 = (self.0 + bytes).next_multiple_of(align);
    }

    fn place(&mut self, l: Layout, count: usize) {
        self.alloc(l.bytes * count, l.align);
    }
}

/// The scratch buffers SVDF's `Prepare` requests, in TFLM's kernel and in
/// CMSIS-NN's alike: 4 bytes per batch and filter (the filters being the
/// feature weights' first dimension), and for an int8 input 4 bytes per
/// batch and unit (the output's second dimension).
fn svdf_scratch(data: &Tensor, filters: &Tensor, output: &Tensor) -> Result<Vec<usize>, String> {
    let dim = |t: &Tensor, i: usize| {
        t.shape
            .get(i)
            .and_then(|&d| usize::try_from(d).ok())
            .ok_or_else(|| format!("SVDF tensor `{}` has shape {:?}", t.name, t.shape))
    };
    let batch = dim(data, 0)?;
    let mut scratch = vec![4 * batch * dim(filters, 0)?];
    if data.kind == INT8 {
        scratch.push(4 * batch * dim(output, 1)?);
    }
    Ok(scratch)
}
