//! Time on the MCU: CMSDK TIMER0 of mps2-an386, free-running at the 25 MHz
//! core clock and widened to 64 bits. It keeps counting while interrupts are
//! masked (the driver runs in critical sections), unlike a tick interrupt.
//! The model stamps device events with it; the driver bounds its waits by it.

use super::super::shared::widen;

/// The core and APB clock (mps2-an386 under QEMU: 25 MHz), from the board file.
pub const CORE_HZ: u64 = crate::board::CORE_HZ;

/// The rate of [`now`]: TIMER0 counts the core clock.
pub const TICK_HZ: u64 = CORE_HZ;

const TIMER0: usize = 0x4000_0000;
const CTRL: usize = 0x00;
const VALUE: usize = 0x04;
const RELOAD: usize = 0x08;

/// Starts TIMER0 counting down from `u32::MAX`, without interrupts.
pub fn start() {
    // SAFETY: TIMER0's registers; this firmware is their only user.
    unsafe {
        core::ptr::write_volatile((TIMER0 + RELOAD) as *mut u32, u32::MAX);
        core::ptr::write_volatile((TIMER0 + VALUE) as *mut u32, u32::MAX);
        core::ptr::write_volatile((TIMER0 + CTRL) as *mut u32, 1);
    }
}

/// Core cycles since [`start`] (ticks at [`TICK_HZ`]). Must be called at
/// least once per 2³² cycles (171 s) to see every wrap; the 1 kHz tick
/// interrupt does.
pub fn now() -> u64 {
    // SAFETY: a read of TIMER0's counter.
    let down = unsafe { core::ptr::read_volatile((TIMER0 + VALUE) as *const u32) };
    widen(u32::MAX - down)
}
