//! StreamExecutor callbacks driven as TF drives them: with a real driver
//! (the example NPU) for data, and with the gated test device for ordering
//! and timeouts.

use super::executor::stream_executor;
use super::handles::stream_from_raw;
use super::timers::timer_fns;
use super::*;
use crate::registry::{self, Device};
use crate::testing::{FakeStatus, TfDevice, gated_device, install_fake_tf};
use std::ffi::c_void;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tensorplug_abi::tf::*;

const SECOND: Duration = Duration::from_secs(1);

struct Fixture {
    se: SP_StreamExecutor,
    device: TfDevice,
    stream: SP_Stream,
    status: Box<FakeStatus>,
}

impl Fixture {
    fn new(device: &Arc<Device>) -> Self {
        install_fake_tf();
        let mut fixture = Self {
            se: stream_executor(),
            device: TfDevice::new(device),
            stream: std::ptr::null_mut(),
            status: FakeStatus::new(),
        };
        let mut stream = std::ptr::null_mut();
        // SAFETY: a live device and out-parameter.
        unsafe {
            (fixture.se.create_stream.unwrap())(fixture.device.ptr(), &mut stream, fixture.st())
        };
        fixture.ok();
        fixture.stream = stream;
        fixture
    }

    fn npu() -> (Self, Arc<Device>) {
        let accel = crate::testing::npu::open();
        let device = Device::new(0, "sim", accel, 10 * SECOND).expect("device");
        (Self::new(&device), device)
    }

    fn st(&mut self) -> *mut TF_Status {
        self.status.ptr()
    }

    #[track_caller]
    fn ok(&mut self) {
        assert_eq!(self.status.code, TF_OK, "{}", self.status.text());
    }

    fn alloc(&mut self, size: u64) -> SP_DeviceMemoryBase {
        let mut mem = SP_DeviceMemoryBase::new();
        // SAFETY: live device, TF-shaped struct.
        unsafe { (self.se.allocate.unwrap())(self.device.ptr(), size, 0, &mut mem) };
        assert!(!mem.opaque.is_null(), "allocation of {size} bytes failed");
        assert_eq!(mem.size, size);
        mem
    }

    fn htod(&mut self, dst: &mut SP_DeviceMemoryBase, src: &[u8]) {
        let (dev, stream, st) = (self.device.ptr(), self.stream, self.st());
        // SAFETY: `src` outlives the following block.
        unsafe {
            (self.se.memcpy_htod.unwrap())(
                dev,
                stream,
                dst,
                src.as_ptr().cast(),
                src.len() as u64,
                st,
            )
        };
        self.ok();
    }

    fn dtoh(&mut self, dst: &mut [u8], src: &SP_DeviceMemoryBase) {
        let (dev, stream, st) = (self.device.ptr(), self.stream, self.st());
        // SAFETY: `dst` outlives the following block.
        unsafe {
            (self.se.memcpy_dtoh.unwrap())(
                dev,
                stream,
                dst.as_mut_ptr().cast(),
                src,
                dst.len() as u64,
                st,
            )
        };
        self.ok();
    }

    fn block(&mut self) {
        let (dev, stream, st) = (self.device.ptr(), self.stream, self.st());
        // SAFETY: live handles.
        unsafe { (self.se.block_host_until_done.unwrap())(dev, stream, st) };
        self.ok();
    }
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + 3) as u8).collect()
}

#[test]
fn every_struct_we_fill_passes_the_abi_validators() {
    let platform = platform(crate::testing::install_backend());
    // SAFETY: static names.
    unsafe { tensorplug_abi::validate::sp_platform(&platform) }.unwrap();
    tensorplug_abi::validate::sp_platform_fns(&platform_fns()).unwrap();
    tensorplug_abi::validate::sp_stream_executor(&stream_executor(), &platform).unwrap();
    tensorplug_abi::validate::sp_device_fns(&platform::device_fns()).unwrap();
    tensorplug_abi::validate::sp_timer_fns(&timer_fns()).unwrap();
    assert_eq!(platform.use_bfc_allocator, 1);
}

