//! The host link on the STM32F4's USART6, through `stm32f4xx-hal`, polled.
//!
//! Like the CMSDK glue, the main loop polls the receive register; the
//! receive interrupt only wakes a sleeping core (`idle.rs`) and is disabled
//! again before its handler could run. The USART holds one byte: a byte that
//! comes while another waits unread is lost (an overrun, logged and
//! counted), which the link's CRC turns into a `BadFrame`. So this board's
//! link window is 1 (the host sends a request only once the previous one
//! is answered), and the main loop must come back to the USART within a
//! byte time (87 µs at 115200 baud) while the host is sending.

use core::sync::atomic::{AtomicU32, Ordering};
use cortex_m::peripheral::NVIC;
use embedded_hal_nb::serial::{Read, Write};
use stm32f4xx_hal::gpio::{PC6, PC7};
use stm32f4xx_hal::pac::{self, Interrupt};
use stm32f4xx_hal::prelude::*;
use stm32f4xx_hal::rcc::Rcc;
use stm32f4xx_hal::serial::{Config, Rx, RxISR, RxListen, Serial, Tx};

use crate::board;

/// Requests the host may send before it sees the oldest answered (link
/// protocol 2.1): 1, because the USART drops bytes the loop does not read
/// in time.
pub const LINK_WINDOW: u16 = 1;

/// Bytes lost to overruns, framing or noise errors since boot.
pub static RX_ERRORS: AtomicU32 = AtomicU32::new(0);

/// The link's USART.
pub struct Uart {
    tx: Tx<pac::USART6>,
    rx: Rx<pac::USART6>,
}

impl Uart {
    /// USART6 at the board's line rate, 8N1.
    pub fn new(usart: pac::USART6, tx: PC6, rx: PC7, rcc: &mut Rcc) -> Self {
        let config = Config::default().baudrate(board::LINK_BAUD.bps());
        match Serial::new(usart, (tx, rx), config, rcc) {
            Ok(serial) => {
                let (tx, rx) = serial.split();
                Self { tx, rx }
            }
            Err(_) => defmt::panic!(
                "USART6 cannot make {=u32} baud from this clock tree",
                board::LINK_BAUD
            ),
        }
    }

    /// The receive interrupt wakes a sleeping core only inside
    /// [`Uart::with_receive_interrupt`], which unmasks it itself.
    pub fn enable_wakeup() {}

    /// Runs `sleep` with the receive interrupt raised by the next byte, and
    /// not at all if a byte already waits. Call it with interrupts masked
    /// (PRIMASK): the USART's interrupt is enabled in the NVIC only for the
    /// sleep, so it wakes the WFI but its handler never runs. (QEMU's USART
    /// model keeps its interrupt line up until the byte is read, even once
    /// the interrupt is disabled in the USART, so leaving it enabled in the
    /// NVIC would run the handler.)
    pub fn with_receive_interrupt(&mut self, sleep: impl FnOnce()) {
        self.rx.listen();
        NVIC::unpend(Interrupt::USART6);
        // SAFETY: interrupts are masked by the caller, and the interrupt is
        // disabled in the NVIC again before they are unmasked.
        unsafe { NVIC::unmask(Interrupt::USART6) };
        if !self.rx.is_rx_not_empty() {
            sleep();
        }
        NVIC::mask(Interrupt::USART6);
        self.rx.unlisten();
        NVIC::unpend(Interrupt::USART6);
    }

    /// The next received byte, if one is there.
    pub fn try_read(&mut self) -> Option<u8> {
        match self.rx.read() {
            Ok(byte) => Some(byte),
            Err(nb::Error::WouldBlock) => None,
            Err(nb::Error::Other(_)) => {
                // The HAL cleared the error; the frame it broke fails its CRC.
                RX_ERRORS.fetch_add(1, Ordering::Relaxed);
                defmt::warn!("the link USART lost a byte (overrun, framing or noise)");
                None
            }
        }
    }

    /// Sends `bytes`, waiting for room before each.
    pub fn write_all(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            // Writing a byte has no error case on this USART.
            let _ = nb::block!(self.tx.write(byte));
        }
    }

    /// Sends every received byte back, forever (feature `bench-echo`).
    pub fn echo(&mut self) -> ! {
        loop {
            if let Some(byte) = self.try_read() {
                self.write_all(&[byte]);
            }
        }
    }
}

/// External interrupts: none is expected to run (the USART's wakes the
/// core with interrupts masked and is cleared before they are unmasked).
#[cortex_m_rt::exception]
unsafe fn DefaultHandler(irqn: i16) {
    defmt::panic!("unexpected interrupt {=i16}", irqn);
}
