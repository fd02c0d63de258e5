//! Splits a byte stream into lines.

/// Bytes received so far, handed out a complete line at a time.
#[derive(Debug, Default)]
pub struct LineBuffer {
    pending: Vec<u8>,
}

impl LineBuffer {
    pub fn push(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
    }

    /// The next complete line, with its line ending.
    pub fn pop(&mut self) -> Option<String> {
        let end = self.pending.iter().position(|&b| b == b'\n')? + 1;
        let line: Vec<u8> = self.pending.drain(..end).collect();
        Some(String::from_utf8_lossy(&line).into_owned())
    }

    /// What is left without a line ending, once the stream is over.
    pub fn rest(&mut self) -> Option<String> {
        (!self.pending.is_empty()).then(|| String::from_utf8_lossy(&std::mem::take(&mut self.pending)).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_come_out_whole_whatever_the_chunks() {
        let mut b = LineBuffer::default();
        b.push(b"ab");
        assert_eq!(b.pop(), None);
        b.push(b"c\r\nde\nf");
        assert_eq!(b.pop().as_deref(), Some("abc\r\n"));
        assert_eq!(b.pop().as_deref(), Some("de\n"));
        assert_eq!(b.pop(), None);
        assert_eq!(b.rest().as_deref(), Some("f"));
        assert_eq!(b.rest(), None);
    }
}
