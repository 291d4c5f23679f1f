//! Test support (unit tests only): a fake of TF's status functions and a
//! gated in-memory accelerator whose work completes only when the test
//! releases it, to check ordering (callbacks after work, pending events,
//! timeouts). It never ships: the plugin's devices are the real driver.

use crate::devices::{DeviceError, DynAccelerator, Erased};
use crate::ffi::tf_api::{self, TfApi};
use crate::registry::Device;
use std::collections::VecDeque;
use std::ffi::{CStr, CString, c_char, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Once};
use std::time::Duration;
use tensorplug_abi::tf::{SP_Device, TF_Code, TF_OK, TF_Status};
use tensorplug_core::accelerator::*;
use tensorplug_core::event::Event;

/// What the fake `TF_SetStatus` stores.
#[derive(Debug)]
pub struct FakeStatus {
    pub code: TF_Code,
    pub message: CString,
}

impl FakeStatus {
    pub fn new() -> Box<Self> {
        Box::new(Self {
            code: TF_OK,
            message: CString::default(),
        })
    }
    pub fn ptr(&mut self) -> *mut TF_Status {
        (self as *mut Self).cast()
    }
    pub fn text(&self) -> String {
        self.message.to_string_lossy().into_owned()
    }
}

unsafe extern "C" fn set_status(status: *mut TF_Status, code: TF_Code, message: *const c_char) {
    // SAFETY: tests pass `FakeStatus` pointers and NUL-terminated messages.
    unsafe {
        let status = &mut *status.cast::<FakeStatus>();
        status.code = code;
        status.message = CStr::from_ptr(message).to_owned();
    }
}
unsafe extern "C" fn get_code(status: *const TF_Status) -> TF_Code {
    // SAFETY: as above.
    unsafe { (*status.cast::<FakeStatus>()).code }
}
unsafe extern "C" fn message(status: *const TF_Status) -> *const c_char {
    // SAFETY: as above.
    unsafe { (*status.cast::<FakeStatus>()).message.as_ptr() }
}
unsafe extern "C" fn new_status() -> *mut TF_Status {
    Box::into_raw(FakeStatus::new()).cast()
}
unsafe extern "C" fn delete_status(status: *mut TF_Status) {
    // SAFETY: from `new_status`.
    drop(unsafe { Box::from_raw(status.cast::<FakeStatus>()) });
}

/// The unit tests' backend. Its type is `FPGA` because the graph fixtures
/// were traced on the reference plugin; its `sim` devices are the NPU.
struct TestBackend;

impl crate::backend::Backend for TestBackend {
    const DEVICE_TYPE: &'static CStr = c"FPGA";
    const VENDOR: &'static CStr = c"tensorplug";
    const DEVICE_KINDS: &'static str = "`sim`";

    fn open(spec: &str) -> Result<Box<DynAccelerator>, crate::backend::OpenError> {
        match spec {
            "sim" => Ok(npu::open()),
            other => Err(format!("unknown device `{other}`").into()),
        }
    }
}

/// Installs [`TestBackend`] and claims its names (once per test process).
pub fn install_backend() -> &'static crate::backend::Names {
    let plugin = crate::backend::install(crate::backend::Plugin::of::<TestBackend>());
    crate::backend::claim_names(plugin)
}

/// Installs the fake status functions and the test backend (once per test
/// process).
pub fn install_fake_tf() {
    install_backend();
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        assert!(tf_api::install(TfApi {
            set_status,
            get_code,
            message,
            new_status,
            delete_status,
        }));
    });
}

#[derive(Clone, Copy)]
enum Op {
    ToDevice(usize, *const u8, usize),
    FromDevice(*mut u8, usize, usize),
    OnDevice(usize, usize, usize),
    Fill(usize, usize, u32),
}

/// A fill with this pattern is refused by a [`GatedDevice`] when it runs:
/// its fence completes `InvalidArgument` (bad input, no reset), nothing is
/// written, and later work runs.
pub const REFUSED_FILL: u32 = 0xBAD0_BAD0;

/// A fill with this pattern runs on a [`GatedDevice`], but the first poll
/// that finds it done fails with `Transport`, as a link's poll does when a
/// frame from the device was damaged on the wire.
pub const DAMAGED_FILL: u32 = 0xDA4A_6ED0;

/// A 1 MiB host-array device whose work runs when `released` passes its fence.
pub struct GatedDevice {
    /// The fence of a refused fill not yet reported by a poll.
    refused: Option<u64>,
    /// The fence of a [`DAMAGED_FILL`] not yet reported by a poll.
    damaged: Option<u64>,
    mem: Vec<u8>,
    next: u64,
    issued: u64,
    pending: VecDeque<(u64, Op)>,
    released: Arc<AtomicU64>,
    done: u64,
    /// Resets attempted so far.
    resets: Arc<AtomicU64>,
    /// Whether a reset fails (a dead device), instead of ending the work.
    reset_fails: bool,
}

