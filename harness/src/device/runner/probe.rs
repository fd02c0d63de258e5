//! Real boards behind a debug probe, through probe-rs: choose the probe, keep
//! other runs off it, flash, reset, and talk RTT.
//!
//! The parts that need no hardware are separate functions so they are tested
//! here: [`select`] among the attached probes,
//! [`ProbeLock`], and [`map_open_error`] / [`map_attach_error`].

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use probe_rs::probe::list::Lister;
use probe_rs::probe::{DebugProbeError, DebugProbeInfo, ProbeCreationError};
use probe_rs::rtt::{Rtt, ScanRegion};
use probe_rs::semihosting::SemihostingCommand;
use probe_rs::{BreakpointCause, CoreStatus, HaltReason, Permissions, Session};

use crate::config::hardware::{BadSelector, Selector};
use crate::fsutil::Lock;
use crate::image::elf::{ElfError, Image};

use super::lines::LineBuffer;
use super::{Ending, Next, RunnerError, Target};

/// How long the firmware may take to set up its RTT control block after reset.
const RTT_WAIT: Duration = Duration::from_secs(3);
const HALT_WAIT: Duration = Duration::from_millis(500);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProbeError {
    #[error(transparent)]
    BadSelector(#[from] BadSelector),
    #[error("no debug probe is attached{}", wanted.as_ref().map(|s| format!(" matching {s}")).unwrap_or_default())]
    NoProbe { wanted: Option<Selector> },
    #[error("{count} debug probes are attached ({list}); name one with --probe VID:PID[:SERIAL] or `runner.probe` in the board profile")]
    Ambiguous { count: usize, list: String },
    #[error("probe {probe} is in use by another hilmem run (lock {lock})")]
    Busy { probe: String, lock: PathBuf },
    #[error("permission denied opening probe {probe}; install udev rules for it (see the probe-rs documentation) or add your user to the group that owns it")]
    PermissionDenied { probe: String },
    #[error("cannot open probe {probe}: {why}")]
    Open { probe: String, why: String },
    #[error("probe-rs does not know the chip `{chip}`: {why}")]
    UnknownChip { chip: String, why: String },
    #[error(
        "cannot attach to the {chip} through probe {probe}: {why}; is the board powered and is it really a {chip}?"
    )]
    Attach { chip: String, probe: String, why: String },
    #[error("flashing {elf} failed: {why}")]
    Flash { elf: String, why: String },
    #[error("the firmware's RTT control block did not appear within {RTT_WAIT:?}: {why}")]
    Rtt { why: String },
    #[error("debug session: {0}")]
    Session(String),
}

/// What hilmem needs to know of an attached probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeSummary {
    pub name: String,
    pub vid: u16,
    pub pid: u16,
    pub serial: Option<String>,
}

impl ProbeSummary {
    fn of(info: &DebugProbeInfo) -> ProbeSummary {
        ProbeSummary {
            name: info.identifier.clone(),
            vid: info.vendor_id,
            pid: info.product_id,
            serial: info.serial_number.clone(),
        }
    }

    fn matched_by(&self, wanted: &Selector) -> bool {
        wanted.vid == self.vid
            && wanted.pid == self.pid
            && wanted.serial.as_ref().is_none_or(|s| self.serial.as_ref() == Some(s))
    }

    /// The selector that names exactly this probe.
    pub fn selector(&self) -> Selector {
        Selector { vid: self.vid, pid: self.pid, serial: self.serial.clone() }
    }
}

impl fmt::Display for ProbeSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name, self.selector())
    }
}

/// The debug probes attached now.
pub fn attached() -> Vec<ProbeSummary> {
    Lister::new().list_all().iter().map(ProbeSummary::of).collect()
}

/// The one probe `wanted` names, or the only probe attached.
pub fn select<'a>(probes: &'a [ProbeSummary], wanted: Option<&Selector>) -> Result<&'a ProbeSummary, ProbeError> {
    let matching: Vec<&ProbeSummary> = probes.iter().filter(|p| wanted.is_none_or(|w| p.matched_by(w))).collect();
    match matching.as_slice() {
        [] => Err(ProbeError::NoProbe { wanted: wanted.cloned() }),
        [one] => Ok(one),
        many => Err(ProbeError::Ambiguous {
            count: many.len(),
            list: many.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", "),
        }),
    }
}

/// An exclusive lock on one probe, held while a run uses it, so two hilmem
/// runs (two CI jobs on one runner, say) never share a board.
#[derive(Debug)]
pub struct ProbeLock(pub Lock);

