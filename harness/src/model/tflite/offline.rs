//! The offline memory plan that today's TFLM reads from a model's
//! `OfflineMemoryAllocation` metadata (an arena offset per tensor, -1 for
//! the tensors it plans itself), and a copy of a model with one written in.

use super::{read, Buf, ReadError, Table};

/// The metadata entry TFLM looks for.
pub const OFFLINE_PLAN: &str = "OfflineMemoryAllocation";

/// Fields of the schema's `Model` table: 0 is the version, the rest are
/// offsets (operator codes, subgraphs, description, buffers, metadata
/// buffer, metadata, signature defs).
const MODEL_FIELDS: usize = 8;
const BUFFERS: usize = 4;
const METADATA: usize = 6;

/// The plan's buffer as TFLM reads it: version 1, subgraph 0, the count and
/// the offsets, each a little-endian int32.
pub(super) fn encode(offsets: &[i32]) -> Vec<u8> {
    [1, 0, offsets.len() as i32].iter().chain(offsets).flat_map(|v| v.to_le_bytes()).collect()
}

/// `data` with `offsets` as its offline plan, replacing any it had, and every
/// other byte kept: a new root table with the lists of buffers and metadata
/// (the old entries and the plan's) goes in front of the original body,
/// which follows shifted by a multiple of 16, so its own offsets (all
/// relative) and its alignment still hold.
pub fn with_offline_plan(data: &[u8], offsets: &[i32]) -> Result<Vec<u8>, ReadError> {
    let model = read(data)?;
    let err = |why: String| ReadError { at: "offline plan", why };
    let buf = Buf { data, at: "model" };
    let root = Table::at(buf, buf.follow(0)?)?;
    for field in MODEL_FIELDS..(root.vtable_len - 4) / 2 {
        if root.field(field)?.is_some() {
            return Err(err(format!("the model table has field {field}, which this writer does not know")));
        }
    }
    // Where each old offset field of the model points, and each old buffer
    // and metadata entry (without an earlier plan).
    let target = |pos: usize| buf.follow(pos);
    let mut fields = [None; MODEL_FIELDS];
    for (k, slot) in fields.iter_mut().enumerate().skip(1) {
        *slot = root.field(k)?.map(target).transpose()?;
    }
    let entries = |field: usize| -> Result<Vec<usize>, ReadError> {
        let Some((first, len)) = root.vector(field, 4)? else { return Ok(Vec::new()) };
        (0..len).map(|i| target(first + 4 * i)).collect()
    };
    let old_buffers = entries(BUFFERS)?;
    let old_metadata: Vec<usize> = entries(METADATA)?
        .into_iter()
        .zip(&model.metadata)
        .filter(|(_, (name, _))| name != OFFLINE_PLAN)
        .map(|(at, _)| at)
        .collect();

    let mut out = Out { bytes: data[..8].to_vec(), fixups: Vec::new() };
    // The model's vtable and table: every field in its slot.
    let vtable = out.bytes.len();
    out.u16s(&[(4 + 2 * MODEL_FIELDS) as u16, (4 + 4 * MODEL_FIELDS) as u16]);
    let present = |k: usize| k == 0 || k == BUFFERS || k == METADATA || fields[k].is_some();
    for k in 0..MODEL_FIELDS {
        out.u16s(&[if present(k) { (4 + 4 * k) as u16 } else { 0 }]);
    }
    let table = out.bytes.len();
    out.bytes[0..4].copy_from_slice(&(table as u32).to_le_bytes());
    out.u32((table - vtable) as u32);
    out.u32(model.version);
    let slot = |k: usize| table + 4 + 4 * k;
    out.bytes.resize(slot(MODEL_FIELDS), 0);
    // The lists of buffers and metadata, each with the new entry last.
    out.fix(slot(BUFFERS), out.bytes.len());
    out.u32(old_buffers.len() as u32 + 1);
    for &at in &old_buffers {
        out.old(at);
    }
    let new_buffer = out.placeholder();
    out.fix(slot(METADATA), out.bytes.len());
    out.u32(old_metadata.len() as u32 + 1);
    for &at in &old_metadata {
        out.old(at);
    }
    let new_metadata = out.placeholder();
    // The metadata entry: its name and the plan's buffer index.
    let vtable = out.bytes.len();
    out.u16s(&[8, 12, 4, 8]);
    out.fix(new_metadata, out.bytes.len());
    out.u32(8);
    let name = out.placeholder();
    out.u32(old_buffers.len() as u32);
    debug_assert_eq!(out.bytes.len() - vtable, 20);
    out.fix(name, out.bytes.len());
    out.u32(OFFLINE_PLAN.len() as u32);
    out.bytes.extend_from_slice(OFFLINE_PLAN.as_bytes());
    out.bytes.push(0);
    out.pad(4, 0);
    // The plan's buffer, its data 16-byte aligned as the schema asks.
    let vtable = out.bytes.len();
    out.u16s(&[6, 8, 4, 0]);
    out.fix(new_buffer, out.bytes.len());
    out.u32((out.bytes.len() - vtable) as u32);
    let plan = out.placeholder();
    out.pad(16, 12);
    out.fix(plan, out.bytes.len());
    let encoded = encode(offsets);
    out.u32(encoded.len() as u32);
    out.bytes.extend_from_slice(&encoded);
    out.pad(16, 8);
    // The old body, shifted; then the offsets into it.
    let shift = out.bytes.len() - 8;
    for (k, at) in fields.iter().enumerate().filter_map(|(k, at)| Some((k, (*at)?))) {
        if k != BUFFERS && k != METADATA {
            out.fixups.push((slot(k), Some(at)));
        }
    }
    out.bytes.extend_from_slice(&data[8..]);
    for (pos, old) in std::mem::take(&mut out.fixups) {
        if let Some(old) = old {
            let value = (old + shift - pos) as u32;
            out.bytes[pos..pos + 4].copy_from_slice(&value.to_le_bytes());
        }
    }
    let written = read(&out.bytes)?;
    if written.offline_plan.as_deref() != Some(offsets) {
        return Err(err("the written plan does not read back".into()));
    }
    Ok(out.bytes)
}

