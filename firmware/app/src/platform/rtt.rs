//! SEGGER RTT: the firmware's output and the harness's commands travel through
//! ring buffers in RAM that the debug probe reads and writes, so a real board
//! needs no UART driver.

use core::cell::RefCell;

use critical_section::Mutex;
use rtt_target::{rtt_init, ChannelMode, DownChannel, UpChannel};

static UP: Mutex<RefCell<Option<UpChannel>>> = Mutex::new(RefCell::new(None));
static DOWN: Mutex<RefCell<Option<DownChannel>>> = Mutex::new(RefCell::new(None));

pub fn init() {
    let channels = rtt_init! {
        up: { 0: { size: 1024, mode: ChannelMode::BlockIfFull, name: "hilmem" } }
        down: { 0: { size: 256, name: "hilmem" } }
    };
    critical_section::with(|cs| {
        UP.borrow_ref_mut(cs).replace(channels.up.0);
        DOWN.borrow_ref_mut(cs).replace(channels.down.0);
    });
}

/// Writes all of `bytes`, waiting while the probe drains the buffer.
pub fn write(bytes: &[u8]) {
    critical_section::with(|cs| {
        if let Some(up) = UP.borrow_ref_mut(cs).as_mut() {
            let mut rest = bytes;
            while !rest.is_empty() {
                rest = &rest[up.write(rest)..];
            }
        }
    });
}

/// Blocks until the host sends a byte.
pub fn read_byte() -> u8 {
    let mut byte = [0u8];
    loop {
        let got = critical_section::with(|cs| DOWN.borrow_ref_mut(cs).as_mut().map_or(0, |down| down.read(&mut byte)));
        if got == 1 {
            return byte[0];
        }
    }
}