impl ProbeLock {
    /// Takes the lock for `probe` in `dir` without waiting.
    pub fn take(dir: &Path, probe: &ProbeSummary) -> Result<ProbeLock, ProbeError> {
        let name = probe.selector().to_string().replace(|c: char| !c.is_ascii_alphanumeric(), "-");
        let path = dir.join(format!("hilmem-probe-{name}.lock"));
        match Lock::try_take(&path) {
            Ok(Some(lock)) => Ok(ProbeLock(lock)),
            Ok(None) => Err(ProbeError::Busy { probe: probe.to_string(), lock: path }),
            Err(e) => Err(ProbeError::Open {
                probe: probe.to_string(),
                why: format!("cannot create the lock {}: {e}", path.display()),
            }),
        }
    }

    /// Where probe locks live: shared by every checkout on the machine.
    pub fn dir() -> PathBuf {
        std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from).unwrap_or_else(std::env::temp_dir)
    }
}

/// What opening a probe failed with, in terms a user can act on.
pub fn map_open_error(probe: &ProbeSummary, error: &DebugProbeError) -> ProbeError {
    let io_kind = match error {
        DebugProbeError::Usb(e) | DebugProbeError::ProbeCouldNotBeCreated(ProbeCreationError::Usb(e)) => Some(e.kind()),
        _ => None,
    };
    match io_kind {
        Some(std::io::ErrorKind::PermissionDenied) => ProbeError::PermissionDenied { probe: probe.to_string() },
        Some(std::io::ErrorKind::ResourceBusy) => {
            ProbeError::Busy { probe: probe.to_string(), lock: PathBuf::from("(held outside hilmem)") }
        }
        _ => ProbeError::Open { probe: probe.to_string(), why: error.to_string() },
    }
}

/// What attaching to the chip failed with.
pub fn map_attach_error(chip: &str, probe: &ProbeSummary, error: &probe_rs::Error) -> ProbeError {
    match error {
        probe_rs::Error::ChipNotFound(e) => ProbeError::UnknownChip { chip: chip.to_owned(), why: e.to_string() },
        probe_rs::Error::Probe(e) => map_open_error(probe, e),
        other => ProbeError::Attach { chip: chip.to_owned(), probe: probe.to_string(), why: other.to_string() },
    }
}

/// A real board, flashed and running, talking RTT.
pub struct ProbeTarget {
    session: Session,
    rtt: Rtt,
    lines: LineBuffer,
    ended: Option<Ending>,
    _lock: ProbeLock,
}