// SAFETY: the raw pointers are host buffers the test keeps alive.
unsafe impl Send for GatedDevice {}

impl GatedDevice {
    pub const MEMORY: usize = 1 << 20;

    fn enqueue(&mut self, op: Op) -> Result<Fence, DeviceError> {
        self.issued += 1;
        self.pending.push_back((self.issued, op));
        Ok(Fence(self.issued))
    }

    fn check(&self, addr: DeviceAddr, len: usize) -> Result<usize, DeviceError> {
        let start = usize::try_from(addr.0).unwrap_or(usize::MAX);
        match start.checked_add(len) {
            Some(end) if end <= Self::MEMORY => Ok(start),
            _ => Err(DeviceError::new(ErrorKind::InvalidArgument, "out of range")),
        }
    }

    fn run_released(&mut self) {
        let released = self.released.load(Ordering::Acquire);
        while let Some(&(id, op)) = self.pending.front() {
            if id > released {
                break;
            }
            self.pending.pop_front();
            // SAFETY: the test keeps host buffers alive until completion.
            unsafe {
                match op {
                    Op::ToDevice(dst, src, n) => {
                        std::ptr::copy_nonoverlapping(src, self.mem[dst..].as_mut_ptr(), n)
                    }
                    Op::FromDevice(dst, src, n) => {
                        std::ptr::copy_nonoverlapping(self.mem[src..].as_ptr(), dst, n)
                    }
                    Op::OnDevice(dst, src, n) => self.mem.copy_within(src..src + n, dst),
                    Op::Fill(..) if matches!(op, Op::Fill(_, _, REFUSED_FILL)) => {
                        self.refused = Some(id)
                    }
                    Op::Fill(dst, n, pattern) => {
                        if pattern == DAMAGED_FILL {
                            self.damaged = Some(id);
                        }
                        for (i, b) in self.mem[dst..dst + n].iter_mut().enumerate() {
                            *b = pattern.to_le_bytes()[i % 4];
                        }
                    }
                }
            }
            self.done = id;
        }
    }
}

impl tensorplug_core::accelerator::Device for GatedDevice {
    type Error = DeviceError;
    fn info(&self) -> DeviceInfo {
        DeviceInfo::new(
            "gated",
            Self::MEMORY as u64,
            1_000_000_000,
            Version::new(1, 0, 0),
            2,
        )
    }
}

impl Memory for GatedDevice {
    fn allocate(&mut self, bytes: u64, align: u64) -> Result<DeviceAddr, DeviceError> {
        let start = self.next.next_multiple_of(align);
        let end = start + bytes;
        if end > Self::MEMORY as u64 {
            return Err(DeviceError::new(
                ErrorKind::OutOfMemory,
                "gated device is full",
            ));
        }
        self.next = end;
        Ok(DeviceAddr(start))
    }
    fn deallocate(&mut self, _addr: DeviceAddr) -> Result<(), DeviceError> {
        Ok(())
    }
    fn memory_usage(&self) -> MemoryUsage {
        MemoryUsage {
            total: Self::MEMORY as u64,
            used: self.next,
        }
    }
}

impl Transfer for GatedDevice {
    unsafe fn copy_to_device(
        &mut self,
        _q: QueueId,
        dst: DeviceAddr,
        src: *const u8,
        len: usize,
    ) -> Result<Fence, DeviceError> {
        let dst = self.check(dst, len)?;
        self.enqueue(Op::ToDevice(dst, src, len))
    }
    unsafe fn copy_from_device(
        &mut self,
        _q: QueueId,
        dst: *mut u8,
        src: DeviceAddr,
        len: usize,
    ) -> Result<Fence, DeviceError> {
        let src = self.check(src, len)?;
        self.enqueue(Op::FromDevice(dst, src, len))
    }
    fn copy_on_device(
        &mut self,
        _q: QueueId,
        dst: DeviceAddr,
        src: DeviceAddr,
        len: usize,
    ) -> Result<Fence, DeviceError> {
        let (dst, src) = (self.check(dst, len)?, self.check(src, len)?);
        self.enqueue(Op::OnDevice(dst, src, len))
    }
    fn fill(
        &mut self,
        _q: QueueId,
        dst: DeviceAddr,
        len: usize,
        pattern: u32,
    ) -> Result<Fence, DeviceError> {
        let dst = self.check(dst, len)?;
        self.enqueue(Op::Fill(dst, len, pattern))
    }
    fn poll(&mut self, fence: Fence) -> Result<bool, DeviceError> {
        self.run_released();
        if self.refused.is_some_and(|f| f <= fence.0) {
            self.refused = None;
            return Err(DeviceError::new(
                ErrorKind::InvalidArgument,
                "a refused fill",
            ));
        }
        if self.damaged.is_some_and(|f| f <= fence.0) {
            self.damaged = None;
            return Err(DeviceError::new(
                ErrorKind::Transport,
                "a bad frame during a poll",
            ));
        }
        Ok(fence.0 <= self.done)
    }
    fn wait(&mut self, fence: Fence, _timeout: Duration) -> Result<(), DeviceError> {
        if self.poll(fence)? {
            Ok(())
        } else {
            Err(DeviceError::new(ErrorKind::Timeout, "gated"))
        }
    }
}

