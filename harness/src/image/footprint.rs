//! What each part of the firmware takes of flash and of static RAM. The
//! linker's map says which object every input section came from and which
//! symbols it defines; each input section is attributed to a component by
//! that object and those symbols, and what no input section accounts for
//! (alignment padding, what the linker makes itself) is `other`, so the components add up exactly to the ELF's `flash_bytes` and
//! `static_ram_bytes`.
//!
//! The map is the one LLVM's linker writes (`-Map`), which links every
//! board's image: bare-metal targets through rust-lld, the host through the
//! compiler driver with lld.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::board::Layout;
use crate::image::elf::{in_flash, Image, ImageSizes, ARENA_SECTION, ARENA_SYMBOL};

/// TFLM's interpreter, allocator, planners and the helpers kernels share.
pub const TFLM_CORE: &str = "tflm-core";
/// ARM's CMSIS-NN library, which TFLM's CMSIS-NN kernels call (its sources
/// are all named `arm_*`).
pub const CMSIS_NN: &str = "cmsis-nn";
/// One TFLM kernel, by the operators it registers: `kernel:CONV_2D`.
pub const KERNEL: &str = "kernel:";
/// The Rust firmware and arena layer (with the Rust core library and the
/// scenarios' inputs), and the C shim over TFLM.
pub const FIRMWARE: &str = "firmware";
/// The model flatbuffers the image holds.
pub const MODEL: &str = "model";
/// The package the concurrent-OTA scenario receives (header and model).
pub const UPDATE_PACKAGE: &str = "update-package";
/// The C library and the compiler's runtime.
pub const RUNTIME: &str = "runtime";
/// Strings and constants the linker pooled from every object (merged
/// sections have no single owner).
pub const MERGED: &str = "merged-constants";
/// What no input section accounts for: alignment padding and what the
/// linker makes itself.
pub const OTHER: &str = "other";

/// The image's flash and static RAM by component (see the constants above).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Footprint {
    /// Empty for host programs, which have no flash.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub flash: BTreeMap<String, i64>,
    pub static_ram: BTreeMap<String, i64>,
}

