//! What every Cortex-M board shares: the painted stack, the CPUID check, the
//! semihosting exit, and the panic and fault handlers.

use core::fmt::Write;
use core::ptr::write_volatile;

use cortex_m_rt::{exception, ExceptionFrame};
use hilmem_protocol::exit;

/// A `core::fmt::Write` over the board's output, for the fault handlers.
struct Out;

impl Write for Out {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        super::write(s.as_bytes());
        Ok(())
    }
}

/// Bytes below the stack pointer left alone while painting: the painting code's
/// own frame lives there.
const PAINT_GUARD: usize = 256;

extern "C" {
    static _stack_start: u32;
    static _stack_end: u32;
}

/// The stack budget from the linker script: `[_stack_end, _stack_start)`.
pub struct Stack {
    bottom: usize,
    top: usize,
}

impl Stack {
    /// Paints the unused part of the stack.
    ///
    /// # Safety
    /// Call once, early: everything between the stack's bottom and the current
    /// stack pointer (less a guard) is overwritten.
    pub unsafe fn paint() -> Stack {
        let stack =
            Stack { bottom: core::ptr::addr_of!(_stack_end) as usize, top: core::ptr::addr_of!(_stack_start) as usize };
        let end = cortex_m::register::msp::read() as usize - PAINT_GUARD;
        let mut p = stack.bottom as *mut u8;
        while cfg!(feature = "instrument") && (p as usize) < end {
            write_volatile(p, arena::PAINT);
            p = p.add(1);
        }
        stack
    }

    pub fn size(&self) -> usize {
        self.top - self.bottom
    }

    /// Deepest extent of the stack since it was painted, in bytes from the top.
    pub fn peak(&self) -> usize {
        let sp = cortex_m::register::msp::read() as usize;
        let reach = sp.saturating_sub(PAINT_GUARD).max(self.bottom);
        // SAFETY: [bottom, sp - guard) is stack memory below every live frame.
        let unused = unsafe { core::slice::from_raw_parts(self.bottom as *const u8, reach - self.bottom) };
        self.size() - arena::untouched_prefix(unused)
    }
}

/// The part number in the CPUID register (0xC27 for a Cortex-M7, ...).
pub fn cpu_part() -> u16 {
    // SAFETY: reading a read-only system register.
    let cpuid = unsafe { (*cortex_m::peripheral::CPUID::PTR).base.read() };
    ((cpuid >> 4) & 0xFFF) as u16
}

/// Peak resident set: a host-process figure, not kept on bare metal.
pub fn rss_peak_bytes() -> Option<i64> {
    None
}

/// Faults on purpose (an undefined instruction, escalated to HardFault).
pub fn fault() -> ! {
    cortex_m::asm::udf()
}

/// Leaves QEMU (or the debugger) with `status` through semihosting
/// SYS_EXIT_EXTENDED.
pub fn exit(status: i32) -> ! {
    const SYS_EXIT_EXTENDED: usize = 0x20;
    const ADP_STOPPED_APPLICATION_EXIT: usize = 0x20026;
    let block = [ADP_STOPPED_APPLICATION_EXIT, status as usize];
    loop {
        // SAFETY: a semihosting call with a parameter block; QEMU or the
        // debugger ends the program.
        unsafe {
            cortex_m_semihosting::syscall(SYS_EXIT_EXTENDED, &block);
        }
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    let _ = write!(Out, "\npanic: {}", info.message());
    if let Some(at) = info.location() {
        let _ = write!(Out, " at {}:{}", at.file(), at.line());
    }
    let _ = writeln!(Out);
    exit(exit::PANIC)
}

#[exception]
unsafe fn HardFault(frame: &ExceptionFrame) -> ! {
    let _ = writeln!(Out, "\nhard fault at pc={:#010x}", frame.pc());
    exit(exit::HARD_FAULT)
}

/// Called by the C++ runtime stubs if TFLM tries to allocate.
#[no_mangle]
extern "C" fn hm_cxx_fatal(what: *const core::ffi::c_char) {
    // SAFETY: the stubs pass a NUL-terminated literal.
    let what = unsafe { core::ffi::CStr::from_ptr(what) }.to_str().unwrap_or("?");
    panic!("C++ runtime: {what}");
}

/// The RP2040 boot ROM copies these 256 bytes from the start of flash and runs
/// them to set up execution from the external flash.
#[cfg(feature = "rp2040-boot2")]
#[link_section = ".boot2"]
#[used]
static BOOT2: [u8; 256] = rp2040_boot2::BOOT_LOADER_W25Q080;
