//! Copies in every direction (stream-ordered and synchronous) and fills.
//!
//! Stream-ordered calls enqueue and return; TF keeps host buffers alive
//! until the stream's work completes. Synchronous calls first wait for all
//! earlier work of the device (as CUDA's synchronous copies do), then copy
//! and wait; on a failed wait the device is reset, so the caller's buffer is
//! never touched after the call returns.

use super::handles;
use crate::error::{Error, Result};
use crate::ffi;
use crate::host_spans::{HostSpan, SpanKind, arg32};
use crate::registry::{Access, Device, Range, Ranges, Stream};
use std::ffi::c_void;
use tensorplug_abi::tf::*;
use tensorplug_core::accelerator::{DeviceAddr, QueueId};

/// One copy or fill, described in device terms.
#[derive(Clone, Copy, Debug)]
enum Transfer {
    ToDevice { dst: DeviceAddr, src: *const u8 },
    FromDevice { dst: *mut u8, src: DeviceAddr },
    OnDevice { dst: DeviceAddr, src: DeviceAddr },
    Fill { dst: DeviceAddr, pattern: u32 },
}

impl Transfer {
    /// The device memory it reads and writes (`len` bytes each).
    fn access(self, len: usize) -> Access {
        let range = |addr| Range::new(addr, len as u64);
        match self {
            Self::ToDevice { dst, .. } | Self::Fill { dst, .. } => Access {
                reads: Ranges::default(),
                writes: [range(dst)].into(),
            },
            Self::FromDevice { src, .. } => Access {
                reads: [range(src)].into(),
                writes: Ranges::default(),
            },
            Self::OnDevice { dst, src } => Access {
                reads: [range(src)].into(),
                writes: [range(dst)].into(),
            },
        }
    }

    /// Enqueues the transfer of `len` bytes on `queue`.
    ///
    /// # Safety
    /// Host pointers are valid for `len` bytes until the fence completes.
    unsafe fn submit(
        self,
        accel: &mut crate::devices::DynAccelerator,
        queue: QueueId,
        len: usize,
    ) -> Result<tensorplug_core::accelerator::Fence, crate::devices::DeviceError> {
        match self {
            // SAFETY: caller's contract.
            Self::ToDevice { dst, src } => unsafe { accel.copy_to_device(queue, dst, src, len) },
            // SAFETY: caller's contract.
            Self::FromDevice { dst, src } => unsafe {
                accel.copy_from_device(queue, dst, src, len)
            },
            Self::OnDevice { dst, src } => accel.copy_on_device(queue, dst, src, len),
            Self::Fill { dst, pattern } => accel.fill(queue, dst, len, pattern),
        }
    }
}

fn host_ptr<T>(ptr: *const T, what: &str) -> Result<()> {
    if ptr.is_null() {
        Err(Error::InvalidArgument(format!("{what} is null")))
    } else {
        Ok(())
    }
}

/// # Safety
/// `mem` is null or TF's valid `SP_DeviceMemoryBase`.
unsafe fn device_range(
    device: &Device,
    mem: *const SP_DeviceMemoryBase,
    size: u64,
    what: &str,
) -> Result<DeviceAddr> {
    // SAFETY: caller's contract.
    let opaque = unsafe { handles::memory_opaque(mem, what) }?;
    device.device_addr(opaque, size, what)
}

/// Enqueues on `stream` (0 bytes: nothing to do).
///
/// # Safety
/// Host pointers in `transfer` stay valid until the stream's work completes.
unsafe fn on_stream(stream: &Stream, transfer: Transfer, size: u64) -> Result<()> {
    let len = handles::byte_len(size)?;
    if len == 0 {
        return Ok(());
    }
    let _span = HostSpan::begin(SpanKind::Copy, stream.device().ordinal(), arg32(size));
    let queue = stream.queue();
    if matches!(
        transfer,
        Transfer::ToDevice { .. } | Transfer::FromDevice { .. }
    ) {
        wait_before_host_copy(stream)?;
    }
    // SAFETY: caller's contract.
    stream.enqueue(transfer.access(len), |accel| unsafe {
        transfer.submit(accel, queue, len)
    })?;
    Ok(())
}

/// The driver copies host memory only once the device is idle (both copy
/// paths are synchronous, `docs/driver.md`), so wait for all earlier work
/// here, without the device lock: other streams keep enqueueing and the
/// completion thread keeps polling meanwhile. A failure this wait finds is
/// returned, naming the op; one already handled is not reported again.
fn wait_before_host_copy(stream: &Stream) -> Result<()> {
    stream
        .device()
        .core()
        .wait_until_idle("work before a host-device copy")
}

/// Waits for the work queued so far on `stream`'s device queue, then
/// returns the failure of the op that left `src` (`size` bytes) invalid,
/// naming it, even if an earlier wait found it: kernels do not wait for
/// their ops, and a device-to-host copy is where TF reads their results
/// and checks the status (a failed event only aborts TF). An op failure
/// the wait finds whose results are elsewhere is not this copy's: the
/// result of another op copies fine. The stream stays usable: the wait
/// resets a faulted device.
fn report_earlier_failures(stream: &Stream, src: DeviceAddr, size: u64) -> Result<()> {
    let core = stream.device().core();
    match stream.wait_queued("work before a device-to-host copy") {
        Err(error) if !core.is_incident(&error) => return Err(error),
        _ => {}
    }
    core.poisoned(src, size).map_or(Ok(()), Err)
}