/// The front of the new file, with the offsets still to fill: (position,
/// an old object's position for offsets into the shifted body).
struct Out {
    bytes: Vec<u8>,
    fixups: Vec<(usize, Option<usize>)>,
}

impl Out {
    fn u16s(&mut self, values: &[u16]) {
        for v in values {
            self.bytes.extend_from_slice(&v.to_le_bytes());
        }
    }

    fn u32(&mut self, v: u32) {
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }

    /// An offset to fill later; its position.
    fn placeholder(&mut self) -> usize {
        self.u32(0);
        self.bytes.len() - 4
    }

    /// An offset to the old object at `at`, filled once the shift is known.
    fn old(&mut self, at: usize) {
        let pos = self.placeholder();
        self.fixups.push((pos, Some(at)));
    }

    /// The offset at `pos` points at `to`, in the new front.
    fn fix(&mut self, pos: usize, to: usize) {
        self.bytes[pos..pos + 4].copy_from_slice(&((to - pos) as u32).to_le_bytes());
    }

    /// Zeros until the length is `rem` past a multiple of `align`.
    fn pad(&mut self, align: usize, rem: usize) {
        while self.bytes.len() % align != rem {
            self.bytes.push(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example(name: &str) -> Vec<u8> {
        std::fs::read(crate::Workspace::from_source().root().join("firmware/models").join(name)).unwrap()
    }

    /// Every example model, given a plan: the copy reads as the original
    /// plus one buffer and one metadata entry, its original body follows
    /// byte for byte, and a second plan replaces the first.
    #[test]
    fn a_plan_is_added_and_everything_else_kept() {
        for name in
            ["hello_world.tflite", "micro_speech.tflite", "magic_wand.tflite", "person_detection_grayscale.tflite"]
        {
            let original = example(name);
            let model = read(&original).unwrap();
            let tensors = model.subgraphs[0].tensors.len();
            let plan: Vec<i32> = (0..tensors as i32).map(|i| if i % 2 == 0 { 16 * i } else { -1 }).collect();
            let copy = with_offline_plan(&original, &plan).unwrap();
            let shift = copy.len() - original.len();
            assert_eq!(shift % 16, 0, "{name}");
            assert_eq!(&copy[8 + shift..], &original[8..], "{name}: the body is kept");
            let read_back = read(&copy).unwrap();
            let mut expected = model.clone();
            expected.metadata.push((OFFLINE_PLAN.into(), model.buffers.len() as u32));
            expected.buffers.push(12 + 4 * tensors);
            expected.offline_plan = Some(plan.clone());
            assert_eq!(read_back, expected, "{name}");

            let replanned: Vec<i32> = plan.iter().map(|&o| if o < 0 { o } else { o + 32 }).collect();
            let again = read(&with_offline_plan(&copy, &replanned).unwrap()).unwrap();
            assert_eq!(again.metadata.iter().filter(|(n, _)| n == OFFLINE_PLAN).count(), 1, "{name}");
            assert_eq!(again.offline_plan, Some(replanned), "{name}");
        }
    }

    /// A plan's buffer that is not a header and that many offsets is a read
    /// error naming the metadata; garbage is refused before any writing.
    #[test]
    fn a_malformed_plan_is_refused() {
        let mut model = read(&example("hello_world.tflite")).unwrap();
        model.metadata.push((OFFLINE_PLAN.into(), model.buffers.len() as u32));
        model.buffers.push(4 * 5);
        model.offline_plan = None;
        // The writer writes the plan's buffer zero-filled when the model has
        // no plan: a count of 0 with two words after it.
        let e = read(&crate::model::tflite::write(&model)).unwrap_err().to_string();
        assert!(e.contains("offline plan") && e.contains(OFFLINE_PLAN), "{e}");
        assert!(with_offline_plan(b"TFL3 not a model", &[0]).is_err());
    }
}
