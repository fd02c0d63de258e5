//! Decodes what a firmware run printed: protocol frames into a record of the
//! run, everything else kept as log lines for diagnostics.

use std::collections::{BTreeMap, VecDeque};

use hilmem_protocol::{parse_line, Frame, FrameError, Line, Numbered, MAX_PAYLOAD};

/// Who the firmware says it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    pub board: String,
    pub model: String,
    pub arena_capacity: u32,
    pub stack_size: u32,
}

/// The model's answer for one input.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    pub input: String,
    pub class: u32,
    pub value: f32,
}

/// Why the firmware stopped a scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub stage: String,
    pub code: i32,
    pub detail: String,
}

/// A frame line that did not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Corrupt {
    pub line: String,
    pub error: FrameError,
}

/// Everything one run of the firmware said, in order of arrival.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    /// How many times the firmware sends each frame after the `Run`
    /// command; the copies of a frame share its number.
    pub copies: u8,
    /// The number the next new frame must carry.
    next_seq: u16,
    /// The line of the last new frame, to which a copy must be equal.
    last_frame: String,
    /// The first frame number known to be missing: a later one arrived
    /// first.
    pub lost: Option<u16>,
    pub hello: Option<Hello>,
    pub metrics: BTreeMap<String, i64>,
    /// The frame line each metric came in, to quote when it is refused.
    pub metric_frames: BTreeMap<String, String>,
    pub outputs: Vec<Output>,
    /// Named text, such as the OTA gate's decision.
    pub notes: BTreeMap<String, String>,
    /// Where TFLM placed each tensor in the arena: offset by tensor index.
    pub placements: BTreeMap<u32, u32>,
    pub failure: Option<Failure>,
    /// `Some(ok)` once the firmware sent its last frame.
    pub done: Option<bool>,
    /// Lines that were not frames.
    pub log: Vec<String>,
    pub corrupt: Vec<Corrupt>,
    /// Frames that arrived where they make no sense (a figure or answer
    /// before `Hello`, a second hello, a second value for a metric, a
    /// command, anything after `Done`, an earlier number again, a copy that
    /// differs from its frame).
    pub unexpected: Vec<String>,
    /// The last [`RECENT_LINES`] lines of any kind, as received.
    pub recent: VecDeque<String>,
}

/// Lines kept in [`Session::recent`].
pub const RECENT_LINES: usize = 64;

impl Default for Session {
    fn default() -> Session {
        Session::new(1)
    }
}

impl Session {
    /// A session whose firmware was asked for `copies` of each frame.
    pub fn new(copies: u8) -> Session {
        Session {
            copies: copies.max(1),
            next_seq: 0,
            last_frame: String::new(),
            lost: None,
            hello: None,
            metrics: BTreeMap::new(),
            metric_frames: BTreeMap::new(),
            outputs: Vec::new(),
            notes: BTreeMap::new(),
            placements: BTreeMap::new(),
            failure: None,
            done: None,
            log: Vec::new(),
            corrupt: Vec::new(),
            unexpected: Vec::new(),
            recent: VecDeque::new(),
        }
    }

    /// Whether a frame is known not to have arrived: a later number came
    /// first, or (when each frame is sent once) a frame line was damaged.
    pub fn lost_a_frame(&self) -> bool {
        self.lost.is_some() || (self.copies == 1 && !self.corrupt.is_empty())
    }