#[test]
fn init_plugin_fills_tf_structs_that_pass_tfs_checks() {
    install_fake_tf();
    // TF allocates the platform structs with its struct_size and zeroes.
    let mut sp_platform = SP_Platform::new();
    let mut sp_fns = SP_PlatformFns::new();
    let mut params = SE_PlatformRegistrationParams {
        major_version: SE_MAJOR,
        minor_version: SE_MINOR,
        patch_version: SE_PATCH,
        platform: &mut sp_platform,
        platform_fns: &mut sp_fns,
        ..SE_PlatformRegistrationParams::new()
    };
    // SAFETY: TF-shaped params.
    unsafe { init_plugin(&mut params, None) }
        .expect("init (TENSORPLUG_DEVICE unset: one sim device)");
    // SAFETY: pointers into this frame, static names.
    unsafe { tensorplug_abi::validate::se_init_plugin_result(&params) }.unwrap();
    assert!(!registry::devices().is_empty());

    let mut count = 0;
    let mut status = FakeStatus::new();
    // SAFETY: as TF calls them.
    unsafe { (sp_fns.get_device_count.unwrap())(&sp_platform, &mut count, status.ptr()) };
    assert_eq!(count as usize, registry::devices().len());

    let mut device = SP_Device::new();
    let mut create = SE_CreateDeviceParams {
        ordinal: 0,
        device: &mut device,
        ..SE_CreateDeviceParams::new()
    };
    // SAFETY: as TF calls it.
    unsafe { (sp_fns.create_device.unwrap())(&sp_platform, &mut create, status.ptr()) };
    assert_eq!(status.code, TF_OK, "{}", status.text());
    assert!(!device.device_handle.is_null());
    assert_eq!(device.struct_size, SP_DEVICE_STRUCT_SIZE);

    let mut se = SP_StreamExecutor::new();
    let mut se_params = SE_CreateStreamExecutorParams {
        stream_executor: &mut se,
        ..SE_CreateStreamExecutorParams::new()
    };
    // SAFETY: as TF calls it.
    unsafe { (sp_fns.create_stream_executor.unwrap())(&sp_platform, &mut se_params, status.ptr()) };
    tensorplug_abi::validate::sp_stream_executor(&se, &sp_platform).unwrap();

    let mut free = 0;
    let mut total = 0;
    // SAFETY: the device just created.
    assert_eq!(
        unsafe { (se.device_memory_usage.unwrap())(&device, &mut free, &mut total) },
        1
    );
    assert!(total >= free && total > 0, "free {free} total {total}");

    // TF may destroy twice: the second call finds nothing to release.
    let strong = Arc::strong_count(&registry::devices()[0]);
    // SAFETY: as TF calls it.
    unsafe { (sp_fns.destroy_device.unwrap())(&sp_platform, &mut device) };
    unsafe { (sp_fns.destroy_device.unwrap())(&sp_platform, &mut device) };
    assert!(device.device_handle.is_null());
    assert_eq!(Arc::strong_count(&registry::devices()[0]), strong - 1);

    // Unknown ordinals are an error naming the count.
    let mut other = SP_Device::new();
    let mut create = SE_CreateDeviceParams {
        ordinal: 99,
        device: &mut other,
        ..SE_CreateDeviceParams::new()
    };
    let mut status = FakeStatus::new();
    // SAFETY: as TF calls it.
    unsafe { (sp_fns.create_device.unwrap())(&sp_platform, &mut create, status.ptr()) };
    assert_eq!(status.code, TF_INVALID_ARGUMENT);
    assert!(status.text().contains("ordinal 99"), "{}", status.text());
}

