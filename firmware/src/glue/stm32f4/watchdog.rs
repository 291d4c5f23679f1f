//! The STM32F4's independent watchdog (IWDG, clocked by the 32 kHz LSI),
//! through `stm32f4xx-hal`: a main loop that stops feeding it is reset
//! after [`STALL`]. The reset leaves the IWDG reset flag (`WDGRSTF` in this PAC) set in `RCC_CSR`, so the
//! next boot can say why it booted.

use core::cell::RefCell;
use core::sync::atomic::{AtomicBool, Ordering};
use critical_section::Mutex;
use stm32f4xx_hal::pac;
use stm32f4xx_hal::prelude::*;
use stm32f4xx_hal::watchdog::IndependentWatchdog;

/// How long the main loop may go without feeding before the reset.
/// The FPGA computes on silicon: the loop only waits on it, and is fed
/// between frames and every 64 polls.
pub const STALL_MS: u32 = 3_000;

static DOG: Mutex<RefCell<heapless::Vec<IndependentWatchdog, 1>>> =
    Mutex::new(RefCell::new(heapless::Vec::new()));
static BITTEN: AtomicBool = AtomicBool::new(false);

/// Reads (and clears) the reset flags: did the watchdog reset the MCU?
pub fn read_reset_cause(rcc: &pac::RCC) {
    let bitten = rcc.csr().read().wdgrstf().bit_is_set();
    rcc.csr().modify(|_, w| w.rmvf().set_bit());
    BITTEN.store(bitten, Ordering::Relaxed);
}

/// Keeps the IWDG for [`start`].
pub fn install(iwdg: pac::IWDG) {
    critical_section::with(|cs| {
        let mut slot = DOG.borrow_ref_mut(cs);
        slot.clear();
        // Cannot fail: the slot was just emptied.
        let _ = slot.push(IndependentWatchdog::new(iwdg));
    });
}

/// Starts the watchdog. Returns whether the previous run ended in a
/// watchdog reset.
pub fn start() -> bool {
    critical_section::with(|cs| {
        if let Some(dog) = DOG.borrow_ref_mut(cs).first_mut() {
            dog.start(STALL_MS.millis());
        }
    });
    BITTEN.load(Ordering::Relaxed)
}

/// Reloads the IWDG's counter.
pub fn feed() {
    critical_section::with(|cs| {
        if let Some(dog) = DOG.borrow_ref_mut(cs).first_mut() {
            dog.feed();
        }
    });
}
