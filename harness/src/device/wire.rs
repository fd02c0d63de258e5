//! The wire decoder as a fuzzing subject ([`crate::fuzz`]): whatever bytes
//! a runner hands over, made into lines, must decode into frames or be
//! refused as corrupt by the [`Session`], never panic. Corpus files end in
//! `.line`; `cargo xtask fuzz` grows the corpus in `harness/tests/corpus-wire/`.

use hilmem_protocol::{crc32, Frame, MARK, MAX_PAYLOAD, VERSION};

use crate::device::session::Session;
use crate::fuzz::{Damage, Subject};

/// Frame lines, damaged as text or, behind a good checksum, as payload.
pub const WIRE: Subject = Subject { extension: "line", outcome, damage };

/// What the bytes do to a session: `None` when no line of them is refused,
/// else the kind of the first line's error: the decoder's error without its
/// numbers (`Checksum`, `UnknownTag`, ...).
pub fn outcome(data: &[u8]) -> Option<String> {
    let mut session = Session::default();
    for line in String::from_utf8_lossy(data).split('\n') {
        session.feed(line);
    }
    let error = format!("{:?}", session.corrupt.first()?.error);
    Some(error.split([' ', '(']).next().unwrap_or(&error).to_owned())
}

/// Half the time the line's text is damaged (its checksum then refuses most
/// of it); else its payload, signed again with a good checksum, so that the
/// damage reaches the decoding of the fields behind the checksum.
fn damage(d: &mut Damage, line: &[u8]) -> Vec<u8> {
    match payload(line) {
        Some(payload) if payload.len() > 4 && d.below(2) == 0 => signed(&d.apply(&payload)),
        _ => d.apply(line),
    }
}

/// The payload of a well-formed frame line.
fn payload(line: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(line).ok()?;
    let hex = text.strip_prefix(MARK)?.split(' ').nth(1)?;
    (0..hex.len() / 2).map(|i| u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()).collect()
}

/// A frame line carrying `payload`, with its checksum.
pub fn signed(payload: &[u8]) -> Vec<u8> {
    let hex: String = payload.iter().map(|b| format!("{b:02x}")).collect();
    format!("{MARK}{VERSION} {hex} {:08x}", crc32(payload)).into_bytes()
}

/// A good line of every frame type, named after it: the fuzzer's seeds.
pub fn seeds() -> Vec<(String, Vec<u8>)> {
    let frames = [
        ("hello", Frame::Hello { board: "qemu-m7", model: "hello_world", arena_capacity: 3072, stack_size: 16384 }),
        ("run", Frame::Run { scenario: "single-frame", frames: 16, copies: 3 }),
        ("metric", Frame::Metric { name: "arena_used_bytes", value: 1472 }),
        ("failure", Frame::Failure { stage: "load", code: 4, detail: "AllocateTensors failed" }),
        ("output", Frame::Output { input: "x-half-pi", class: 0, value: 0.997 }),
        ("note", Frame::Note { name: "ota_gate", text: "accepted: activated in the shared arena" }),
        ("placement", Frame::Placement { tensor: 7, offset: 128 }),
        ("done", Frame::Done { ok: true }),
    ];
    frames
        .into_iter()
        .enumerate()
        .map(|(seq, (name, frame))| {
            let mut line = Vec::with_capacity(2 * MAX_PAYLOAD);
            frame.write_line(seq as u16, |b| line.extend_from_slice(b)).expect("a seed frame fits a line");
            (name.to_owned(), line)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzz::check_corpus;

    /// A bounded fuzz run in every test pass: every damaged line of every
    /// frame type decodes or is refused, many are refused, and damage behind
    /// a good checksum reaches errors the checksum alone would hide.
    #[test]
    fn damaged_lines_give_errors_not_panics() {
        let mut damage = Damage::new(0x9E37_79B9_7F4A_7C15);
        let mut kinds = std::collections::BTreeSet::new();
        let mut refused = 0;
        for (_, good) in seeds() {
            assert_eq!(outcome(&good), None, "{}", String::from_utf8_lossy(&good));
            for _ in 0..1000 {
                if let Some(kind) = outcome(&(WIRE.damage)(&mut damage, &good)) {
                    refused += 1;
                    kinds.insert(kind);
                }
            }
        }
        assert!(refused > 4000, "only {refused} of 8000 damaged lines were refused");
        assert!(kinds.contains("Checksum") && kinds.contains("Truncated") && kinds.len() >= 5, "{kinds:#?}");
    }

    /// Each kept line still gives the kind of error it was kept for.
    #[test]
    fn the_kept_wire_corpus_replays_as_kept() {
        let corpus = crate::Workspace::from_source().root().join("harness/tests/corpus-wire");
        check_corpus(&WIRE, &corpus, 5).unwrap();
    }
}
