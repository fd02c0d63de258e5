//! Facts the linker fixed, read from the firmware ELF itself rather than from
//! anything the firmware reports: sizes, where the image lies against its
//! board's regions, and the identity it was built with.

use std::path::{Path, PathBuf};

use object::elf::{PT_LOAD, SHF_ALLOC, SHF_WRITE, SHT_NOBITS};
use object::read::elf::{ElfFile, FileHeader, ProgramHeader, SectionHeader};
use object::{Endianness, FileKind, Object, ObjectSection, ObjectSymbol};

use crate::config::board::{Layout, MemoryMap, Region, LINK_SLACK};

/// Name of the tensor arena's symbol in the reference firmware.
pub const ARENA_SYMBOL: &str = "HILMEM_ARENA";
/// The arena's output section in a bare-metal image (see
/// `Board::memory_x`).
pub const ARENA_SECTION: &str = ".hilmem_arena";
/// Name of the buffer pool's backing store.
pub const POOL_SYMBOL: &str = "HILMEM_POOL";
/// Name of the identity string's symbol.
pub const IDENTITY_SYMBOL: &str = "HILMEM_IDENTITY";

#[derive(Debug, thiserror::Error)]
pub enum ElfError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path} is not a readable ELF file: {source}")]
    Parse { path: PathBuf, source: object::Error },
    #[error("{path} is not an ELF file")]
    NotElf { path: PathBuf },
    #[error("{path} has no `{symbol}` symbol; it is not a hilmem firmware image")]
    NoSymbol { path: PathBuf, symbol: &'static str },
}

/// Memory figures of one firmware image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageSizes {
    /// Bytes the image puts in flash: every loadable segment whose load
    /// address is in flash (vector table, code, read-only data and the load
    /// image of `.data`). None for host programs, which have no flash.
    pub flash_bytes: Option<u64>,
    /// Bytes of RAM the image reserves statically (`.data`, `.bss`,
    /// `.uninit`, the writable sections of a host program) other than the
    /// tensor arena.
    pub static_ram_bytes: u64,
    /// Size of the tensor arena symbol.
    pub arena_capacity_bytes: u64,
    /// Size of the buffer pool's backing store (part of `static_ram_bytes`).
    pub pool_capacity_bytes: u64,
}

/// One allocated section of an image.
#[derive(Debug, Clone)]
pub(crate) struct Section {
    pub name: String,
    pub address: u64,
    pub size: u64,
    /// Takes no bytes in the file (`.bss`, `.uninit`, the arena).
    pub nobits: bool,
    pub writable: bool,
}

/// What hilmem reads of an ELF image, read once.
pub(crate) struct Image {
    pub path: PathBuf,
    /// Load address and file size of each loadable segment.
    pub segments: Vec<(u64, u64)>,
    pub sections: Vec<Section>,
    /// Name, address and size of each named symbol.
    pub symbols: Vec<(String, u64, u64)>,
}

impl Image {
    pub fn read(path: &Path) -> Result<Image, ElfError> {
        let data = std::fs::read(path).map_err(|source| ElfError::Read { path: path.to_owned(), source })?;
        let parse_err = |source| ElfError::Parse { path: path.to_owned(), source };
        match FileKind::parse(&*data).map_err(parse_err)? {
            FileKind::Elf32 => Image::of::<object::elf::FileHeader32<Endianness>>(path, &data),
            FileKind::Elf64 => Image::of::<object::elf::FileHeader64<Endianness>>(path, &data),
            _ => Err(ElfError::NotElf { path: path.to_owned() }),
        }
    }

