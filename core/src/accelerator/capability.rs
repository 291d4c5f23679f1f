//! The device traits, one per capability (the embedded-hal pattern): a
//! driver implements what its device has, and [`Accelerator`] is every
//! device that has them all. [`Reset`] and [`Profiling`] have defaults, so
//! a synchronous device without a clock writes `impl Reset for X {}` and
//! `impl Profiling for X {}`.

use super::device_info::DeviceInfo;
use super::error::Error;
use super::op::OpDesc;
use super::types::{DeviceAddr, Drained, Fence, MemoryUsage, QueueId};
use crate::event::Event;
use core::time::Duration;

/// What every capability shares: the error type and the static facts.
pub trait Device {
    /// The driver's error type.
    type Error: Error;
    /// Static facts about the device, its capabilities among them.
    fn info(&self) -> DeviceInfo;
}

/// Device memory.
pub trait Memory: Device {
    /// Allocates `bytes` of device memory aligned to `align` (a power of two).
    fn allocate(&mut self, bytes: u64, align: u64) -> Result<DeviceAddr, Self::Error>;
    /// Frees memory returned by [`Memory::allocate`].
    fn deallocate(&mut self, addr: DeviceAddr) -> Result<(), Self::Error>;
    /// Total and used device memory, in bytes.
    fn memory_usage(&self) -> MemoryUsage;
}

/// Copies and fills on ordered queues, and the fences that complete them
/// (which [`Launch::launch`] shares).
pub trait Transfer: Device {
    /// Enqueues a host-to-device copy of `len` bytes from `src`.
    ///
    /// # Safety
    /// `src` must be readable for `len` bytes and stay valid and unchanged
    /// until the returned fence completes or [`Reset::reset`] returns.
    unsafe fn copy_to_device(
        &mut self,
        queue: QueueId,
        dst: DeviceAddr,
        src: *const u8,
        len: usize,
    ) -> Result<Fence, Self::Error>;
    /// Enqueues a device-to-host copy of `len` bytes into `dst`.
    ///
    /// # Safety
    /// `dst` must be writable for `len` bytes and stay valid (and not be
    /// read) until the returned fence completes or [`Reset::reset`]
    /// returns.
    unsafe fn copy_from_device(
        &mut self,
        queue: QueueId,
        dst: *mut u8,
        src: DeviceAddr,
        len: usize,
    ) -> Result<Fence, Self::Error>;
    /// Enqueues a device-to-device copy.
    fn copy_on_device(
        &mut self,
        queue: QueueId,
        dst: DeviceAddr,
        src: DeviceAddr,
        len: usize,
    ) -> Result<Fence, Self::Error>;
    /// Enqueues a fill of `len` bytes with the little-endian bytes of
    /// `pattern` repeated (byte `i` is `pattern.to_le_bytes()[i % 4]`).
    fn fill(
        &mut self,
        queue: QueueId,
        dst: DeviceAddr,
        len: usize,
        pattern: u32,
    ) -> Result<Fence, Self::Error>;
    /// [`copy_on_device`](Self::copy_on_device) on behalf of the profiler's
    /// op `op_id` ([`OpDesc::op_id`]): a device that records events tags
    /// the copy's with it. The default drops the tag.
    fn copy_on_device_tagged(
        &mut self,
        queue: QueueId,
        dst: DeviceAddr,
        src: DeviceAddr,
        len: usize,
        op_id: u16,
    ) -> Result<Fence, Self::Error> {
        let _ = op_id;
        self.copy_on_device(queue, dst, src, len)
    }
    /// [`fill`](Self::fill) on behalf of the profiler's op `op_id`, as
    /// [`copy_on_device_tagged`](Self::copy_on_device_tagged).
    fn fill_tagged(
        &mut self,
        queue: QueueId,
        dst: DeviceAddr,
        len: usize,
        pattern: u32,
        op_id: u16,
    ) -> Result<Fence, Self::Error> {
        let _ = op_id;
        self.fill(queue, dst, len, pattern)
    }
    /// True once `fence` has completed. Never blocks.
    fn poll(&mut self, fence: Fence) -> Result<bool, Self::Error>;
    /// Blocks until `fence` completes, or fails with
    /// [`ErrorKind::Timeout`](super::ErrorKind::Timeout).
    fn wait(&mut self, fence: Fence, timeout: Duration) -> Result<(), Self::Error>;
}

