//! A ring buffer for log text: formatting writes into it, the transport
//! drains it. When it is full, new text is dropped (and counted), never
//! written over text not yet drained.

use core::fmt;

pub struct LogRing<'a> {
    buf: &'a mut [u8],
    start: usize,
    len: usize,
    peak: usize,
    dropped: usize,
}

impl<'a> LogRing<'a> {
    pub fn new(buf: &'a mut [u8]) -> Self {
        LogRing { buf, start: 0, len: 0, peak: 0, dropped: 0 }
    }

    /// Appends what fits of `bytes`.
    pub fn push(&mut self, bytes: &[u8]) {
        let room = self.buf.len() - self.len;
        let n = bytes.len().min(room);
        for (i, &b) in bytes[..n].iter().enumerate() {
            let at = (self.start + self.len + i) % self.buf.len();
            self.buf[at] = b;
        }
        self.len += n;
        self.dropped += bytes.len() - n;
        if cfg!(feature = "instrument") {
            self.peak = self.peak.max(self.len);
        }
    }

    /// Hands everything buffered to `out` (in at most two pieces) and empties
    /// the ring.
    pub fn drain(&mut self, mut out: impl FnMut(&[u8])) {
        let first = self.len.min(self.buf.len() - self.start);
        out(&self.buf[self.start..self.start + first]);
        if self.len > first {
            out(&self.buf[..self.len - first]);
        }
        self.start = (self.start + self.len) % self.buf.len().max(1);
        self.len = 0;
    }

    /// Moves the oldest bytes, as many as `out` holds, into `out`; returns
    /// how many.
    pub fn take(&mut self, out: &mut [u8]) -> usize {
        let n = self.len.min(out.len());
        for (i, byte) in out[..n].iter_mut().enumerate() {
            *byte = self.buf[(self.start + i) % self.buf.len()];
        }
        self.start = (self.start + n) % self.buf.len().max(1);
        self.len -= n;
        n
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The fullest the ring has been.
    pub fn peak(&self) -> usize {
        self.peak
    }

    /// Bytes that did not fit.
    pub fn dropped(&self) -> usize {
        self.dropped
    }
}

impl fmt::Write for LogRing<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.push(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use core::fmt::Write;
    use std::vec::Vec;

    fn drained(ring: &mut LogRing) -> Vec<u8> {
        let mut out = Vec::new();
        ring.drain(|piece| out.extend_from_slice(piece));
        out
    }

    #[test]
    fn text_comes_out_in_order_across_the_wrap() {
        let mut buf = [0u8; 8];
        let mut ring = LogRing::new(&mut buf);
        write!(ring, "abcde").unwrap();
        assert_eq!(drained(&mut ring), b"abcde");
        write!(ring, "fghij").unwrap(); // wraps
        assert_eq!(ring.len(), 5);
        assert_eq!(drained(&mut ring), b"fghij");
        assert!(ring.is_empty());
        assert_eq!(ring.peak(), 5);
    }

    #[test]
    fn text_is_taken_a_piece_at_a_time_across_the_wrap() {
        let mut buf = [0u8; 8];
        let mut ring = LogRing::new(&mut buf);
        write!(ring, "abcdef").unwrap();
        let mut out = [0u8; 4];
        assert_eq!(ring.take(&mut out), 4);
        assert_eq!(&out, b"abcd");
        write!(ring, "ghijk").unwrap(); // wraps
        assert_eq!(ring.take(&mut out), 4);
        assert_eq!(&out, b"efgh");
        assert_eq!(drained(&mut ring), b"ijk");
        assert_eq!(ring.take(&mut out), 0);
    }

    #[test]
    fn a_full_ring_drops_and_counts_new_text() {
        let mut buf = [0u8; 4];
        let mut ring = LogRing::new(&mut buf);
        ring.push(b"123456");
        assert_eq!((ring.len(), ring.dropped(), ring.peak()), (4, 2, 4));
        assert_eq!(drained(&mut ring), b"1234");
        assert_eq!(drained(&mut ring), b"");
    }
}
