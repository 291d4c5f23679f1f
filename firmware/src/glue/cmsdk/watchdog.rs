//! The board's CMSDK APB watchdog (mps2-an386, 0x4000_8000, 25 MHz): a
//! main loop that stops feeding it is reset.
//!
//! The counter runs down from `LOAD`. The first time it reaches zero it
//! raises its interrupt (the NMI on this board) and reloads; the second
//! time, with the interrupt still set, it resets the MCU. Feeding clears the
//! interrupt and reloads. So a stalled main loop is reset after 2 × [`STALL`].
//! The NMI leaves a mark in RAM that a reset keeps, so the next boot can say
//! why it booted.

use core::ptr::{read_volatile, write_volatile};
use core::time::Duration;

use super::clock;

const BASE: usize = 0x4000_8000;
const LOAD: usize = 0x000;
const CONTROL: usize = 0x008;
const INTCLR: usize = 0x00C;
const LOCK: usize = 0xC00;

const CONTROL_INTEN: u32 = 1 << 0;
const CONTROL_RESEN: u32 = 1 << 1;
const UNLOCK: u32 = 0x1ACC_E551;

/// How long the main loop may go without feeding before the NMI; the reset
/// follows one more `STALL` later. Generous: QEMU's clock is the host's,
/// and a loaded host can stall QEMU for a second.
pub const STALL: Duration = Duration::from_secs(3);

/// Left in `.uninit` by the NMI; a reset keeps RAM.
const BITTEN: u32 = 0x5744_4F47; // "WDOG"

#[unsafe(link_section = ".uninit.tensorplug_watchdog")]
static mut LAST_BOOT: u32 = 0;

fn write(offset: usize, value: u32) {
    // SAFETY: the watchdog's registers; only this module touches them.
    unsafe { write_volatile((BASE + offset) as *mut u32, value) }
}

/// Starts the watchdog. Returns whether the previous run ended in a
/// watchdog reset, and forgets it.
pub fn start() -> bool {
    let load = clock::CORE_HZ * STALL.as_secs();
    write(LOCK, UNLOCK);
    write(LOAD, load as u32);
    write(CONTROL, CONTROL_INTEN | CONTROL_RESEN);
    write(LOCK, 0);
    // SAFETY: read and cleared here, once, before the NMI can fire; the NMI
    // only writes it.
    unsafe {
        let slot = core::ptr::addr_of_mut!(LAST_BOOT);
        let bitten = read_volatile(slot) == BITTEN;
        write_volatile(slot, 0);
        bitten
    }
}

/// Clears the interrupt and reloads the counter (three register writes).
pub fn feed() {
    write(LOCK, UNLOCK);
    write(INTCLR, 1);
    write(LOCK, 0);
}

/// The watchdog's first expiry. Logging here could interleave with a log
/// the main loop was writing, so it only leaves its mark; the reset follows.
#[cortex_m_rt::exception]
unsafe fn NonMaskableInt() {
    // SAFETY: a plain word store; `start` reads it only at the next boot.
    unsafe { write_volatile(core::ptr::addr_of_mut!(LAST_BOOT), BITTEN) }
}
