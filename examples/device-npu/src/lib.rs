//! An example second device: a small "NPU" that runs `MatMul`, `Relu` and
//! its own op `LeakyRelu` ([`LEAKY_RELU`], declared here in the NPU's namespace) on
//! f32 tensors in its own memory. It exists to prove the vendor seam: it is
//! written only against `tensorplug-core` (no FPGA code, no TensorFlow), and
//! `tensorplug-plugin-npu` turns it into `/device:NPU:0` in a few lines.
//!
//! [`Npu<M, C>`](Npu) is generic over its memory `M` (a `Vec<u8>` or
//! `Box<[u8]>` on the host, a `&'static mut [u8; N]` on an MCU) and its clock
//! `C` ([`NpuClock`]; [`StdClock`] with the `std` feature). The `no_std` path
//! never allocates.
//!
//! # How it differs from the reference FPGA, on purpose
//! - **Two queues** ([`QUEUES`]), a **1 MHz clock** ([`CLOCK_HZ`]).
//! - **Device addresses** are `BASE + offset` with [`BASE`] `= 0x1000_0000`,
//!   so `base + offset` arithmetic is exercised; alignment applies to the
//!   device address.
//! - **Allocator**: first fit over a sorted table of up to
//!   [`MAX_BLOCKS`] live blocks; `deallocate` really frees.
//! - **Synchronous execution**: each command runs when it is enqueued, so
//!   its fence has completed when it is returned. Fences still increase (one
//!   counter for both queues); `poll`/`wait` on a fence never issued fail with
//!   `InvalidArgument`.
//! - **`reset()`** has nothing pending to fail. It keeps allocations, memory
//!   contents, the fence counter, recorded events and the profiling switch:
//!   nothing the device did is lost.
//!
//! Every command checks its queue, its descriptor (`OpDesc::validate`) and
//! that each byte range lies inside one live allocation before touching
//! memory; bad input is an error (mostly `InvalidArgument`), never a panic.
//!
//! # Numerics
//! - `MatMul`: each output element starts at `+0.0` and adds `a[i,p]·b[p,j]`
//!   for `p = 0, 1, …, k-1`, every product and sum rounded to f32 (f32
//!   accumulation, no fused multiply-add), in naive i-k-j loop order.
//! - `Relu`: `max(x, 0)`, exact; NaN stays NaN (as in TensorFlow).
//!
//! # Profiling
//! With `set_profiling(true)` every launch records `OpBegin`/`OpEnd` events
//! (the launch's `op_id` and queue, clock ticks) into a ring of
//! [`EVENT_CAPACITY`] from `tensorplug_core::ring`; a full ring drops events
//! and the next drain reports them in `Drained::dropped`. Copies and fills
//! record nothing.
//!
//! # Example
//! ```
//! use core::time::Duration;
//! use tensorplug_core::accelerator::*;
//! use tensorplug_device_npu::{BASE, Npu, NpuClock};
//!
//! struct Ticks(u64); // an MCU would read a hardware timer
//! impl NpuClock for Ticks {
//!     fn now_ticks(&mut self) -> u64 { self.0 += 1; self.0 }
//! }
//!
//! let mut npu = Npu::new([0u8; 1024], Ticks(0));
//! let (q, wait) = (QueueId(0), Duration::from_millis(1));
//! let x = npu.allocate(8, 64).unwrap();
//! assert_eq!(x, DeviceAddr(BASE));
//! let bytes: Vec<u8> = [-2.0f32, 3.0].iter().flat_map(|v| v.to_le_bytes()).collect();
//! npu.write_blocking(q, x, &bytes, wait).unwrap();
//! let inputs = [TensorDesc::new(x, DType::F32, Shape::new(&[2]).unwrap())];
//! let relu = OpDesc { kind: OpKind::Unary(Unary::RELU), inputs: &inputs, output: inputs[0], op_id: 1 };
//! let fence = npu.launch(q, &relu).unwrap();
//! assert!(npu.poll(fence).unwrap()); // ran at enqueue
//! let mut out = [0u8; 8];
//! npu.read_blocking(q, &mut out, x, wait).unwrap();
//! assert_eq!(out[4..], 3.0f32.to_le_bytes());
//!
//! let softmax = OpDesc { kind: OpKind::Softmax, ..relu };
//! assert_eq!(npu.launch(q, &softmax).unwrap_err().kind(), ErrorKind::Unsupported);
//! ```
#![no_std]

#[cfg(feature = "std")]
extern crate std;

mod allocator;
mod clock;
mod consts;
mod error;
mod events;
mod exec;
pub mod leaky_relu;

