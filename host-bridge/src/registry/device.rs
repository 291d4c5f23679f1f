//! [`Device`]: one opened accelerator as TF sees it (`/device:FPGA:<n>`).

use super::device_core::DeviceCore;
use super::handles::HandleWindow;
use super::worker::{Completion, CompletionWorker};
use crate::devices::DynAccelerator;
use crate::error::{Error, Result};
use std::collections::{HashMap, HashSet};
use std::ffi::{CStr, CString, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tensorplug_core::accelerator::{DeviceAddr, DeviceInfo, QueueId};

/// Alignment of every device allocation (TF's BFC works in 256-byte units).
pub const ALLOCATION_ALIGN: u64 = 256;

/// Allocation counters for `get_allocator_stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllocStats {
    /// Allocations made so far.
    pub num_allocs: u64,
    /// Bytes currently allocated (as requested).
    pub bytes_in_use: u64,
    /// Highest `bytes_in_use` so far.
    pub peak_bytes_in_use: u64,
    /// Largest single allocation so far.
    pub largest_alloc_size: u64,
    /// Device memory available to allocations.
    pub bytes_limit: u64,
}

#[derive(Default)]
struct Allocations {
    sizes: HashMap<u64, u64>,
    stats: AllocStats,
}

/// One opened device.
pub struct Device {
    ordinal: i32,
    info: DeviceInfo,
    hardware_name: CString,
    core: Arc<DeviceCore>,
    worker: CompletionWorker,
    window: HandleWindow,
    allocations: Mutex<Allocations>,
    next_stream: AtomicUsize,
    live_handles: Mutex<HashSet<usize>>,
}

impl Device {
    /// Wraps an opened driver as `<TYPE>:<ordinal>`; `spec` is what opened it.
    pub fn new(
        ordinal: i32,
        spec: &str,
        mut accel: Box<DynAccelerator>,
        timeout: Duration,
    ) -> Result<Arc<Self>> {
        let label = format!("{}:{ordinal} ({spec})", crate::identity::device_type());
        let info = accel.info();
        if info.queues == 0 {
            return Err(Error::Open {
                spec: spec.into(),
                reason: "the device reports zero queues".into(),
            });
        }
        // A fresh device may hold events from before; start clean.
        let _ = accel.set_profiling(false);
        let window = HandleWindow::reserve(info.memory_bytes)?;
        let core = Arc::new(DeviceCore::new(label, accel, info.queues, timeout));
        let worker = CompletionWorker::start(core.clone()).map_err(|e| Error::Open {
            spec: spec.into(),
            reason: format!("cannot start its completion thread: {e}"),
        })?;
        let allocations = Allocations {
            stats: AllocStats {
                bytes_limit: info.memory_bytes,
                ..AllocStats::default()
            },
            ..Allocations::default()
        };
        let hardware_name =
            CString::new(info.name.as_str()).unwrap_or_else(|_| c"tensorplug device".to_owned());
        Ok(Arc::new(Self {
            ordinal,
            info,
            hardware_name,
            core,
            worker,
            window,
            allocations: Mutex::new(allocations),
            next_stream: AtomicUsize::new(0),
            live_handles: Mutex::new(HashSet::new()),
        }))
    }

    /// The TF ordinal.
    pub fn ordinal(&self) -> i32 {
        self.ordinal
    }

    /// What the driver reported at open.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The driver's model name, for `SP_Device.hardware_name`.
    pub fn hardware_name(&self) -> &CStr {
        &self.hardware_name
    }

    /// The driver, its fences and waits.
    pub fn core(&self) -> &DeviceCore {
        &self.core
    }

    /// Queues host work after a fence (see [`CompletionWorker`]).
    pub fn submit(&self, item: Completion) {
        self.worker.submit(item);
    }

