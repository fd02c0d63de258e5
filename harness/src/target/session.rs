//! Decodes what a firmware run printed: protocol frames into a record of the
//! run, everything else kept as log lines for diagnostics.

use std::collections::{BTreeMap, VecDeque};

use hilmem_protocol::{parse_line, Frame, FrameError, Line, MAX_PAYLOAD};

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
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Session {
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
    /// command, anything after `Done`).
    pub unexpected: Vec<String>,
    /// The last [`RECENT_LINES`] lines of any kind, as received.
    pub recent: VecDeque<String>,
}

/// Lines kept in [`Session::recent`].
pub const RECENT_LINES: usize = 64;

impl Session {
    /// Takes one line of output (line ending optional).
    pub fn feed(&mut self, line: &str) {
        let line = line.trim_end_matches(['\r', '\n']);
        if self.recent.len() == RECENT_LINES {
            self.recent.pop_front();
        }
        self.recent.push_back(line.to_owned());
        let mut buf = [0u8; MAX_PAYLOAD];
        let frame = match parse_line(line, &mut buf) {
            Line::Log(text) => return self.log.push(text.to_owned()),
            Line::Frame(Err(error)) => return self.corrupt.push(Corrupt { line: line.to_owned(), error }),
            Line::Frame(Ok(frame)) => frame,
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

    fn frame(f: Frame) -> String {
        let mut out = Vec::new();
        f.write_line(|b| out.extend_from_slice(b)).unwrap();
        String::from_utf8(out).unwrap() + "\r\n"
    }

    #[test]
    fn frames_and_logs_are_separated() {
        let mut s = Session::default();
        s.feed(&frame(Frame::Hello { board: "b", model: "m", arena_capacity: 10, stack_size: 20 }));
        s.feed("Total buffer usage: 5 bytes\r\n");
        s.feed(&frame(Frame::Metric { name: "arena_used_bytes", value: 5 }));
        s.feed(&frame(Frame::Output { input: "x", class: 2, value: 0.5 }));
        s.feed(&frame(Frame::Placement { tensor: 3, offset: 48 }));
        s.feed(&frame(Frame::Done { ok: true }));
        assert_eq!(s.hello.as_ref().unwrap().stack_size, 20);
        assert_eq!(s.metrics["arena_used_bytes"], 5);
        assert_eq!(s.outputs, [Output { input: "x".into(), class: 2, value: 0.5 }]);
        assert_eq!(s.placements, BTreeMap::from([(3, 48)]));
        assert_eq!(s.log, ["Total buffer usage: 5 bytes"]);
        assert_eq!(s.tail(5)[0], "Total buffer usage: 5 bytes");
        assert_eq!(s.recent.len(), 6);
        assert_eq!(s.done, Some(true));
        assert!(s.corrupt.is_empty() && s.unexpected.is_empty());
    }

    #[test]
    fn corrupt_frames_never_become_numbers() {
        let mut s = Session::default();
        let good = frame(Frame::Metric { name: "stack_peak_bytes", value: 1000 });
        let bad = good.replacen("~hm1 03", "~hm1 13", 1);
        s.feed(&bad);
        assert!(s.metrics.is_empty());
        assert!(matches!(s.corrupt[0].error, FrameError::Checksum { .. }));
    }

    fn hello() -> String {
        frame(Frame::Hello { board: "b", model: "m", arena_capacity: 10, stack_size: 20 })
    }

    #[test]
    fn frames_after_done_are_unexpected() {
        let mut s = Session::default();
        s.feed(&hello());
        s.feed(&frame(Frame::Done { ok: true }));
        let late = frame(Frame::Metric { name: "late", value: 1 });
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
            frame(Frame::Metric { name: "arena_used_bytes", value: 5 }),
            frame(Frame::Output { input: "x", class: 2, value: 0.5 }),
            frame(Frame::Placement { tensor: 1, offset: 0 }),
        ];
        for line in &early {
            s.feed(line);
        }
        s.feed(&hello());
        s.feed(&hello());
        assert!(s.metrics.is_empty() && s.outputs.is_empty() && s.placements.is_empty());
        assert_eq!(s.unexpected.len(), 4, "{:?}", s.unexpected);
        assert_eq!(s.unexpected[0], early[0].trim_end());
        assert_eq!(s.hello.unwrap().board, "b");

        let mut refused = Session::default();
        refused.feed(&frame(Frame::Failure { stage: "board", code: 0, detail: "wrong CPU" }));
        refused.feed(&frame(Frame::Done { ok: false }));
        assert_eq!((refused.failure.unwrap().stage.as_str(), refused.done), ("board", Some(false)));
        assert!(refused.unexpected.is_empty());
    }

    /// A metric reported twice keeps its first value; the second is out of
    /// sequence (a figure must not be replaced after the fact).
    #[test]
    fn a_repeated_metric_is_unexpected_and_the_first_stands() {
        let mut s = Session::default();
        s.feed(&hello());
        let first = frame(Frame::Metric { name: "stack_peak_bytes", value: 1000 });
        let again = frame(Frame::Metric { name: "stack_peak_bytes", value: 10 });
        s.feed(&first);
        s.feed(&again);
        assert_eq!(s.metrics["stack_peak_bytes"], 1000);
        assert_eq!(s.metric_frames["stack_peak_bytes"], first.trim_end());
        assert_eq!(s.unexpected, [again.trim_end()]);
    }
}