pub use allocator::MAX_BLOCKS;
#[cfg(feature = "std")]
pub use clock::StdClock;
pub use clock::{CLOCK_HZ, NpuClock};
pub use consts::{BASE, QUEUES};
pub use error::NpuError;
pub use events::EVENT_CAPACITY;
pub use leaky_relu::{LEAKY_RELU, NAMESPACE, leaky_relu};

use allocator::Blocks;
use core::ops::Range;
use core::time::Duration;
use events::EventLog;
use tensorplug_core::accelerator::prelude::*;
use tensorplug_core::accelerator::{
    Capabilities, DType, DeviceAddr, DeviceInfo, Drained, Fence, MemoryUsage, OpDecl, OpDesc,
    OpKind, OpSet, QueueId, TensorDesc, Unary, Version,
};
use tensorplug_core::event::{Event, EventKind};

/// What the NPU runs: MatMul (any transposes) and Relu, f32, with
/// profiling, and its own op [`LEAKY_RELU`].
pub const CAPABILITIES: Capabilities = Capabilities::f32(
    OpSet::of(&[
        OpKind::MatMul {
            transpose_a: false,
            transpose_b: false,
        },
        OpKind::Unary(Unary::RELU),
    ]),
    true,
)
.with_vendor_ops(&VENDOR_OPS);

/// The NPU's own ops.
pub static VENDOR_OPS: [&OpDecl; 1] = [&LEAKY_RELU];

/// The NPU over its memory `M` with clock `C`.
pub struct Npu<M, C> {
    memory: M,
    blocks: Blocks,
    clock: C,
    /// The last fence handed out.
    issued: u64,
    events: EventLog,
}

impl<M: AsRef<[u8]> + AsMut<[u8]>, C: NpuClock> Npu<M, C> {
    /// An NPU whose device memory is `memory` (all of it allocatable).
    pub fn new(memory: M, clock: C) -> Self {
        let size = memory.as_ref().len() as u64;
        Self {
            memory,
            blocks: Blocks::new(BASE, size),
            clock,
            issued: 0,
            events: EventLog::new(),
        }
    }

    /// Memory offset of `addr`.
    fn offset(addr: DeviceAddr) -> Result<u64, NpuError> {
        addr.0.checked_sub(BASE).ok_or(NpuError::OutOfRange(addr.0))
    }

    /// The bytes of `len` at `addr`, which must lie inside one live allocation.
    fn range(&self, addr: DeviceAddr, len: usize) -> Result<Range<usize>, NpuError> {
        let offset = Self::offset(addr)?;
        self.blocks.check(offset, len as u64)?;
        // Live blocks lie inside `memory`, whose length is a usize.
        let start = offset as usize;
        Ok(start..start + len)
    }

    /// The bytes of `tensor`.
    /// A tensor of no bytes needs no allocation: TF (and the bridge) give
    /// an empty tensor address 0.
    fn tensor_range(&self, tensor: &TensorDesc) -> Result<Range<usize>, NpuError> {
        match tensor.byte_len().ok_or(NpuError::Overflow)? {
            0 => Ok(0..0),
            len => self.range(tensor.addr, len),
        }
    }

    fn check_queue(queue: QueueId) -> Result<(), NpuError> {
        if queue.0 < QUEUES {
            Ok(())
        } else {
            Err(NpuError::NoSuchQueue(queue.0))
        }
    }

    /// The fence of a command that has just run.
    fn complete(&mut self) -> Fence {
        self.issued += 1;
        Fence(self.issued)
    }

    fn record(&mut self, kind: EventKind, queue: QueueId, op_id: u16) {
        let clock = &mut self.clock;
        self.events
            .record(|| Event::new(kind, clock.now_ticks(), queue.0, op_id, 0));
    }
}

fn overlap(a: &Range<usize>, b: &Range<usize>) -> bool {
    a.start < b.end && b.start < a.end
}

impl<M: AsRef<[u8]> + AsMut<[u8]>, C: NpuClock> Device for Npu<M, C> {
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
}

impl<M: AsRef<[u8]> + AsMut<[u8]>, C: NpuClock> Memory for Npu<M, C> {
    fn allocate(&mut self, bytes: u64, align: u64) -> Result<DeviceAddr, NpuError> {
        let offset = self.blocks.allocate(bytes, align)?;
        Ok(DeviceAddr(BASE + offset))
    }
    fn deallocate(&mut self, addr: DeviceAddr) -> Result<(), NpuError> {
        self.blocks.free(Self::offset(addr)?)
    }
    fn memory_usage(&self) -> MemoryUsage {
        MemoryUsage {
            total: self.memory.as_ref().len() as u64,
            used: self.blocks.used(),
        }
    }
}