    /// Waits for all device work on every queue, then for the host work
    /// (callbacks) queued before this call.
    pub fn synchronize_all(&self) -> Result<()> {
        let device_work = self.core.synchronize();
        let (done, finished) = std::sync::mpsc::sync_channel(1);
        self.submit(Completion {
            fence: None,
            run: Box::new(move |_| {
                let _ = done.send(());
            }),
        });
        finished
            .recv_timeout(self.core.timeout())
            .map_err(|_| Error::Timeout {
                device: self.core.label().to_owned(),
                what: "host callbacks",
                then: "",
                timeout_ms: self
                    .core
                    .timeout()
                    .as_millis()
                    .try_into()
                    .unwrap_or(u64::MAX),
            })?;
        device_work
    }

    /// The queue for the next stream: streams take the queues round-robin.
    pub fn next_stream_queue(&self) -> QueueId {
        let index = self.next_stream.fetch_add(1, Ordering::Relaxed);
        // `queues >= 1` is checked in `new`, and the result is < 256.
        QueueId((index % usize::from(self.info.queues)) as u8)
    }

    /// Allocates `size` bytes; returns TF's `opaque` (null for 0 bytes).
    pub fn allocate(&self, size: u64) -> Result<*mut c_void> {
        if size == 0 {
            return Ok(std::ptr::null_mut());
        }
        let addr = {
            let mut state = self.core.lock();
            state
                .accel()
                .allocate(size, ALLOCATION_ALIGN)
                .map_err(|e| self.core.error(e))?
        };
        let opaque = match self.window.to_opaque(addr, size) {
            Ok(opaque) => opaque,
            Err(error) => {
                let _ = self.core.lock().accel().deallocate(addr);
                return Err(error);
            }
        };
        let mut allocations = self.lock_allocations();
        allocations.sizes.insert(addr.0, size);
        let stats = &mut allocations.stats;
        stats.num_allocs += 1;
        stats.bytes_in_use += size;
        stats.peak_bytes_in_use = stats.peak_bytes_in_use.max(stats.bytes_in_use);
        stats.largest_alloc_size = stats.largest_alloc_size.max(size);
        Ok(opaque)
    }

    /// Frees an allocation by its `opaque` (null is a no-op).
    pub fn deallocate(&self, opaque: *const c_void) -> Result<()> {
        if opaque.is_null() {
            return Ok(());
        }
        let addr = self.window.to_device(opaque, 0, "the memory to free")?;
        let size = self
            .lock_allocations()
            .sizes
            .remove(&addr.0)
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "{}: {opaque:p} is not the start of a live allocation",
                    self.core.label()
                ))
            })?;
        self.lock_allocations().stats.bytes_in_use -= size;
        self.core.unpoison(addr, size);
        self.core
            .lock()
            .accel()
            .deallocate(addr)
            .map_err(|e| self.core.error(e))
    }

    /// The device address of `len` bytes at `opaque`.
    pub fn device_addr(&self, opaque: *const c_void, len: u64, what: &str) -> Result<DeviceAddr> {
        self.window.to_device(opaque, len, what)
    }

    /// Allocation counters.
    pub fn alloc_stats(&self) -> AllocStats {
        self.lock_allocations().stats
    }

    /// `(free, total)` device memory in bytes, as the driver reports it.
    pub fn memory_usage(&self) -> (u64, u64) {
        let usage = self.core.lock().accel().memory_usage();
        (usage.total.saturating_sub(usage.used), usage.total)
    }

    /// Records a stream/event/timer handle as live.
    pub fn adopt_handle(&self, handle: usize) {
        self.lock_handles().insert(handle);
    }

    /// Forgets a handle; `false` if it was not live (a second destroy).
    pub fn release_handle(&self, handle: usize) -> bool {
        self.lock_handles().remove(&handle)
    }

    fn lock_allocations(&self) -> std::sync::MutexGuard<'_, Allocations> {
        self.allocations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_handles(&self) -> std::sync::MutexGuard<'_, HashSet<usize>> {
        self.live_handles
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