    /// Takes one line of output (line ending optional).
    pub fn feed(&mut self, line: &str) {
        let line = line.trim_end_matches(['\r', '\n']);
        if self.recent.len() == RECENT_LINES {
            self.recent.pop_front();
        }
        self.recent.push_back(line.to_owned());
        let mut buf = [0u8; MAX_PAYLOAD];
        let frame = match parse_line(line, &mut buf) {
            // The firmware's first line is a frame (its hello, or its
            // refusal to run): text there is a first frame damaged out of
            // its shape.
            Line::Log(text) if self.next_seq == 0 && !text.is_empty() => {
                return self.corrupt.push(Corrupt { line: line.to_owned(), error: FrameError::Shape })
            }
            Line::Log(text) => return self.log.push(text.to_owned()),
            Line::Frame(Err(error)) => return self.corrupt.push(Corrupt { line: line.to_owned(), error }),
            Line::Frame(Ok(Numbered { seq, frame })) => {
                if seq != self.next_seq {
                    // A copy of the last frame (never of the hello, which is
                    // sent before the copies are asked for), or an earlier
                    // number again (a board that reset), or frames lost.
                    let copy = seq == self.next_seq.wrapping_sub(1) && self.copies > 1 && line == self.last_frame;
                    if copy && !matches!(frame, Frame::Hello { .. }) {
                        return;
                    }
                    if seq.wrapping_sub(self.next_seq) >= u16::MAX / 2 {
                        return self.unexpected.push(line.to_owned());
                    }
                    self.lost.get_or_insert(self.next_seq);
                }
                self.next_seq = seq.wrapping_add(1);
                self.last_frame = line.to_owned();
                frame
            }
        };
        // Before its hello a firmware may only say hello, or refuse to run
        // (a failure and its ending: it checks its CPU first).
        let first = matches!(frame, Frame::Hello { .. }) && self.hello.is_none();
        let refusal = matches!(frame, Frame::Failure { .. } | Frame::Done { .. });
        if self.done.is_some() || (self.hello.is_none() && !first && !refusal) {
            return self.unexpected.push(line.to_owned());
        }
        match frame {
            Frame::Hello { board, model, arena_capacity, stack_size } if first => {
                self.hello = Some(Hello { board: board.into(), model: model.into(), arena_capacity, stack_size });
            }
            Frame::Metric { name, .. } if self.metrics.contains_key(name) => self.unexpected.push(line.to_owned()),
            Frame::Metric { name, value } => {
                self.metrics.insert(name.to_owned(), value);
                self.metric_frames.insert(name.to_owned(), line.to_owned());
            }
            Frame::Output { input, class, value } => self.outputs.push(Output { input: input.into(), class, value }),
            Frame::Note { name, text } => {
                self.notes.insert(name.into(), text.into());
            }
            Frame::Placement { tensor, offset } => {
                self.placements.insert(tensor, offset);
            }
            Frame::Failure { stage, code, detail } => {
                self.failure = Some(Failure { stage: stage.into(), code, detail: detail.into() })
            }
            Frame::Done { ok } => self.done = Some(ok),
            Frame::Hello { .. } | Frame::Run { .. } => self.unexpected.push(line.to_owned()),
        }
    }

