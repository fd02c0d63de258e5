//! The pool for every buffer outside the tensor arena: cache-line aligned
//! blocks, freed in any order, with a high-water mark overall and per
//! category.
//!
//! Freeing consumes the block, so no reference to freed memory can remain.

use core::fmt;
use core::marker::PhantomData;

/// Every block starts on a cache line and is a whole number of them, so no
/// two buffers share a line (DMA and cache maintenance stay per buffer).
pub const CACHE_LINE: usize = 32;

/// What a buffer is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    InputFrame,
    Preprocess,
    Postprocess,
    Log,
    OtaStaging,
}

impl Category {
    pub const ALL: [Category; 5] =
        [Category::InputFrame, Category::Preprocess, Category::Postprocess, Category::Log, Category::OtaStaging];

    fn index(self) -> usize {
        self as usize
    }

    /// Stable name, used in metric names.
    pub fn name(self) -> &'static str {
        match self {
            Category::InputFrame => "input_frame",
            Category::Preprocess => "preprocess",
            Category::Postprocess => "postprocess",
            Category::Log => "log",
            Category::OtaStaging => "ota_staging",
        }
    }
}

/// Why the pool refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolError {
    /// No gap of `requested` bytes (rounded to cache lines); `free` bytes are
    /// free in all.
    Exhausted { requested: usize, free: usize },
    /// More live blocks than the pool keeps track of.
    TooManyBlocks,
    /// The block was not handed out by this pool, or was freed already.
    Unknown,
}

impl fmt::Display for PoolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PoolError::Exhausted { requested, free } => {
                write!(f, "pool exhausted: {requested} bytes requested, {free} free")
            }
            PoolError::TooManyBlocks => f.write_str("pool has no free block slot"),
            PoolError::Unknown => f.write_str("block does not belong to the pool"),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Block {
    start: usize,
    len: usize,
    category: Category,
}

/// Bytes in use now and at most, for the pool or one category.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub used: usize,
    pub peak: usize,
}

impl Usage {
    fn add(&mut self, n: usize) {
        self.used += n;
        if cfg!(feature = "instrument") {
            self.peak = self.peak.max(self.used);
        }
    }
}

/// A first-fit allocator over a borrowed region, tracking up to `SLOTS` live
/// blocks.
pub struct Pool<'a, const SLOTS: usize> {
    base: *mut u8,
    capacity: usize,
    blocks: [Option<Block>; SLOTS],
    total: Usage,
    categories: [Usage; 5],
    _memory: PhantomData<&'a mut [u8]>,
}

fn round_up(n: usize) -> usize {
    n.div_ceil(CACHE_LINE) * CACHE_LINE
}

impl<'a, const SLOTS: usize> Pool<'a, SLOTS> {
    /// A pool over `memory`, less the bytes before its first cache line.
    pub fn new(memory: &'a mut [u8]) -> Self {
        let skip = (memory.as_ptr() as usize).wrapping_neg() & (CACHE_LINE - 1);
        let skip = skip.min(memory.len());
        let capacity = (memory.len() - skip) / CACHE_LINE * CACHE_LINE;
        Pool {
            // SAFETY: `skip` is within the region.
            base: unsafe { memory.as_mut_ptr().add(skip) },
            capacity,
            blocks: [None; SLOTS],
            total: Usage::default(),
            categories: [Usage::default(); 5],
            _memory: PhantomData,
        }
    }

