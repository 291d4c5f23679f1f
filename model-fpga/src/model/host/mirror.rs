//! The register window of a memory-backed BAR, kept in step with the model.
//!
//! The host stores into the window with relaxed atomic accesses
//! (`MmioRegion::new_memory_backed`) and fences; the model
//! thread turns those stores into register writes and publishes the
//! registers the device updates. Every access here is atomic
//! (`AtomicU32::from_ptr`), `Acquire` when taking host writes, `Release`
//! when publishing, so completion state is visible only after the entries
//! it announces. See `docs/device-spec.md` ("Memory-backed BAR").

use core::sync::atomic::{AtomicU32, Ordering};

use tensorplug_abi::device::{OPS_WORDS, REGISTER_SPACE_SIZE, RESET_KEY, Register};

use super::super::{DeviceMemory, HostBus, Model, TickSource};
use tensorplug_device_fpga::transport::mmio::MmioRegion;

/// Registers the host writes, in the order they are applied: the ring and
/// IRQ setup first, then `CONTROL` (so `ENABLE` latches the rings written
/// with it), then the doorbell. They are *loaded* in the reverse order, so
/// a `CONTROL` or doorbell value seen implies the writes before it are seen.
const HOST_WRITTEN: [Register; 17] = [
    Register::SCRATCH,
    Register::IRQ_ENABLE,
    Register::IRQ_STATUS,
    Register::CMDQ_BASE_LO,
    Register::CMDQ_BASE_HI,
    Register::CMDQ_SIZE,
    Register::CPLQ_BASE_LO,
    Register::CPLQ_BASE_HI,
    Register::CPLQ_SIZE,
    Register::CPLQ_HEAD,
    Register::EVQ_BASE_LO,
    Register::EVQ_BASE_HI,
    Register::EVQ_SIZE,
    Register::EVQ_HEAD,
    Register::EVQ_IRQ_THRESHOLD,
    Register::CONTROL,
    Register::CMDQ_DOORBELL,
];

/// Registers the device updates, published after every service round.
const DEVICE_WRITTEN: [Register; 8] = [
    Register::CMDQ_HEAD,
    Register::CMDQ_TAIL,
    Register::EVQ_TAIL,
    Register::EVQ_DROPPED,
    Register::CPLQ_TAIL,
    Register::HALT_REASON,
    Register::IRQ_STATUS,
    Register::STATUS,
];

/// Fixed registers, published once (and after reset).
const CONSTANT: [Register; 7 + OPS_WORDS] = {
    let mut all = [Register::ID; 7 + OPS_WORDS];
    let fixed = [
        Register::ID,
        Register::ABI_VERSION,
        Register::FEATURES,
        Register::DEVICE_MEM_SIZE_LO,
        Register::DEVICE_MEM_SIZE_HI,
        Register::TIMESTAMP_FREQ_HZ,
        Register::MAX_RING_ENTRIES,
    ];
    let mut i = 0;
    while i < all.len() {
        all[i] = if i < fixed.len() {
            fixed[i]
        } else {
            Register::ops(i - fixed.len())
        };
        i += 1;
    }
    all
};

const WORDS: usize = REGISTER_SPACE_SIZE as usize / 4;

/// Why a window cannot be served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WindowTooSmall;

pub(crate) struct Mirror<'w> {
    words: &'w [AtomicU32],
    /// Last value seen in (or published to) each word.
    seen: [u32; WORDS],
}

impl<'w> Mirror<'w> {
    /// # Safety
    /// `window` must stay mapped for `'w`, and the host side must access its
    /// words only with aligned 32-bit accesses (volatile or atomic).
    pub(crate) unsafe fn new(window: &MmioRegion<'w>) -> Result<Self, WindowTooSmall> {
        if window.len() < REGISTER_SPACE_SIZE as usize {
            return Err(WindowTooSmall);
        }
        // SAFETY: the window is 4-byte aligned (`MmioRegion::new` checks),
        // at least WORDS words long, valid for 'w, and every access through
        // these atomics is atomic; the caller vouches for the host side.
        let words =
            unsafe { core::slice::from_raw_parts(window.as_ptr().cast::<AtomicU32>(), WORDS) };
        Ok(Self {
            words,
            seen: [0; WORDS],
        })
    }

    fn word(&self, reg: Register) -> &AtomicU32 {
        &self.words[reg.offset() / 4]
    }

    fn publish(&mut self, reg: Register, value: u32) {
        let i = reg.offset() / 4;
        if self.seen[i] != value {
            self.seen[i] = value;
            self.words[i].store(value, Ordering::Release);
        }
    }

    /// Publishes every register: before the host may touch the window, and
    /// when a reset is taken.
    pub(crate) fn publish_all<M, B, C>(&mut self, model: &mut Model<M, B, C>)
    where
        M: DeviceMemory,
        B: HostBus,
        C: TickSource,
    {
        // `SCRATCH` last: once the host reads its reset value (0) every
        // other word already holds its own (Release stores in order).
        let all = CONSTANT.iter().chain(&HOST_WRITTEN).chain(&DEVICE_WRITTEN);
        for reg in all.filter(|r| **r != Register::SCRATCH) {
            let value = model.read_reg(reg.0);
            self.seen[reg.offset() / 4] = value;
            self.word(*reg).store(value, Ordering::Release);
        }
        let scratch = model.read_reg(Register::SCRATCH.0);
        self.seen[Register::SCRATCH.offset() / 4] = scratch;
        self.word(Register::SCRATCH)
            .store(scratch, Ordering::Release);
    }

    /// Applies what the host wrote since the last call; true if anything.
    pub(crate) fn pull<M, B, C>(&mut self, model: &mut Model<M, B, C>) -> bool
    where
        M: DeviceMemory,
        B: HostBus,
        C: TickSource,
    {
        if self.word(Register::RESET).swap(0, Ordering::AcqRel) == RESET_KEY {
            model.write_reg(Register::RESET.0, RESET_KEY);
            // Every register back to its reset value, host-written ones too:
            // the host learns the reset was taken when `SCRATCH` reads 0.
            self.publish_all(model);
            return true;
        }
        let mut values = [0u32; HOST_WRITTEN.len()];
        for (reg, value) in HOST_WRITTEN.iter().zip(&mut values).rev() {
            *value = self.word(*reg).load(Ordering::Acquire);
        }
        let mut wrote = false;
        for (reg, value) in HOST_WRITTEN.iter().zip(values) {
            let i = reg.offset() / 4;
            if value != self.seen[i] {
                self.seen[i] = value;
                model.write_reg(reg.0, value);
                wrote = true;
            }
        }
        wrote
    }

    /// Publishes the registers the device updates, then the timestamp.
    pub(crate) fn push<M, B, C>(&mut self, model: &mut Model<M, B, C>)
    where
        M: DeviceMemory,
        B: HostBus,
        C: TickSource,
    {
        for reg in DEVICE_WRITTEN {
            let value = model.read_reg(reg.0);
            self.publish(reg, value);
        }
        let now = model.timestamp();
        self.publish(Register::TIMESTAMP_HI, (now >> 32) as u32);
        self.publish(Register::TIMESTAMP_LO, now as u32);
    }
}
