//! What the boards are made of, as hilmem knows it: the cores and the Rust
//! targets that run on them, the QEMU machines it drives, and how a debug
//! probe is named. Board profiles are validated against these.

use std::fmt;
use std::ops::Range;

/// A Cortex-M core, or the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cpu {
    pub name: &'static str,
    /// CPUID part number the firmware checks at boot (0 for the host).
    pub part: u16,
    /// Rust targets that run on it.
    pub targets: &'static [&'static str],
}

const V6M: &str = "thumbv6m-none-eabi";
const V7M: &str = "thumbv7m-none-eabi";
const V7EM: &str = "thumbv7em-none-eabi";
const V7EMHF: &str = "thumbv7em-none-eabihf";
const V8MMAIN: &str = "thumbv8m.main-none-eabi";
const V8MMAINHF: &str = "thumbv8m.main-none-eabihf";
pub const HOST_TARGET: &str = "x86_64-unknown-linux-gnu";

pub const CPUS: &[Cpu] = &[
    Cpu { name: "cortex-m0plus", part: 0xC60, targets: &[V6M] },
    Cpu { name: "cortex-m3", part: 0xC23, targets: &[V7M, V6M] },
    Cpu { name: "cortex-m4", part: 0xC24, targets: &[V7EMHF, V7EM, V7M, V6M] },
    Cpu { name: "cortex-m7", part: 0xC27, targets: &[V7EMHF, V7EM, V7M, V6M] },
    Cpu { name: "cortex-m33", part: 0xD21, targets: &[V8MMAINHF, V8MMAIN, V7M, V6M] },
    Cpu { name: "cortex-m55", part: 0xD22, targets: &[V8MMAINHF, V8MMAIN, V7M, V6M] },
    Cpu { name: "x86_64", part: 0, targets: &[HOST_TARGET] },
];

/// A QEMU machine hilmem knows how to drive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QemuMachine {
    pub name: &'static str,
    pub cpu: &'static str,
    /// Base address of the CMSDK UART the firmware writes.
    pub uart: u64,
    /// Memory that holds code (loaded by QEMU) and memory for data.
    pub code: Range<u64>,
    pub data: Range<u64>,
    /// The CMSDK APB timer the capture scenario's camera runs on: its base
    /// address, its interrupt line and its clock in Hz.
    pub capture_timer: (u64, u16, u32),
    /// The clock SysTick counts (the core's), in Hz.
    pub systick_hz: u32,
}

/// The MPS2 images' CMSDK APB TIMER0 (QEMU `hw/arm/mps2.c`): IRQ 8, the
/// 25 MHz system clock, which also clocks the core.
const MPS2_TIMER0: (u64, u16, u32) = (0x4000_0000, 8, 25_000_000);
const MPS2_SYSCLK: u32 = 25_000_000;

pub const QEMU_MACHINES: &[QemuMachine] = &[
    QemuMachine {
        name: "mps2-an385",
        cpu: "cortex-m3",
        uart: 0x4000_4000,
        code: 0x0..0x40_0000,
        data: 0x2000_0000..0x2040_0000,
        capture_timer: MPS2_TIMER0,
        systick_hz: MPS2_SYSCLK,
    },
    QemuMachine {
        name: "mps2-an386",
        cpu: "cortex-m4",
        uart: 0x4000_4000,
        code: 0x0..0x40_0000,
        data: 0x2000_0000..0x2040_0000,
        capture_timer: MPS2_TIMER0,
        systick_hz: MPS2_SYSCLK,
    },
    QemuMachine {
        name: "mps2-an500",
        cpu: "cortex-m7",
        uart: 0x4000_4000,
        code: 0x0..0x40_0000,
        data: 0x2000_0000..0x2040_0000,
        capture_timer: MPS2_TIMER0,
        systick_hz: MPS2_SYSCLK,
    },
    QemuMachine {
        name: "mps3-an547",
        cpu: "cortex-m55",
        uart: 0x5930_3000,
        code: 0x1000_0000..0x1008_0000,
        data: 0x3000_0000..0x3008_0000,
        // The SSE-300's CMSDK timer on the 32 kHz clock (its secure alias;
        // the others are SSE timers of another kind), IRQ 2 (QEMU
        // `hw/arm/armsse.c`); the AN547's core runs at 32 MHz.
        capture_timer: (0x5802_f000, 2, 32_768),
        systick_hz: 32_000_000,
    },
];

/// A probe selector that is not `VID:PID[:SERIAL]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("probe selector `{0}` is not VID:PID or VID:PID:SERIAL with hexadecimal VID and PID")]
pub struct BadSelector(pub String);

/// Which probe to use: USB vendor and product id, and optionally its serial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    pub vid: u16,
    pub pid: u16,
    pub serial: Option<String>,
}

impl Selector {
    pub fn parse(text: &str) -> Result<Selector, BadSelector> {
        let bad = || BadSelector(text.to_owned());
        let mut parts = text.splitn(3, ':');
        let mut hex = || u16::from_str_radix(parts.next().ok_or_else(bad)?, 16).map_err(|_| bad());
        let (vid, pid) = (hex()?, hex()?);
        let serial = text.splitn(3, ':').nth(2).map(str::to_owned);
        if serial.as_deref() == Some("") {
            return Err(bad());
        }
        Ok(Selector { vid, pid, serial })
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04x}:{:04x}", self.vid, self.pid)?;
        if let Some(serial) = &self.serial {
            write!(f, ":{serial}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_parse_and_print() {
        let s = Selector::parse("0483:374e:004A00213").unwrap();
        assert_eq!((s.vid, s.pid, s.serial.as_deref()), (0x0483, 0x374e, Some("004A00213")));
        assert_eq!(s.to_string(), "0483:374e:004A00213");
        assert_eq!(Selector::parse("1366:1015").unwrap().serial, None);
        for bad in ["", "0483", "0483:", "xyz:374e", "0483:374e:", "12345:1"] {
            assert_eq!(Selector::parse(bad), Err(BadSelector(bad.into())), "{bad}");
        }
    }
}
