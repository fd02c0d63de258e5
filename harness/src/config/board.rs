//! Board profiles: one strictly parsed TOML file per board in `boards/`,
//! validated against what the board's chip or emulated machine really has.

use std::fs;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use arena::budget::{Budget, Gate};
use serde::Deserialize;

use crate::config::hardware::{Cpu, QemuMachine, Selector, CPUS, QEMU_MACHINES};
use crate::strict_toml::{self, TomlError};
use crate::tflm::tree::target_arch;
use crate::Workspace;

/// The board `cargo xtask hil` uses when none is named.
pub const DEFAULT_BOARD: &str = "qemu-m7";

#[derive(Debug, thiserror::Error)]
pub enum BoardError {
    #[error("no board profile `{name}` in {dir} (available: {available})")]
    NotFound { name: String, dir: PathBuf, available: String },
    #[error(transparent)]
    Toml(#[from] TomlError),
    #[error("{file}: key `{key}`: {why}")]
    Invalid { file: PathBuf, key: &'static str, why: String },
}

/// A validated board profile.
#[derive(Debug, Clone, PartialEq)]
pub struct Board {
    pub name: String,
    pub description: String,
    /// Rust target triple of the firmware.
    pub target: String,
    pub cpu: Cpu,
    /// The core as TFLM's Cortex-M build names it (its `TARGET_ARCH`,
    /// which decides the C compiler's flags); None for a host board.
    pub tflm_arch: Option<String>,
    pub runner: Runner,
    pub transport: Transport,
    pub layout: Layout,
    pub budget: Budget,
    pub gate: Gate,
    /// Label of the CI runners that carry this board.
    pub ci_label: Option<String>,
    /// Longest time one scenario may run.
    pub timeout: Duration,
}

/// How a firmware image is deployed and started.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Runner {
    /// QEMU system emulation of one of the machines in [`QEMU_MACHINES`].
    Qemu {
        machine: String,
        /// Run with `-icount shift=N`: guest time advances with executed
        /// instructions, so timings repeat exactly.
        icount_shift: Option<u8>,
    },
    /// The firmware logic built as a Linux program for this machine.
    Host,
    /// A real board behind a debug probe, through probe-rs.
    ProbeRs {
        /// probe-rs chip name.
        chip: String,
        /// `VID:PID` or `VID:PID:SERIAL` of the probe; any single probe when
        /// absent (the command line can also name one).
        probe: Option<String>,
    },
}

/// How the firmware's output reaches the harness.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Transport {
    /// The UART on QEMU's standard input and output, or a host program's.
    Stdio,
    /// The UART on a pseudo-terminal that QEMU creates, read through the
    /// serial port driver.
    Pty,
    /// SEGGER RTT in the target's RAM, read through the debug probe.
    Rtt,
}

/// Where the firmware lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// A bare-metal image: the regions the linker script is generated from.
    BareMetal(MemoryMap),
    /// A host program; the scenario runs on a thread with this stack.
    Process { stack_bytes: u64 },
}

/// Address ranges of a bare-metal image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryMap {
    pub flash: Region,
    /// Static data and the stack (at its top).
    pub ram: Region,
    /// A separate region for the tensor arena; in `ram` when absent.
    pub arena: Option<Region>,
    /// The RP2040's second-stage bootloader, at the start of flash.
    pub boot2: Option<Region>,
    /// The stack budget at the top of `ram`; static data must end below it.
    pub stack_bytes: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Region {
    pub origin: u64,
    pub length: u64,
}

impl Region {
    pub fn end(&self) -> u64 {
        self.origin + self.length
    }

    pub fn contains(&self, addr: u64) -> bool {
        (self.origin..self.end()).contains(&addr)
    }

    fn overlaps(&self, other: &Region) -> bool {
        self.origin < other.end() && other.origin < self.end()
    }

