//! What every Cortex-M board shares: the painted stacks (the scenario on the
//! process stack, the handlers on the main stack), the CPUID check, the
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

extern "C" {
    static _stack_start: u32;
    static _stack_end: u32;
}

/// Bytes at the top of the stack budget that the handlers get (the main
/// stack, MSP; room for a model inferring from an interrupt); thread mode
/// runs on the process stack (PSP) below them.
const HANDLER_STACK_BYTES: usize = 8192;

/// What one exception stacks where it lands: 8 words, or 26 when the code
/// it interrupts has an active FP context (every hard-float core here), and
/// up to 4 bytes to align the frame to 8. With lazy stacking the FP part is
/// reserved but written only if the handler uses the FPU, so a painted
/// stack may not show it: a bound counts it.
pub const EXCEPTION_FRAME_BYTES: usize = if cfg!(target_abi = "eabihf") { 26 * 4 + 4 } else { 8 * 4 + 4 };

/// Where the handlers' stack began: the main stack pointer when thread mode
/// moved to the process stack.
static HANDLER_BASE: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);

/// The stack budget from the linker script, `[_stack_end, _stack_start)`:
/// the process stack the scenario runs on, below the handlers' main stack.
pub struct Stack {
    bottom: usize,
    /// Where the process stack ends and the handlers' begins.
    split: usize,
    top: usize,
}

/// The stack budget's bounds, and where it splits: the handlers get the top
/// [`HANDLER_STACK_BYTES`] (a quarter of a smaller budget), the process
/// stack the rest, its top rounded down to 8 bytes as the AAPCS wants a
/// stack pointer.
fn budget() -> (usize, usize, usize) {
    // Linker symbols: only their addresses are taken.
    let (bottom, top) = (core::ptr::addr_of!(_stack_end) as usize, core::ptr::addr_of!(_stack_start) as usize);
    (bottom, split(bottom, top), top)
}

/// Where the budget `[bottom, top)` splits: see [`budget`].
const fn split(bottom: usize, top: usize) -> usize {
    let handlers = if HANDLER_STACK_BYTES < (top - bottom) / 4 { HANDLER_STACK_BYTES } else { (top - bottom) / 4 };
    (top - handlers) & !7
}

// The split leaves the process stack 8-byte aligned whatever the budget.
const _: () = assert!(split(0x2000_0000, 0x2000_0000 + 8 * 1025).is_multiple_of(8));
const _: () = assert!(split(0x2000_0000, 0x2000_0000 + 40_000) == 0x2000_0000 + 40_000 - 8192);

/// Paints `[from, to)`.
///
/// # Safety
/// Nothing in the range may be in use.
unsafe fn paint_range(from: usize, to: usize) {
    let mut p = from as *mut u8;
    while cfg!(feature = "instrument") && (p as usize) < to {
        // SAFETY: `p` is in `[from, to)`, which the caller says nothing
        // uses.
        unsafe { write_volatile(p, arena::PAINT) };
        p = p.wrapping_add(1);
    }
}

/// How deep the stack that `[from, to)` holds has gone since it was
/// painted, counted from `to`: down to the lowest byte written, or to the
/// stack pointer `sp`, whichever is lower. Inlined, so that reading the
/// paint below the stack pointer writes none of it.
#[inline(always)]
fn reached(from: usize, to: usize, sp: usize) -> usize {
    let end = to.min(sp).max(from);
    let mut p = from;
    // SAFETY: stack memory below every live frame; a byte written meanwhile
    // only shortens the untouched run.
    while cfg!(feature = "instrument") && p < end && unsafe { core::ptr::read_volatile(p as *const u8) } == arena::PAINT
    {
        p += 1;
    }
    to - p
}

/// How deep the handlers' stack has gone since it was last painted, from
/// its base.
#[inline(always)]
fn handlers_reached() -> usize {
    let (_, split, _) = budget();
    let base = HANDLER_BASE.load(core::sync::atomic::Ordering::SeqCst);
    reached(split, base, cortex_m::register::msp::read() as usize)
}

