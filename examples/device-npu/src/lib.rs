//! An example second device: a small "NPU" that runs `MatMul` and `Relu` on
//! f32 tensors in its own memory. It exists to prove the vendor seam: it is
//! written only against `tensorplug-core` (no FPGA code, no TensorFlow), and
//! `tensorplug-plugin-npu` turns it into `/device:NPU:0` in a few lines.
//!
//! On purpose it differs from the reference FPGA: two queues, a 1 MHz clock,
//! device addresses starting at [`BASE`], and commands executed at enqueue
//! time (so every fence is complete when it is returned). Numerics: `MatMul`
//! accumulates in f32 in `k` order (no fused multiply-add); `Relu` is exact and
//! keeps NaN.
#![no_std]

#[cfg(feature = "std")]
extern crate std;

mod alloc;
mod error;
mod exec;

pub use error::NpuError;

use alloc::Blocks;
use core::time::Duration;
use heapless::Deque;
use tensorplug_core::accelerator::{
    Accelerator, Capabilities, DeviceAddr, DeviceInfo, Drained, ErrorKind, Fence, MemoryUsage,
    OpDesc, OpKind, OpSet, QueueId, Version,
};
use tensorplug_core::event::{Event, EventKind};

/// The first device address.
pub const BASE: u64 = 0x1000_0000;
/// Ticks per second of the NPU's timestamp counter.
pub const CLOCK_HZ: u64 = 1_000_000;
/// Ordered queues.
pub const QUEUES: u8 = 2;
/// Profiling events the NPU buffers between drains.
pub const EVENT_CAPACITY: usize = 1024;

/// What the NPU runs.
pub const CAPABILITIES: Capabilities = Capabilities::f32(
    OpSet::of(&[
        OpKind::MatMul {
            transpose_a: false,
            transpose_b: false,
        },
        OpKind::Relu,
    ]),
    true,
);

/// The NPU's timestamp counter, in ticks of [`CLOCK_HZ`].
pub trait NpuClock {
    /// The current tick count.
    fn now_ticks(&mut self) -> u64;
}

/// Host time as the NPU clock (microseconds since creation).
#[cfg(feature = "std")]
pub struct StdClock(std::time::Instant);

#[cfg(feature = "std")]
impl Default for StdClock {
    fn default() -> Self {
        Self(std::time::Instant::now())
    }
}

#[cfg(feature = "std")]
impl NpuClock for StdClock {
    fn now_ticks(&mut self) -> u64 {
        self.0.elapsed().as_micros() as u64
    }
}

/// The NPU over its memory `M` with clock `C`.
pub struct Npu<M, C> {
    memory: M,
    blocks: Blocks,
    clock: C,
    issued: u64,
    profiling: bool,
    events: Deque<Event, EVENT_CAPACITY>,
    dropped: u64,
}

impl<M: AsRef<[u8]> + AsMut<[u8]>, C: NpuClock> Npu<M, C> {
    /// An NPU whose device memory is `memory`.
    pub fn new(memory: M, clock: C) -> Self {
        let size = memory.as_ref().len() as u64;
        Self {
            memory,
            blocks: Blocks::new(size),
            clock,
            issued: 0,
            profiling: false,
            events: Deque::new(),
            dropped: 0,
        }
    }

    /// The byte range of `len` bytes at `addr`, inside one live allocation.
    fn range(&self, addr: DeviceAddr, len: usize) -> Result<core::ops::Range<usize>, NpuError> {
        let offset = addr
            .0
            .checked_sub(BASE)
            .ok_or(NpuError::OutOfRange(addr.0))?;
        self.blocks.check(offset, len as u64)?;
        let start = offset as usize;
        Ok(start..start + len)
    }

    /// Completes one command: a new fence.
    fn complete(&mut self, queue: QueueId) -> Result<Fence, NpuError> {
        if queue.0 >= QUEUES {
            return Err(NpuError::NoSuchQueue(queue.0));
        }
        self.issued += 1;
        Ok(Fence(self.issued))
    }

    fn record(&mut self, kind: EventKind, queue: QueueId, op_id: u16) {
        if !self.profiling {
            return;
        }
        let event = Event::new(kind, self.clock.now_ticks(), queue.0, op_id, 0);
        if self.events.push_back(event).is_err() {
            self.dropped += 1;
        }
    }
}

impl<M: AsRef<[u8]> + AsMut<[u8]>, C: NpuClock> Accelerator for Npu<M, C> {
    type Error = NpuError;

    fn info(&self) -> DeviceInfo {
        let memory = self.memory.as_ref().len() as u64;
        DeviceInfo::new(
            "tensorplug example NPU",
            memory,
            CLOCK_HZ,
            Version::new(1, 0, 0),
            QUEUES,
        )
        .with_capabilities(CAPABILITIES)
    }