    fn inside(&self, range: &Range<u64>) -> bool {
        range.start <= self.origin && self.end() <= range.end
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBoard {
    description: String,
    target: String,
    cpu: String,
    ci_label: Option<String>,
    timeout_secs: u64,
    runner: Runner,
    transport: Transport,
    memory: RawMemory,
    budget: Budget,
    gate: Gate,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMemory {
    flash: Option<Region>,
    ram: Option<Region>,
    arena: Option<Region>,
    boot2: Option<Region>,
    stack_bytes: u64,
}

impl Board {
    /// Reads `boards/<name>.toml`.
    pub fn load(ws: &Workspace, name: &str) -> Result<Board, BoardError> {
        let file = ws.boards_dir().join(format!("{name}.toml"));
        if !file.is_file() {
            return Err(BoardError::NotFound {
                name: name.to_owned(),
                dir: ws.boards_dir(),
                available: names(&ws.boards_dir()).join(", "),
            });
        }
        let raw: RawBoard = strict_toml::read(&file)?;
        validate(name, &file, raw)
    }

    /// Whether the board runs without hardware.
    pub fn is_emulated(&self) -> bool {
        !matches!(self.runner, Runner::ProbeRs { .. })
    }

    /// Whether an emulator runs it: its figures are deterministic.
    pub fn is_qemu(&self) -> bool {
        matches!(self.runner, Runner::Qemu { .. })
    }

    /// The QEMU machine, for QEMU boards.
    pub fn qemu_machine(&self) -> Option<&'static QemuMachine> {
        match &self.runner {
            Runner::Qemu { machine, .. } => QEMU_MACHINES.iter().find(|m| m.name == machine),
            _ => None,
        }
    }

    /// The linker script fragment (`memory.x`) for cortex-m-rt: the regions,
    /// the arena's section, the stack at the top of RAM, and the RP2040 boot
    /// loader where there is one. None for host programs.
    ///
    /// The regions the image grows into (flash, RAM, the arena's) are given
    /// [`LINK_SLACK`] more than the profile has, and the stack is placed
    /// from the profile's own figures: an image that fits links exactly as
    /// it would without the slack, and one that does not still links, so
    /// that hilmem can check it against the profile and say by how many
    /// bytes it is over (`image::elf::placement`).
    pub fn memory_x(&self) -> Option<String> {
        let Layout::BareMetal(m) = &self.layout else { return None };
        let region = |name: &str, r: &Region, slack: u64| {
            format!(
                "  {name} : ORIGIN = {:#010x}, LENGTH = {:#x} /* the profile's {:#x}{} */\n",
                r.origin,
                r.length + slack,
                r.length,
                if slack > 0 { " and the slack" } else { "" }
            )
        };
        let mut regions = String::new();
        if let Some(boot2) = &m.boot2 {
            regions += &region("BOOT2", boot2, 0);
        }
        regions += &region("FLASH", &m.flash, LINK_SLACK);
        regions += &region("RAM", &m.ram, LINK_SLACK);
        if let Some(arena) = &m.arena {
            regions += &region("ARENA", arena, LINK_SLACK);
        }
        let mut text =
            format!("/* Generated by hilmem from boards/{name}.toml */\nMEMORY\n{{\n{regions}}}\n", name = self.name);
        if m.arena.is_none() {
            text += "REGION_ALIAS(ARENA, RAM);\n";
        }
        text += "SECTIONS\n{\n  .hilmem_arena (NOLOAD) : ALIGN(16)\n  {\n    KEEP(*(.hilmem_arena));\n    __ehilmem_arena = .;\n  } > ARENA\n} INSERT AFTER .uninit;\n";
        if m.boot2.is_some() {
            text += "SECTIONS\n{\n  .boot2 ORIGIN(BOOT2) :\n  {\n    KEEP(*(.boot2));\n  } > BOOT2\n} INSERT BEFORE .text;\n";
        }
        text += &format!("_stack_start = {:#010x};\n_stack_end = _stack_start - {:#x};\n", m.ram.end(), m.stack_bytes);
        Some(text)
    }
}

/// What the linker may place past the end of a region of the profile (see
/// [`Board::memory_x`]). An image more than this over a region fails to link.
pub const LINK_SLACK: u64 = 16 << 20;

/// Memory a chip or machine has, to check a profile's regions against.
struct ChipMemory {
    code: Vec<Range<u64>>,
    data: Vec<Range<u64>>,
    what: String,
}

fn chip_memory(runner: &Runner) -> Result<Option<ChipMemory>, (&'static str, String)> {
    match runner {
        Runner::Host => Ok(None),
        Runner::Qemu { machine, .. } => {
            let m = QEMU_MACHINES.iter().find(|m| m.name == machine).ok_or_else(|| {
                let known: Vec<_> = QEMU_MACHINES.iter().map(|m| m.name).collect();
                ("runner.machine", format!("`{machine}` is not a machine hilmem drives ({})", known.join(", ")))
            })?;
            Ok(Some(ChipMemory {
                code: vec![m.code.clone()],
                data: vec![m.data.clone()],
                what: format!("QEMU machine {machine}"),
            }))
        }
        Runner::ProbeRs { chip, .. } => {
            let registry = probe_rs::config::Registry::from_builtin_families();
            let target = registry.get_target_by_name(chip).map_err(|_| {
                let similar = registry.search_chips(chip.get(..chip.len().min(6)).unwrap_or(chip));
                let similar = similar.into_iter().take(5).collect::<Vec<_>>().join(", ");
                ("runner.chip", format!("`{chip}` is not a chip probe-rs knows (similar names: {similar})"))
            })?;
            let ranges = |pick: fn(&probe_rs::config::MemoryRegion) -> bool| {
                merged(target.memory_map.iter().filter(|r| pick(r)).map(|r| r.address_range()).collect())
            };
            Ok(Some(ChipMemory {
                code: ranges(probe_rs::config::MemoryRegion::is_nvm),
                data: ranges(probe_rs::config::MemoryRegion::is_ram),
                what: format!("chip {chip}"),
            }))
        }
    }
}

/// `ranges` with touching or overlapping ones joined (flash banks, SRAM
/// blocks that follow each other).
fn merged(mut ranges: Vec<Range<u64>>) -> Vec<Range<u64>> {
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<Range<u64>> = Vec::new();
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

fn validate(name: &str, file: &Path, raw: RawBoard) -> Result<Board, BoardError> {
    let invalid = |key, why: String| BoardError::Invalid { file: file.to_owned(), key, why };

    let cpu = *CPUS.iter().find(|c| c.name == raw.cpu).ok_or_else(|| {
        let known: Vec<_> = CPUS.iter().map(|c| c.name).collect();
        invalid("cpu", format!("`{}` is not one of {}", raw.cpu, known.join(", ")))
    })?;
    if !cpu.targets.contains(&raw.target.as_str()) {
        return Err(invalid(
            "target",
            format!("`{}` does not run on a {} ({})", raw.target, cpu.name, cpu.targets.join(", ")),
        ));
    }
    if raw.timeout_secs == 0 {
        return Err(invalid("timeout_secs", "must be at least 1".into()));
    }
    let tflm_arch = match raw.runner {
        Runner::Host => None,
        _ => Some(target_arch(cpu.name, raw.target.ends_with("eabihf")).map_err(|why| invalid("cpu", why))?),
    };

    match (&raw.runner, &raw.transport) {
        (Runner::Qemu { .. }, Transport::Stdio | Transport::Pty)
        | (Runner::Host, Transport::Stdio)
        | (Runner::ProbeRs { .. }, Transport::Rtt) => {}
        (runner, transport) => {
            return Err(invalid("transport.kind", format!("{transport:?} does not go with a {runner:?} runner")));
        }
    }
    if let Runner::Qemu { machine, icount_shift } = &raw.runner {
        if let Some(m) = QEMU_MACHINES.iter().find(|m| m.name == machine) {
            if m.cpu != cpu.name {
                return Err(invalid("cpu", format!("QEMU machine {machine} has a {}, not a {}", m.cpu, cpu.name)));
            }
        }
        if icount_shift.is_some_and(|s| s > 10) {
            return Err(invalid("runner.icount_shift", "QEMU accepts 0 to 10".into()));
        }
    }
    if let Runner::ProbeRs { probe: Some(probe), .. } = &raw.runner {
        Selector::parse(probe).map_err(|e| invalid("runner.probe", e.to_string()))?;
    }

    let layout = layout(&raw, cpu).map_err(|(key, why)| invalid(key, why))?;
    if let Layout::BareMetal(m) = &layout {
        let chip = chip_memory(&raw.runner).map_err(|(key, why)| invalid(key, why))?.expect("bare-metal runner");
        let fits = |key: &'static str, region: &Region, ranges: &[Range<u64>]| {
            if ranges.iter().any(|r| region.inside(r)) {
                Ok(())
            } else {
                Err(invalid(
                    key,
                    format!(
                        "{:#x}..{:#x} is not inside the {} memory of the {}",
                        region.origin,
                        region.end(),
                        if key == "memory.flash" { "code" } else { "data" },
                        chip.what
                    ),
                ))
            }
        };
        fits("memory.flash", &m.flash, &chip.code)?;
        fits("memory.ram", &m.ram, &chip.data)?;
        if let Some(arena) = &m.arena {
            fits("memory.arena", arena, &chip.data)?;
        }
        if let Some(boot2) = &m.boot2 {
            fits("memory.boot2", boot2, &chip.code)?;
        }
    }

    let b = &raw.budget;
    if b.safety_margin_percent > 100 {
        return Err(invalid("budget.safety_margin_percent", format!("{} is more than 100", b.safety_margin_percent)));
    }
    if let Layout::BareMetal(m) = &layout {
        let ram = m.ram.length + m.arena.map_or(0, |a| a.length);
        if b.with_margin_bytes() > ram {
            return Err(invalid(
                "budget",
                format!(
                    "plans {} bytes with its safety margin; the board has {ram} bytes of RAM",
                    b.with_margin_bytes()
                ),
            ));
        }
    }
    if raw.gate.min_stack_margin_percent > 100 {
        return Err(invalid(
            "gate.min_stack_margin_percent",
            format!("{} is more than 100", raw.gate.min_stack_margin_percent),
        ));
    }

    Ok(Board {
        name: name.to_owned(),
        description: raw.description,
        target: raw.target,
        cpu,
        tflm_arch,
        runner: raw.runner,
        transport: raw.transport,
        layout,
        budget: raw.budget,
        gate: raw.gate,
        ci_label: raw.ci_label,
        timeout: Duration::from_secs(raw.timeout_secs),
    })
}

fn layout(raw: &RawBoard, cpu: Cpu) -> Result<Layout, (&'static str, String)> {
    let m = &raw.memory;
    if m.stack_bytes == 0 || !m.stack_bytes.is_multiple_of(8) {
        return Err(("memory.stack_bytes", format!("{} must be a non-zero multiple of 8", m.stack_bytes)));
    }
    if raw.runner == Runner::Host {
        if cpu.part != 0 {
            return Err(("cpu", "a host board runs on the host's cpu, `x86_64`".into()));
        }
        for (key, given) in
            [("memory.flash", m.flash), ("memory.ram", m.ram), ("memory.arena", m.arena), ("memory.boot2", m.boot2)]
        {
            if given.is_some() {
                return Err((key, "a host program has no memory map; give only `stack_bytes`".into()));
            }
        }
        return Ok(Layout::Process { stack_bytes: m.stack_bytes });
    }
    let (Some(flash), Some(ram)) = (m.flash, m.ram) else {
        return Err(("memory", "a bare-metal board needs `flash` and `ram` regions".into()));
    };
    let named = [
        ("memory.flash", Some(flash)),
        ("memory.ram", Some(ram)),
        ("memory.arena", m.arena),
        ("memory.boot2", m.boot2),
    ];
    let regions: Vec<(&'static str, Region)> = named.into_iter().filter_map(|(k, r)| Some((k, r?))).collect();
    for (i, (key, region)) in regions.iter().enumerate() {
        if region.length == 0 || region.end() > 1 << 32 {
            return Err((
                key,
                format!("{:#x}+{:#x} is empty or beyond 32-bit addresses", region.origin, region.length),
            ));
        }
        if let Some((other, _)) = regions[..i].iter().find(|(_, r)| r.overlaps(region)) {
            return Err((key, format!("overlaps {other}")));
        }
    }
    if m.stack_bytes >= ram.length {
        return Err((
            "memory.stack_bytes",
            format!("{} does not leave room in a {} byte RAM", m.stack_bytes, ram.length),
        ));
    }
    Ok(Layout::BareMetal(MemoryMap { flash, ram, arena: m.arena, boot2: m.boot2, stack_bytes: m.stack_bytes }))
}

/// Names of the board profiles in `dir`, sorted.
pub fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".toml").map(str::to_owned))
        .collect();
    names.sort();
    names
}

