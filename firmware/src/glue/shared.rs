//! What every board's glue shares, over its [`Chip`]: the clock's 32-bit
//! count widened to 64 bits, the driver's clock, and the main loop's
//! watchdog [`Feeder`]. Nothing here names a register.

use core::cell::Cell;
use core::marker::PhantomData;
use critical_section::Mutex;
use tensorplug_device_fpga::driver::Clock;

/// A board's clock and watchdog, as the shared parts use them.
pub trait Chip {
    /// The rate of [`now`](Self::now).
    const TICK_HZ: u64;
    /// Ticks since the clock started.
    fn now() -> u64;
    /// Feeds the watchdog.
    fn feed_watchdog();
}

/// (last 32-bit reading, high bits) of the widened counter.
static WIDE: Mutex<Cell<(u32, u64)>> = Mutex::new(Cell::new((0, 0)));

/// `up`, a 32-bit count read now, widened to 64 bits. Sees every wrap if
/// called at least once per 2³² ticks; the 1 kHz tick interrupt does.
pub fn widen(up: u32) -> u64 {
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
pub struct DriverClock<C>(PhantomData<C>);

impl<C> DriverClock<C> {
    pub const fn new() -> Self {
        Self(PhantomData)
    }
}

impl<C: Chip> Clock for DriverClock<C> {
    fn now_ns(&mut self) -> u64 {
        C::now() * (1_000_000_000 / C::TICK_HZ)
    }

    fn relax(&mut self, _polls: u32) {
        cortex_m::asm::nop();
    }
}

/// Loop turns between clock reads. A turn is one byte polled, or one frame
/// answered ([`Feeder::answered`] reads the clock at once).
const TURNS: u32 = 64;

/// Feeds the watchdog from the main loop, at most every quarter second.
/// The clock is read only every [`TURNS`] calls: a read is an MMIO access
/// and a critical section, and the loop turns once per UART byte.
pub struct Feeder<C> {
    fed_at: u64,
    turns: u32,
    chip: PhantomData<C>,
}

impl<C: Chip> Feeder<C> {
    /// A feeder for a watchdog started just now.
    pub fn new() -> Self {
        Self {
            fed_at: C::now(),
            turns: 0,
            chip: PhantomData,
        }
    }

    /// One turn of the main loop.
    pub fn alive(&mut self) {
        self.turns += 1;
        if self.turns >= TURNS {
            self.answered();
        }
    }

    /// After a frame was answered (which may take long): feeds the watchdog
    /// if it is time to.
    pub fn answered(&mut self) {
        self.turns = 0;
        let now = C::now();
        if now.wrapping_sub(self.fed_at) >= C::TICK_HZ / 4 {
            self.fed_at = now;
            C::feed_watchdog();
        }
    }
}
