//! The capability traits for `Driver` (so it is an `Accelerator`):
//! allocation, copies over the transport's bulk path, queued
//! fills/copies/ops, fences, profiling and reset.

use core::time::Duration;

use tensorplug_abi::device::{CommandDescriptor, CommandFlags, Features, Opcode, Register};
use tensorplug_core::accelerator::prelude::*;
use tensorplug_core::accelerator::{
    Capabilities, DType, DeviceAddr, DeviceInfo, Drained, Fence, MemoryUsage, OpDesc, QueueId,
    Version,
};
use tensorplug_core::event::Event;

use super::{Clock, DeviceFacts, Driver, Error, WaitFor, lower};
use crate::transport::Transport;

/// The name [`Device::info`] reports.
pub const DEVICE_NAME: &str = "tensorplug reference FPGA";

impl<T: Transport, C: Clock, const ALLOCS: usize> Driver<T, C, ALLOCS> {
    /// Refuses `addr..addr + len` unless it lies in the allocatable heap
    /// (so no command or copy can touch the rings).
    fn check_range(&self, addr: u64, len: u64) -> Result<(), Error> {
        let end = addr.checked_add(len);
        let heap_end = self.rings.commands.base;
        match end {
            Some(end) if addr >= super::HEAP_START && end <= heap_end => Ok(()),
            _ => Err(Error::OutOfRange { addr, len }),
        }
    }

    /// The command every lowered command starts from.
    pub(super) fn base_command(&self, queue: QueueId, tag: u16) -> CommandDescriptor {
        let mut base = CommandDescriptor::new(Opcode::NOP, tag, queue.0);
        if !self.profiling {
            base.flags = CommandFlags::NO_EVENTS;
        }
        base
    }

    /// Queues one command and rings the doorbell.
    fn enqueue(&mut self, desc: &CommandDescriptor) -> Result<Fence, Error> {
        let fence = self.push(desc)?;
        self.ring_doorbell()?;
        Ok(fence)
    }

    /// Bulk-path copies bypass the queue, so they first wait (bounded) for
    /// every queued command; the copy is done when this returns.
    fn wait_idle(&mut self) -> Result<Fence, Error> {
        let all = self.queue.submitted;
        let budget = self.config.idle_timeout_us.saturating_mul(1000);
        self.wait_reached(all, budget, WaitFor::Idle)?;
        Ok(Fence(all))
    }

    /// The fence of everything submitted so far.
    const fn current_fence(&self) -> Fence {
        Fence(self.queue.submitted)
    }
}

/// What a device declares: its ops, on f32, and on int8 with any int8
/// feature.
fn capabilities(facts: &DeviceFacts) -> Capabilities {
    let caps = Capabilities::f32(facts.ops, true);
    let int8 = Features::INT8.0 | Features::INT8_ACTIVATIONS.0 | Features::INT8_MUL.0;
    let int8 = facts.features.0 & int8 != 0;
    match int8 {
        true => caps.with_dtype(DType::I8),
        false => caps,
    }
}

impl<T: Transport, C: Clock, const ALLOCS: usize> Device for Driver<T, C, ALLOCS> {
    type Error = Error;
    fn info(&self) -> DeviceInfo {
        let abi = self.facts.abi;
        DeviceInfo::new(
            DEVICE_NAME,
            self.heap.total(),
            u64::from(self.facts.timestamp_hz),
            Version::new(abi.major.into(), abi.minor.into(), abi.patch.into()),
            1,
        )
        .with_capabilities(capabilities(&self.facts))
    }
}

impl<T: Transport, C: Clock, const ALLOCS: usize> Memory for Driver<T, C, ALLOCS> {
    fn allocate(&mut self, bytes: u64, align: u64) -> Result<DeviceAddr, Error> {
        self.heap.allocate(bytes, align).map(DeviceAddr)
    }
    fn deallocate(&mut self, addr: DeviceAddr) -> Result<(), Error> {
        self.heap.deallocate(addr.0)
    }
    fn memory_usage(&self) -> MemoryUsage {
        MemoryUsage {
            total: self.heap.total(),
            used: self.heap.used(),
        }
    }
}

