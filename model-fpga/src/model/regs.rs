//! The register file's storage and its reset values.

use tensorplug_abi::device::Status;

/// Writable and device-updated registers (the RO constants come from the
/// model's config). All reset to 0 except `STATUS`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RegisterFile {
    pub(crate) scratch: u32,
    pub(crate) control: u32,
    pub(crate) status: u32,
    pub(crate) halt_reason: u32,
    pub(crate) irq_status: u32,
    pub(crate) irq_enable: u32,
    /// `TIMESTAMP_HI` as latched by the last `TIMESTAMP_LO` read.
    pub(crate) timestamp_hi_latch: u32,
    pub(crate) cmdq: RingRegs,
    pub(crate) cplq: RingRegs,
    pub(crate) evq: RingRegs,
    pub(crate) evq_dropped: u32,
    pub(crate) evq_irq_threshold: u32,
}

/// The registers of one ring.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RingRegs {
    pub(crate) base: u64,
    pub(crate) size: u32,
    pub(crate) head: u32,
    pub(crate) tail: u32,
}

impl RegisterFile {
    /// Every register at its reset value, `READY` clear (reset in progress).
    pub(crate) const fn resetting() -> Self {
        Self {
            scratch: 0,
            control: 0,
            status: 0,
            halt_reason: 0,
            irq_status: 0,
            irq_enable: 0,
            timestamp_hi_latch: 0,
            cmdq: RingRegs::ZERO,
            cplq: RingRegs::ZERO,
            evq: RingRegs::ZERO,
            evq_dropped: 0,
            evq_irq_threshold: 0,
        }
    }

    pub(crate) const fn has(&self, bit: Status) -> bool {
        self.status & bit.0 != 0
    }

    pub(crate) fn set(&mut self, bit: Status, on: bool) {
        if on {
            self.status |= bit.0;
        } else {
            self.status &= !bit.0;
        }
    }
}

impl RingRegs {
    const ZERO: RingRegs = RingRegs {
        base: 0,
        size: 0,
        head: 0,
        tail: 0,
    };

    /// Entries between head and tail (free-running, wrapping).
    pub(crate) const fn used(&self) -> u32 {
        self.tail.wrapping_sub(self.head)
    }

    /// Sets the low or high half of the base address.
    pub(crate) fn set_base_half(&mut self, high: bool, value: u32) {
        self.base = if high {
            (self.base & 0xFFFF_FFFF) | (u64::from(value) << 32)
        } else {
            (self.base & !0xFFFF_FFFF) | u64::from(value)
        };
    }
}