impl<M: AsRef<[u8]> + AsMut<[u8]>, C: NpuClock> Transfer for Npu<M, C> {
    unsafe fn copy_to_device(
        &mut self,
        queue: QueueId,
        dst: DeviceAddr,
        src: *const u8,
        len: usize,
    ) -> Result<Fence, NpuError> {
        Self::check_queue(queue)?;
        let range = self.range(dst, len)?;
        // SAFETY: the caller guarantees `src` is readable for `len` bytes.
        let src = unsafe { core::slice::from_raw_parts(src, len) };
        self.memory.as_mut()[range].copy_from_slice(src);
        Ok(self.complete())
    }
    unsafe fn copy_from_device(
        &mut self,
        queue: QueueId,
        dst: *mut u8,
        src: DeviceAddr,
        len: usize,
    ) -> Result<Fence, NpuError> {
        Self::check_queue(queue)?;
        let range = self.range(src, len)?;
        // SAFETY: the caller guarantees `dst` is writable for `len` bytes.
        let dst = unsafe { core::slice::from_raw_parts_mut(dst, len) };
        dst.copy_from_slice(&self.memory.as_ref()[range]);
        Ok(self.complete())
    }
    fn copy_on_device(
        &mut self,
        queue: QueueId,
        dst: DeviceAddr,
        src: DeviceAddr,
        len: usize,
    ) -> Result<Fence, NpuError> {
        Self::check_queue(queue)?;
        let (from, to) = (self.range(src, len)?, self.range(dst, len)?);
        self.memory.as_mut().copy_within(from, to.start);
        Ok(self.complete())
    }
    fn fill(
        &mut self,
        queue: QueueId,
        dst: DeviceAddr,
        len: usize,
        pattern: u32,
    ) -> Result<Fence, NpuError> {
        Self::check_queue(queue)?;
        let range = self.range(dst, len)?;
        let bytes = pattern.to_le_bytes();
        for (i, byte) in self.memory.as_mut()[range].iter_mut().enumerate() {
            *byte = bytes[i % 4];
        }
        Ok(self.complete())
    }
    fn poll(&mut self, fence: Fence) -> Result<bool, NpuError> {
        if fence.0 > self.issued {
            return Err(NpuError::UnknownFence(fence.0));
        }
        Ok(true)
    }
    fn wait(&mut self, fence: Fence, _timeout: Duration) -> Result<(), NpuError> {
        self.poll(fence).map(|_done| ())
    }
}

impl<M: AsRef<[u8]> + AsMut<[u8]>, C: NpuClock> Launch for Npu<M, C> {
    fn launch(&mut self, queue: QueueId, op: &OpDesc<'_>) -> Result<Fence, NpuError> {
        Self::check_queue(queue)?;
        if !CAPABILITIES.supports(op.kind, DType::F32) {
            return Err(NpuError::Unsupported(op.kind.name()));
        }
        op.validate().map_err(NpuError::Shape)?;
        // MatMul and Relu take at most two inputs (checked by `validate`).
        let mut inputs = [0..0, 0..0];
        for (range, input) in inputs.iter_mut().zip(op.inputs) {
            *range = self.tensor_range(input)?;
        }
        let inputs = &inputs[..op.inputs.len()];
        let output = self.tensor_range(&op.output)?;
        let is_matmul = matches!(op.kind, OpKind::MatMul { .. });
        if is_matmul && inputs.iter().any(|input| overlap(input, &output)) {
            return Err(NpuError::OutputOverlapsInput);
        }
        self.record(EventKind::OpBegin, queue, op.op_id);
        exec::run(op, self.memory.as_mut(), inputs, output);
        self.record(EventKind::OpEnd, queue, op.op_id);
        Ok(self.complete())
    }
}

/// Commands run at enqueue: no fence is outstanding, no host buffer is
/// held, so the default reset is right. Allocations, fences and recorded
/// events stay.
impl<M: AsRef<[u8]> + AsMut<[u8]>, C: NpuClock> Reset for Npu<M, C> {}

impl<M: AsRef<[u8]> + AsMut<[u8]>, C: NpuClock> Profiling for Npu<M, C> {
    fn timestamp(&mut self) -> Result<u64, NpuError> {
        Ok(self.clock.now_ticks())
    }
    fn set_profiling(&mut self, enabled: bool) -> Result<(), NpuError> {
        self.events.set_enabled(enabled);
        Ok(())
    }
    fn drain_events(&mut self, out: &mut [Event]) -> Result<Drained, NpuError> {
        Ok(self.events.drain(out))
    }
}