/// Runs ops.
pub trait Launch: Device {
    /// Enqueues one op. Implementations call [`OpDesc::validate`] first and
    /// refuse an op they did not declare with
    /// [`ErrorKind::Unsupported`](super::ErrorKind::Unsupported).
    fn launch(&mut self, queue: QueueId, op: &OpDesc<'_>) -> Result<Fence, Self::Error>;

    /// Stores a device program ([`crate::program`]) for
    /// [`run_program`](Self::run_program), if the device keeps programs
    /// itself, and returns its name. The default keeps none (`Ok(None)`):
    /// the host then runs a program's commands through
    /// [`launch`](Self::launch), one by one.
    fn load_program(&mut self, program: &[u8]) -> Result<Option<u32>, Self::Error> {
        let _ = program;
        Ok(None)
    }

    /// Enqueues a run of the stored program `program` on `queue` with one
    /// submit: `slots` holds one device address per binding slot, `arena`
    /// the scratch arena's. `None` from a device that keeps no programs
    /// (the default).
    fn run_program(
        &mut self,
        queue: QueueId,
        program: u32,
        slots: &[DeviceAddr],
        arena: DeviceAddr,
    ) -> Option<Result<Fence, Self::Error>> {
        let _ = (queue, program, slots, arena);
        None
    }
}

/// Recovery after a fault or a timeout.
pub trait Reset: Device {
    /// Brings the device back to a known state. When it returns, the device
    /// no longer touches any host buffer handed to an earlier copy, and all
    /// outstanding fences have failed.
    ///
    /// The default does nothing, which is right only for a device whose
    /// every enqueue has completed when it returns (no work in flight). A
    /// device with queues in flight must override it.
    fn reset(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// A device clock and hardware profiling events. The defaults are a device
/// without them: declare `profiling: false` in its capabilities, and the
/// profiler never starts a session on it.
pub trait Profiling: Device {
    /// The device clock, in ticks of [`DeviceInfo::clock_hz`]. The default
    /// reads 0.
    fn timestamp(&mut self) -> Result<u64, Self::Error> {
        Ok(0)
    }
    /// Turns the device's hardware event recording on or off. The default
    /// records nothing either way.
    fn set_profiling(&mut self, enabled: bool) -> Result<(), Self::Error> {
        let _ = enabled;
        Ok(())
    }
    /// Moves recorded device events (timestamps in device ticks) into `out`.
    /// The default has none.
    fn drain_events(&mut self, out: &mut [Event]) -> Result<Drained, Self::Error> {
        let _ = out;
        Ok(Drained::default())
    }
}

/// A device tensorplug can drive: every capability. Implemented for every
/// type that has them; see the module docs for the semantics.
pub trait Accelerator: Memory + Transfer + Launch + Reset + Profiling {
    /// Copies `src` to the device and waits for it. On a failed wait the
    /// device is reset, so `src` is never read after this returns.
    fn write_blocking(
        &mut self,
        queue: QueueId,
        dst: DeviceAddr,
        src: &[u8],
        timeout: Duration,
    ) -> Result<(), Self::Error> {
        // SAFETY: `src` outlives the wait; on failure `reset` stops all access.
        let fence = unsafe { self.copy_to_device(queue, dst, src.as_ptr(), src.len())? };
        self.wait_or_reset(fence, timeout)
    }

    /// Copies device memory into `dst` and waits for it. On a failed wait the
    /// device is reset, so `dst` is never written after this returns.
    fn read_blocking(
        &mut self,
        queue: QueueId,
        dst: &mut [u8],
        src: DeviceAddr,
        timeout: Duration,
    ) -> Result<(), Self::Error> {
        // SAFETY: `dst` outlives the wait; on failure `reset` stops all access.
        let fence = unsafe { self.copy_from_device(queue, dst.as_mut_ptr(), src, dst.len())? };
        self.wait_or_reset(fence, timeout)
    }

    /// Waits for `fence`; on any failure resets the device and returns the
    /// wait's error (a failed reset is reported instead, being worse).
    fn wait_or_reset(&mut self, fence: Fence, timeout: Duration) -> Result<(), Self::Error> {
        match self.wait(fence, timeout) {
            Ok(()) => Ok(()),
            Err(wait_error) => {
                self.reset()?;
                Err(wait_error)
            }
        }
    }
}

impl<T: Memory + Transfer + Launch + Reset + Profiling> Accelerator for T {}
