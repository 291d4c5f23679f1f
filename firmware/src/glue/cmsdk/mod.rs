//! The glue of Arm's MPS2 boards (QEMU `mps2-an386`): hand-written drivers
//! of their CMSDK peripherals (TIMER0, the APB UART, the APB watchdog). The
//! FPGA of these boards is the behavioural model (`crate::device`), which
//! needs no bus here.

pub mod clock;
pub mod uart;
pub mod watchdog;

/// What `main` gets from the board.
pub struct Hardware {
    /// The host link.
    pub uart: uart::Uart,
}

/// Starts the clock and the link's UART.
pub fn init() -> Hardware {
    clock::start();
    // SAFETY: the link's UART is this firmware's; nothing else drives it.
    let uart = unsafe { uart::Uart::new(uart::UART0, uart::LINK_BAUDDIV) };
    Hardware { uart }
}

/// This board's clock and watchdog, for the shared glue.
pub struct Chip;

impl super::shared::Chip for Chip {
    const TICK_HZ: u64 = clock::TICK_HZ;
    fn now() -> u64 {
        clock::now()
    }
    fn feed_watchdog() {
        watchdog::feed();
    }
}
