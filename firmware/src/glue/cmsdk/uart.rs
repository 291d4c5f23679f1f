//! The CMSDK APB UART of the mps2 boards, polled.
//!
//! QEMU models a one-byte buffer each way and its RX interrupt can stall
//! (QEMU issue 3244), so the firmware polls `STATE` and frames every
//! message with a length and a CRC (the link protocol does). The receive
//! interrupt is on only while the core sleeps, to wake it (`idle.rs`); the
//! 1 kHz tick wakes it too, so a stalled interrupt costs a millisecond.

use core::ptr::{read_volatile, write_volatile};
use cortex_m::interrupt::InterruptNumber;
use cortex_m::peripheral::NVIC;
use cortex_m_rt::exception;

/// Requests the host may send before it sees the oldest answered (link
/// protocol 2.1). This glue polls a UART with a one-byte buffer, so it may
/// say more than 1 only because QEMU's chardev holds the host's bytes while
/// that buffer is full (flow control). On a board whose UART drops bytes
/// while the MCU is busy, say 1, or receive into a ring first.
pub const LINK_WINDOW: u16 = 8;

/// The link's UART (UART0 of mps2-an385/an386), from the board file.
pub const UART0: usize = crate::board::LINK_BASE;

/// The board's line rate from the APB clock (115200 from 25 MHz: 217),
/// the host's default `SERIAL_BAUD`. (QEMU does not pace its UART at this
/// rate; a real board does.)
pub const LINK_BAUDDIV: u32 = (crate::board::CORE_HZ / crate::board::LINK_BAUD as u64) as u32;

const DATA: usize = 0x0;
const STATE: usize = 0x4;
const CTRL: usize = 0x8;
const INTCLEAR: usize = 0xC;
const BAUDDIV: usize = 0x10;

const STATE_TX_FULL: u32 = 1 << 0;
const STATE_RX_FULL: u32 = 1 << 1;
const CTRL_TX_EN: u32 = 1 << 0;
const CTRL_RX_EN: u32 = 1 << 1;
const CTRL_RX_INTEN: u32 = 1 << 3;
const INT_RX: u32 = 1 << 1;

/// UART0's receive interrupt on mps2-an385/an386 (external interrupt 0).
pub const UART0_RX_IRQ: i16 = 0;

/// An external interrupt of this board, by number.
#[derive(Clone, Copy)]
struct Irq(u16);

// SAFETY: `number` returns the external interrupt's own number.
unsafe impl InterruptNumber for Irq {
    fn number(self) -> u16 {
        self.0
    }
}

/// One CMSDK UART.
pub struct Uart {
    base: usize,
}

impl Uart {
    /// Enables transmit and receive at `base`. The divider only sets the
    /// line rate on silicon; QEMU needs it at least 16.
    ///
    /// # Safety
    /// `base` is a CMSDK UART that nothing else drives.
    pub unsafe fn new(base: usize, bauddiv: u32) -> Self {
        let uart = Self { base };
        uart.write(BAUDDIV, bauddiv.max(16));
        uart.write(CTRL, CTRL_TX_EN | CTRL_RX_EN);
        uart
    }

    fn read(&self, offset: usize) -> u32 {
        // SAFETY: a register of the UART this value owns.
        unsafe { read_volatile((self.base + offset) as *const u32) }
    }

    fn write(&self, offset: usize, value: u32) {
        // SAFETY: as above.
        unsafe { write_volatile((self.base + offset) as *mut u32, value) }
    }

    /// Lets UART0's receive interrupt wake a sleeping core
    /// ([`Uart::with_receive_interrupt`]).
    pub fn enable_wakeup() {
        // SAFETY: the handler below only acknowledges the interrupt; no
        // critical section relies on it staying masked.
        unsafe { NVIC::unmask(Irq(UART0_RX_IRQ as u16)) };
    }

    /// Runs `sleep` with the receive interrupt raised by the next byte, and
    /// not at all if a byte already waits. Call it with interrupts masked:
    /// a byte that comes after the check still wakes a WFI in `sleep`.
    pub fn with_receive_interrupt(&mut self, sleep: impl FnOnce()) {
        let ctrl = self.read(CTRL);
        self.write(CTRL, ctrl | CTRL_RX_INTEN);
        if !self.has_byte() {
            sleep();
        }
        // Off again while awake: an interrupt per byte would slow reception.
        self.write(CTRL, ctrl);
        self.write(INTCLEAR, INT_RX);
    }

    /// Whether a received byte waits.
    pub fn has_byte(&self) -> bool {
        self.read(STATE) & STATE_RX_FULL != 0
    }

    /// The next received byte, if one is there.
    pub fn try_read(&mut self) -> Option<u8> {
        self.has_byte().then(|| self.read(DATA) as u8)
    }

    /// Sends `bytes`, waiting for room before each.
    pub fn write_all(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            while self.read(STATE) & STATE_TX_FULL != 0 {}
            self.write(DATA, u32::from(byte));
        }
    }

    /// Sends every received byte back, forever: the raw byte rate a link
    /// copy is measured against (feature `bench-echo`).
    pub fn echo(&mut self) -> ! {
        loop {
            if let Some(byte) = self.try_read() {
                self.write_all(&[byte]);
            }
        }
    }
}

/// Clears UART0's receive interrupt (its handler's whole job; the main
/// loop reads the byte).
pub fn acknowledge_received() {
    // SAFETY: a write-one-to-clear register of UART0; clearing the receive
    // bit touches nothing the main loop reads.
    unsafe { write_volatile((UART0 + INTCLEAR) as *mut u32, INT_RX) }
}

/// External interrupts: UART0's receive interrupt only wakes the core.
#[exception]
unsafe fn DefaultHandler(irqn: i16) {
    if irqn == UART0_RX_IRQ {
        acknowledge_received();
    } else {
        defmt::panic!("unexpected interrupt {=i16}", irqn);
    }
}
