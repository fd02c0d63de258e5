//! A bump pool for the buffers that live outside the tensor arena, with a
//! high-water mark.
//!
//! Blocks are freed in reverse order of allocation; freeing consumes the block,
//! so no reference to freed memory can remain.

use core::fmt;
use core::marker::PhantomData;

/// Why the pool refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolError {
    /// Not enough room: `requested` bytes (after alignment) with `free` left.
    Exhausted { requested: usize, free: usize },
    /// The alignment is not a power of two.
    Alignment(usize),
    /// A block other than the most recent one was freed.
    NotLast,
}

impl fmt::Display for PoolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PoolError::Exhausted { requested, free } => {
                write!(f, "pool exhausted: {requested} bytes requested, {free} free")
            }
            PoolError::Alignment(a) => write!(f, "alignment {a} is not a power of two"),
            PoolError::NotLast => f.write_str("pool blocks must be freed last-in first-out"),
        }
    }
}

/// A last-in first-out allocator over a borrowed region.
pub struct Pool<'a> {
    base: *mut u8,
    capacity: usize,
    top: usize,
    peak: usize,
    _memory: PhantomData<&'a mut [u8]>,
}

impl<'a> Pool<'a> {
    pub fn new(memory: &'a mut [u8]) -> Self {
        Pool { base: memory.as_mut_ptr(), capacity: memory.len(), top: 0, peak: 0, _memory: PhantomData }
    }

    /// A block of `size` bytes whose address is a multiple of `align`.
    pub fn alloc(&mut self, size: usize, align: usize) -> Result<&'a mut [u8], PoolError> {
        if !align.is_power_of_two() {
            return Err(PoolError::Alignment(align));
        }
        let addr = self.base as usize + self.top;
        let start = self.top + (addr.wrapping_neg() & (align - 1));
        let free = self.capacity - self.top;
        let end = start.checked_add(size).filter(|&end| end <= self.capacity);
        let Some(end) = end else {
            return Err(PoolError::Exhausted { requested: size + (start - self.top), free });
        };
        self.top = end;
        self.peak = self.peak.max(end);
        // SAFETY: [start, end) lies inside the borrowed region and above every
        // block still handed out, so it aliases nothing.
        Ok(unsafe { core::slice::from_raw_parts_mut(self.base.add(start), size) })
    }

    /// Returns the most recently allocated block (its alignment padding stays
    /// in use until the block below it is freed).
    pub fn free(&mut self, block: &'a mut [u8]) -> Result<(), PoolError> {
        let start = block.as_ptr() as usize - self.base as usize;
        if start + block.len() != self.top {
            return Err(PoolError::NotLast);
        }
        self.top = start;
        Ok(())
    }

    /// Bytes in use now, counted from the start of the region.
    pub fn used(&self) -> usize {
        self.top
    }

    /// The most bytes ever in use at once.
    pub fn peak(&self) -> usize {
        self.peak
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_aligned_and_disjoint() {
        let mut mem = [0u8; 1000];
        let mut pool = Pool::new(&mut mem);
        let a = pool.alloc(3, 1).unwrap();
        let b = pool.alloc(10, 32).unwrap();
        assert_eq!(b.as_ptr() as usize % 32, 0);
        assert!(b.as_ptr() as usize >= a.as_ptr() as usize + 3);
        a.fill(1);
        b.fill(2);
        assert!(a.iter().all(|&x| x == 1));
    }

    #[test]
    fn peak_survives_free() {
        let mut mem = [0u8; 256];
        let mut pool = Pool::new(&mut mem[..]);
        let a = pool.alloc(64, 1).unwrap();
        let b = pool.alloc(64, 1).unwrap();
        assert_eq!(pool.used(), 128);
        pool.free(b).unwrap();
        pool.free(a).unwrap();
        assert_eq!(pool.used(), 0);
        assert_eq!(pool.peak(), 128);
        let _c = pool.alloc(32, 1).unwrap();
        assert_eq!(pool.peak(), 128);
    }

    #[test]
    fn exhaustion_and_bad_alignment_are_errors() {
        let mut mem = [0u8; 100];
        let mut pool = Pool::new(&mut mem[..]);
        assert_eq!(pool.alloc(10, 3), Err(PoolError::Alignment(3)));
        let _a = pool.alloc(90, 1).unwrap();
        assert_eq!(pool.alloc(11, 1), Err(PoolError::Exhausted { requested: 11, free: 10 }));
        assert_eq!(pool.used(), 90);
        assert!(pool.alloc(10, 1).is_ok());
    }

    #[test]
    fn freeing_out_of_order_is_refused() {
        let mut mem = [0u8; 100];
        let mut pool = Pool::new(&mut mem[..]);
        let a = pool.alloc(10, 1).unwrap();
        let _b = pool.alloc(10, 1).unwrap();
        assert_eq!(pool.free(a), Err(PoolError::NotLast));
        assert_eq!(pool.used(), 20);
    }
}
