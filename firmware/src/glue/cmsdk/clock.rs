//! Time on the MCU: CMSDK TIMER0 of mps2-an386, free-running at the 25 MHz
//! core clock and widened to 64 bits. It keeps counting while interrupts are
//! masked (the driver runs in critical sections), unlike a tick interrupt.
//! The model stamps device events with it; the driver bounds its waits by it.

use core::cell::Cell;
use critical_section::Mutex;
use tensorplug_device_fpga::driver::Clock;

/// The core and APB clock (mps2-an386 under QEMU: 25 MHz), from the board file.
pub const CORE_HZ: u64 = crate::board::CORE_HZ;

/// The rate of [`now`]: TIMER0 counts the core clock.
pub const TICK_HZ: u64 = CORE_HZ;

const TIMER0: usize = 0x4000_0000;
const CTRL: usize = 0x00;
const VALUE: usize = 0x04;
const RELOAD: usize = 0x08;

/// (last 32-bit reading, high bits) of the widened counter.
static WIDE: Mutex<Cell<(u32, u64)>> = Mutex::new(Cell::new((0, 0)));

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
    let up = u32::MAX - down;
    critical_section::with(|cs| {
        let cell = WIDE.borrow(cs);
        let (last, mut high) = cell.get();
        if up < last {
            high += 1 << 32;
        }
        cell.set((up, high));
        high + u64::from(up)
    })
}

/// The driver's clock for bounded waits.
pub struct DriverClock;

impl Clock for DriverClock {
    fn now_ns(&mut self) -> u64 {
        now() * (1_000_000_000 / TICK_HZ)
    }

    fn relax(&mut self, _polls: u32) {
        cortex_m::asm::nop();
    }
}