/// A StreamExecutor API of another major version, or registration params
/// too small for the fields we set: an error naming it, and nothing written
/// into TF's structs (TF aborts then; docs/tf-abi.md).
#[test]
fn an_unknown_major_version_or_a_short_struct_is_refused_without_writing() {
    install_fake_tf();
    let mut sp_platform = SP_Platform::new();
    let mut sp_fns = SP_PlatformFns::new();
    let mut params = SE_PlatformRegistrationParams {
        major_version: SE_MAJOR + 1,
        platform: &mut sp_platform,
        platform_fns: &mut sp_fns,
        ..SE_PlatformRegistrationParams::new()
    };
    // SAFETY: TF-shaped params.
    let error = unsafe { init_plugin(&mut params, None) }.unwrap_err();
    assert!(
        error.to_string().contains("StreamExecutor C API is 1.x"),
        "{error}"
    );
    assert!(sp_platform.name.is_null() && sp_fns.create_device.is_none());
    assert!(params.destroy_platform.is_none());

    // TF's struct ends before `platform_fns`: never read past its end.
    let mut params = SE_PlatformRegistrationParams {
        major_version: SE_MAJOR,
        platform: &mut sp_platform,
        platform_fns: &mut sp_fns,
        ..SE_PlatformRegistrationParams::new()
    };
    params.struct_size = std::mem::offset_of!(SE_PlatformRegistrationParams, platform_fns);
    // SAFETY: as above, with a smaller struct_size.
    let error = unsafe { init_plugin(&mut params, None) }.unwrap_err();
    assert!(error.to_string().contains("platform_fns"), "{error}");
    assert!(sp_platform.name.is_null() && params.destroy_platform.is_none());
}

#[test]
fn copies_fills_and_offsets_round_trip_through_a_real_driver() {
    let (mut f, _device) = Fixture::npu();
    let data = pattern(4096);
    let mut a = f.alloc(4096);
    let mut b = f.alloc(4096);
    f.htod(&mut a, &data);
    let mut back = vec![0u8; 4096];
    f.dtoh(&mut back, &a);
    f.block();
    assert_eq!(back, data);

    // TF's pointer arithmetic: a sub-buffer at opaque + 1024.
    let mut inner = SP_DeviceMemoryBase {
        opaque: a.opaque.cast::<u8>().wrapping_add(1024).cast::<c_void>(),
        size: 256,
        ..SP_DeviceMemoryBase::new()
    };
    let (dev, stream, st) = (f.device.ptr(), f.stream, f.st());
    // SAFETY: live handles; sizes inside the allocations.
    unsafe {
        (f.se.memset32.unwrap())(dev, stream, &mut inner, 0xA1B2_C3D4, 256, st);
        (f.se.memcpy_dtod.unwrap())(dev, stream, &mut b, &a, 4096, st);
        (f.se.memset.unwrap())(dev, stream, &mut a, 0x5A, 16, st);
        (f.se.mem_zero.unwrap())(dev, stream, &mut a, 8, st);
    }
    f.ok();
    let mut got_b = vec![0u8; 4096];
    f.dtoh(&mut got_b, &b);
    let mut got_a = vec![0u8; 32];
    f.dtoh(&mut got_a, &a);
    f.block();
    let mut expected = data.clone();
    for word in expected[1024..1280].chunks_mut(4) {
        word.copy_from_slice(&0xA1B2_C3D4u32.to_ne_bytes());
    }
    assert_eq!(got_b, expected);
    assert_eq!(&got_a[..8], &[0; 8]);
    assert_eq!(&got_a[8..16], &[0x5A; 8]);
    assert_eq!(&got_a[16..], &data[16..32]);

    // Synchronous copies.
    let fresh = pattern(512).into_iter().rev().collect::<Vec<_>>();
    let mut sync_back = vec![0u8; 512];
    // SAFETY: buffers live during the calls.
    unsafe {
        (f.se.sync_memcpy_htod.unwrap())(dev, &mut b, fresh.as_ptr().cast(), 512, st);
        (f.se.sync_memcpy_dtoh.unwrap())(dev, sync_back.as_mut_ptr().cast(), &b, 512, st);
    }
    f.ok();
    assert_eq!(sync_back, fresh);

    // memset32 needs whole words.
    // SAFETY: live handles.
    unsafe { (f.se.memset32.unwrap())(dev, stream, &mut a, 1, 6, st) };
    assert_eq!(f.status.code, TF_INVALID_ARGUMENT);
    assert!(
        f.status.text().contains("multiple of 4"),
        "{}",
        f.status.text()
    );
}

