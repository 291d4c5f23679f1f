//! Time on the STM32F4: TIM2, a 32-bit timer, free-running at 1 MHz from
//! the APB1 timer clock and widened to 64 bits. It keeps counting while
//! interrupts are masked (the driver runs in critical sections) and while
//! the core sleeps, which the core's cycle counter would not. The driver
//! bounds its waits by it.

use super::super::shared::widen;
use stm32f4xx_hal::pac;
use stm32f4xx_hal::rcc::{Enable, Rcc, Reset};

/// The rate of [`now`].
pub const TICK_HZ: u64 = 1_000_000;

/// Starts TIM2 counting up at [`TICK_HZ`] over its whole 32 bits, without
/// interrupts.
pub fn start(tim: pac::TIM2, rcc: &mut Rcc) {
    pac::TIM2::enable(rcc);
    pac::TIM2::reset(rcc);
    // The board file's `timer_hz` where the clock tree does not give the
    // timers' clock (QEMU: 1 GHz), else the HAL's APB1 timer clock.
    let timer_hz = crate::board::TIMER_HZ.unwrap_or(u64::from(rcc.clocks.timclk1().raw()));
    let prescale = (timer_hz / TICK_HZ) as u32;
    tim.psc()
        .write(|w| w.psc().set(prescale.saturating_sub(1) as u16));
    tim.arr().write(|w| w.arr().set(u32::MAX));
    // Loads the prescaler now rather than at the first overflow.
    tim.egr().write(|w| w.ug().set_bit());
    tim.cr1().modify(|_, w| w.cen().set_bit());
}

/// Ticks since [`start`]. Must be called at least once per 2³² ticks
/// (71 minutes) to see every wrap; the 1 kHz tick interrupt does.
pub fn now() -> u64 {
    // SAFETY: a read of TIM2's counter, which only `start` configures.
    let up = unsafe { (*pac::TIM2::ptr()).cnt().read().bits() };
    widen(up)
}
