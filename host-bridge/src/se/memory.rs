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

pub(super) unsafe extern "C" fn allocate(
    device: *const SP_Device,
    size: u64,
    memory_space: i64,
    mem: *mut SP_DeviceMemoryBase,
) {
    ffi::swallow("allocate", (), || {
        // SAFETY: TF's SP_DeviceMemoryBase, valid for its struct_size.
        let mut out = unsafe { Versioned::from_raw(mem) }.map_err(Error::abi)?;
        // On any failure TF sees a null `opaque`: out of memory.
        out.set(tf_field!(SP_DeviceMemoryBase, opaque), std::ptr::null_mut())
            .map_err(Error::abi)?;
        if memory_space != 0 {
            return Err(Error::InvalidArgument(format!(
                "memory space {memory_space} is not supported (only device memory, 0)"
            )));
        }
        // SAFETY: TF's device.
        let device = unsafe { handles::device(device) }?;
        let opaque = device.allocate(size)?;
        out.set(tf_field!(SP_DeviceMemoryBase, opaque), opaque)
            .map_err(Error::abi)?;
        out.set(tf_field!(SP_DeviceMemoryBase, size), size)
            .map_err(Error::abi)?;
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
        let mut out = unsafe { Versioned::from_raw(stats) }.map_err(Error::abi)?;
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
        let (real_free, real_total) = device.memory_usage();
        let free_bytes = free_for_tf(real_free);
        let total_bytes = real_total + (free_bytes - real_free);
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

/// TF's PluggableDevice factory keeps `MinSystemMemory(free)` of the free
/// memory we report away from its allocator (a GPU heuristic for the CUDA
/// context: 255 MiB below 2 GiB, else max(300 MiB, 6 %); see
/// `pluggable_device_factory.cc`). Our devices need no such reserve, so we
/// report the smallest `x` whose TF limit is at least `real_free`: TF's
/// allocator then gets exactly the device's free memory.
pub fn free_for_tf(real_free: u64) -> u64 {
    const MIB: u64 = 1 << 20;
    let candidates = [
        real_free,
        real_free + 255 * MIB,
        real_free + 300 * MIB,
        real_free.div_ceil(94) * 100,
    ];
    candidates
        .into_iter()
        .filter(|&x| tf_memory_limit(x) >= real_free)
        .min()
        .unwrap_or(real_free)
}

/// The allocator limit TF derives from a reported free `x`
/// (`SingleVirtualDeviceMemoryLimit`): the reserve is taken only if smaller.
pub fn tf_memory_limit(x: u64) -> u64 {
    let reserve = tf_min_system_memory(x);
    if reserve < x { x - reserve } else { x }
}

/// TF 2.21's `MinSystemMemory` (optimized builds, as in the wheel).
pub fn tf_min_system_memory(available: u64) -> u64 {
    const MIB: u64 = 1 << 20;
    if available < (1 << 31) {
        255 * MIB
    } else {
        (300 * MIB).max((available as f64 * 0.06) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tf_keeps_exactly_the_real_free_memory_after_its_reserve() {
        for real in [
            0,
            1 << 20,
            256 << 20,
            (2u64 << 30) - (300 << 20),
            3 << 30,
            16 << 30,
            80 << 30,
        ] {
            let reported = free_for_tf(real);
            let tf_limit = tf_memory_limit(reported);
            assert!(tf_limit >= real, "{real}: TF would get {tf_limit}");
            assert!(
                tf_limit - real < 64 << 10 || real > 5 << 30,
                "{real}: {tf_limit}"
            );
        }
        assert_eq!(free_for_tf(256 << 20), 511 << 20);
        // Small enough that TF takes no reserve: the truth is reported.
        assert_eq!(free_for_tf(100 << 20), 100 << 20);
    }
}