#[test]
fn allocator_stats_follow_allocations() {
    let (mut f, device) = Fixture::npu();
    let mut a = f.alloc(1000);
    let _b = f.alloc(3000);
    let mut stats = SP_AllocatorStats::new();
    // SAFETY: live device.
    assert_eq!(
        unsafe { (f.se.get_allocator_stats.unwrap())(f.device.ptr(), &mut stats) },
        1
    );
    assert_eq!(
        (
            stats.num_allocs,
            stats.bytes_in_use,
            stats.largest_alloc_size
        ),
        (2, 4000, 3000)
    );
    assert_eq!(stats.bytes_limit as u64, device.info().memory_bytes);
    // SAFETY: live device; a second free of the same memory is logged, not fatal.
    unsafe {
        (f.se.deallocate.unwrap())(f.device.ptr(), &mut a);
        (f.se.deallocate.unwrap())(f.device.ptr(), &mut a);
    }
    let after = device.alloc_stats();
    assert_eq!((after.bytes_in_use, after.peak_bytes_in_use), (3000, 4000));
}

#[test]
fn foreign_device_memory_is_rejected_with_a_clear_error() {
    let (mut f, _device) = Fixture::npu();
    let (other, _released) = gated_device(SECOND);
    let mut g = Fixture::new(&other);
    let mut theirs = g.alloc(64);
    let src = [0u8; 64];
    let (dev, stream, st) = (f.device.ptr(), f.stream, f.st());
    // SAFETY: live handles.
    unsafe { (f.se.memcpy_htod.unwrap())(dev, stream, &mut theirs, src.as_ptr().cast(), 64, st) };
    assert_eq!(f.status.code, TF_INVALID_ARGUMENT);
    assert!(
        f.status.text().contains("device_dst"),
        "{}",
        f.status.text()
    );
}

#[test]
fn host_callbacks_run_only_after_earlier_stream_work() {
    install_fake_tf();
    let (device, released) = gated_device(5 * SECOND);
    let mut f = Fixture::new(&device);
    let mut mem = f.alloc(64);
    let src = pattern(64);
    f.htod(&mut mem, &src);

    static RAN: AtomicBool = AtomicBool::new(false);
    unsafe extern "C" fn callback(arg: *mut c_void, _status: *mut TF_Status) {
        assert_eq!(arg as usize, 42);
        RAN.store(true, Ordering::SeqCst);
    }
    // SAFETY: live handles.
    let queued = unsafe {
        (f.se.host_callback.unwrap())(f.device.ptr(), f.stream, Some(callback), 42 as *mut c_void)
    };
    assert_eq!(queued, 1);

    // An event recorded now stays pending while the copy is held back.
    let mut event = std::ptr::null_mut();
    let (dev, stream, st) = (f.device.ptr(), f.stream, f.st());
    // SAFETY: live handles.
    unsafe {
        (f.se.create_event.unwrap())(dev, &mut event, st);
        (f.se.record_event.unwrap())(dev, stream, event, st);
    }
    f.ok();
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        !RAN.load(Ordering::SeqCst),
        "callback ran before the copy completed"
    );
    // SAFETY: live handles.
    assert_eq!(
        unsafe { (f.se.get_event_status.unwrap())(dev, event) },
        SE_EventStatus::SE_EVENT_PENDING
    );

    released.store(u64::MAX, Ordering::Release);
    f.block();
    assert!(
        RAN.load(Ordering::SeqCst),
        "block_host_until_done returned before the callback ran"
    );
    // SAFETY: live handles; destroying twice is harmless.
    unsafe {
        assert_eq!(
            (f.se.get_event_status.unwrap())(dev, event),
            SE_EventStatus::SE_EVENT_COMPLETE
        );
        (f.se.destroy_event.unwrap())(dev, event);
        (f.se.destroy_event.unwrap())(dev, event);
        (f.se.destroy_stream.unwrap())(dev, stream);
        (f.se.destroy_stream.unwrap())(dev, stream);
    }
}