/// Runs after all earlier device work and waits for completion.
///
/// # Safety
/// Host pointers in `transfer` are valid for the duration of the call.
unsafe fn synchronous(device: &Device, transfer: Transfer, size: u64) -> Result<()> {
    let len = handles::byte_len(size)?;
    if len == 0 {
        return Ok(());
    }
    let _span = HostSpan::begin(SpanKind::Copy, device.ordinal(), arg32(size));
    device.core().synchronize()?;
    let queue = QueueId(0);
    let core = device.core();
    let fence = core
        .lock()
        // SAFETY: caller's contract; the wait below (or its reset) ends all access.
        .enqueue(queue, transfer.access(len), |accel| unsafe {
            transfer.submit(accel, queue, len)
        })
        .map_err(|e| core.error(e))?;
    core.wait(fence, "a synchronous copy")
}

macro_rules! entry {
    ($name:literal, $status:ident, $body:expr) => {{
        let body = $body;
        // SAFETY: TF's status.
        unsafe { ffi::with_status($status, $name, body) }
    }};
}

pub(super) unsafe extern "C" fn memcpy_dtoh(
    device: *const SP_Device,
    stream: SP_Stream,
    host_dst: *mut c_void,
    device_src: *const SP_DeviceMemoryBase,
    size: u64,
    status: *mut TF_Status,
) {
    entry!("memcpy_dtoh", status, || {
        // SAFETY: TF's arguments; TF keeps `host_dst` alive until the stream is done.
        let device = unsafe { handles::device(device) }?;
        let stream = unsafe { handles::stream(device, stream) }?;
        host_ptr(host_dst, "host_dst")?;
        let src = unsafe { device_range(device, device_src, size, "device_src") }?;
        report_earlier_failures(stream, src, size)?;
        unsafe {
            on_stream(
                stream,
                Transfer::FromDevice {
                    dst: host_dst.cast(),
                    src,
                },
                size,
            )
        }
    })
}

pub(super) unsafe extern "C" fn memcpy_htod(
    device: *const SP_Device,
    stream: SP_Stream,
    device_dst: *mut SP_DeviceMemoryBase,
    host_src: *const c_void,
    size: u64,
    status: *mut TF_Status,
) {
    entry!("memcpy_htod", status, || {
        // SAFETY: TF's arguments; TF keeps `host_src` alive until the stream is done.
        let device = unsafe { handles::device(device) }?;
        let stream = unsafe { handles::stream(device, stream) }?;
        host_ptr(host_src, "host_src")?;
        let dst = unsafe { device_range(device, device_dst, size, "device_dst") }?;
        unsafe {
            on_stream(
                stream,
                Transfer::ToDevice {
                    dst,
                    src: host_src.cast(),
                },
                size,
            )
        }
    })
}

pub(super) unsafe extern "C" fn memcpy_dtod(
    device: *const SP_Device,
    stream: SP_Stream,
    device_dst: *mut SP_DeviceMemoryBase,
    device_src: *const SP_DeviceMemoryBase,
    size: u64,
    status: *mut TF_Status,
) {
    entry!("memcpy_dtod", status, || {
        // SAFETY: TF's arguments.
        let device = unsafe { handles::device(device) }?;
        let stream = unsafe { handles::stream(device, stream) }?;
        let (dst_device, dst) = unsafe { owner_range(device, device_dst, size, "device_dst") }?;
        let (src_device, src) = unsafe { owner_range(device, device_src, size, "device_src") }?;
        if std::ptr::eq(dst_device, device) && std::ptr::eq(src_device, device) {
            return unsafe { on_stream(stream, Transfer::OnDevice { dst, src }, size) };
        }
        stream.block_until_done()?;
        stream.record(cross_device(src_device, src, dst_device, dst, size))
    })
}

/// The device of ours whose memory `mem` is (this `device` first), and the
/// device address there.
///
/// # Safety
/// `mem` is null or a valid `SP_DeviceMemoryBase` TF owns.
unsafe fn owner_range<'d>(
    device: &'d Device,
    mem: *const SP_DeviceMemoryBase,
    size: u64,
    what: &str,
) -> Result<(&'d Device, DeviceAddr)> {
    // SAFETY: caller's contract.
    let opaque = unsafe { handles::memory_opaque(mem, what) }?;
    match device.device_addr(opaque, size, what) {
        Ok(addr) => Ok((device, addr)),
        Err(error) => crate::registry::devices()
            .iter()
            .find_map(|other| {
                let addr = other.device_addr(opaque, size, what).ok()?;
                Some((other.as_ref(), addr))
            })
            .ok_or(error),
    }
}

