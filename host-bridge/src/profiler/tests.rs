//! Unit tests: registration, destroy idempotence, the op-tag interner, and
//! whole sessions on a real driver (the example NPU) decoded back with prost.

use super::clock::WallClock;
use super::ops::{OpTable, UNPROFILED, UNPROFILED_NAME};
use super::*;
use crate::registry::Device;
use crate::testing::{FakeStatus, install_fake_tf};
use prost::Message;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tensorplug_abi::tf::{
    TF_OK, TF_PROFILER_REGISTRATION_PARAMS_STRUCT_SIZE, TP_PROFILER_FNS_STRUCT_SIZE,
};
use tensorplug_core::accelerator::{
    DType, DeviceAddr, OpDesc, OpKind, QueueId, Shape, TensorDesc, Unary,
};
use tensorplug_core::xspace::proto::{XEvent, XPlane, XSpace, x_stat};

/// The profiler is process-wide: tests that start sessions run one at a time.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(PoisonError::into_inner)
}

fn npu() -> Arc<Device> {
    let accel = crate::testing::npu::open();
    Device::new(0, "sim", accel, Duration::from_secs(10)).expect("device")
}

fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap()
}

/// Runs `Relu` on 1024 floats as TF node `node`; returns after completion.
fn relu(device: &Device, input: DeviceAddr, output: DeviceAddr, node: &str) {
    let shape = Shape::new(&[1024]).unwrap();
    let inputs = [TensorDesc::new(input, DType::F32, shape)];
    let mut op = OpDesc {
        kind: OpKind::Unary(Unary::RELU),
        inputs: &inputs,
        output: TensorDesc::new(output, DType::F32, shape),
        op_id: 0,
    };
    op.op_id = op_tag(node, "Relu", op.flops(), op.bytes_accessed());
    let queue = QueueId(0);
    let fence = device
        .core()
        .lock()
        .enqueue(queue, Default::default(), |accel| accel.launch(queue, &op))
        .expect("launch");
    device.core().wait(fence, "relu").expect("wait");
}

/// TF's two calls, checking the size call's answer is what was written.
fn collect_twice(profiler: &mut Profiler) -> Vec<u8> {
    let size = profiler.collect_size().expect("size call");
    let mut buffer = vec![0u8; size];
    let written = profiler.collect_into(&mut buffer).expect("buffer call");
    assert_eq!(written, size);
    buffer
}

fn event_name<'p>(plane: &'p XPlane, event: &XEvent) -> &'p str {
    &plane.event_metadata[&event.metadata_id].name
}

#[test]
fn init_fills_tf_structs_that_pass_tfs_checks_and_rejects_other_majors() {
    install_fake_tf();
    let mut profiler = TP_Profiler::new();
    let mut fns = TP_ProfilerFns::new();
    let mut params = TF_ProfilerRegistrationParams {
        major_version: TP_MAJOR,
        profiler: &mut profiler,
        profiler_fns: &mut fns,
        ..TF_ProfilerRegistrationParams::new()
    };
    assert_eq!(
        params.struct_size,
        TF_PROFILER_REGISTRATION_PARAMS_STRUCT_SIZE
    );
    let mut status = FakeStatus::new();
    // SAFETY: TF-shaped structs that outlive the call.
    unsafe { tf_init_profiler(&mut params, status.ptr()) };
    assert_eq!(status.code, TF_OK, "{}", status.text());
    // SAFETY: our static name; TF's pointers are live.
    unsafe { validate::tf_init_profiler_result(&params) }.expect("TF's checks pass");
    // SAFETY: set by init to our static C string.
    let device_type = unsafe { std::ffi::CStr::from_ptr(profiler.device_type) };
    assert_eq!(device_type, c"FPGA");
    assert!(fns.start.is_some() && fns.stop.is_some() && fns.collect_data_xspace.is_some());

    let mut status = FakeStatus::new();
    params.major_version = TP_MAJOR + 1;
    // SAFETY: as above.
    unsafe { tf_init_profiler(&mut params, status.ptr()) };
    assert_ne!(status.code, TF_OK);
    assert!(
        status.text().contains("pluggable profiler API is 1.x"),
        "{}",
        status.text()
    );

    let mut status = FakeStatus::new();
    // SAFETY: a null params pointer must be refused, not dereferenced.
    unsafe { tf_init_profiler(std::ptr::null_mut(), status.ptr()) };
    assert_ne!(status.code, TF_OK);
}