    fn allocate(&mut self, bytes: u64, align: u64) -> Result<DeviceAddr, NpuError> {
        // BASE is aligned to every power of two up to 2^28.
        self.blocks
            .allocate(bytes, align)
            .map(|offset| DeviceAddr(BASE + offset))
    }

    fn deallocate(&mut self, addr: DeviceAddr) -> Result<(), NpuError> {
        let offset = addr
            .0
            .checked_sub(BASE)
            .ok_or(NpuError::OutOfRange(addr.0))?;
        self.blocks.free(offset)
    }

    fn memory_usage(&self) -> MemoryUsage {
        MemoryUsage {
            total: self.memory.as_ref().len() as u64,
            used: self.blocks.used(),
        }
    }

    unsafe fn copy_to_device(
        &mut self,
        queue: QueueId,
        dst: DeviceAddr,
        src: *const u8,
        len: usize,
    ) -> Result<Fence, NpuError> {
        let range = self.range(dst, len)?;
        // SAFETY: the caller guarantees `src` is readable for `len` bytes.
        let src = unsafe { core::slice::from_raw_parts(src, len) };
        self.memory.as_mut()[range].copy_from_slice(src);
        self.complete(queue)
    }

    unsafe fn copy_from_device(
        &mut self,
        queue: QueueId,
        dst: *mut u8,
        src: DeviceAddr,
        len: usize,
    ) -> Result<Fence, NpuError> {
        let range = self.range(src, len)?;
        // SAFETY: the caller guarantees `dst` is writable for `len` bytes.
        let dst = unsafe { core::slice::from_raw_parts_mut(dst, len) };
        dst.copy_from_slice(&self.memory.as_ref()[range]);
        self.complete(queue)
    }

    fn copy_on_device(
        &mut self,
        queue: QueueId,
        dst: DeviceAddr,
        src: DeviceAddr,
        len: usize,
    ) -> Result<Fence, NpuError> {
        let (from, to) = (self.range(src, len)?, self.range(dst, len)?);
        self.memory.as_mut().copy_within(from, to.start);
        self.complete(queue)
    }

    fn fill(
        &mut self,
        queue: QueueId,
        dst: DeviceAddr,
        len: usize,
        pattern: u32,
    ) -> Result<Fence, NpuError> {
        let range = self.range(dst, len)?;
        let bytes = pattern.to_le_bytes();
        for (i, byte) in self.memory.as_mut()[range].iter_mut().enumerate() {
            *byte = bytes[i % 4];
        }
        self.complete(queue)
    }

    fn launch(&mut self, queue: QueueId, op: &OpDesc<'_>) -> Result<Fence, NpuError> {
        if !CAPABILITIES.ops.contains(op.kind) {
            return Err(NpuError::Unsupported(op.kind.name()));
        }
        op.validate().map_err(NpuError::Shape)?;
        let out_len = op.output.byte_len().ok_or(NpuError::Overflow)?;
        let output = self.range(op.output.addr, out_len)?;
        let mut inputs = [0..0, 0..0];
        for (slot, input) in inputs.iter_mut().zip(op.inputs) {
            *slot = self.range(input.addr, input.byte_len().ok_or(NpuError::Overflow)?)?;
        }
        self.record(EventKind::OpBegin, queue, op.op_id);
        exec::run(op, self.memory.as_mut(), &inputs[..op.inputs.len()], output);
        self.record(EventKind::OpEnd, queue, op.op_id);
        self.complete(queue)
    }

    fn poll(&mut self, fence: Fence) -> Result<bool, NpuError> {
        if fence.0 > self.issued {
            return Err(NpuError::UnknownFence(fence.0));
        }
        Ok(true)
    }

    fn wait(&mut self, fence: Fence, _timeout: Duration) -> Result<(), NpuError> {
        self.poll(fence).map(|_| ())
    }

    fn reset(&mut self) -> Result<(), NpuError> {
        // Commands run at enqueue, so nothing is pending; allocations stay.
        self.events.clear();
        Ok(())
    }

    fn timestamp(&mut self) -> Result<u64, NpuError> {
        Ok(self.clock.now_ticks())
    }

    fn set_profiling(&mut self, enabled: bool) -> Result<(), NpuError> {
        self.profiling = enabled;
        Ok(())
    }

    fn drain_events(&mut self, out: &mut [Event]) -> Result<Drained, NpuError> {
        let mut moved = 0;
        for slot in out.iter_mut() {
            match self.events.pop_front() {
                Some(event) => *slot = event,
                None => break,
            }
            moved += 1;
        }
        let dropped = core::mem::take(&mut self.dropped);
        Ok(Drained {
            events: moved,
            dropped,
        })
    }
}

/// [`ErrorKind`] of every error, for the trait.
impl tensorplug_core::accelerator::Error for NpuError {
    fn kind(&self) -> ErrorKind {
        self.kind()
    }
}