    /// The last `n` lines of any kind, for error messages.
    pub fn tail(&self, n: usize) -> Vec<String> {
        self.recent.iter().skip(self.recent.len().saturating_sub(n)).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(seq: u16, f: Frame) -> String {
        let mut out = Vec::new();
        f.write_line(seq, |b| out.extend_from_slice(b)).unwrap();
        String::from_utf8(out).unwrap() + "\r\n"
    }

    #[test]
    fn frames_and_logs_are_separated() {
        let mut s = Session::default();
        s.feed(&hello());
        s.feed("Total buffer usage: 5 bytes\r\n");
        s.feed(&frame(1, Frame::Metric { name: "arena_used_bytes", value: 5 }));
        s.feed(&frame(2, Frame::Output { input: "x", class: 2, value: 0.5 }));
        s.feed(&frame(3, Frame::Placement { tensor: 3, offset: 48 }));
        s.feed(&frame(4, Frame::Done { ok: true }));
        assert_eq!(s.hello.as_ref().unwrap().stack_size, 20);
        assert_eq!(s.metrics["arena_used_bytes"], 5);
        assert_eq!(s.outputs, [Output { input: "x".into(), class: 2, value: 0.5 }]);
        assert_eq!(s.placements, BTreeMap::from([(3, 48)]));
        assert_eq!(s.log, ["Total buffer usage: 5 bytes"]);
        assert_eq!(s.tail(5)[0], "Total buffer usage: 5 bytes");
        assert_eq!(s.recent.len(), 6);
        assert_eq!(s.done, Some(true));
        assert!(s.corrupt.is_empty() && s.unexpected.is_empty() && s.lost.is_none());
    }

    #[test]
    fn corrupt_frames_never_become_numbers() {
        let mut s = Session::default();
        s.feed(&hello());
        let good = frame(1, Frame::Metric { name: "stack_peak_bytes", value: 1000 });
        let bad = good.replacen("~hm2 010003", "~hm2 010013", 1);
        s.feed(&bad);
        assert!(s.metrics.is_empty());
        assert!(matches!(s.corrupt[0].error, FrameError::Checksum { .. }));
        assert!(s.lost_a_frame(), "a damaged line is a lost frame when each is sent once");
    }

    fn hello() -> String {
        frame(0, Frame::Hello { board: "b", model: "m", arena_capacity: 10, stack_size: 20 })
    }

    #[test]
    fn frames_after_done_are_unexpected() {
        let mut s = Session::default();
        s.feed(&hello());
        s.feed(&frame(1, Frame::Done { ok: true }));
        let late = frame(2, Frame::Metric { name: "late", value: 1 });
        s.feed(&late);
        assert!(s.metrics.is_empty());
        assert_eq!(s.unexpected, [late.trim_end()]);
    }

    /// No figure counts before the firmware has said who it is: a metric,
    /// output or placement before `Hello` is out of sequence, and so is a
    /// second hello. (A refusal to start, failure and ending, may come
    /// first.)
    #[test]
    fn frames_before_hello_and_a_second_hello_are_unexpected() {
        let mut s = Session::default();
        let early = [
            frame(0, Frame::Metric { name: "arena_used_bytes", value: 5 }),
            frame(1, Frame::Output { input: "x", class: 2, value: 0.5 }),
            frame(2, Frame::Placement { tensor: 1, offset: 0 }),
        ];
        for line in &early {
            s.feed(line);
        }
        s.feed(&frame(3, Frame::Hello { board: "b", model: "m", arena_capacity: 10, stack_size: 20 }));
        s.feed(&frame(4, Frame::Hello { board: "b", model: "m", arena_capacity: 10, stack_size: 20 }));
        assert!(s.metrics.is_empty() && s.outputs.is_empty() && s.placements.is_empty());
        assert_eq!(s.unexpected.len(), 4, "{:?}", s.unexpected);
        assert_eq!(s.unexpected[0], early[0].trim_end());
        assert_eq!(s.hello.unwrap().board, "b");

        let mut refused = Session::default();
        refused.feed(&frame(0, Frame::Failure { stage: "board", code: 0, detail: "wrong CPU" }));
        refused.feed(&frame(1, Frame::Done { ok: false }));
        assert_eq!((refused.failure.unwrap().stage.as_str(), refused.done), ("board", Some(false)));
        assert!(refused.unexpected.is_empty());
    }

    /// A metric reported twice keeps its first value; the second is out of
    /// sequence (a figure must not be replaced after the fact).
    #[test]
    fn a_repeated_metric_is_unexpected_and_the_first_stands() {
        let mut s = Session::default();
        s.feed(&hello());
        let first = frame(1, Frame::Metric { name: "stack_peak_bytes", value: 1000 });
        let again = frame(2, Frame::Metric { name: "stack_peak_bytes", value: 10 });
        s.feed(&first);
        s.feed(&again);
        assert_eq!(s.metrics["stack_peak_bytes"], 1000);
        assert_eq!(s.metric_frames["stack_peak_bytes"], first.trim_end());
        assert_eq!(s.unexpected, [again.trim_end()]);
    }

    /// With copies asked for, a copy of the frame just taken counts once and
    /// damaged lines lose nothing while a copy of each frame arrives; a
    /// frame none of whose copies arrived shows as the first number missing.
    /// A copy that differs from its frame, an earlier number again (a board
    /// that reset) and a second hello are out of sequence; text before the
    /// first frame is a damaged frame.
    #[test]
    fn copies_count_once_and_a_frame_without_one_is_lost() {
        let mut s = Session::new(3);
        s.feed(&hello());
        let metric = frame(1, Frame::Metric { name: "stack_peak_bytes", value: 1000 });
        s.feed(&metric.replacen("~hm2 01", "~hm2 11", 1));
        s.feed(&metric);
        s.feed(&metric);
        let output = frame(2, Frame::Output { input: "x", class: 0, value: 0.5 });
        s.feed(&output);
        s.feed(&output);
        s.feed(&output);
        assert_eq!(s.metrics["stack_peak_bytes"], 1000);
        assert_eq!((s.outputs.len(), s.corrupt.len()), (1, 1));
        assert!(!s.lost_a_frame() && s.unexpected.is_empty(), "{:?}", s.unexpected);

        // Frame 3's copies all damaged: frame 4 shows it missing.
        s.feed(&frame(4, Frame::Placement { tensor: 1, offset: 0 }));
        assert_eq!(s.lost, Some(3));
        assert!(s.lost_a_frame());

        let mut conflicting = Session::new(3);
        conflicting.feed(&hello());
        conflicting.feed(&frame(1, Frame::Metric { name: "stack_peak_bytes", value: 1000 }));
        let other = frame(1, Frame::Metric { name: "stack_peak_bytes", value: 10 });
        conflicting.feed(&other);
        conflicting.feed(&hello());
        assert_eq!(conflicting.unexpected, [other.trim_end(), hello().trim_end()]);
        assert_eq!(conflicting.metrics["stack_peak_bytes"], 1000);

        // The hello with its mark damaged is no log line: nothing comes
        // before the firmware's first frame.
        let mut unmarked = Session::new(3);
        unmarked.feed(&hello().replacen("~hm2", "~xm2", 1));
        assert_eq!(unmarked.corrupt[0].error, FrameError::Shape);
        assert!(unmarked.log.is_empty() && unmarked.hello.is_none());

        // Sent once each: a second copy is out of sequence.
        let mut single = Session::new(1);
        single.feed(&hello());
        single.feed(&hello());
        single.feed(&metric);
        single.feed(&metric);
        assert_eq!(single.unexpected, [hello().trim_end(), metric.trim_end()]);
        assert_eq!(single.lost, None);

        // A number half the counter's range or more ahead is taken for an
        // earlier one (a restart), not for 32767 frames lost.
        let mut far = Session::new(1);
        far.feed(&hello());
        let ahead = |seq| frame(seq, Frame::Done { ok: true });
        far.feed(&ahead(1 + u16::MAX / 2));
        assert_eq!((far.unexpected.len(), far.lost), (1, None));
        far.feed(&ahead(u16::MAX / 2));
        assert_eq!((far.unexpected.len(), far.lost), (1, Some(1)));
    }
}