impl<T: Transport, C: Clock, const ALLOCS: usize> Transfer for Driver<T, C, ALLOCS> {
    unsafe fn copy_to_device(
        &mut self,
        queue: QueueId,
        dst: DeviceAddr,
        src: *const u8,
        len: usize,
    ) -> Result<Fence, Error> {
        if len == 0 {
            return Ok(self.current_fence());
        }
        self.check_range(dst.0, len as u64)?;
        // SAFETY: the caller guarantees `src` is readable for `len` bytes
        // until the fence completes; both paths finish before returning.
        let data = unsafe { core::slice::from_raw_parts(src, len) };
        if let Some(window) = self.dma_window() {
            return self.dma_to_device(queue, window, dst.0, data);
        }
        let fence = self.wait_idle()?;
        self.transport.write_mem(dst.0, data)?;
        Ok(fence)
    }
    unsafe fn copy_from_device(
        &mut self,
        queue: QueueId,
        dst: *mut u8,
        src: DeviceAddr,
        len: usize,
    ) -> Result<Fence, Error> {
        if len == 0 {
            return Ok(self.current_fence());
        }
        self.check_range(src.0, len as u64)?;
        // SAFETY: the caller guarantees `dst` is writable for `len` bytes
        // and not read until the fence completes; both paths finish first.
        let buf = unsafe { core::slice::from_raw_parts_mut(dst, len) };
        if let Some(window) = self.dma_window() {
            return self.dma_from_device(queue, window, src.0, buf);
        }
        let fence = self.wait_idle()?;
        self.transport.read_mem(src.0, buf)?;
        Ok(fence)
    }
    fn copy_on_device(
        &mut self,
        queue: QueueId,
        dst: DeviceAddr,
        src: DeviceAddr,
        len: usize,
    ) -> Result<Fence, Error> {
        self.copy_on_device_tagged(queue, dst, src, len, 0)
    }
    fn copy_on_device_tagged(
        &mut self,
        queue: QueueId,
        dst: DeviceAddr,
        src: DeviceAddr,
        len: usize,
        op_id: u16,
    ) -> Result<Fence, Error> {
        if len == 0 {
            return Ok(self.current_fence());
        }
        self.check_range(src.0, len as u64)?;
        self.check_range(dst.0, len as u64)?;
        self.enqueue(&CommandDescriptor {
            src0: src.0,
            dst: dst.0,
            len: len as u64,
            opcode: Opcode::COPY_D2D,
            ..self.base_command(queue, op_id)
        })
    }
    fn fill(
        &mut self,
        queue: QueueId,
        dst: DeviceAddr,
        len: usize,
        pattern: u32,
    ) -> Result<Fence, Error> {
        self.fill_tagged(queue, dst, len, pattern, 0)
    }
    fn fill_tagged(
        &mut self,
        queue: QueueId,
        dst: DeviceAddr,
        len: usize,
        pattern: u32,
        op_id: u16,
    ) -> Result<Fence, Error> {
        if len == 0 {
            return Ok(self.current_fence());
        }
        self.check_range(dst.0, len as u64)?;
        self.enqueue(&CommandDescriptor {
            dst: dst.0,
            len: len as u64,
            imm: pattern,
            opcode: Opcode::FILL,
            ..self.base_command(queue, op_id)
        })
    }
    fn poll(&mut self, fence: Fence) -> Result<bool, Error> {
        self.poll_fence(fence)
    }
    fn wait(&mut self, fence: Fence, timeout: Duration) -> Result<(), Error> {
        let budget = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX);
        if fence.0 <= self.queue.submitted && !self.queue_was_aborted(fence) {
            self.wait_reached(fence.0, budget, WaitFor::Completion)?;
        }
        self.poll_fence(fence).map(drop)
    }
}

impl<T: Transport, C: Clock, const ALLOCS: usize> Launch for Driver<T, C, ALLOCS> {
    fn launch(&mut self, queue: QueueId, op: &OpDesc<'_>) -> Result<Fence, Error> {
        op.validate()?;
        if !self.facts.ops.contains(op.kind) {
            return Err(Error::Undeclared { op: op.kind.name() });
        }
        for tensor in op.inputs.iter().chain([&op.output]) {
            let bytes = tensor.byte_len().ok_or(Error::InvalidArgument)?;
            if bytes > 0 {
                self.check_range(tensor.addr.0, bytes as u64)?;
            }
        }
        let base = self.base_command(queue, op.op_id);
        let abi = lower::Abi {
            catalogue: self.facts.features.contains(Features::CATALOGUE),
            add_i8_broadcast: self.facts.abi.minor >= 9 || self.facts.abi.major > 1,
            records: self.facts.features.contains(Features::RECORDS),
        };
        lower::lower(op, base, abi, &mut |desc| self.push(desc).map(drop))?;
        self.ring_doorbell()?;
        Ok(self.current_fence())
    }
}

impl<T: Transport, C: Clock, const ALLOCS: usize> Reset for Driver<T, C, ALLOCS> {
    fn reset(&mut self) -> Result<(), Error> {
        self.reset_and_bring_up()
    }
}

impl<T: Transport, C: Clock, const ALLOCS: usize> Profiling for Driver<T, C, ALLOCS> {
    fn timestamp(&mut self) -> Result<u64, Error> {
        // A device latches HI when LO is read, so (LO, then HI) agree. A
        // memory-backed BAR (the model in shared memory) cannot latch: it
        // publishes HI before LO, so a carry between our two reads would pair
        // an old LO with a new HI. HI read before and after tells; then the
        // LO read again belongs to the new HI.
        let hi_before = self.read(Register::TIMESTAMP_HI)?;
        let mut lo = self.read(Register::TIMESTAMP_LO)?;
        let hi = self.read(Register::TIMESTAMP_HI)?;
        if hi != hi_before {
            lo = self.read(Register::TIMESTAMP_LO)?;
        }
        Ok(u64::from(hi) << 32 | u64::from(lo))
    }
    fn set_profiling(&mut self, enabled: bool) -> Result<(), Error> {
        if enabled && self.rings.events.entries == 0 {
            return Err(Error::Unsupported {
                feature: Features::EVENT_RING.bits(),
            });
        }
        self.profiling = enabled;
        Ok(())
    }
    fn drain_events(&mut self, out: &mut [Event]) -> Result<Drained, Error> {
        self.drain(out)
    }
}