#[test]
fn destroy_callbacks_are_idempotent_and_the_profiler_keeps_working() {
    let _serial = serial();
    install_fake_tf();
    let mut tp = profiler();
    let mut fns = profiler_fns();
    // TF's order: twice each, right after init, while still in use.
    // SAFETY: any pointer is accepted and nothing is freed.
    unsafe {
        destroy_profiler(&mut tp);
        destroy_profiler(&mut tp);
        destroy_profiler_fns(&mut fns);
        destroy_profiler_fns(&mut fns);
    }
    assert_eq!(
        fns.struct_size, TP_PROFILER_FNS_STRUCT_SIZE,
        "the fns table is untouched"
    );
    assert!(fns.start.is_some() && fns.collect_data_xspace.is_some());
    let mut status = FakeStatus::new();
    let mut size = usize::MAX;
    // SAFETY: live status/size; the profiler pointer is unused.
    unsafe {
        (fns.start.unwrap())(&tp, status.ptr());
        (fns.stop.unwrap())(&tp, status.ptr());
        (fns.collect_data_xspace.unwrap())(&tp, std::ptr::null_mut(), &mut size, status.ptr());
    }
    assert_eq!(status.code, TF_OK, "{}", status.text());
    assert_ne!(size, usize::MAX, "the size call answered");
    // The registry may hold another test's device (with its host spans).
    let mut buffer = vec![0u8; size];
    // SAFETY: `buffer` holds `size` writable bytes.
    unsafe {
        (fns.collect_data_xspace.unwrap())(&tp, buffer.as_mut_ptr(), &mut size, status.ptr());
    }
    assert_eq!(status.code, TF_OK, "{}", status.text());
    XSpace::decode(&buffer[..size]).expect("valid XSpace");
}

#[test]
fn op_table_interns_by_node_name_and_reserves_tag_zero() {
    let mut table = OpTable::new();
    let a = table.intern("dense/MatMul", "MatMul", 10, 20);
    let b = table.intern("dense/BiasAdd", "BiasAdd", 1, 2);
    assert_eq!((a, b), (1, 2));
    assert_eq!(
        table.intern("dense/MatMul", "MatMul", 99, 99),
        a,
        "same node, same tag"
    );
    let entry = &table.entries()[usize::from(a)];
    assert_eq!(entry.tf_op, "dense/MatMul:MatMul");
    assert_eq!(
        (entry.flops, entry.bytes),
        (10, 20),
        "first launch's figures kept"
    );
    assert_eq!(table.entries()[0].name, UNPROFILED_NAME);
    for i in 3..=u32::from(u16::MAX) {
        table.intern(&format!("n{i}"), "Relu", 0, 0);
    }
    assert_eq!(table.entries().len(), 65_536);
    assert_eq!(table.intern("one_too_many", "Relu", 0, 0), UNPROFILED);
    let taken = table.take();
    assert_eq!(taken.len(), 65_536);
    assert_eq!(table.entries().len(), 1, "take leaves only tag 0");
}

#[test]
fn op_tag_is_zero_while_profiling_is_off() {
    let _serial = serial();
    assert!(!crate::host_spans::RECORDING.is_enabled());
    assert_eq!(op_tag("x/Relu", "Relu", 1, 1), UNPROFILED);
}

#[test]
fn a_session_on_a_device_names_device_ops_after_tf_nodes_in_order() {
    let _serial = serial();
    install_fake_tf();
    let device = npu();
    let input = device.core().lock().accel().allocate(4096, 256).unwrap();
    let output = device.core().lock().accel().allocate(4096, 256).unwrap();
    // Launched before the session: tag 0, and its events are discarded.
    relu(&device, input, output, "before/Relu");

    let mut profiler = Profiler::default();
    let before = wall_ns();
    profiler.start_on(vec![device.clone()]).expect("start");
    let nodes = ["model/first/Relu", "model/second/Relu", "model/first/Relu"];
    for node in nodes {
        relu(&device, input, output, node);
    }
    profiler.stop().expect("stop");
    let after = wall_ns();
    let bytes = collect_twice(&mut profiler);
    let space = XSpace::decode(bytes.as_slice()).expect("valid XSpace");

    assert_eq!(space.planes.len(), 1);
    let plane = &space.planes[0];
    assert_eq!(plane.name, "/device:GPU:1000");
    let queue = plane
        .lines
        .iter()
        .find(|l| l.name == "Queue 0")
        .expect("queue line");
    assert!(
        (before..=after).contains(&(queue.timestamp_ns as u64)),
        "line starts at the session start on TF's wall clock"
    );
    let names: Vec<&str> = queue.events.iter().map(|e| event_name(plane, e)).collect();
    assert_eq!(
        names, nodes,
        "one event per launch, named after its TF node, in order"
    );
    let mut last_end = 0;
    for event in &queue.events {
        let x_event_offset_ps = match event.data {
            Some(tensorplug_core::xspace::proto::x_event::Data::OffsetPs(ps)) => ps,
            _ => panic!("events carry offsets"),
        };
        assert!(event.duration_ps > 0, "device ops take time");
        assert!(
            x_event_offset_ps >= last_end,
            "ops on one queue do not overlap"
        );
        last_end = x_event_offset_ps + event.duration_ps;
        let end_ns = queue.timestamp_ns as u64 + (last_end / 1000) as u64;
        assert!(
            end_ns <= after + 1_000_000,
            "mapped into the session window"
        );
    }
    let first = &plane.event_metadata[&queue.events[0].metadata_id];
    let stats: Vec<(&str, &Option<x_stat::Value>)> = first
        .stats
        .iter()
        .map(|s| (plane.stat_metadata[&s.metadata_id].name.as_str(), &s.value))
        .collect();
    // tf_op is on the event: a ref to the stat metadata named with it.
    let tf_op = queue.events[0]
        .stats
        .iter()
        .find(|s| plane.stat_metadata[&s.metadata_id].name == "tf_op")
        .and_then(|s| match s.value {
            Some(x_stat::Value::RefValue(id)) => plane.stat_metadata.get(&(id as i64)),
            _ => None,
        })
        .map(|m| m.name.as_str());
    assert_eq!(tf_op, Some("model/first/Relu:Relu"));
    assert!(stats.contains(&("flops", &Some(x_stat::Value::Uint64Value(1024)))));
    assert!(stats.contains(&("bytes_accessed", &Some(x_stat::Value::Uint64Value(8192)))));
    assert!(!names.contains(&"before/Relu") && !names.contains(&UNPROFILED_NAME));
}