/// What a repaint leaves unpainted below the stack pointer: room for the
/// frames of the painting itself.
const REPAINT_GUARD: usize = 64;

/// Paints the handlers' stack below the current stack pointer again (a
/// handler's own frames above it stay).
#[inline(never)]
fn repaint_handlers() {
    let (_, split, _) = budget();
    // SAFETY: nothing lives below the stack pointer, less the guard.
    unsafe { paint_range(split, cortex_m::register::msp::read() as usize - REPAINT_GUARD) }
}

impl Stack {
    /// Paints the process stack and runs `body` on it in thread mode, the
    /// handlers keeping the main stack: the two are measured apart.
    ///
    /// # Safety
    /// Call once, first thing after reset, with interrupts off: everything
    /// below the handlers' part of the budget is overwritten.
    pub unsafe fn run_on_process_stack(body: extern "C" fn() -> !) -> ! {
        let (bottom, split, _) = budget();
        // SAFETY: the process stack's part of the budget: nothing runs on it
        // yet (the reset handler runs on the main stack, above the split).
        unsafe { paint_range(bottom, split) };
        HANDLER_BASE.store(cortex_m::register::msp::read() as usize, core::sync::atomic::Ordering::SeqCst);
        // SAFETY: `split` is the top of the painted process stack, 8-byte
        // aligned; thread mode moves to it and never returns here (`body`
        // diverges), with interrupts off as the caller says.
        unsafe {
            core::arch::asm!(
            "msr psp, {top}",
            "msr control, {control}",
            "isb",
            "bx {body}",
            top = in(reg) split,
            // CONTROL.SPSEL: thread mode on the process stack.
            control = in(reg) 2u32,
            body = in(reg) body,
            options(noreturn),
            )
        }
    }

    /// The stack of the scenario's thread, with the handlers' part below the
    /// main stack pointer painted (nothing runs there yet).
    ///
    /// # Safety
    /// Call once, from the body [`Stack::run_on_process_stack`] runs, before
    /// any interrupt is enabled.
    pub unsafe fn take() -> Stack {
        let (bottom, split, top) = budget();
        // SAFETY: the main stack below where the reset handler left it: no
        // handler has run yet, as the caller says.
        unsafe { paint_range(split, HANDLER_BASE.load(core::sync::atomic::Ordering::SeqCst)) };
        Stack { bottom, split, top }
    }

    /// Paints the thread's stack below the stack pointer again: what ran
    /// deeper before (the firmware's own work, such as the search for the
    /// least arena) no longer counts.
    #[inline(never)]
    pub fn repaint(&self) {
        // SAFETY: nothing lives below the stack pointer, less the guard.
        unsafe { paint_range(self.bottom, cortex_m::register::psp::read() as usize - REPAINT_GUARD) }
    }

    /// The whole budget: the thread's stack and the handlers'.
    pub fn size(&self) -> usize {
        self.top - self.bottom
    }

    /// Deepest extent of the thread's stack since it was painted, in bytes
    /// from its top (with what exceptions stacked there and wrote).
    #[inline(always)]
    pub fn peak(&self) -> usize {
        reached(self.bottom, self.split, cortex_m::register::psp::read() as usize)
    }

    /// Deepest extent of the handlers' stack seen: the handlers, nested
    /// where they did, with the frames an exception stacked over another.
    pub fn interrupt_peak(&self) -> usize {
        clock::handlers_peak()
    }
}