    fn of<Elf: FileHeader<Endian = Endianness>>(path: &Path, data: &[u8]) -> Result<Image, ElfError> {
        let parse_err = |source| ElfError::Parse { path: path.to_owned(), source };
        let elf = ElfFile::<Elf>::parse(data).map_err(parse_err)?;
        let endian = elf.endian();
        let header = elf.elf_header();
        let mut segments = Vec::new();
        for segment in header.program_headers(endian, data).map_err(parse_err)? {
            if segment.p_type(endian) == PT_LOAD {
                segments.push((segment.p_paddr(endian).into(), segment.p_filesz(endian).into()));
            }
        }
        let table = header.sections(endian, data).map_err(parse_err)?;
        let mut sections = Vec::new();
        for section in table.iter() {
            let flags: u64 = section.sh_flags(endian).into();
            if flags & u64::from(SHF_ALLOC) == 0 {
                continue;
            }
            let name = table.section_name(endian, section).map_err(parse_err)?;
            sections.push(Section {
                name: String::from_utf8_lossy(name).into_owned(),
                address: section.sh_addr(endian).into(),
                size: section.sh_size(endian).into(),
                nobits: section.sh_type(endian) == SHT_NOBITS,
                writable: flags & u64::from(SHF_WRITE) != 0,
            });
        }
        let symbols = elf
            .symbols()
            .filter_map(|s| Some((s.name().ok().filter(|n| !n.is_empty())?.to_owned(), s.address(), s.size())))
            .collect();
        Ok(Image { path: path.to_owned(), segments, sections, symbols })
    }

    pub fn symbol(&self, name: &'static str) -> Result<(u64, u64), ElfError> {
        let found = self.symbols.iter().find(|(n, ..)| n == name);
        found
            .map(|&(_, address, size)| (address, size))
            .ok_or(ElfError::NoSymbol { path: self.path.clone(), symbol: name })
    }

    /// Whether `section` is static RAM of an image laid out as `layout`
    /// (the arena, counted apart, included).
    pub fn in_static_ram(section: &Section, layout: &Layout) -> bool {
        match layout {
            Layout::BareMetal(m) => in_ram(m, section.address),
            Layout::Process { .. } => section.writable,
        }
    }
}

pub fn sizes(path: &Path, layout: &Layout) -> Result<ImageSizes, ElfError> {
    let image = Image::read(path)?;
    let flash_bytes = match layout {
        Layout::BareMetal(m) => {
            Some(image.segments.iter().filter(|(paddr, _)| in_flash(m, *paddr)).map(|(_, size)| size).sum())
        }
        Layout::Process { .. } => None,
    };
    let ram_bytes: u64 = image.sections.iter().filter(|s| Image::in_static_ram(s, layout)).map(|s| s.size).sum();
    let (_, arena) = image.symbol(ARENA_SYMBOL)?;
    Ok(ImageSizes {
        flash_bytes,
        static_ram_bytes: ram_bytes - arena,
        arena_capacity_bytes: arena,
        pool_capacity_bytes: image.symbol(POOL_SYMBOL)?.1,
    })
}

/// Whether the linker placed `addr` in `r` (with the slack it links with,
/// so an image that overflows is still counted whole).
fn linked_in(r: &Region, addr: u64) -> bool {
    (r.origin..r.end() + LINK_SLACK).contains(&addr)
}

pub(crate) fn in_flash(m: &MemoryMap, addr: u64) -> bool {
    linked_in(&m.flash, addr) || m.boot2.is_some_and(|b| b.contains(addr))
}

fn in_ram(m: &MemoryMap, addr: u64) -> bool {
    linked_in(&m.ram, addr) || m.arena.is_some_and(|a| linked_in(&a, addr))
}

/// How far an image reaches into one region of its board's profile.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RegionUse {
    /// What lies there: `flash image`, `static RAM` or `tensor arena`.
    pub what: String,
    /// The region as the profile has it: `FLASH`, `ARENA`, or `RAM below
    /// the stack` (RAM less the profile's stack at its top).
    pub region: String,
    pub origin: u64,
    pub length: u64,
    /// Where what lies there starts and ends (one past its last byte).
    pub start: u64,
    pub end: u64,
}

impl RegionUse {
    /// Bytes outside the region.
    pub fn overflow(&self) -> u64 {
        let below = self.origin.saturating_sub(self.start).min(self.end - self.start);
        self.end.saturating_sub(self.origin + self.length).min(self.end - self.start) + below
    }

    /// The use against the region, and any overflow.
    pub fn describe(&self) -> String {
        let place = format!("{} ({} bytes at {:#010x})", self.region, self.length, self.origin);
        match self.overflow() {
            0 => format!("{} bytes of {place}", self.end - self.start),
            over => format!("{} bytes at {:#010x}: {over} bytes outside {place}", self.end - self.start, self.start),
        }
    }
}

