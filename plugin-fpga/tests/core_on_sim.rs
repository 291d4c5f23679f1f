//! The bridge's device core (fences, incidents, recovery resets) on the
//! reference FPGA's `sim`, whose model can fault on purpose: a fault in one
//! of several queued ops, in a multi-command op, and back-pressure.

use std::time::{Duration, Instant};
use tensorplug_core::accelerator::{
    Binary, DType, DeviceAddr, ErrorKind, Fence, OpDesc, OpKind, QueueId, Shape, TensorDesc, Unary,
};
use tensorplug_fpga::{Fpga, open::sim};
use tensorplug_host_bridge::Error;
use tensorplug_host_bridge::internals::backend::{Plugin, install};
use tensorplug_host_bridge::internals::registry::{DeviceCore, OpLabel};
use tensorplug_model_fpga::model::host::fault_rules;

const Q: QueueId = QueueId(0);

/// A `sim` core (`rules`: its fault rules) with a 20 s budget: a halt
/// noticed only at the timeout would fail the elapsed-time checks by far.
fn sim_core(rules: &str) -> DeviceCore {
    install(Plugin::of::<Fpga>());
    let accel = sim::open_with(fault_rules::parse(rules).unwrap()).expect("sim");
    DeviceCore::new("FPGA:0 (sim)".into(), accel, 1, Duration::from_secs(20))
}

/// A `sim` core whose first `Add` launch faults on its first command.
fn faulting_sim() -> DeviceCore {
    sim_core("fault_next_command@add")
}

fn tensor(addr: DeviceAddr, dims: &[u64]) -> TensorDesc {
    TensorDesc::new(addr, DType::F32, Shape::new(dims).unwrap())
}

/// `[2,1,2,1,2] + [1,3,1,3,1]`: six device commands.
fn broadcast_add(core: &DeviceCore) -> Fence {
    let mut state = core.lock();
    let mut alloc = |bytes| state.accel().allocate(bytes, 256).unwrap();
    let (a, b, out) = (alloc(32), alloc(36), alloc(288));
    let inputs = [tensor(a, &[2, 1, 2, 1, 2]), tensor(b, &[1, 3, 1, 3, 1])];
    let op = OpDesc {
        kind: OpKind::Binary(Binary::ADD),
        inputs: &inputs,
        output: tensor(out, &[2, 3, 2, 3, 2]),
        op_id: 3,
    };
    state
        .enqueue(Q, Default::default(), |accel| accel.launch(Q, &op))
        .unwrap()
}

fn label(op_type: &'static str, node: &str) -> Option<OpLabel> {
    Some(OpLabel {
        op_type,
        node: node.into(),
    })
}

/// `out = kind(inputs)` for the op `op_type` '`node`', not waited for.
fn queue_op(
    core: &DeviceCore,
    (op_type, node): (&'static str, &str),
    kind: OpKind,
    inputs: &[TensorDesc],
    output: TensorDesc,
) -> Fence {
    let op = OpDesc {
        kind,
        inputs,
        output,
        op_id: 0,
    };
    core.lock()
        .enqueue_op(Q, label(op_type, node), Default::default(), |accel| {
            accel.launch(Q, &op)
        })
        .unwrap()
}

fn write(core: &DeviceCore, addr: DeviceAddr, values: &[f32]) {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let timeout = Duration::from_secs(20);
    core.lock()
        .accel()
        .write_blocking(Q, addr, &bytes, timeout)
        .unwrap();
}

fn read(core: &DeviceCore, addr: DeviceAddr, len: usize) -> Vec<f32> {
    let mut bytes = vec![0u8; len * 4];
    let timeout = Duration::from_secs(20);
    core.lock()
        .accel()
        .read_blocking(Q, &mut bytes, addr, timeout)
        .unwrap();
    let words = bytes.chunks_exact(4).map(|c| [c[0], c[1], c[2], c[3]]);
    words.map(f32::from_le_bytes).collect()
}

#[test]
fn a_fault_in_the_second_of_three_queued_ops_is_reported_naming_it() {
    let core = faulting_sim();
    let x = [-1.0f32, 2.0, -3.0, 4.0];
    let alloc = |bytes| core.lock().accel().allocate(bytes, 256).unwrap();
    let (a, first_out, second_out, third_out) = (alloc(16), alloc(16), alloc(16), alloc(16));
    write(&core, a, &x);
    let t = |addr| tensor(addr, &[4]);
    let first = queue_op(
        &core,
        ("Relu", "m/first"),
        OpKind::Unary(Unary::RELU),
        &[t(a)],
        t(first_out),
    );
    // The fault switch is set right before the Add is queued; let the
    // model finish the Relu first so that the switch hits the Add. The
    // driver is polled directly: the core has not seen the Relu complete.
    let start = Instant::now();
    while !core.lock().accel().poll(first).unwrap() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the Relu never ran"
        );
        std::thread::yield_now();
    }
    let add = OpKind::Binary(Binary::ADD);
    let second = queue_op(
        &core,
        ("AddV2", "m/second"),
        add,
        &[t(a), t(a)],
        t(second_out),
    );
    let third = queue_op(
        &core,
        ("Relu", "m/third"),
        OpKind::Unary(Unary::RELU),
        &[t(a)],
        t(third_out),
    );
    assert!(first < second && second < third);
    assert_eq!(core.lock().in_flight(), 3, "all three are outstanding");

    // The wait on the third op reports the second, with the cause.
    let error = core.wait(third, "the op").unwrap_err().to_string();
    assert!(
        error.starts_with("FPGA AddV2 'm/second': FPGA:0 (sim): "),
        "{error}"
    );
    assert!(error.contains("DEVICE_FAULT"), "{error}");
    // Sticky: every wait on a fence of the incident says the same, and
    // the first op completed with its result intact.
    assert_eq!(core.wait(second, "the op").unwrap_err().to_string(), error);
    assert!(core.poll(first).unwrap());
    assert_eq!(read(&core, first_out, 4), [0.0, 2.0, 0.0, 4.0]);
    // The device was reset once and runs new work.
    let again = queue_op(
        &core,
        ("Relu", "m/again"),
        OpKind::Unary(Unary::RELU),
        &[t(a)],
        t(third_out),
    );
    core.wait(again, "the op")
        .expect("the device works after the reset");
    assert_eq!(read(&core, third_out, 4), [0.0, 2.0, 0.0, 4.0]);
    assert_eq!(core.lock().recovered_through(), third);
}

