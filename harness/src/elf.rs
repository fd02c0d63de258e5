//! Sizes the linker fixed, read from the firmware ELF itself rather than from
//! anything the firmware reports.

use std::path::{Path, PathBuf};

use object::elf::{PT_LOAD, SHF_ALLOC};
use object::read::elf::{ElfFile32, FileHeader, ProgramHeader, SectionHeader};
use object::{Endianness, Object, ObjectSymbol};

use crate::board::MemoryMap;

/// Name of the tensor arena's symbol in the reference firmware.
pub const ARENA_SYMBOL: &str = "HILMEM_ARENA";

#[derive(Debug, thiserror::Error)]
pub enum ElfError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path} is not a 32-bit ELF: {source}")]
    Parse { path: PathBuf, source: object::Error },
    #[error("{path} has no `{ARENA_SYMBOL}` symbol; it is not a hilmem firmware image")]
    NoArena { path: PathBuf },
}

/// Memory figures of one firmware image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageSizes {
    /// Bytes the image puts in flash: every loadable segment whose load
    /// address is in flash (vector table, code, read-only data and the load
    /// image of `.data`).
    pub flash_bytes: u64,
    /// Bytes of RAM the image reserves statically (`.data`, `.bss`,
    /// `.uninit`) other than the tensor arena.
    pub static_ram_bytes: u64,
    /// Size of the tensor arena symbol.
    pub arena_capacity_bytes: u64,
}

pub fn sizes(path: &Path, memory: &MemoryMap) -> Result<ImageSizes, ElfError> {
    let data = std::fs::read(path).map_err(|source| ElfError::Read { path: path.to_owned(), source })?;
    let parse_err = |source| ElfError::Parse { path: path.to_owned(), source };
    let elf = ElfFile32::<Endianness>::parse(&*data).map_err(parse_err)?;
    let endian = elf.endian();
    let header = elf.elf_header();

    let mut flash_bytes = 0;
    for segment in header.program_headers(endian, &*data).map_err(parse_err)? {
        if segment.p_type(endian) == PT_LOAD && memory.flash.contains(segment.p_paddr(endian).into()) {
            flash_bytes += u64::from(segment.p_filesz(endian));
        }
    }

    let mut ram_bytes = 0;
    for section in header.sections(endian, &*data).map_err(parse_err)?.iter() {
        if section.sh_flags(endian) & SHF_ALLOC != 0 && memory.ram.contains(section.sh_addr(endian).into()) {
            ram_bytes += u64::from(section.sh_size(endian));
        }
    }

    let arena = elf
        .symbols()
        .find(|s| s.name() == Ok(ARENA_SYMBOL))
        .ok_or_else(|| ElfError::NoArena { path: path.to_owned() })?;
    Ok(ImageSizes { flash_bytes, static_ram_bytes: ram_bytes - arena.size(), arena_capacity_bytes: arena.size() })
}
