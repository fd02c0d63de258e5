//! A noisy link, for testing how runs survive one: an adapter between a
//! target and the harness that damages the byte stream the firmware sends
//! (each byte dropped, flipped or duplicated with a set probability,
//! deterministically from a seed), then splits it into lines again.

use std::time::Duration;

use super::lines::LineBuffer;
use super::{Ending, Next, RunnerError, Target};
use crate::fuzz::Damage;

/// How noisy: the chance of damage per byte, in parts per million, and the
/// seed of the damage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Noise {
    pub per_million: u32,
    pub seed: u64,
}

pub struct Noisy {
    inner: Box<dyn Target>,
    noise: Noise,
    random: Damage,
    lines: LineBuffer,
    /// Bytes damaged so far.
    damaged: u64,
}

impl Noisy {
    pub fn new(inner: Box<dyn Target>, noise: Noise) -> Noisy {
        Noisy { inner, noise, random: Damage::new(noise.seed), lines: LineBuffer::default(), damaged: 0 }
    }

    /// `bytes` as the link delivers them.
    fn damage(&mut self, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(bytes.len() + 4);
        for &b in bytes {
            if self.random.below(1_000_000) >= u64::from(self.noise.per_million) {
                out.push(b);
                continue;
            }
            self.damaged += 1;
            match self.random.below(3) {
                0 => {}
                1 => out.push(b ^ (1 << self.random.below(8))),
                _ => out.extend([b, b]),
            }
        }
        out
    }
}

impl Target for Noisy {
    fn next(&mut self, wait: Duration) -> Result<Next, RunnerError> {
        loop {
            if let Some(line) = self.lines.pop() {
                return Ok(Next::Line(line));
            }
            match self.inner.next(wait)? {
                Next::Line(line) => {
                    let mut bytes = line.into_bytes();
                    if !bytes.ends_with(b"\n") {
                        bytes.push(b'\n');
                    }
                    let damaged = self.damage(&bytes);
                    self.lines.push(&damaged);
                }
                Next::Closed => return Ok(self.lines.rest().map_or(Next::Closed, Next::Line)),
                Next::Idle => return Ok(Next::Idle),
            }
        }
    }

    fn send(&mut self, bytes: &[u8]) -> Result<(), RunnerError> {
        self.inner.send(bytes)
    }

    fn ended(&mut self) -> Result<Option<Ending>, RunnerError> {
        self.inner.ended()
    }

    fn stop(&mut self) {
        self.inner.stop()
    }

    fn diagnostics(&mut self, wait: Duration) -> String {
        self.inner.diagnostics(wait)
    }

    fn process(&self) -> Option<u32> {
        self.inner.process()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::runner::tests::Silent;

    /// A link at 1% damages about 1% of the bytes, each dropped, flipped or
    /// doubled, and none at 0.
    #[test]
    fn the_rate_is_what_it_says() {
        let bytes = vec![b'a'; 100_000];
        let mut quiet = Noisy::new(Box::new(Silent(None)), Noise { per_million: 0, seed: 1 });
        assert_eq!((quiet.damage(&bytes), quiet.damaged), (bytes.clone(), 0));
        let mut noisy = Noisy::new(Box::new(Silent(None)), Noise { per_million: 10_000, seed: 1 });
        let out = noisy.damage(&bytes);
        assert!((800..1200).contains(&noisy.damaged), "{} of 100000 bytes damaged", noisy.damaged);
        let flipped = out.iter().filter(|&&b| b != b'a').count();
        assert!(flipped > 0 && out.len() != bytes.len(), "flips {flipped}, length {}", out.len());
    }
}
