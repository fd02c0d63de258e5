//! Board support for the MPS2 machines (AN385/AN386/AN500): the CMSDK UART,
//! the painted stack, semihosting exit, and the fault and panic handlers.

use core::fmt::Write;
use core::ptr::{read_volatile, write_volatile};

use cortex_m_rt::{exception, ExceptionFrame};
use hilmem_protocol::exit;

const UART0: usize = 0x4000_4000;
const DATA: *mut u32 = UART0 as *mut u32;
const STATE: *const u32 = (UART0 + 0x04) as *const u32;
const CTRL: *mut u32 = (UART0 + 0x08) as *mut u32;
const BAUDDIV: *mut u32 = (UART0 + 0x10) as *mut u32;
const STATE_TX_FULL: u32 = 1;
const STATE_RX_FULL: u32 = 2;

/// Bytes below the stack pointer left alone while painting: the painting code's
/// own frame lives there.
const PAINT_GUARD: usize = 256;

pub fn init() {
    // SAFETY: fixed MMIO registers of the CMSDK UART.
    unsafe {
        write_volatile(BAUDDIV, 16);
        write_volatile(CTRL, 0b11); // TX and RX enable
    }
}

pub fn write(bytes: &[u8]) {
    for &b in bytes {
        // SAFETY: fixed MMIO registers of the CMSDK UART.
        unsafe {
            while read_volatile(STATE) & STATE_TX_FULL != 0 {}
            write_volatile(DATA, u32::from(b));
        }
    }
}

/// Blocks until the host sends a byte.
pub fn read_byte() -> u8 {
    // SAFETY: fixed MMIO registers of the CMSDK UART.
    unsafe {
        while read_volatile(STATE) & STATE_RX_FULL == 0 {}
        read_volatile(DATA) as u8
    }
}

pub struct Uart;

impl Write for Uart {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        write(s.as_bytes());
        Ok(())
    }
}

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

/// Paints the unused part of the stack.
///
/// # Safety
/// Call once, early: everything between the stack's bottom and the current
/// stack pointer (less a guard) is overwritten.
pub unsafe fn paint_stack() -> Stack {
    let stack =
        Stack { bottom: core::ptr::addr_of!(_stack_end) as usize, top: core::ptr::addr_of!(_stack_start) as usize };
    let sp = cortex_m::register::msp::read() as usize;
    let end = sp - PAINT_GUARD;
    let mut p = stack.bottom as *mut u8;
    while (p as usize) < end {
        write_volatile(p, arena::PAINT);
        p = p.add(1);
    }
    stack
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
    let _ = write!(Uart, "\npanic: {}", info.message());
    if let Some(at) = info.location() {
        let _ = write!(Uart, " at {}:{}", at.file(), at.line());
    }
    let _ = writeln!(Uart);
    exit(exit::PANIC)
}

#[exception]
unsafe fn HardFault(frame: &ExceptionFrame) -> ! {
    let _ = writeln!(Uart, "\nhard fault at pc={:#010x}", frame.pc());
    exit(exit::HARD_FAULT)
}

/// Called by the C++ runtime stubs if TFLM tries to allocate.
#[no_mangle]
extern "C" fn hm_cxx_fatal(what: *const core::ffi::c_char) {
    // SAFETY: the stubs pass a NUL-terminated literal.
    let what = unsafe { core::ffi::CStr::from_ptr(what) }.to_str().unwrap_or("?");
    panic!("C++ runtime: {what}");
}