#[test]
fn timers_measure_the_work_between_start_and_stop() {
    let (device, released) = gated_device(5 * SECOND);
    let mut f = Fixture::new(&device);
    let mut mem = f.alloc(64);
    let src = pattern(64);
    let mut timer = std::ptr::null_mut();
    let (dev, stream, st) = (f.device.ptr(), f.stream, f.st());
    // SAFETY: live handles.
    unsafe {
        (f.se.create_timer.unwrap())(dev, &mut timer, st);
        (f.se.start_timer.unwrap())(dev, stream, timer, st);
    }
    f.htod(&mut mem, &src);
    // SAFETY: live handles.
    unsafe { (f.se.stop_timer.unwrap())(dev, stream, timer, st) };
    f.ok();
    std::thread::sleep(Duration::from_millis(30));
    released.store(u64::MAX, Ordering::Release);
    // SAFETY: a live timer.
    let ns = unsafe { (timer_fns().nanoseconds.unwrap())(timer) };
    assert!(
        ns >= 20_000_000,
        "timer measured {ns} ns for work held back 30 ms"
    );
    // SAFETY: live handles.
    unsafe { (f.se.destroy_timer.unwrap())(dev, timer) };
}

#[test]
fn a_stuck_stream_times_out_with_an_actionable_error_and_stays_failed() {
    let (device, _released) = gated_device(Duration::from_millis(50));
    let mut f = Fixture::new(&device);
    let mut mem = f.alloc(64);
    let src = pattern(64);
    f.htod(&mut mem, &src);
    let (dev, stream, st) = (f.device.ptr(), f.stream, f.st());
    // SAFETY: live handles.
    unsafe { (f.se.block_host_until_done.unwrap())(dev, stream, st) };
    assert_eq!(f.status.code, TF_DEADLINE_EXCEEDED);
    let text = f.status.text();
    assert!(
        text.contains("TENSORPLUG_TIMEOUT_MS") && text.contains("FPGA:7"),
        "{text}"
    );
    let mut later = FakeStatus::new();
    // SAFETY: live handles.
    unsafe { (f.se.get_stream_status.unwrap())(dev, stream, later.ptr()) };
    assert_eq!(later.code, TF_ABORTED, "{}", later.text());
}

#[test]
fn panics_and_errors_become_statuses_not_unwinds() {
    install_fake_tf();
    let mut status = FakeStatus::new();
    // SAFETY: a live fake status.
    unsafe { crate::ffi::with_status(status.ptr(), "test_entry", || panic!("boom")) };
    assert_eq!(status.code, TF_INTERNAL);
    assert!(
        status.text().contains("tensorplug test_entry") && status.text().contains("boom"),
        "{}",
        status.text()
    );
    assert_eq!(crate::ffi::swallow("test_entry", 5, || panic!("again")), 5);

    // A null SP_Device is an error, not a crash.
    let se = stream_executor();
    let mut stream = std::ptr::null_mut();
    let mut status = FakeStatus::new();
    // SAFETY: null device on purpose.
    unsafe { (se.create_stream.unwrap())(std::ptr::null(), &mut stream, status.ptr()) };
    assert_ne!(status.code, TF_OK);
    assert!(stream.is_null());

    // A bad event handle answers "complete" (logged): SE_EVENT_ERROR would
    // abort TF, PENDING would make it poll forever.
    let (device, _released) = gated_device(SECOND);
    let f = Fixture::new(&device);
    // SAFETY: a null event on purpose; the device is live.
    let answer = unsafe { (se.get_event_status.unwrap())(f.device.ptr(), std::ptr::null_mut()) };
    assert_eq!(answer, SE_EventStatus::SE_EVENT_COMPLETE);
}

