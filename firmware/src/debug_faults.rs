//! Faults a debugger injects, for the HIL tests: the host writes
//! [`TENSORPLUG_FAULT`] through QEMU's gdbstub (`tensorplug_tests::qemu`),
//! as a developer would with `set var` in gdb, and the main loop takes it.
//! Nothing else writes it, so a board without a debugger never sees one.
//! A board with a real FPGA takes only [`WEDGE`] (the FPGA faults are the
//! model's).

use core::sync::atomic::{AtomicU8, Ordering};

#[cfg(tp_fpga = "model")]
use crate::device;

/// No fault pending.
pub const NONE: u8 = 0;
/// The FPGA silently drops the next command's completion: its fence never
/// signals (the conformance suite's `timeout_then_reset_recovers`).
#[cfg_attr(not(tp_fpga = "model"), allow(dead_code))]
pub const LOSE_NEXT_COMPLETION: u8 = 1;
/// The main loop wedges, interrupts still running, until the watchdog
/// resets the MCU.
pub const WEDGE: u8 = 2;
/// Disarms an injected FPGA fault that may still be pending.
#[cfg_attr(not(tp_fpga = "model"), allow(dead_code))]
pub const CLEAR: u8 = 3;

/// The fault to inject, by its number above; the main loop clears it.
#[unsafe(no_mangle)]
pub static TENSORPLUG_FAULT: AtomicU8 = AtomicU8::new(NONE);

/// Injects the fault a debugger asked for, if any.
pub fn take() {
    let fault = TENSORPLUG_FAULT.load(Ordering::Relaxed);
    if fault == NONE {
        return;
    }
    TENSORPLUG_FAULT.store(NONE, Ordering::Relaxed);
    match fault {
        #[cfg(tp_fpga = "model")]
        LOSE_NEXT_COMPLETION => {
            defmt::warn!("debugger: the FPGA will lose the next completion");
            device::set_faults(|f| f.lose_next_completion = true);
        }
        #[cfg(tp_fpga = "model")]
        CLEAR => {
            defmt::warn!("debugger: FPGA faults cleared");
            device::set_faults(|f| *f = Default::default());
        }
        WEDGE => {
            defmt::warn!("debugger: the main loop wedges; the watchdog will reset the MCU");
            loop {
                cortex_m::asm::nop();
            }
        }
        other => defmt::warn!("debugger: unknown fault {=u8}, ignored", other),
    }
}