impl Launch for GatedDevice {
    fn launch(&mut self, _q: QueueId, _op: &OpDesc<'_>) -> Result<Fence, DeviceError> {
        Err(DeviceError::new(
            ErrorKind::Unsupported,
            "gated device runs no ops",
        ))
    }
}

impl Reset for GatedDevice {
    fn reset(&mut self) -> Result<(), DeviceError> {
        self.resets.fetch_add(1, Ordering::Relaxed);
        if self.reset_fails {
            return Err(DeviceError::new(ErrorKind::Timeout, "dead: no reset"));
        }
        self.pending.clear();
        self.done = self.issued;
        Ok(())
    }
}

impl Profiling for GatedDevice {
    fn timestamp(&mut self) -> Result<u64, DeviceError> {
        Ok(self.done)
    }
    fn set_profiling(&mut self, _on: bool) -> Result<(), DeviceError> {
        Ok(())
    }
    fn drain_events(&mut self, _out: &mut [Event]) -> Result<Drained, DeviceError> {
        Ok(Drained::default())
    }
}

/// A [`GatedDevice`] whose work completes up to `released`.
fn gated(released: Arc<AtomicU64>, resets: Arc<AtomicU64>, reset_fails: bool) -> GatedDevice {
    GatedDevice {
        refused: None,
        damaged: None,
        mem: vec![0; GatedDevice::MEMORY],
        next: 0,
        issued: 0,
        pending: VecDeque::new(),
        released,
        done: 0,
        resets,
        reset_fails,
    }
}

/// A dead device: nothing completes, and a reset fails. Returns the driver
/// and the count of resets tried.
pub fn dead_accelerator() -> (Box<DynAccelerator>, Arc<AtomicU64>) {
    let resets = Arc::new(AtomicU64::new(0));
    let dead = gated(Arc::new(AtomicU64::new(0)), resets.clone(), true);
    (Box::new(Erased::new(dead)), resets)
}

/// A device over a [`GatedDevice`]: work completes up to `released`.
pub fn gated_device(timeout: Duration) -> (Arc<Device>, Arc<AtomicU64>) {
    let released = Arc::new(AtomicU64::new(0));
    let gated = gated(released.clone(), Arc::default(), false);
    let accel: Box<DynAccelerator> = Box::new(Erased::new(gated));
    (
        Device::new(7, "gated", accel, timeout).expect("gated device"),
        released,
    )
}

/// TF's `SP_Device` for `device`, as `create_device` would fill it.
pub struct TfDevice(pub Box<SP_Device>);

impl TfDevice {
    pub fn new(device: &Arc<Device>) -> Self {
        Self(Box::new(SP_Device {
            ordinal: device.ordinal(),
            device_handle: Arc::into_raw(device.clone()).cast_mut().cast::<c_void>(),
            ..SP_Device::new()
        }))
    }
    pub fn ptr(&self) -> *const SP_Device {
        &*self.0
    }
}

impl Drop for TfDevice {
    fn drop(&mut self) {
        if !self.0.device_handle.is_null() {
            // SAFETY: from `Arc::into_raw` in `new`.
            drop(unsafe { Arc::from_raw(self.0.device_handle.cast_const().cast::<Device>()) });
        }
    }
}

/// The example NPU (a real driver on core alone), for tests of the bridge's
/// machinery with data.
pub mod npu {
    use crate::devices::{DynAccelerator, erase};
    use tensorplug_device_npu::{Npu, StdClock};

    /// An NPU with 64 MiB of device memory.
    pub fn open() -> Box<DynAccelerator> {
        erase(Npu::new(vec![0u8; 64 << 20], StdClock::default()))
    }
}