#[derive(Debug, thiserror::Error)]
pub enum FootprintError {
    #[error("cannot read the linker map {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path}:{line}: {why}")]
    Map { path: PathBuf, line: usize, why: String },
    #[error("the linker map {map} accounts for {mapped} bytes of {what}, more than the {total} of {elf}: they are not of one link")]
    Mismatch { map: PathBuf, elf: PathBuf, what: &'static str, mapped: i64, total: i64 },
}

/// A component's name for people: `CONV_2D kernel`, `TFLM core`.
pub fn describe(component: &str) -> String {
    if let Some(ops) = component.strip_prefix(KERNEL) {
        return format!("{ops} kernel");
    }
    match component {
        TFLM_CORE => "TFLM core",
        CMSIS_NN => "CMSIS-NN library",
        FIRMWARE => "Rust firmware, arena layer and shim",
        MODEL => "model data",
        UPDATE_PACKAGE => "update package",
        RUNTIME => "C library and compiler runtime",
        MERGED => "strings and constants pooled by the linker",
        OTHER => "other (padding, linker-made data)",
        other => other,
    }
    .to_owned()
}

/// The components whose bytes differ between `old` and `new`, largest
/// change first.
pub fn moved(old: &BTreeMap<String, i64>, new: &BTreeMap<String, i64>) -> Vec<(String, i64)> {
    let names: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    let mut moved: Vec<(String, i64)> = names
        .into_iter()
        .map(|n| (n.clone(), new.get(n).copied().unwrap_or(0) - old.get(n).copied().unwrap_or(0)))
        .filter(|(_, delta)| *delta != 0)
        .collect();
    moved.sort_by_key(|(name, delta)| (std::cmp::Reverse(delta.abs()), name.clone()));
    moved
}

/// The footprint of `image`, linked as `map` describes, whose sizes are
/// `sizes`.
pub(crate) fn of(image: &Image, map: &Path, layout: &Layout, sizes: &ImageSizes) -> Result<Footprint, FootprintError> {
    let text = std::fs::read_to_string(map).map_err(|source| FootprintError::Read { path: map.to_owned(), source })?;
    let inputs = parse_map(&text).map_err(|(line, why)| FootprintError::Map { path: map.to_owned(), line, why })?;
    let kernels = Kernels::of(&inputs);
    let mut footprint = Footprint::default();
    for input in inputs.iter().filter(|i| i.size > 0) {
        let Some(section) = image.sections.iter().find(|s| s.name == input.output) else { continue };
        let component = kernels.component(input);
        if let Layout::BareMetal(m) = layout {
            if !section.nobits && in_flash(m, input.lma) {
                *footprint.flash.entry(component.clone()).or_default() += input.size as i64;
            }
        }
        let arena = section.name == ARENA_SECTION || input.symbols.iter().any(|s| s == ARENA_SYMBOL);
        if Image::in_static_ram(section, layout) && !arena {
            *footprint.static_ram.entry(component).or_default() += input.size as i64;
        }
    }
    let mismatch = |what, mapped, total| FootprintError::Mismatch {
        map: map.to_owned(),
        elf: image.path.clone(),
        what,
        mapped,
        total,
    };
    let rest = |parts: &mut BTreeMap<String, i64>, total: u64, what| {
        let (mapped, total) = (parts.values().sum::<i64>(), total as i64);
        match total - mapped {
            0 => Ok(()),
            other if other > 0 => {
                *parts.entry(OTHER.to_owned()).or_default() += other;
                Ok(())
            }
            _ => Err(mismatch(what, mapped, total)),
        }
    };
    if let Some(flash) = sizes.flash_bytes {
        rest(&mut footprint.flash, flash, "flash")?;
    }
    rest(&mut footprint.static_ram, sizes.static_ram_bytes, "static RAM")?;
    Ok(footprint)
}

/// One input section as the map places it.
#[derive(Debug)]
struct InputSection {
    /// The output section it is part of.
    output: String,
    lma: u64,
    size: u64,
    /// `path/lib.a(member.o)` or `path/object.o` (or `<internal>`).
    object: String,
    /// The symbols it defines, demangled.
    symbols: Vec<String>,
}

/// The input sections of an lld map (`VMA LMA Size Align Out In Symbol`),
/// or the line and why it is not one.
fn parse_map(text: &str) -> Result<Vec<InputSection>, (usize, String)> {
    let mut lines = text.lines().enumerate();
    let header = lines.next().map(|(_, l)| l).unwrap_or_default();
    let column = |name: &str| header.find(name);
    let (Some(out), Some(input), Some(symbol), true) =
        (column(" Out ").map(|c| c + 1), column(" In ").map(|c| c + 1), column(" Symbol"), header.contains("VMA"))
    else {
        return Err((
            1,
            "not a map written by LLVM's linker (lld): no `VMA LMA Size Align Out In Symbol` header".into(),
        ));
    };
    let mut found: Vec<InputSection> = Vec::new();
    let mut output = String::new();
    let mut last_input = false;
    for (index, line) in lines {
        let bad = |why: &str| (index + 1, format!("{why}: {line}"));
        if line.trim().is_empty() {
            continue;
        }
        let numbers: Vec<&str> =
            line.get(..out).ok_or_else(|| bad("a line shorter than the columns"))?.split_whitespace().collect();
        let [_, lma, size, _] = numbers[..] else { return Err(bad("not four numbers before the section")) };
        let hex = |t: &str| u64::from_str_radix(t, 16).map_err(|_| bad("not a hexadecimal address or size"));
        let (lma, size) = (hex(lma)?, hex(size)?);
        let rest = &line[out..];
        let at = out + (rest.len() - rest.trim_start().len());
        let entry = rest.trim();
        if at == out {
            output = entry.split_whitespace().next().unwrap_or_default().to_owned();
            last_input = false;
        } else if at == input {
            last_input = false;
            if let (Some(split), true) = (entry.rfind(":("), entry.ends_with(')')) {
                found.push(InputSection {
                    output: output.clone(),
                    lma,
                    size,
                    object: entry[..split].to_owned(),
                    symbols: Vec::new(),
                });
                last_input = true;
            }
        } else if at >= symbol {
            if let (true, Some(section)) = (last_input, found.last_mut()) {
                section.symbols.push(entry.to_owned());
            }
        }
    }
    Ok(found)
}

/// The object file name of `object`: the archive member, or the file.
fn split_object(object: &str) -> (&str, Option<&str>) {
    let base = |p: &'_ str| -> usize { p.rfind('/').map_or(0, |i| i + 1) };
    match (object.strip_suffix(')'), object.find('(')) {
        (Some(inner), Some(open)) => (&object[base(&object[..open])..open], Some(&inner[open + 1..])),
        _ => (&object[base(object)..], None),
    }
}

/// The source stem of a TFLM or shim object the firmware's build script
/// compiled (`conv-<16 hex digits>.o`); None for the C library's and the
/// compiler runtime's objects archived beside them.
fn tflm_stem(member: &str) -> Option<&str> {
    let (stem, key) = member.strip_suffix(".o")?.rsplit_once('-')?;
    (key.len() == 16 && key.bytes().all(|b| b.is_ascii_hexdigit())).then_some(stem)
}

/// The operators a TFLM object's sections register (`Register_CONV_2D`).
fn registered(symbols: &[String]) -> impl Iterator<Item = &str> {
    symbols.iter().filter_map(|s| {
        let at = s.find("Register_")? + "Register_".len();
        let rest = &s[at..];
        let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
        (end > 0).then(|| &rest[..end])
    })
}

/// TFLM's kernel objects in one link: the operators each registers.
struct Kernels(BTreeMap<String, BTreeSet<String>>);

impl Kernels {
    fn of(inputs: &[InputSection]) -> Kernels {
        let mut kernels: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for input in inputs {
            let Some(stem) = Self::tflm_object(&input.object) else { continue };
            let ops: Vec<&str> = registered(&input.symbols).collect();
            if !ops.is_empty() {
                kernels.entry(stem.to_owned()).or_default().extend(ops.into_iter().map(str::to_owned));
            }
        }
        Kernels(kernels)
    }

