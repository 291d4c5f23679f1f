//! The model's tick source on the MCU: SysTick interrupts count
//! milliseconds (1 kHz from the 25 MHz core clock of mps2-an386), and the
//! model reads them scaled to its timestamp frequency.

use core::sync::atomic::{AtomicU32, Ordering};
use cortex_m::peripheral::SYST;
use cortex_m::peripheral::syst::SystClkSource;
use cortex_m_rt::exception;
use tensorplug_device_fpga::model::{ModelConfig, TickSource};

/// The core clock of mps2-an386 under QEMU.
const CORE_HZ: u32 = 25_000_000;

static MILLIS: AtomicU32 = AtomicU32::new(0);

#[exception]
fn SysTick() {
    MILLIS.fetch_add(1, Ordering::Relaxed);
}

/// Milliseconds since [`start`], widened to 64 bits as they are read.
pub struct MillisClock {
    last: u32,
    high: u64,
    ticks_per_ms: u64,
}

/// Starts SysTick at 1 kHz.
pub fn start(mut syst: SYST) -> MillisClock {
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload(CORE_HZ / 1000 - 1);
    syst.clear_current();
    syst.enable_counter();
    syst.enable_interrupt();
    MillisClock {
        last: 0,
        high: 0,
        ticks_per_ms: u64::from(ModelConfig::default().timing.freq_hz) / 1000,
    }
}

impl TickSource for MillisClock {
    fn now_ticks(&mut self) -> u64 {
        let now = MILLIS.load(Ordering::Relaxed);
        if now < self.last {
            self.high += 1 << 32;
        }
        self.last = now;
        (self.high + u64::from(now)) * self.ticks_per_ms
    }
}