#[test]
fn a_stream_waiting_for_an_event_of_another_queue_waits_for_its_work() {
    let (device, released) = gated_device(5 * SECOND);
    let mut f = Fixture::new(&device); // queue 0
    let mut other = std::ptr::null_mut();
    let (dev, st) = (f.device.ptr(), f.st());
    // SAFETY: live device; the second stream takes queue 1.
    unsafe { (f.se.create_stream.unwrap())(dev, &mut other, st) };
    f.ok();
    // SAFETY: both are our streams.
    let queues = unsafe {
        (
            stream_from_raw(f.stream).unwrap().queue(),
            stream_from_raw(other).unwrap().queue(),
        )
    };
    assert_ne!(queues.0, queues.1);

    let mut mem = f.alloc(64);
    let src = pattern(64);
    f.htod(&mut mem, &src);
    let mut event = std::ptr::null_mut();
    let stream = f.stream;
    // SAFETY: live handles.
    unsafe {
        (f.se.create_event.unwrap())(dev, &mut event, st);
        (f.se.record_event.unwrap())(dev, stream, event, st);
    }
    f.ok();
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(60));
        released.store(u64::MAX, Ordering::Release);
    });
    let start = std::time::Instant::now();
    // SAFETY: live handles.
    unsafe { (f.se.wait_for_event.unwrap())(dev, other, event, st) };
    f.ok();
    assert!(
        start.elapsed() >= Duration::from_millis(50),
        "did not wait for the other queue"
    );
    // SAFETY: the event's work is done now.
    assert_eq!(
        unsafe { (f.se.get_event_status.unwrap())(dev, event) },
        SE_EventStatus::SE_EVENT_COMPLETE
    );
    releaser.join().unwrap();
}