    /// A block of at least `size` bytes (rounded up to whole cache lines),
    /// cache-line aligned, disjoint from every live block.
    pub fn alloc(&mut self, category: Category, size: usize) -> Result<&'a mut [u8], PoolError> {
        let len = round_up(size.max(1));
        let slot = self.blocks.iter().position(Option::is_none).ok_or(PoolError::TooManyBlocks)?;
        let free = self.capacity - self.total.used;
        let exhausted = PoolError::Exhausted { requested: len, free };
        // Candidate starts: the region's start and the end of every live block.
        let fits = |start: usize| {
            start + len <= self.capacity
                && self.blocks.iter().flatten().all(|b| start + len <= b.start || b.start + b.len <= start)
        };
        let start = core::iter::once(0)
            .chain(self.blocks.iter().flatten().map(|b| b.start + b.len))
            .filter(|&s| fits(s))
            .min()
            .ok_or(exhausted)?;
        self.blocks[slot] = Some(Block { start, len, category });
        self.total.add(len);
        self.categories[category.index()].add(len);
        // SAFETY: [start, start + len) lies inside the borrowed region and
        // overlaps no live block, so the slice aliases nothing.
        Ok(unsafe { core::slice::from_raw_parts_mut(self.base.add(start), size) })
    }

    /// Returns a block to the pool.
    pub fn free(&mut self, block: &'a mut [u8]) -> Result<(), PoolError> {
        let start = (block.as_ptr() as usize).wrapping_sub(self.base as usize);
        let slot = self.blocks.iter().position(|b| b.is_some_and(|b| b.start == start)).ok_or(PoolError::Unknown)?;
        let b = self.blocks[slot].take().expect("found above");
        self.total.used -= b.len;
        self.categories[b.category.index()].used -= b.len;
        Ok(())
    }

    /// The whole pool's usage.
    pub fn usage(&self) -> Usage {
        self.total
    }

    /// One category's usage.
    pub fn category(&self, category: Category) -> Usage {
        self.categories[category.index()]
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn free_bytes(&self) -> usize {
        self.capacity - self.total.used
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[repr(align(64))]
    struct Mem([u8; 1024]);

    #[test]
    fn every_block_starts_on_a_cache_line() {
        let mut mem = Mem([0; 1024]);
        let mut pool = Pool::<8>::new(&mut mem.0[3..]);
        let sizes = [1, 33, 64, 5, 100];
        let blocks: [_; 5] = core::array::from_fn(|i| pool.alloc(Category::Log, sizes[i]).unwrap());
        for (block, size) in blocks.iter().zip(sizes) {
            assert_eq!(block.as_ptr() as usize % CACHE_LINE, 0);
            assert_eq!(block.len(), size);
        }
        for pair in blocks.windows(2) {
            assert!(pair[1].as_ptr() as usize >= pair[0].as_ptr() as usize + pair[0].len());
        }
    }

    #[test]
    fn blocks_are_freed_in_any_order_and_their_space_reused() {
        let mut mem = Mem([0; 1024]);
        let mut pool = Pool::<4>::new(&mut mem.0);
        let a = pool.alloc(Category::InputFrame, 256).unwrap();
        let a_addr = a.as_ptr();
        let b = pool.alloc(Category::InputFrame, 256).unwrap();
        pool.free(a).unwrap();
        let c = pool.alloc(Category::Preprocess, 200).unwrap();
        assert_eq!(c.as_ptr(), a_addr, "first fit reuses the freed gap");
        pool.free(b).unwrap();
        pool.free(c).unwrap();
        assert_eq!(pool.usage().used, 0);
    }

    #[test]
    fn watermarks_are_kept_per_category() {
        let mut mem = Mem([0; 1024]);
        let mut pool = Pool::<8>::new(&mut mem.0);
        let frame = pool.alloc(Category::InputFrame, 100).unwrap(); // 128
        let pre = pool.alloc(Category::Preprocess, 64).unwrap(); // 64
        pool.free(pre).unwrap();
        let post = pool.alloc(Category::Postprocess, 10).unwrap(); // 32
        pool.free(post).unwrap();
        pool.free(frame).unwrap();
        let log = pool.alloc(Category::Log, 300).unwrap(); // 320
        assert_eq!(pool.category(Category::InputFrame), Usage { used: 0, peak: 128 });
        assert_eq!(pool.category(Category::Preprocess), Usage { used: 0, peak: 64 });
        assert_eq!(pool.category(Category::Postprocess), Usage { used: 0, peak: 32 });
        assert_eq!(pool.category(Category::Log), Usage { used: 320, peak: 320 });
        assert_eq!(pool.category(Category::OtaStaging), Usage::default());
        assert_eq!(pool.usage(), Usage { used: 320, peak: 320 });
        pool.free(log).unwrap();
        assert_eq!(pool.usage(), Usage { used: 0, peak: 320 });
    }

    #[test]
    fn exhaustion_slots_and_strangers_are_errors() {
        let mut mem = Mem([0; 1024]);
        let mut pool = Pool::<2>::new(&mut mem.0[..256]);
        let a = pool.alloc(Category::Log, 200).unwrap();
        assert_eq!(pool.alloc(Category::Log, 64), Err(PoolError::Exhausted { requested: 64, free: 32 }));
        let b = pool.alloc(Category::Log, 1).unwrap();
        assert_eq!(pool.alloc(Category::Log, 1), Err(PoolError::TooManyBlocks));
        let mut other = [0u8; 8];
        assert_eq!(pool.free(&mut other), Err(PoolError::Unknown));
        pool.free(a).unwrap();
        pool.free(b).unwrap();
        assert_eq!(pool.free_bytes(), 256);
    }
}
