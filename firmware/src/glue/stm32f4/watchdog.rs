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

use super::clock;

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

fn feed() {
    critical_section::with(|cs| {
        if let Some(dog) = DOG.borrow_ref_mut(cs).first_mut() {
            dog.feed();
        }
    });
}

/// Feeds the watchdog from the main loop, at most every [`FEED_EVERY`];
/// the clock is read only every [`TURNS`] calls.
pub struct Feeder {
    fed_at: u64,
    turns: u32,
}

/// Loop turns between clock reads.
const TURNS: u32 = 64;

/// How often [`Feeder::alive`] actually feeds.
const FEED_EVERY: u64 = clock::TICK_HZ / 4;

impl Feeder {
    /// A feeder for a watchdog [`start`]ed just now.
    pub fn new() -> Self {
        Self {
            fed_at: clock::now(),
            turns: 0,
        }
    }

    /// One turn of the main loop.
    pub fn alive(&mut self) {
        self.turns += 1;
        if self.turns >= TURNS {
            self.answered();
        }
    }

    /// After a frame was answered: feeds the watchdog if it is time to.
    pub fn answered(&mut self) {
        self.turns = 0;
        let now = clock::now();
        if now.wrapping_sub(self.fed_at) >= FEED_EVERY {
            self.fed_at = now;
            feed();
        }
    }
}
