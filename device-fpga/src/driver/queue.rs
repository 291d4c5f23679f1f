//! Command submission with back-pressure, completion reaping, fences and
//! the per-command failures they report.
//!
//! Every command gets a free-running sequence number `seq` (u64, since the
//! driver was created); its fence is `Fence(seq + 1)`, so `Fence(n)` means
//! "the first `n` commands". The device's u32 ring indices restart at 0 on
//! each reset; `hw_base` is the `seq` of hardware index 0.

use tensorplug_abi::device::{
    COMMAND_DESCRIPTOR_SIZE, COMPLETION_DESCRIPTOR_SIZE, CommandDescriptor, CompletionDescriptor,
    CompletionFlags, Register, Status, expected_phase,
};
use tensorplug_core::accelerator::Fence;

use super::clock::{Clock, Deadline};
use super::{Driver, Error, WaitFor};
use crate::transport::Transport;

/// Completions read per bulk read.
const REAP_BATCH: usize = 16;
/// A wait checks `STATUS` (halt, lost rings) every this many polls.
const STATUS_EVERY: u32 = 64;

impl<T: Transport, C: Clock, const ALLOCS: usize> Driver<T, C, ALLOCS> {
    /// Writes one command into the queue, waiting (bounded) for a free
    /// slot; it is announced by the next [`ring_doorbell`](Self::ring_doorbell).
    /// Returns the fence that completes with it.
    pub(super) fn push(&mut self, desc: &CommandDescriptor) -> Result<Fence, Error> {
        let entries = self.rings.commands.entries;
        let tail = self.queue.hw(self.queue.submitted);
        if tail.wrapping_sub(self.queue.cmd_head) >= entries {
            self.wait_for_slot(tail, entries)?;
        }
        let at = self.rings.commands.slot_addr(tail, COMMAND_DESCRIPTOR_SIZE);
        self.transport.write_mem(at, &desc.to_le_bytes())?;
        self.queue.submitted += 1;
        self.queue.unrung += 1;
        Ok(Fence(self.queue.submitted))
    }

    /// Announces written commands to the device.
    pub(super) fn ring_doorbell(&mut self) -> Result<(), Error> {
        if self.queue.unrung > 0 {
            let tail = self.queue.hw(self.queue.submitted);
            self.write(Register::CMDQ_DOORBELL, tail)?;
            self.queue.unrung = 0;
        }
        Ok(())
    }

    /// Back-pressure: rings the doorbell, then waits for `CMDQ_HEAD` to
    /// free a slot, reaping completions meanwhile (the device stalls on a
    /// full completion queue).
    fn wait_for_slot(&mut self, tail: u32, entries: u32) -> Result<(), Error> {
        self.ring_doorbell()?;
        let mut deadline = Deadline::start(&mut self.clock, self.config.submit_timeout_us * 1000);
        loop {
            let head = self.read(Register::CMDQ_HEAD)?;
            let queued = tail.wrapping_sub(head);
            if queued > entries {
                return Err(Error::Protocol);
            }
            self.queue.cmd_head = head;
            if queued < entries {
                return Ok(());
            }
            self.reap()?;
            if !deadline.keep_waiting(&mut self.clock) {
                let timeout = Error::Timeout {
                    waiting_for: WaitFor::QueueSlot,
                    after_us: deadline.budget_us(),
                };
                return Err(self.diagnose(timeout));
            }
        }
    }

    /// Consumes every completion the device has written.
    pub(super) fn reap(&mut self) -> Result<(), Error> {
        let ring = self.rings.completions;
        let head = self.queue.hw(self.queue.completed);
        let tail = self.read(Register::CPLQ_TAIL)?;
        let available = tail.wrapping_sub(head);
        let outstanding = self.queue.submitted - self.queue.completed;
        if available == 0 {
            return Ok(());
        }
        if available > ring.entries || u64::from(available) > outstanding {
            return Err(Error::Protocol);
        }
        let mut buf = [0u8; REAP_BATCH * COMPLETION_DESCRIPTOR_SIZE];
        let mut index = head;
        while index != tail {
            // Contiguous up to the wrap, at most a batch.
            let slot = index & (ring.entries - 1);
            let n = tail
                .wrapping_sub(index)
                .min(ring.entries - slot)
                .min(REAP_BATCH as u32);
            let bytes = &mut buf[..n as usize * COMPLETION_DESCRIPTOR_SIZE];
            self.transport
                .read_mem(ring.slot_addr(index, COMPLETION_DESCRIPTOR_SIZE), bytes)?;
            for chunk in bytes.chunks_exact(COMPLETION_DESCRIPTOR_SIZE) {
                let mut raw = [0u8; COMPLETION_DESCRIPTOR_SIZE];
                raw.copy_from_slice(chunk);
                self.complete_one(index, &CompletionDescriptor::from_le_bytes(&raw))?;
                index = index.wrapping_add(1);
            }
        }
        self.write(Register::CPLQ_HEAD, tail)
    }

