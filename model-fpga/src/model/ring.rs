//! Ring geometry and the checks made when `ENABLE` is set.

use core::ops::Range;

use tensorplug_abi::device::{
    COMMAND_DESCRIPTOR_SIZE, COMPLETION_DESCRIPTOR_SIZE, CompletionStatus, Control,
    EVENT_DESCRIPTOR_SIZE, Features,
};

use super::config::ModelConfig;
use super::regs::{RegisterFile, RingRegs};

/// Address of entry `index` (free-running) of `ring`.
pub(crate) fn slot(ring: &RingRegs, index: u32, entry: usize) -> u64 {
    let i = u64::from(index & ring.size.wrapping_sub(1));
    ring.base.wrapping_add(i * entry as u64)
}

/// `addr..addr + len` as a range of device memory of `mem_len` bytes.
pub(crate) fn mem_range(addr: u64, len: usize, mem_len: usize) -> Option<Range<usize>> {
    let start = usize::try_from(addr).ok()?;
    let end = start.checked_add(len)?;
    (end <= mem_len).then_some(start..end)
}

/// The checks of `docs/device-abi.md` "Bring-up": features, then for each
/// ring (command, completion, event) its size, alignment and range.
pub(crate) fn check_rings(
    regs: &RegisterFile,
    control: u32,
    config: &ModelConfig,
    mem_len: usize,
) -> Result<(), CompletionStatus> {
    let host = control & Control::HOST_RINGS.0 != 0;
    let features = config.features;
    if host && features.0 & Features::DMA.0 == 0
        || control & Control::EVENTS.0 != 0 && features.0 & Features::EVENT_RING.0 == 0
    {
        return Err(CompletionStatus::UNSUPPORTED);
    }
    let rings = [
        (regs.cmdq, COMMAND_DESCRIPTOR_SIZE, 64u64),
        (regs.cplq, COMPLETION_DESCRIPTOR_SIZE, 16),
        (regs.evq, EVENT_DESCRIPTOR_SIZE, 16),
    ];
    for (ring, entry, align) in rings {
        if ring.size != 0 && !ring.size.is_power_of_two() || ring.size > config.max_ring_entries {
            return Err(CompletionStatus::INVALID_ARGUMENT);
        }
        if ring.size == 0 {
            continue;
        }
        if !ring.base.is_multiple_of(align) {
            return Err(CompletionStatus::MISALIGNED);
        }
        let bytes = ring.size as usize * entry;
        let in_range = ring.base.checked_add(bytes as u64).is_some()
            && (host || mem_range(ring.base, bytes, mem_len).is_some());
        if !in_range {
            return Err(CompletionStatus::OUT_OF_RANGE);
        }
    }
    Ok(())
}