#[test]
fn a_burst_beyond_the_queue_depth_back_pressures_and_completes() {
    let core = sim_core("");
    // 64 command slots by default: 1000 launches must wait for slots.
    const LAUNCHES: usize = 1000;
    let alloc = |bytes| core.lock().accel().allocate(bytes, 256).unwrap();
    let (a, out) = (alloc(64), alloc(LAUNCHES as u64 * 64));
    let x: Vec<f32> = (0..16).map(|i| i as f32 - 8.0).collect();
    write(&core, a, &x);
    let mut fences = Vec::with_capacity(LAUNCHES);
    for i in 0..LAUNCHES {
        let dst = tensor(DeviceAddr(out.0 + 64 * i as u64), &[16]);
        let node = format!("burst/{i}");
        let kind = OpKind::Unary(Unary::RELU);
        fences.push(queue_op(
            &core,
            ("Relu", &node),
            kind,
            &[tensor(a, &[16])],
            dst,
        ));
    }
    assert!(fences.windows(2).all(|w| w[0] < w[1]), "fences in order");
    assert_eq!(core.lock().in_flight(), LAUNCHES);
    core.wait(fences[LAUNCHES - 1], "the burst").unwrap();
    assert_eq!(core.lock().in_flight(), 0, "completed fences are forgotten");
    let relu: Vec<f32> = x.iter().map(|v| v.max(0.0)).collect();
    let all = read(&core, out, LAUNCHES * 16);
    for (i, result) in all.chunks_exact(16).enumerate() {
        assert_eq!(result, relu.as_slice(), "launch {i}");
    }
}

#[test]
fn a_fault_in_a_multi_command_op_fails_the_wait_at_once_and_resets_once() {
    let core = faulting_sim();
    let fence = broadcast_add(&core);
    let start = Instant::now();
    let error = core.wait(fence, "the op").unwrap_err();
    let took = start.elapsed();
    let Error::Device { source, .. } = &error else {
        panic!("not a device error: {error}");
    };
    assert_eq!(source.kind, ErrorKind::DeviceFault, "{error}");
    assert!(error.to_string().contains("DEVICE_FAULT"), "{error}");
    // Liveness (the budget is 20 s), with room for a loaded machine.
    assert!(took < Duration::from_secs(5), "took {took:?}");
    // The wait reset the device: the fence is aborted (and that resets
    // nothing more), and new work completes.
    assert_eq!(core.lock().recovered_through(), fence);
    let again = core.poll(fence).unwrap_err().to_string();
    assert!(again.contains("aborted"), "{again}");
    assert_eq!(core.lock().recovered_through(), fence);
    let next = broadcast_add(&core);
    core.wait(next, "the op")
        .expect("the device works after the reset");
    core.synchronize().expect("nothing left failing");
}

#[test]
fn waiting_for_idle_leaves_a_fault_to_the_work_that_failed() {
    let core = faulting_sim();
    let add = broadcast_add(&core);
    // A host copy waits only for an idle device: the fault it finds is the
    // op's (the device is reset), reported by waits on the op's fence.
    core.wait_until_idle("a copy")
        .expect("an idle device after the reset");
    core.wait_until_idle("the next copy")
        .expect("an idle device after the reset");
    let error = core.wait(add, "the op").unwrap_err();
    assert!(error.to_string().contains("DEVICE_FAULT"), "{error}");
    let newest = core.lock().newest_fence();
    assert!(core.poll(newest).is_err());
}