impl ProbeTarget {
    pub fn start(chip: &str, wanted: Option<&Selector>, elf: &Path) -> Result<ProbeTarget, RunnerError> {
        let probes = attached();
        let info = select(&probes, wanted)?.clone();
        let lock = ProbeLock::take(&ProbeLock::dir(), &info)?;
        let probe = Lister::new().open(selector_of(&info)).map_err(|e| map_open_error(&info, &e))?;
        let mut session = probe.attach(chip, Permissions::default()).map_err(|e| map_attach_error(chip, &info, &e))?;

        let flash_err = |why: String| ProbeError::Flash { elf: elf.display().to_string(), why };
        let options = probe_rs::flashing::DownloadOptions::default();
        let format = probe_rs::flashing::ElfLoader(Default::default());
        probe_rs::flashing::download_file_with_options(&mut session, elf, format, options)
            .map_err(|e| flash_err(e.to_string()))?;

        let session_err = |e: probe_rs::Error| ProbeError::Session(e.to_string());
        let control_block = rtt_control_block(elf);
        let rtt = {
            let mut core = session.core(0).map_err(session_err)?;
            core.reset().map_err(session_err)?;
            let started = Instant::now();
            loop {
                let region = control_block.map_or(ScanRegion::Ram, ScanRegion::Exact);
                match Rtt::attach_region(&mut core, &region) {
                    Ok(rtt) => break rtt,
                    Err(e) if started.elapsed() > RTT_WAIT => return Err(ProbeError::Rtt { why: e.to_string() }.into()),
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        };
        Ok(ProbeTarget { session, rtt, lines: LineBuffer::default(), ended: None, _lock: lock })
    }
}

fn selector_of(probe: &ProbeSummary) -> probe_rs::probe::DebugProbeSelector {
    probe_rs::probe::DebugProbeSelector {
        vendor_id: probe.vid,
        product_id: probe.pid,
        interface: None,
        serial_number: probe.serial.clone(),
    }
}

/// The RTT control block's symbol.
const RTT_SYMBOL: &str = "_SEGGER_RTT";

/// The address of the RTT control block in the image, so the probe need not
/// scan RAM.
fn rtt_control_block(elf: &Path) -> Option<u64> {
    Image::read(elf).ok()?.symbol(RTT_SYMBOL).ok().map(|(address, _)| address)
}

/// What deploying an image to a board would do, found without touching a
/// probe: the probe that would be chosen (or why none would), the flash
/// ranges that would be written and the chip's regions they fall in, and the
/// RTT control block the harness would read.
#[derive(Debug)]
pub struct DryRun {
    pub chip: String,
    pub probe: Result<ProbeSummary, ProbeError>,
    /// Start, bytes and the chip's flash region of each range written.
    pub writes: Vec<(u64, u64, String)>,
    /// The control block's address and the chip's RAM region holding it.
    pub rtt: (u64, String),
}

/// Why an image cannot be deployed to its chip at all.
#[derive(Debug, thiserror::Error)]
pub enum DryRunError {
    #[error(transparent)]
    Probe(#[from] ProbeError),
    #[error(transparent)]
    Elf(#[from] ElfError),
    #[error("{elf}: {bytes} bytes at {start:#010x} would be flashed outside the {chip}'s flash ({regions})")]
    OutsideFlash { elf: PathBuf, chip: String, start: u64, bytes: u64, regions: String },
    #[error("refusing to deploy {elf}: it was built as `{found}`, expected `{expected}`")]
    WrongImage { elf: PathBuf, found: String, expected: String },
    #[error("{elf}: the RTT control block `{RTT_SYMBOL}` {why}")]
    Rtt { elf: PathBuf, why: String },
}

/// Checks `elf` against `chip`'s memory map as probe-rs knows it, and says
/// which of the attached probes `wanted` (or the only one) would be used.
pub fn dry_run(chip: &str, wanted: Option<&Selector>, elf: &Path) -> Result<DryRun, DryRunError> {
    let registry = probe_rs::config::Registry::from_builtin_families();
    let target = registry
        .get_target_by_name(chip)
        .map_err(|e| ProbeError::UnknownChip { chip: chip.to_owned(), why: e.to_string() })?;
    let image = Image::read(elf)?;
    let name = |n: &Option<String>| n.clone().unwrap_or_else(|| "unnamed".into());
    let flash: Vec<_> = target.memory_map.iter().filter_map(|r| r.as_nvm_region()).collect();
    let mut writes = Vec::new();
    for &(start, bytes) in image.segments.iter().filter(|(_, bytes)| *bytes > 0) {
        let region = flash.iter().find(|r| r.range.start <= start && start + bytes <= r.range.end);
        let Some(region) = region else {
            let regions: Vec<String> =
                flash.iter().map(|r| format!("{} {:#x}..{:#x}", name(&r.name), r.range.start, r.range.end)).collect();
            return Err(DryRunError::OutsideFlash {
                elf: elf.to_owned(),
                chip: chip.to_owned(),
                start,
                bytes,
                regions: regions.join(", "),
            });
        };
        writes.push((start, bytes, name(&region.name)));
    }
    let rtt_err = |why: String| DryRunError::Rtt { elf: elf.to_owned(), why };
    let (address, _) = image.symbol(RTT_SYMBOL).map_err(|_| rtt_err("is not in the image".into()))?;
    let ram = target.memory_map.iter().filter_map(|r| r.as_ram_region()).find(|r| r.range.contains(&address));
    let ram = ram.ok_or_else(|| rtt_err(format!("at {address:#010x} is in no RAM of the {chip} a probe can read")))?;
    let probes = attached();
    Ok(DryRun {
        chip: chip.to_owned(),
        probe: select(&probes, wanted).cloned(),
        writes,
        rtt: (address, name(&ram.name)),
    })
}

fn session_error(e: impl fmt::Display) -> RunnerError {
    ProbeError::Session(e.to_string()).into()
}

impl Target for ProbeTarget {
    fn next(&mut self, wait: Duration) -> Result<Next, RunnerError> {
        let started = Instant::now();
        loop {
            if let Some(line) = self.lines.pop() {
                return Ok(Next::Line(line));
            }
            let mut core = self.session.core(0).map_err(session_error)?;
            let mut buf = [0u8; 1024];
            let n = match self.rtt.up_channel(0) {
                Some(up) => up.read(&mut core, &mut buf).map_err(session_error)?,
                None => return Err(ProbeError::Rtt { why: "the firmware has no RTT up channel 0".into() }.into()),
            };
            self.lines.push(&buf[..n]);
            if n == 0 {
                if self.ended.is_some() {
                    return Ok(self.lines.rest().map_or(Next::Closed, Next::Line));
                }
                if started.elapsed() >= wait {
                    return Ok(Next::Idle);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }

    fn send(&mut self, bytes: &[u8]) -> Result<(), RunnerError> {
        let mut core = self.session.core(0).map_err(session_error)?;
        let down = self
            .rtt
            .down_channel(0)
            .ok_or_else(|| ProbeError::Rtt { why: "the firmware has no RTT down channel 0".into() })?;
        let mut rest = bytes;
        while !rest.is_empty() {
            let n = down.write(&mut core, rest).map_err(session_error)?;
            rest = &rest[n..];
        }
        Ok(())
    }

    fn ended(&mut self) -> Result<Option<Ending>, RunnerError> {
        if self.ended.is_none() {
            let mut core = self.session.core(0).map_err(session_error)?;
            self.ended = match core.status().map_err(session_error)? {
                CoreStatus::Halted(HaltReason::Breakpoint(BreakpointCause::Semihosting(command))) => match command {
                    SemihostingCommand::ExitSuccess => Some(Ending::Exited(0)),
                    SemihostingCommand::ExitError(details) => {
                        Some(Ending::Exited(details.exit_status.map_or(1, |s| s as i32)))
                    }
                    other => Some(Ending::Died(format!("unexpected semihosting request {other:?}"))),
                },
                CoreStatus::LockedUp => Some(Ending::Died("the core locked up".into())),
                CoreStatus::Halted(reason) => Some(Ending::Died(format!("the core halted ({reason:?})"))),
                _ => None,
            };
        }
        Ok(self.ended.clone())
    }

    fn stop(&mut self) {
        if let Ok(mut core) = self.session.core(0) {
            let _ = core.halt(HALT_WAIT);
        }
    }

    fn diagnostics(&mut self, _: Duration) -> String {
        String::new()
    }

    fn process(&self) -> Option<u32> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(vid: u16, pid: u16, serial: &str) -> ProbeSummary {
        ProbeSummary { name: "ST-Link V3".into(), vid, pid, serial: Some(serial.into()) }
    }

    #[test]
    fn identical_boards_are_told_apart_by_serial() {
        let probes = [probe(0x0483, 0x374e, "AAA"), probe(0x0483, 0x374e, "BBB"), probe(0x1366, 0x1015, "J1")];
        let b = Selector::parse("0483:374e:BBB").unwrap();
        assert_eq!(select(&probes, Some(&b)).unwrap().serial.as_deref(), Some("BBB"));
        let jlink = Selector::parse("1366:1015").unwrap();
        assert_eq!(select(&probes, Some(&jlink)).unwrap().name, "ST-Link V3");

        let stlink = Selector::parse("0483:374e").unwrap();
        let err = select(&probes, Some(&stlink)).unwrap_err();
        assert!(matches!(err, ProbeError::Ambiguous { count: 2, .. }), "{err}");
        assert!(matches!(select(&probes, None), Err(ProbeError::Ambiguous { count: 3, .. })));

        let missing = Selector::parse("0483:374e:CCC").unwrap();
        let err = select(&probes, Some(&missing)).unwrap_err();
        assert_eq!(err.to_string(), "no debug probe is attached matching 0483:374e:CCC");
        assert_eq!(select(&[], None).unwrap_err().to_string(), "no debug probe is attached");
        assert_eq!(select(&probes[2..], None).unwrap().vid, 0x1366);
    }

    #[test]
    fn a_probe_in_use_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = probe(0x0483, 0x374e, "AAA");
        let held = ProbeLock::take(dir.path(), &p).unwrap();
        let err = ProbeLock::take(dir.path(), &p).unwrap_err();
        assert!(matches!(&err, ProbeError::Busy { lock, .. } if *lock == held.0.path), "{err}");
        // Another board of the same kind is free.
        ProbeLock::take(dir.path(), &probe(0x0483, 0x374e, "BBB")).unwrap();
        drop(held);
        ProbeLock::take(dir.path(), &p).unwrap();
    }

    #[test]
    fn probe_errors_become_actionable_messages() {
        let p = probe(0x0483, 0x374e, "AAA");
        let denied = DebugProbeError::Usb(std::io::Error::from(std::io::ErrorKind::PermissionDenied));
        assert!(matches!(map_open_error(&p, &denied), ProbeError::PermissionDenied { .. }));
        assert!(map_open_error(&p, &denied).to_string().contains("udev rules"));
        let busy = DebugProbeError::ProbeCouldNotBeCreated(ProbeCreationError::Usb(std::io::Error::from(
            std::io::ErrorKind::ResourceBusy,
        )));
        assert!(matches!(map_open_error(&p, &busy), ProbeError::Busy { .. }));
        let other = DebugProbeError::ProbeCouldNotBeCreated(ProbeCreationError::NotFound);
        assert!(matches!(map_open_error(&p, &other), ProbeError::Open { .. }));

        let registry = probe_rs::config::Registry::from_builtin_families();
        let chip_err = registry.get_target_by_name("STM32H999XX").unwrap_err();
        let err = map_attach_error("STM32H999XX", &p, &probe_rs::Error::ChipNotFound(chip_err));
        assert!(matches!(err, ProbeError::UnknownChip { .. }), "{err}");
        let err = map_attach_error("STM32H743ZITx", &p, &probe_rs::Error::Timeout);
        assert!(err.to_string().contains("is the board powered and is it really a STM32H743ZITx?"), "{err}");
    }
}