/// What a product must reserve for a thread whose stack reached
/// `thread_peak`: that, one exception frame landing at it (written or not),
/// and the handlers' deepest nesting, each priority level's deepest use
/// of its own with the frame of the one it preempts ([`clock`]).
pub fn stack_bound(thread_peak: usize) -> usize {
    thread_peak + EXCEPTION_FRAME_BYTES + clock::nested_bound()
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

/// Time in the firmware: two periodic interrupts a scenario hands its work
/// to, the capture (a camera's DMA, on the board's hardware timer) above the
/// housekeeping (SysTick), which it preempts. Both run on the handlers'
/// stack, and count how deep they nest.
pub mod clock {
    use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

    use cortex_m::peripheral::scb::SystemHandler;
    use cortex_m_rt::exception;

    use crate::config;

    /// An interrupt line of the NVIC.
    #[derive(Clone, Copy)]
    struct Irq(u16);

    // SAFETY: the number is a line of the board's NVIC (the profile's
    // machine table names it).
    unsafe impl cortex_m::interrupt::InterruptNumber for Irq {
        fn number(self) -> u16 {
            self.0
        }
    }

    /// The capture's priority is above the housekeeping's (lower is more
    /// urgent; both differ in the top bits every core implements).
    const CAPTURE_PRIORITY: u8 = 0x40;
    const HOUSEKEEPING_PRIORITY: u8 = 0x80;

    /// The work of each interrupt, as `fn()` addresses (0: none).
    static CAPTURE: AtomicUsize = AtomicUsize::new(0);
    static HOUSEKEEPING: AtomicUsize = AtomicUsize::new(0);
    /// Handlers running now, and at most.
    static DEPTH: AtomicU32 = AtomicU32::new(0);
    static DEPTH_PEAK: AtomicU32 = AtomicU32::new(0);
    /// Handlers that ran nested in another, so far.
    static NESTED: AtomicU32 = AtomicU32::new(0);
    /// The deepest the handlers' stack has been, from its base.
    static PEAK: AtomicUsize = AtomicUsize::new(0);
    /// Each level's deepest use of the handlers' stack on its own (in an
    /// invocation that nothing preempted): the capture's, the housekeeping's.
    static OWN: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];

    /// The CMSDK APB timer's registers, from its base.
    const CTRL: usize = 0x0;
    const VALUE: usize = 0x4;
    const RELOAD: usize = 0x8;
    const INTCLEAR: usize = 0xC;

    /// The capture timer's register at `offset` (a board without one
    /// never starts the clock).
    fn register(offset: usize) -> *mut u32 {
        (config::CAPTURE_TIMER.map_or(0, |(base, _, _)| base) + offset) as *mut u32
    }

    /// Ticks of a clock of `hz` in `us` microseconds, at least one.
    fn ticks(hz: u32, us: u32) -> u32 {
        ((u64::from(hz) * u64::from(us) / 1_000_000) as u32).max(1)
    }

    /// Starts `capture` every `capture_us` and `housekeeping` every
    /// `housekeeping_us`, the first of each one period from now; an error on
    /// a board whose profile names no capture timer.
    pub fn start(capture: (u32, fn()), housekeeping: (u32, fn())) -> Result<(), &'static str> {
        let Some((_, irq, hz)) = config::CAPTURE_TIMER else {
            return Err("this board has no timer to capture frames with");
        };
        CAPTURE.store(capture.1 as usize, Ordering::SeqCst);
        HOUSEKEEPING.store(housekeeping.1 as usize, Ordering::SeqCst);
        // SAFETY: the peripherals are configured here only, before the
        // interrupts they raise are enabled.
        unsafe {
            let mut p = cortex_m::Peripherals::steal();
            p.NVIC.set_priority(Irq(irq), CAPTURE_PRIORITY);
            p.SCB.set_priority(SystemHandler::SysTick, HOUSEKEEPING_PRIORITY);
            let reload = ticks(hz, capture.0) - 1;
            core::ptr::write_volatile(register(RELOAD), reload);
            core::ptr::write_volatile(register(VALUE), reload);
            core::ptr::write_volatile(register(CTRL), 0b1001); // enable, interrupt enable
            cortex_m::peripheral::NVIC::unmask(Irq(irq));
            p.SYST.set_clock_source(cortex_m::peripheral::syst::SystClkSource::Core);
            p.SYST.set_reload(ticks(config::SYSTICK_HZ, housekeeping.0) - 1);
            p.SYST.clear_current();
            p.SYST.enable_interrupt();
            p.SYST.enable_counter();
        }
        Ok(())
    }

    /// Stops both interrupts.
    pub fn stop() {
        // SAFETY: as in `start`.
        unsafe {
            let mut p = cortex_m::Peripherals::steal();
            p.SYST.disable_interrupt();
            p.SYST.disable_counter();
            if let Some((_, irq, _)) = config::CAPTURE_TIMER {
                core::ptr::write_volatile(register(CTRL), 0);
                cortex_m::peripheral::NVIC::mask(Irq(irq));
            }
        }
        CAPTURE.store(0, Ordering::SeqCst);
        HOUSEKEEPING.store(0, Ordering::SeqCst);
    }

    /// Sleeps until the next interrupt.
    pub fn wait() {
        cortex_m::asm::wfi();
    }

    /// The deepest the handlers nested.
    pub fn nesting_peak() -> u32 {
        DEPTH_PEAK.load(Ordering::SeqCst)
    }

    /// The deepest the handlers' stack has been.
    pub fn handlers_peak() -> usize {
        PEAK.load(Ordering::SeqCst)
    }

    /// The handlers' stack at the deepest nesting their priorities allow:
    /// the housekeeping's own deepest use, the frame the capture stacks on
    /// it, and the capture's own deepest use.
    pub fn nested_bound() -> usize {
        let own = |level: usize| OWN[level].load(Ordering::SeqCst);
        own(HOUSEKEEPING_LEVEL) + super::EXCEPTION_FRAME_BYTES + own(CAPTURE_LEVEL)
    }

    const CAPTURE_LEVEL: usize = 0;
    const HOUSEKEEPING_LEVEL: usize = 1;

    /// Runs the work stored in `slot` at `level`, counting the nesting. The
    /// outermost handler, as it ends, reads how deep the handlers' stack
    /// went (and, if nothing preempted it, how deep it went itself), then
    /// paints it again below itself for the next.
    fn handle(level: usize, slot: &AtomicUsize) {
        // A handler preempting this one restores the depth before it
        // returns, so a load and a store suffice.
        let depth = DEPTH.load(Ordering::SeqCst) + 1;
        DEPTH.store(depth, Ordering::SeqCst);
        if depth > DEPTH_PEAK.load(Ordering::SeqCst) {
            DEPTH_PEAK.store(depth, Ordering::SeqCst);
        }
        if depth > 1 {
            NESTED.store(NESTED.load(Ordering::SeqCst) + 1, Ordering::SeqCst);
        }
        let nested = NESTED.load(Ordering::SeqCst);
        let work = slot.load(Ordering::SeqCst);
        if work != 0 {
            // SAFETY: only `fn()` addresses are stored in the slots.
            let work: fn() = unsafe { core::mem::transmute::<usize, fn()>(work) };
            work();
        }
        if depth == 1 {
            // (The code reading the stack is part of what it reads: its own
            // frames are a floor, under what the handlers' work reaches.)
            let raise =
                |to: &AtomicUsize, value: usize| to.store(to.load(Ordering::SeqCst).max(value), Ordering::SeqCst);
            cortex_m::interrupt::free(|_| {
                let reached = super::handlers_reached();
                raise(&PEAK, reached);
                if NESTED.load(Ordering::SeqCst) == nested {
                    raise(&OWN[level], reached);
                }
                super::repaint_handlers();
            });
        }
        DEPTH.store(depth - 1, Ordering::SeqCst);
    }

    #[exception]
    fn SysTick() {
        handle(HOUSEKEEPING_LEVEL, &HOUSEKEEPING);
    }

    #[exception]
    unsafe fn DefaultHandler(irqn: i16) {
        if config::CAPTURE_TIMER.is_some_and(|(_, irq, _)| irqn == irq as i16) {
            // SAFETY: the interrupt-clear register of the board's capture
            // timer, which only this handler writes once the clock runs.
            unsafe { core::ptr::write_volatile(register(INTCLEAR), 1) };
            handle(CAPTURE_LEVEL, &CAPTURE);
        } else {
            panic!("unexpected exception {irqn}");
        }
    }
}