/// Where the image lies against its board's regions: the flash image in
/// FLASH, static RAM below the stack, and the tensor arena in the region
/// the profile names for it. Empty for host programs.
pub(crate) fn placement(image: &Image, layout: &Layout) -> Result<Vec<RegionUse>, ElfError> {
    let Layout::BareMetal(m) = layout else { return Ok(Vec::new()) };
    let span = |spans: &mut Option<(u64, u64)>, start: u64, size: u64| {
        let (s, e) = spans.get_or_insert((start, start + size));
        (*s, *e) = ((*s).min(start), (*e).max(start + size));
    };
    let mut flash = None;
    for &(paddr, size) in image.segments.iter().filter(|(paddr, size)| *size > 0 && linked_in(&m.flash, *paddr)) {
        span(&mut flash, paddr, size);
    }
    let (arena_start, arena_bytes) = image.symbol(ARENA_SYMBOL)?;
    let arena = (arena_start, arena_start + arena_bytes);
    let mut ram = None;
    for s in image.sections.iter().filter(|s| s.size > 0 && linked_in(&m.ram, s.address)) {
        // The arena is checked on its own, against its own region.
        if s.name != ARENA_SECTION {
            span(&mut ram, s.address, s.size);
        }
    }
    let region = |what: &str, region: &str, r: Region, (start, end): (u64, u64)| RegionUse {
        what: what.into(),
        region: region.into(),
        origin: r.origin,
        length: r.length,
        start,
        end,
    };
    let below_stack = Region { origin: m.ram.origin, length: m.ram.length - m.stack_bytes };
    let mut uses: Vec<RegionUse> = flash.map(|f| region("flash image", "FLASH", m.flash, f)).into_iter().collect();
    uses.extend(ram.map(|r| region("static RAM", "RAM below the stack", below_stack, r)));
    uses.push(match m.arena {
        Some(a) => region("tensor arena", "ARENA", a, arena),
        None => region("tensor arena", "RAM below the stack", below_stack, arena),
    });
    Ok(uses)
}

/// The identity string the image was built with (`HILMEM_IDENTITY`).
pub fn identity(path: &Path) -> Result<String, ElfError> {
    let data = std::fs::read(path).map_err(|source| ElfError::Read { path: path.to_owned(), source })?;
    let parse_err = |source| ElfError::Parse { path: path.to_owned(), source };
    let file = object::File::parse(&*data).map_err(parse_err)?;
    let missing = || ElfError::NoSymbol { path: path.to_owned(), symbol: IDENTITY_SYMBOL };
    let symbol = file.symbols().find(|s| s.name() == Ok(IDENTITY_SYMBOL)).ok_or_else(missing)?;
    let section = symbol.section_index().and_then(|i| file.section_by_index(i).ok()).ok_or_else(missing)?;
    let bytes = section.data_range(symbol.address(), symbol.size()).map_err(parse_err)?.ok_or_else(missing)?;
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn used(start: u64, end: u64) -> RegionUse {
        RegionUse {
            what: "tensor arena".into(),
            region: "ARENA".into(),
            origin: 0x2400_0000,
            length: 0x8_0000,
            start,
            end,
        }
    }

    /// The bytes outside a region, past its end or before its start, never
    /// more than what lies there.
    #[test]
    fn overflow_counts_the_bytes_outside_the_region() {
        assert_eq!(used(0x2400_0000, 0x2408_0000).overflow(), 0, "exactly the region");
        assert_eq!(used(0x2400_0000, 0x2400_0000 + 600_000).overflow(), 600_000 - 0x8_0000);
        assert_eq!(used(0x23ff_fff0, 0x2400_0010).overflow(), 16, "before the start");
        assert_eq!(used(0x2000_0000, 0x2000_0100).overflow(), 0x100, "wholly elsewhere");
        assert_eq!(
            used(0x2400_0000, 0x2400_0000 + 600_000).describe(),
            "600000 bytes at 0x24000000: 75712 bytes outside ARENA (524288 bytes at 0x24000000)"
        );
        assert_eq!(used(0x2400_0000, 0x2400_0c00).describe(), "3072 bytes of ARENA (524288 bytes at 0x24000000)");
    }
}
