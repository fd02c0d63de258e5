//! The least arena `AllocateTensors` accepts for a model, found on the
//! target before a scenario runs (the single frame, and each model of a set
//! in arenas of its own).

use core::fmt::Write;

use super::{fail, fail_with_tflm_messages, Text};
use crate::tflm;

/// The least arena `AllocateTensors` accepts for `model` in the chosen
/// slot: a binary search over sizes at the arena's alignment, from what
/// TFLM uses in all of `arena` up to all of it, each try a fresh interpreter
/// and allocator over the arena's first bytes (one that refuses rather than
/// corrupts, where the tree allows: [`tflm::probe`]) with TFLM's messages
/// dropped; then one inference of `data` (its input `name`) at that size
/// must answer as in the whole arena (where the inference is refused
/// memory of its own, the least arena grows until it is not). With only
/// the arena: the scenario's figures stay its own. None in the images that leave it out: the
/// recording image, whose allocator is larger, and the one that weighs the
/// search.
#[inline(never)]
pub fn search(arena: &mut [u8], model: &'static [u8], name: &str, data: &[u8]) -> Result<Option<u32>, i32> {
    if cfg!(any(feature = "tflm-recording", feature = "no-least-arena")) {
        return Ok(None);
    }
    let answer = || {
        tflm::clear_messages();
        tflm::answer_for(data)
    };
    let failed = |e| fail_with_tflm_messages("least arena", e);
    // SAFETY: the model is 'static; the slice is the arena's, used by TFLM
    // only until the next load.
    let accepts = |arena: &mut [u8]| tflm::quietly(|| unsafe { tflm::probe(model, arena) }).is_ok();
    // Where an inference follows, over an arena painted as the scenario's
    // is: a kernel may read what its `Prepare` never wrote (2023's
    // REDUCE_MAX compares two zero points it never sets), and must find
    // what it would find there.
    let painted = |arena: &mut [u8]| {
        tflm::unload();
        arena::paint(arena);
        accepts(arena)
    };
    let align = arena::ARENA_ALIGN;
    let whole_len = arena.len() / align * align;
    let mut accepted = whole_len;
    // In an arena TFLM refuses there is no least arena to find: the
    // scenario's own load says why.
    if !painted(&mut arena[..accepted]) {
        return Ok(None);
    }
    let whole = answer().map_err(failed)?;
    // TFLM plans the same in any arena, so none smaller than what it used
    // here is accepted; the search starts at the largest size below that,
    // where everything TFLM keeps still fits (the 2020 TFLM's kernels use
    // their allocations unchecked: in a smaller arena they fault).
    let mut refused = (tflm::arena_used_bytes() as usize).div_ceil(align) * align - align;
    while accepted - refused > align {
        let size = (refused + accepted) / 2 / align * align;
        if accepts(&mut arena[..size]) {
            accepted = size;
        } else {
            refused = size;
        }
    }
    // Where the inference takes memory of its own (a probe's interpreter
    // is refused it as in AllocateTensors), the least arena is where it
    // runs too.
    let at_least = loop {
        if !painted(&mut arena[..accepted]) {
            let mut detail = Text::<96>::new();
            let _ = write!(detail, "TFLM refused an arena of {accepted} bytes it had accepted");
            return Err(fail("least arena", 0, detail.as_str()));
        }
        match answer() {
            Err(e) if e.refused_memory() && accepted < whole_len => accepted += align,
            answered => break answered.map_err(failed)?,
        }
    };
    if at_least != whole {
        let mut detail = Text::<160>::new();
        let _ = write!(
            detail,
            "`{name}` answers {at_least:?} in the least arena ({accepted} bytes), {whole:?} in the whole"
        );
        return Err(fail("least arena", 0, detail.as_str()));
    }
    Ok(Some(accepted as u32))
}