#[test]
fn no_events_means_zero_bytes_and_the_session_restarts() {
    let _serial = serial();
    install_fake_tf();
    let device = npu();
    let mut profiler = Profiler::default();
    for _ in 0..3 {
        profiler.start_on(vec![device.clone()]).expect("start");
        profiler.stop().expect("stop");
        // Host spans of other tests may land on the plane; device ops cannot.
        let bytes = collect_twice(&mut profiler);
        let space = XSpace::decode(bytes.as_slice()).unwrap();
        assert!(
            space
                .planes
                .iter()
                .all(|p| p.lines.iter().all(|l| l.name == "Host API"))
        );
    }
    // Zero devices: zero bytes, and a buffer call agrees.
    profiler.start_on(Vec::new()).expect("start");
    profiler.stop().expect("stop");
    assert_eq!(profiler.collect_size().unwrap(), 0);
    assert_eq!(profiler.collect_into(&mut []).unwrap(), 0);
}

#[test]
fn wrong_order_calls_are_refused_and_change_nothing() {
    let _serial = serial();
    install_fake_tf();
    let mut profiler = Profiler::default();
    assert!(profiler.stop().is_err(), "stop before start");
    assert!(profiler.collect_size().is_err(), "collect with no session");
    profiler.start_on(Vec::new()).unwrap();
    assert!(profiler.start_on(Vec::new()).is_err(), "double start");
    assert!(profiler.collect_size().is_err(), "collect before stop");
    assert!(profiler.is_running());
    profiler.stop().unwrap();
    // A stopped, uncollected session is discarded by the next start.
    profiler.start_on(Vec::new()).unwrap();
    profiler.stop().unwrap();
    assert_eq!(profiler.collect_size().unwrap(), 0);
}

#[test]
fn a_short_buffer_is_an_error_and_nothing_past_it_is_written() {
    let _serial = serial();
    install_fake_tf();
    let device = npu();
    let input = device.core().lock().accel().allocate(4096, 256).unwrap();
    let output = device.core().lock().accel().allocate(4096, 256).unwrap();
    let mut profiler = Profiler::default();
    profiler.start_on(vec![device.clone()]).unwrap();
    relu(&device, input, output, "short/Relu");
    profiler.stop().unwrap();
    let size = profiler.collect_size().unwrap();
    assert!(size > 0);
    let mut guarded = vec![0xA5u8; size + 16];
    let (short, guard) = guarded.split_at_mut(size - 1);
    let error = profiler.collect_into(short).unwrap_err();
    assert!(error.to_string().contains("null buffer first"), "{error}");
    assert!(
        guard.iter().all(|&b| b == 0xA5),
        "nothing written past the buffer"
    );
    // The collection is released after the buffer call.
    assert!(profiler.collect_size().is_err());
}

#[test]
fn a_buffer_call_without_a_size_call_still_encodes() {
    let _serial = serial();
    install_fake_tf();
    let device = npu();
    let input = device.core().lock().accel().allocate(4096, 256).unwrap();
    let output = device.core().lock().accel().allocate(4096, 256).unwrap();
    let mut profiler = Profiler::default();
    profiler.start_on(vec![device.clone()]).unwrap();
    relu(&device, input, output, "direct/Relu");
    profiler.stop().unwrap();
    let mut buffer = vec![0u8; 1 << 16];
    let written = profiler.collect_into(&mut buffer).unwrap();
    let space = XSpace::decode(&buffer[..written]).unwrap();
    assert_eq!(space.planes[0].name, "/device:GPU:1000");
}

#[test]
fn wall_clock_maps_monotonic_time_onto_unix_time() {
    let clock = WallClock::now();
    let now = wall_ns();
    let ours = clock.wall_now();
    assert!(
        ours.abs_diff(now) < 50_000_000,
        "within 50 ms of SystemTime"
    );
    assert_eq!(WallClock::with_offset(5).to_wall(10), 15);
}