/// A copy between two of our devices (MirroredStrategy's replicas): through
/// host memory, once the source's earlier work is done. Synchronous.
fn cross_device(
    from: &Device,
    src: DeviceAddr,
    to: &Device,
    dst: DeviceAddr,
    size: u64,
) -> Result<()> {
    let mut staging = vec![0u8; handles::byte_len(size)?];
    // SAFETY: `staging` outlives both synchronous copies.
    unsafe {
        synchronous(
            from,
            Transfer::FromDevice {
                dst: staging.as_mut_ptr(),
                src,
            },
            size,
        )?;
        synchronous(
            to,
            Transfer::ToDevice {
                dst,
                src: staging.as_ptr(),
            },
            size,
        )
    }
}

pub(super) unsafe extern "C" fn sync_memcpy_dtoh(
    device: *const SP_Device,
    host_dst: *mut c_void,
    device_src: *const SP_DeviceMemoryBase,
    size: u64,
    status: *mut TF_Status,
) {
    entry!("sync_memcpy_dtoh", status, || {
        // SAFETY: TF's arguments, valid during the call.
        let device = unsafe { handles::device(device) }?;
        host_ptr(host_dst, "host_dst")?;
        let src = unsafe { device_range(device, device_src, size, "device_src") }?;
        unsafe {
            synchronous(
                device,
                Transfer::FromDevice {
                    dst: host_dst.cast(),
                    src,
                },
                size,
            )
        }
    })
}

pub(super) unsafe extern "C" fn sync_memcpy_htod(
    device: *const SP_Device,
    device_dst: *mut SP_DeviceMemoryBase,
    host_src: *const c_void,
    size: u64,
    status: *mut TF_Status,
) {
    entry!("sync_memcpy_htod", status, || {
        // SAFETY: TF's arguments, valid during the call.
        let device = unsafe { handles::device(device) }?;
        host_ptr(host_src, "host_src")?;
        let dst = unsafe { device_range(device, device_dst, size, "device_dst") }?;
        unsafe {
            synchronous(
                device,
                Transfer::ToDevice {
                    dst,
                    src: host_src.cast(),
                },
                size,
            )
        }
    })
}

pub(super) unsafe extern "C" fn sync_memcpy_dtod(
    device: *const SP_Device,
    device_dst: *mut SP_DeviceMemoryBase,
    device_src: *const SP_DeviceMemoryBase,
    size: u64,
    status: *mut TF_Status,
) {
    entry!("sync_memcpy_dtod", status, || {
        // SAFETY: TF's arguments.
        let device = unsafe { handles::device(device) }?;
        let (dst_device, dst) = unsafe { owner_range(device, device_dst, size, "device_dst") }?;
        let (src_device, src) = unsafe { owner_range(device, device_src, size, "device_src") }?;
        if std::ptr::eq(dst_device, device) && std::ptr::eq(src_device, device) {
            return unsafe { synchronous(device, Transfer::OnDevice { dst, src }, size) };
        }
        cross_device(src_device, src, dst_device, dst, size)
    })
}

/// Enqueues a fill of `size` bytes with `pattern` (little-endian, repeated).
///
/// # Safety
/// TF's arguments.
unsafe fn fill(
    device: *const SP_Device,
    stream: SP_Stream,
    location: *mut SP_DeviceMemoryBase,
    pattern: u32,
    size: u64,
) -> Result<()> {
    // SAFETY: caller's contract.
    let device = unsafe { handles::device(device) }?;
    let stream = unsafe { handles::stream(device, stream) }?;
    let dst = unsafe { device_range(device, location, size, "location") }?;
    // SAFETY: no host pointers.
    unsafe { on_stream(stream, Transfer::Fill { dst, pattern }, size) }
}

pub(super) unsafe extern "C" fn mem_zero(
    device: *const SP_Device,
    stream: SP_Stream,
    location: *mut SP_DeviceMemoryBase,
    size: u64,
    status: *mut TF_Status,
) {
    // SAFETY: TF's arguments.
    entry!("mem_zero", status, || unsafe {
        fill(device, stream, location, 0, size)
    })
}

pub(super) unsafe extern "C" fn memset(
    device: *const SP_Device,
    stream: SP_Stream,
    location: *mut SP_DeviceMemoryBase,
    pattern: u8,
    size: u64,
    status: *mut TF_Status,
) {
    let word = u32::from_le_bytes([pattern; 4]);
    // SAFETY: TF's arguments.
    entry!("memset", status, || unsafe {
        fill(device, stream, location, word, size)
    })
}

pub(super) unsafe extern "C" fn memset32(
    device: *const SP_Device,
    stream: SP_Stream,
    location: *mut SP_DeviceMemoryBase,
    pattern: u32,
    size: u64,
    status: *mut TF_Status,
) {
    entry!("memset32", status, || {
        if !size.is_multiple_of(4) {
            return Err(Error::InvalidArgument(format!(
                "memset32 of {size} bytes: the size must be a multiple of 4"
            )));
        }
        // SAFETY: TF's arguments.
        unsafe {
            fill(
                device,
                stream,
                location,
                u32::from_le_bytes(pattern.to_ne_bytes()),
                size,
            )
        }
    })
}