#[test]
fn a_host_copy_waiting_for_earlier_work_leaves_the_device_lock_free() {
    use std::time::Instant;
    use tensorplug_core::accelerator::QueueId;
    // A labelled op that never completes (the gated device never releases
    // it), so the copy behind it waits out the device's 3 s budget.
    // Meanwhile other threads must get the device lock (before the fix the
    // driver held it for the whole wait).
    let (device, _released) = gated_device(3 * SECOND);
    let mut f = Fixture::new(&device);
    let core = device.core();
    let q = QueueId(0);
    let x = core.lock().accel().allocate(64, 256).unwrap();
    let label = registry::OpLabel {
        op_type: "Relu",
        node: "stuck_relu".into(),
    };
    let stuck = core
        .lock()
        .enqueue_op(q, Some(label), Default::default(), |accel| {
            accel.fill(q, x, 64, 0)
        })
        .unwrap();

    let prober = {
        let device = Arc::clone(&device);
        std::thread::spawn(move || {
            // Longest wait for the lock while the copy is blocked.
            let mut longest = Duration::ZERO;
            for _ in 0..20 {
                std::thread::sleep(Duration::from_millis(50));
                let asked = Instant::now();
                drop(device.core().lock());
                longest = longest.max(asked.elapsed());
            }
            longest
        })
    };
    let mut mem = f.alloc(64);
    let (dev, stream, st) = (f.device.ptr(), f.stream, f.st());
    let src = pattern(64);
    // SAFETY: live handles; `src` outlives the call, whose wait times out
    // (and resets the device) before it copies.
    unsafe { (f.se.memcpy_htod.unwrap())(dev, stream, &mut mem, src.as_ptr().cast(), 64, st) };
    let longest = prober.join().unwrap();
    assert!(
        longest < SECOND,
        "another thread waited {longest:?} for the device lock during the copy's wait"
    );
    // The timeout is the op's, not the copy's: the copy runs after the
    // reset, and a wait on the op reports it, naming it.
    assert_eq!(f.status.code, TF_OK, "{}", f.status.text());
    let error = core.wait(stuck, "the op").expect_err("timed out");
    assert!(
        matches!(error, crate::error::Error::Timeout { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("Relu 'stuck_relu'"), "{error}");
}

#[test]
fn a_link_failure_an_events_poll_finds_is_reported_by_the_next_wait_once() {
    install_fake_tf();
    let (device, released) = gated_device(5 * SECOND);
    let mut f = Fixture::new(&device);
    let mut mem = f.alloc(64);
    let mut event = std::ptr::null_mut();
    let (dev, stream, st) = (f.device.ptr(), f.stream, f.st());
    let damaged = crate::testing::DAMAGED_FILL;
    // SAFETY: live handles.
    unsafe {
        (f.se.memset32.unwrap())(dev, stream, &mut mem, damaged, 64, st);
        (f.se.create_event.unwrap())(dev, &mut event, st);
        (f.se.record_event.unwrap())(dev, stream, event, st);
    }
    f.ok();
    released.store(u64::MAX, Ordering::Release);
    // The event's poll fails on the link: TF is told "complete" (an error
    // there aborts it), and the failure is kept.
    // SAFETY: live handles.
    assert_eq!(
        unsafe { (f.se.get_event_status.unwrap())(dev, event) },
        SE_EventStatus::SE_EVENT_COMPLETE
    );
    let mut back = vec![0u8; 64];
    // SAFETY: `back` outlives the call, which waits before it copies.
    unsafe {
        (f.se.memcpy_dtoh.unwrap())(dev, stream, back.as_mut_ptr().cast(), &mem, 64, st);
    }
    assert_ne!(
        f.status.code, TF_OK,
        "the next wait reports the link's failure"
    );
    let text = f.status.text();
    assert!(
        text.contains("a bad frame during a poll") && text.contains("found by a poll of an event"),
        "{text}"
    );
    // Once: the copy after it works, and the fill ran.
    f.status = FakeStatus::new();
    f.dtoh(&mut back, &mem);
    f.block();
    assert_eq!(back, damaged.to_ne_bytes().repeat(16));
    // SAFETY: live handles.
    unsafe {
        (f.se.destroy_event.unwrap())(dev, event);
        (f.se.destroy_stream.unwrap())(dev, stream);
    }
}

#[test]
fn an_event_pending_past_the_wait_budget_times_out_as_a_wait_does() {
    install_fake_tf();
    let budget = Duration::from_millis(50);
    let (device, _released) = gated_device(budget);
    let mut f = Fixture::new(&device);
    let mut mem = f.alloc(64);
    let mut event = std::ptr::null_mut();
    let (dev, stream, st) = (f.device.ptr(), f.stream, f.st());
    // SAFETY: live handles.
    unsafe {
        (f.se.memset32.unwrap())(dev, stream, &mut mem, 7, 64, st);
        (f.se.create_event.unwrap())(dev, &mut event, st);
        (f.se.record_event.unwrap())(dev, stream, event, st);
    }
    f.ok();
    let status = || unsafe { (f.se.get_event_status.unwrap())(dev, event) };
    assert_eq!(status(), SE_EventStatus::SE_EVENT_PENDING);
    std::thread::sleep(budget * 2);
    // Never released: past the budget the device is reset and TF told
    // "complete" (an error there aborts it); the waits report the timeout.
    assert_eq!(status(), SE_EventStatus::SE_EVENT_COMPLETE);
    // SAFETY: live handles.
    unsafe { (f.se.block_host_for_event.unwrap())(dev, event, f.status.ptr()) };
    let text = f.status.text();
    assert!(
        text.contains("an event's work did not complete within 50 ms")
            && text.contains("the device was reset"),
        "{text}"
    );
    // SAFETY: live handles.
    unsafe {
        (f.se.destroy_event.unwrap())(dev, event);
        (f.se.destroy_stream.unwrap())(dev, stream);
    }
}
