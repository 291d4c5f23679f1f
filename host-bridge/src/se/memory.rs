//! Device memory (`allocate`/`deallocate`, stats, usage) and pinned host
//! memory (`host_memory_allocate`/`host_memory_deallocate`).

use super::handles;
use crate::error::Error;
use crate::ffi;
use std::ffi::c_void;
use tensorplug_abi::tf::*;
use tensorplug_abi::tf_field;

/// Alignment of host buffers TF asks for (a page: fine for DMA).
pub const HOST_ALIGN: usize = 4096;

fn abi(error: impl std::fmt::Display) -> Error {
    Error::Abi(error.to_string())
}

pub(super) unsafe extern "C" fn allocate(
    device: *const SP_Device,
    size: u64,
    memory_space: i64,
    mem: *mut SP_DeviceMemoryBase,
) {
    ffi::swallow("allocate", (), || {
        // SAFETY: TF's SP_DeviceMemoryBase, valid for its struct_size.
        let mut out = unsafe { Versioned::from_raw(mem) }.map_err(abi)?;
        // On any failure TF sees a null `opaque`: out of memory.
        out.set(tf_field!(SP_DeviceMemoryBase, opaque), std::ptr::null_mut())
            .map_err(abi)?;
        if memory_space != 0 {
            return Err(Error::InvalidArgument(format!(
                "memory space {memory_space} is not supported (only device memory, 0)"
            )));
        }
        // SAFETY: TF's device.
        let device = unsafe { handles::device(device) }?;
        let opaque = device.allocate(size)?;
        out.set(tf_field!(SP_DeviceMemoryBase, opaque), opaque)
            .map_err(abi)?;
        out.set(tf_field!(SP_DeviceMemoryBase, size), size)
            .map_err(abi)?;
        // `payload` is optional for TF: keep it when not covered.
        let _ = out.set(tf_field!(SP_DeviceMemoryBase, payload), 0);
        Ok(())
    })
}

pub(super) unsafe extern "C" fn deallocate(
    device: *const SP_Device,
    mem: *mut SP_DeviceMemoryBase,
) {
    ffi::swallow("deallocate", (), || {
        // SAFETY: TF's device and memory.
        let device = unsafe { handles::device(device) }?;
        let opaque = unsafe { handles::memory_opaque(mem, "the memory to free") }?;
        device.deallocate(opaque)
    })
}

pub(super) unsafe extern "C" fn host_memory_allocate(
    _device: *const SP_Device,
    size: u64,
) -> *mut c_void {
    ffi::swallow("host_memory_allocate", std::ptr::null_mut(), || {
        let len = handles::byte_len(size)?.max(1);
        let mut out = std::ptr::null_mut();
        // SAFETY: `out` is writable; HOST_ALIGN is a power of two ≥ sizeof(void*).
        let rc = unsafe { libc::posix_memalign(&mut out, HOST_ALIGN, len) };
        if rc != 0 {
            return Err(Error::InvalidArgument(format!(
                "cannot allocate {size} bytes of host memory: {}",
                std::io::Error::from_raw_os_error(rc)
            )));
        }
        Ok(out)
    })
}

pub(super) unsafe extern "C" fn host_memory_deallocate(
    _device: *const SP_Device,
    mem: *mut c_void,
) {
    // SAFETY: `mem` is null or came from `host_memory_allocate` (posix_memalign).
    unsafe { libc::free(mem) }
}

pub(super) unsafe extern "C" fn get_allocator_stats(
    device: *const SP_Device,
    stats: *mut SP_AllocatorStats,
) -> TF_Bool {
    ffi::swallow("get_allocator_stats", 0, || {
        // SAFETY: TF's device and stats struct.
        let device = unsafe { handles::device(device) }?;
        let mut out = unsafe { Versioned::from_raw(stats) }.map_err(abi)?;
        out.write_covered(&allocator_stats(device));
        Ok(1)
    })
}

/// Our allocation counters as TF's struct.
pub fn allocator_stats(device: &crate::registry::Device) -> SP_AllocatorStats {
    let stats = device.alloc_stats();
    let (free, _) = device.memory_usage();
    let i = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    SP_AllocatorStats {
        num_allocs: i(stats.num_allocs),
        bytes_in_use: i(stats.bytes_in_use),
        peak_bytes_in_use: i(stats.peak_bytes_in_use),
        largest_alloc_size: i(stats.largest_alloc_size),
        has_bytes_limit: 1,
        bytes_limit: i(stats.bytes_limit),
        largest_free_block_bytes: i(free),
        ..SP_AllocatorStats::new()
    }
}

pub(super) unsafe extern "C" fn device_memory_usage(
    device: *const SP_Device,
    free: *mut i64,
    total: *mut i64,
) -> TF_Bool {
    ffi::swallow("device_memory_usage", 0, || {
        // SAFETY: TF's device.
        let device = unsafe { handles::device(device) }?;
        let (free_bytes, total_bytes) = device.memory_usage();
        let i = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        // SAFETY: TF passes writable int64s (null tolerated).
        unsafe {
            if let Some(out) = free.as_mut() {
                *out = i(free_bytes);
            }
            if let Some(out) = total.as_mut() {
                *out = i(total_bytes);
            }
        }
        Ok(1)
    })
}