/// Every profile in `boards/`, in name order.
pub fn load_all(ws: &Workspace) -> Result<Vec<Board>, BoardError> {
    names(&ws.boards_dir()).iter().map(|name| Board::load(ws, name)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<Board, BoardError> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("boards")).unwrap();
        std::fs::write(dir.path().join("boards/b.toml"), text).unwrap();
        Board::load(&Workspace::new(dir.path()), "b")
    }

    fn repository_profile(name: &str) -> String {
        std::fs::read_to_string(Workspace::from_source().boards_dir().join(format!("{name}.toml"))).unwrap()
    }

    #[test]
    fn every_profile_in_the_repository_validates() {
        let boards = load_all(&Workspace::from_source()).unwrap();
        let names: Vec<_> = boards.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(
            names,
            ["host", "nrf52840-dk", "nucleo-h743", "qemu-m3", "qemu-m4", "qemu-m55", "qemu-m7", "rp-pico"]
        );
        for board in &boards {
            assert_eq!(board.memory_x().is_some(), matches!(board.layout, Layout::BareMetal(_)), "{}", board.name);
        }
        let nucleo = boards.iter().find(|b| b.name == "nucleo-h743").unwrap();
        assert!(nucleo.memory_x().unwrap().contains("ARENA : ORIGIN = 0x24000000"));
        let m7 = boards.iter().find(|b| b.name == DEFAULT_BOARD).unwrap();
        assert!(m7.memory_x().unwrap().contains("REGION_ALIAS(ARENA, RAM);"));
    }

    /// Each malformed profile gives its own error, naming the file and the key.
    #[test]
    fn malformed_profiles_name_file_and_key() {
        let m7 = repository_profile("qemu-m7");
        let nucleo = repository_profile("nucleo-h743");
        let host = repository_profile("host");
        let cases: Vec<(String, &str)> = vec![
            (m7.replace("cpu = ", "colour = 1\ncpu = "), "unknown field `colour`"),
            (m7.replace("timeout_secs = 60\n", ""), "missing field `timeout_secs`"),
            (m7.replace("length = 0x400000 }\nstack", "length = \"big\" }\nstack"), "key `memory.ram.length`"),
            (m7.replace("stack_bytes = 0x10000", "stack_bytes = 0x1000000"), "key `memory.stack_bytes`"),
            (m7.replace("origin = 0x20000000", "origin = 0x100"), "key `memory.ram`: overlaps memory.flash"),
            (
                m7.replace("length = 0x400000 }\nram", "length = 0x800000 }\nram"),
                "key `memory.flash`: 0x0..0x800000 is not inside the code memory of the QEMU machine mps2-an500",
            ),
            (m7.replace("kind = \"qemu\"", "kind = \"jtag\""), "key `runner.kind`"),
            (m7.replace("machine = \"mps2-an500\"", "machine = \"virt\""), "key `runner.machine`"),
            (
                m7.replace("cpu = \"cortex-m7\"", "cpu = \"cortex-m4\""),
                "key `cpu`: QEMU machine mps2-an500 has a cortex-m7",
            ),
            (m7.replace("cpu = \"cortex-m7\"", "cpu = \"cortex-a53\""), "key `cpu`: `cortex-a53` is not one of"),
            (m7.replace("target = \"thumbv7em-none-eabihf\"", "target = \"thumbv6m-none-eabi\"\n#"), ""),
            (
                m7.replace("target = \"thumbv7em-none-eabihf\"", "target = \"thumbv8m.main-none-eabihf\"\n#"),
                "key `target`: `thumbv8m.main-none-eabihf` does not run on a cortex-m7",
            ),
            (m7.replace("kind = \"stdio\"", "kind = \"rtt\""), "key `transport.kind`"),
            (
                m7.replace("safety_margin_percent = 20", "safety_margin_percent = 120"),
                "key `budget.safety_margin_percent`",
            ),
            (m7.replace("tensor_arena_bytes = 98304", "tensor_arena_bytes = 9830400"), "key `budget`: plans"),
            (
                nucleo.replace("chip = \"STM32H743ZITx\"", "chip = \"STM32H999\""),
                "key `runner.chip`: `STM32H999` is not a chip probe-rs knows",
            ),
            (
                nucleo.replace("origin = 0x24000000", "origin = 0x25000000"),
                "key `memory.arena`: 0x25000000..0x25080000 is not inside the data memory of the chip STM32H743ZITx",
            ),
            (
                nucleo.replace("chip = \"STM32H743ZITx\"", "chip = \"STM32H743ZITx\"\nprobe = \"st-link\""),
                "key `runner.probe`",
            ),
            (
                host.replace("stack_bytes = 0x40000", "stack_bytes = 0x40000\nram = { origin = 0, length = 1 }"),
                "key `memory.ram`: a host program has no memory map",
            ),
        ];
        for (text, expected) in cases {
            let result = load(&text);
            if expected.is_empty() {
                // thumbv6m runs on a Cortex-M7: a valid (if unusual) choice.
                result.unwrap();
                continue;
            }
            let err = result.unwrap_err().to_string();
            assert!(err.contains("b.toml") && err.contains(expected), "expected `{expected}` in: {err}");
        }
    }

    #[test]
    fn an_unknown_board_lists_the_known_ones() {
        let err = Board::load(&Workspace::from_source(), "nope").unwrap_err().to_string();
        assert!(err.contains("no board profile `nope`") && err.contains(DEFAULT_BOARD), "{err}");
    }

    #[test]
    fn adjacent_memory_banks_count_as_one() {
        assert_eq!(merged(vec![0x100..0x200, 0x0..0x100, 0x300..0x400]), [0x0..0x200, 0x300..0x400]);
    }
}
