//! Facts the linker fixed, read from the firmware ELF itself rather than from
//! anything the firmware reports: sizes, and the identity it was built with.

use std::path::{Path, PathBuf};

use object::elf::{PT_LOAD, SHF_ALLOC, SHF_WRITE};
use object::read::elf::{ElfFile, FileHeader, ProgramHeader, SectionHeader};
use object::{Endianness, FileKind, Object, ObjectSection, ObjectSymbol};

use crate::spec::board::{Layout, MemoryMap};

/// Name of the tensor arena's symbol in the reference firmware.
pub const ARENA_SYMBOL: &str = "HILMEM_ARENA";
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

fn read(path: &Path) -> Result<Vec<u8>, ElfError> {
    std::fs::read(path).map_err(|source| ElfError::Read { path: path.to_owned(), source })
}

pub fn sizes(path: &Path, layout: &Layout) -> Result<ImageSizes, ElfError> {
    let data = read(path)?;
    let parse_err = |source| ElfError::Parse { path: path.to_owned(), source };
    match FileKind::parse(&*data).map_err(parse_err)? {
        FileKind::Elf32 => sizes_of::<object::elf::FileHeader32<Endianness>>(path, &data, layout),
        FileKind::Elf64 => sizes_of::<object::elf::FileHeader64<Endianness>>(path, &data, layout),
        _ => Err(ElfError::NotElf { path: path.to_owned() }),
    }
}

fn sizes_of<Elf: FileHeader<Endian = Endianness>>(
    path: &Path,
    data: &[u8],
    layout: &Layout,
) -> Result<ImageSizes, ElfError> {
    let parse_err = |source| ElfError::Parse { path: path.to_owned(), source };
    let elf = ElfFile::<Elf>::parse(data).map_err(parse_err)?;
    let endian = elf.endian();
    let header = elf.elf_header();

    let flash_bytes = match layout {
        Layout::BareMetal(m) => {
            let mut bytes = 0;
            for segment in header.program_headers(endian, data).map_err(parse_err)? {
                let paddr: u64 = segment.p_paddr(endian).into();
                if segment.p_type(endian) == PT_LOAD && in_flash(m, paddr) {
                    bytes += segment.p_filesz(endian).into();
                }
            }
            Some(bytes)
        }
        Layout::Process { .. } => None,
    };

    let mut ram_bytes = 0;
    for section in header.sections(endian, data).map_err(parse_err)?.iter() {
        let flags: u64 = section.sh_flags(endian).into();
        let addr: u64 = section.sh_addr(endian).into();
        let counts = match layout {
            Layout::BareMetal(m) => flags & u64::from(SHF_ALLOC) != 0 && in_ram(m, addr),
            Layout::Process { .. } => flags & u64::from(SHF_ALLOC | SHF_WRITE) == u64::from(SHF_ALLOC | SHF_WRITE),
        };
        if counts {
            ram_bytes += section.sh_size(endian).into();
        }
    }

    let size = |symbol: &'static str| {
        let found = elf.symbols().find(|s| s.name() == Ok(symbol));
        found.map(|s| s.size()).ok_or_else(|| ElfError::NoSymbol { path: path.to_owned(), symbol })
    };
    let arena = size(ARENA_SYMBOL)?;
    Ok(ImageSizes {
        flash_bytes,
        static_ram_bytes: ram_bytes - arena,
        arena_capacity_bytes: arena,
        pool_capacity_bytes: size(POOL_SYMBOL)?,
    })
}

fn in_flash(m: &MemoryMap, addr: u64) -> bool {
    m.flash.contains(addr) || m.boot2.is_some_and(|b| b.contains(addr))
}

fn in_ram(m: &MemoryMap, addr: u64) -> bool {
    m.ram.contains(addr) || m.arena.is_some_and(|a| a.contains(addr))
}

/// The identity string the image was built with (`HILMEM_IDENTITY`).
pub fn identity(path: &Path) -> Result<String, ElfError> {
    let data = read(path)?;
    let parse_err = |source| ElfError::Parse { path: path.to_owned(), source };
    let file = object::File::parse(&*data).map_err(parse_err)?;
    let missing = || ElfError::NoSymbol { path: path.to_owned(), symbol: IDENTITY_SYMBOL };
    let symbol = file.symbols().find(|s| s.name() == Ok(IDENTITY_SYMBOL)).ok_or_else(missing)?;
    let section = symbol.section_index().and_then(|i| file.section_by_index(i).ok()).ok_or_else(missing)?;
    let bytes = section.data_range(symbol.address(), symbol.size()).map_err(parse_err)?.ok_or_else(missing)?;
    Ok(String::from_utf8_lossy(bytes).into_owned())
}
