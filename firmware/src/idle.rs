//! Sleeping while the link is quiet. The main loop polls the UART; once no
//! byte has come for [`QUIET`] and no command is in flight, it waits for an
//! interrupt (WFI): the link UART's receive interrupt or the 1 kHz tick. On
//! a board that saves power; under QEMU it frees the host's CPU, which a
//! polling core keeps fully busy.

use crate::glue::clock::{self, TICK_HZ};
use crate::glue::uart::Uart;

/// Quiet time before the core sleeps. The bytes of one frame and the
/// frames of one burst come closer together than this.
const QUIET: u64 = TICK_HZ / 1000;

/// Quiet loop turns between clock reads (a read is an MMIO access and a
/// critical section; the loop turns many times between two bytes).
const TURNS: u32 = 64;

/// When the main loop may sleep.
pub struct Idle {
    quiet_turns: u32,
    quiet_since: u64,
    drowsy: bool,
}

impl Idle {
    /// Lets the link UART's receive interrupt wake the core.
    pub fn start() -> Self {
        Uart::enable_wakeup();
        Self {
            quiet_turns: 0,
            quiet_since: 0,
            drowsy: false,
        }
    }

    /// A byte came, or a command is in flight: stay awake.
    pub fn busy(&mut self) {
        self.quiet_turns = 0;
        self.drowsy = false;
    }

    /// A loop turn with nothing to do; sleeps once quiet for [`QUIET`].
    pub fn quiet(&mut self, uart: &mut Uart) {
        if !self.drowsy {
            self.quiet_turns = self.quiet_turns.saturating_add(1);
            if !self.quiet_turns.is_multiple_of(TURNS) {
                return;
            }
            let now = clock::now();
            if self.quiet_turns == TURNS {
                self.quiet_since = now;
                return;
            }
            self.drowsy = now.saturating_sub(self.quiet_since) >= QUIET;
            if !self.drowsy {
                return;
            }
        }
        // Masked, an interrupt still wakes the WFI; its handler runs after.
        cortex_m::interrupt::free(|_| uart.with_receive_interrupt(cortex_m::asm::wfi));
    }
}