    fn complete_one(&mut self, index: u32, cpl: &CompletionDescriptor) -> Result<(), Error> {
        let phase = cpl.flags.contains(CompletionFlags::PHASE);
        if cpl.command_index != index
            || phase != expected_phase(index, self.rings.completions.entries)
        {
            return Err(Error::Protocol);
        }
        if !cpl.status.is_ok() {
            let seq = self.queue.completed;
            self.queue.record_failure(
                seq,
                Error::Command {
                    status: cpl.status,
                    detail: cpl.detail,
                    tag: cpl.tag,
                },
            );
        }
        self.queue.completed += 1;
        Ok(())
    }

    /// True once the first `fence` commands completed. Does not report failures.
    fn reached(&mut self, fence: u64) -> Result<bool, Error> {
        if fence > self.queue.completed {
            self.reap()?;
        }
        Ok(fence <= self.queue.completed)
    }

    /// True if a reset aborted the work of `fence`.
    pub(super) fn queue_was_aborted(&self, fence: Fence) -> bool {
        self.queue.was_aborted(fence.0)
    }

    /// Non-blocking fence check that reports failures (once) and aborts.
    pub(super) fn poll_fence(&mut self, fence: Fence) -> Result<bool, Error> {
        if fence.0 > self.queue.submitted {
            return Err(Error::InvalidArgument);
        }
        if self.queue.was_aborted(fence.0) {
            return Err(Error::Aborted);
        }
        if !self.reached(fence.0)? {
            return match self.check_progress(fence.0) {
                Some(e) => Err(e),
                None => Ok(false),
            };
        }
        match self.queue.take_failure(fence.0) {
            Some(e) => Err(e),
            None => Ok(true),
        }
    }

    /// For a poll of an unreached fence: reads `STATUS` at once when a
    /// command before `fence` failed (a `DEVICE_FAULT` halts the device with
    /// the rest of a multi-command op still queued), else every
    /// [`STATUS_EVERY`] polls, so a halted or reset device is reported
    /// within a few polls instead of after the caller's timeout.
    fn check_progress(&mut self, fence: u64) -> Option<Error> {
        let queue = &mut self.queue;
        queue.polls_since_status = queue.polls_since_status.wrapping_add(1);
        if !queue.failed_before(fence) && queue.polls_since_status < STATUS_EVERY {
            return None;
        }
        queue.polls_since_status = 0;
        self.stalled(fence)
    }

    /// Why the device cannot reach `fence`: `None` while it runs. A halt is
    /// reported as the unreported failure that caused it (status, detail,
    /// tag), or else as [`Error::Halted`] with `HALT_REASON`.
    fn stalled(&mut self, fence: u64) -> Option<Error> {
        let status = match self.read(Register::STATUS) {
            Ok(bits) => Status(bits),
            Err(e) => return Some(e),
        };
        if status.contains(Status::HALTED) {
            // The failing completion is written before `HALTED` is set, but
            // the last reap may have read `CPLQ_TAIL` just before both.
            if let Err(e) = self.reap() {
                return Some(e);
            }
            let halted = self.halted().unwrap_or_else(|e| e);
            return Some(self.queue.take_failure(fence).unwrap_or(halted));
        }
        if !status.contains(Status::ENABLED) {
            return Some(Error::DeviceReset);
        }
        None
    }

    /// Waits until the first `fence` commands completed, at most `budget_ns`.
    pub(super) fn wait_reached(
        &mut self,
        fence: u64,
        budget_ns: u64,
        waiting_for: WaitFor,
    ) -> Result<(), Error> {
        self.ring_doorbell()?;
        let mut deadline = Deadline::start(&mut self.clock, budget_ns);
        let mut polls = 0u32;
        while !self.reached(fence)? {
            polls = polls.wrapping_add(1);
            let timed_out = !deadline.keep_waiting(&mut self.clock);
            let check = polls.is_multiple_of(STATUS_EVERY) || self.queue.failed_before(fence);
            if !(timed_out || check) {
                continue;
            }
            let error = match self.stalled(fence) {
                Some(e) => e,
                None if timed_out => Error::Timeout {
                    waiting_for,
                    after_us: deadline.budget_us(),
                },
                None => continue,
            };
            #[cfg(feature = "defmt")]
            defmt::warn!("tensorplug-fpga: wait failed: {}", error);
            return Err(error);
        }
        Ok(())
    }

    /// Submits one raw command and rings the doorbell: the escape hatch for
    /// tests and tools. Host-memory copies (`COPY_H2D`/`COPY_D2H`) are
    /// refused. Operands are not checked against the ring area (the device
    /// checks only its memory bounds): a command that overwrites the rings
    /// breaks the queue until [`reset`](tensorplug_core::accelerator::Reset::reset).
    pub fn submit_raw(&mut self, desc: &CommandDescriptor) -> Result<Fence, Error> {
        if desc.opcode.is_copy() && desc.opcode != tensorplug_abi::device::Opcode::COPY_D2D {
            return Err(Error::Unsupported {
                feature: tensorplug_abi::device::Features::DMA.bits(),
            });
        }
        let fence = self.push(desc)?;
        self.ring_doorbell()?;
        Ok(fence)
    }
}