    /// The stem of a TFLM object (not the shim's) in the firmware's TFLM
    /// archive.
    fn tflm_object(object: &str) -> Option<&str> {
        match split_object(object) {
            (archive, Some(member)) if archive.starts_with("libtflm_sys-") => {
                tflm_stem(member).filter(|s| *s != "shim")
            }
            _ => None,
        }
    }

    /// The component an input section belongs to.
    fn component(&self, input: &InputSection) -> String {
        let (file, member) = split_object(&input.object);
        if file == "<internal>" {
            return MERGED.to_owned();
        }
        if let Some(stem) = Self::tflm_object(&input.object) {
            if stem.starts_with("arm_") {
                return CMSIS_NN.to_owned();
            }
            // A kernel's own helpers (`conv_common`) go with the kernel.
            let kernel = self.0.get(stem).map(|_| stem).or_else(|| {
                let owners =
                    self.0.keys().filter(|k| stem.strip_prefix(k.as_str()).is_some_and(|r| r.starts_with('_')));
                owners.max_by_key(|k| k.len()).map(String::as_str)
            });
            return match kernel {
                Some(k) => format!("{KERNEL}{}", self.0[k].iter().cloned().collect::<Vec<_>>().join("+")),
                None => TFLM_CORE.to_owned(),
            };
        }
        let component = match (file, member) {
            // The shim; the C library and compiler runtime archived with TFLM.
            (archive, Some(m)) if archive.starts_with("libtflm_sys-") => {
                if tflm_stem(m).is_some() {
                    FIRMWARE
                } else {
                    RUNTIME
                }
            }
            (archive, Some(_)) if archive.starts_with("libcompiler_builtins-") => RUNTIME,
            (archive, Some(_)) if archive.ends_with(".rlib") => FIRMWARE,
            (object, None) if object.ends_with(".rcgu.o") => {
                let named = |prefixes: &[&str]| input.symbols.iter().any(|s| prefixes.iter().any(|p| s.starts_with(p)));
                if named(&["HILMEM_MODEL"]) {
                    MODEL
                } else if named(&["HILMEM_OTA_PACKAGE"]) {
                    UPDATE_PACKAGE
                } else {
                    FIRMWARE
                }
            }
            // Start files and system libraries.
            _ => RUNTIME,
        };
        component.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAP: &str = "     VMA      LMA     Size Align Out     In      Symbol
       0        0      400     4 .vector_table
       4        4        4     4         /t/deps/hilmem_firmware-1.hilmem_firmware.2-cgu.0.rcgu.o:(.vector_table.reset_vector)
       4        4        4     1                 __RESET_VECTOR
     400      400     1000    64 .text
     400      400       20     4         /t/deps/rustcX/libtflm_sys-9.rlib(conv-0123456789abcdef.o):(.text._ZN6tflite16Register_CONV_2DEv)
     401      401       20     1                 tflite::Register_CONV_2D()
     420      420       30     4         /t/deps/rustcX/libtflm_sys-9.rlib(conv_common-0123456789abcdef.o):(.text.x)
     450      450       40     4         /t/deps/rustcX/libtflm_sys-9.rlib(kernel_util-0123456789abcdef.o):(.text.y)
     490      490       10     4         /t/deps/rustcX/libtflm_sys-9.rlib(shim-0123456789abcdef.o):(.text.hm_tflm_load)
     4a0      4a0        8     4         /t/deps/rustcX/libtflm_sys-9.rlib(lib_a-memcpy.o):(.text.memcpy)
     4a8      4a8        8     4         /t/deps/libcompiler_builtins-5.rlib(compiler_builtins-5.cgu.1.rcgu.o):(.text.__udivsi3)
     4b0      4b0       40     1         <internal>:(.rodata.str1.1)
     4f0      4f0      100    16         /t/deps/hilmem_firmware-1.hilmem_firmware.2-cgu.0.rcgu.o:(.rodata.HILMEM_MODEL)
     4f0      4f0      100     1                 HILMEM_MODEL
     5f0      5f0       10     1         /t/deps/hilmem_firmware-1.hilmem_firmware.2-cgu.0.rcgu.o:(.rodata.HILMEM_OTA_PACKAGE)
     5f0      5f0       10     1                 HILMEM_OTA_PACKAGE
20000000 20000000       10     4 .bss
20000000 20000000       10     4         /t/deps/hilmem_firmware-1.hilmem_firmware.2-cgu.0.rcgu.o:(.bss.HILMEM_POOL)
";

    #[test]
    fn each_input_section_goes_to_the_component_of_its_object_and_symbols() {
        let inputs = parse_map(MAP).unwrap();
        assert_eq!(inputs.len(), 11);
        let kernels = Kernels::of(&inputs);
        let components: Vec<String> = inputs.iter().map(|i| kernels.component(i)).collect();
        let kernel = "kernel:CONV_2D";
        let expected =
            [FIRMWARE, kernel, kernel, TFLM_CORE, FIRMWARE, RUNTIME, RUNTIME, MERGED, MODEL, UPDATE_PACKAGE, FIRMWARE];
        assert_eq!(components, expected);
        assert_eq!(inputs[1].symbols, ["tflite::Register_CONV_2D()"]);
        assert_eq!(inputs[10].output, ".bss");
    }

    #[test]
    fn a_map_from_another_linker_is_refused_with_the_line() {
        let err = parse_map("Memory Configuration\n\nName Origin Length\n").unwrap_err();
        assert_eq!(err.0, 1);
        assert!(err.1.contains("not a map written by LLVM's linker"), "{err:?}");
        let broken = MAP.replace("     4a0      4a0        8", "     4a0      4zz        8");
        let err = parse_map(&broken).unwrap_err();
        assert_eq!(err.0, 11);
        assert!(err.1.contains("not a hexadecimal address or size") && err.1.contains("4zz"), "{err:?}");
    }

    #[test]
    fn moved_components_come_largest_first() {
        let map = |pairs: &[(&str, i64)]| pairs.iter().map(|&(k, v)| (k.to_owned(), v)).collect();
        let old = map(&[("tflm-core", 100), ("kernel:ADD", 50), ("other", 4)]);
        let new = map(&[("tflm-core", 100), ("kernel:ADD", 50), ("kernel:CONV_2D", 2340), ("other", 2)]);
        assert_eq!(moved(&old, &new), [("kernel:CONV_2D".to_owned(), 2340), ("other".to_owned(), -2)]);
        assert_eq!(describe("kernel:CONV_2D"), "CONV_2D kernel");
    }
}
