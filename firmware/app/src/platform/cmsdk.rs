//! The CMSDK APB UART of QEMU's MPS2 and MPS3 machines (its base address comes
//! from the board profile).

use core::ptr::{read_volatile, write_volatile};

use crate::config::UART_BASE;

const DATA: *mut u32 = UART_BASE as *mut u32;
const STATE: *const u32 = (UART_BASE + 0x04) as *const u32;
const CTRL: *mut u32 = (UART_BASE + 0x08) as *mut u32;
const BAUDDIV: *mut u32 = (UART_BASE + 0x10) as *mut u32;
const STATE_TX_FULL: u32 = 1;
const STATE_RX_FULL: u32 = 2;

pub fn init() {
    // SAFETY: fixed MMIO registers of the CMSDK UART.
    unsafe {
        write_volatile(BAUDDIV, 16);
        write_volatile(CTRL, 0b11); // TX and RX enable
                                    // Reading the (empty) receive register makes QEMU poll its character
                                    // backend for input again; without it, input that arrived while the
                                    // receiver was off waits for QEMU's next idle wake-up, up to a second.
        let _ = read_volatile(DATA);
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
