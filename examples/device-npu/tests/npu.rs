//! The example NPU on the host.

use std::time::Duration;
use tensorplug_core::accelerator::{
    Accelerator, DType, DeviceAddr, ErrorKind, OpDesc, OpKind, QueueId, Shape, TensorDesc,
};
use tensorplug_core::event::{Event, EventKind};
use tensorplug_device_npu::{BASE, Npu, StdClock};

const Q: QueueId = QueueId(1);
const T: Duration = Duration::from_secs(1);

fn npu() -> Npu<Vec<u8>, StdClock> {
    Npu::new(vec![0; 1 << 16], StdClock::default())
}

fn put(dev: &mut Npu<Vec<u8>, StdClock>, values: &[f32]) -> DeviceAddr {
    let addr = dev.allocate(values.len() as u64 * 4, 64).unwrap();
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    dev.write_blocking(Q, addr, &bytes, T).unwrap();
    addr
}

fn get(dev: &mut Npu<Vec<u8>, StdClock>, addr: DeviceAddr, n: usize) -> Vec<f32> {
    let mut bytes = vec![0; n * 4];
    dev.read_blocking(Q, &mut bytes, addr, T).unwrap();
    bytes
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn t(addr: DeviceAddr, dims: &[u64]) -> TensorDesc {
    TensorDesc::new(addr, DType::F32, Shape::new(dims).unwrap())
}

#[test]
fn matmul_with_transposes_and_relu_compute_what_they_should() {
    let mut dev = npu();
    // a = [[1, 2, 3], [4, 5, 6]]; b = [[1, 0], [0, 1], [1, -1]].
    let a = put(&mut dev, &[1., 2., 3., 4., 5., 6.]);
    let b = put(&mut dev, &[1., 0., 0., 1., 1., -1.]);
    let out = dev.allocate(16, 4).unwrap();
    let mm = |ta, tb| OpKind::MatMul {
        transpose_a: ta,
        transpose_b: tb,
    };
    let inputs = [t(a, &[2, 3]), t(b, &[3, 2])];
    let op = OpDesc {
        kind: mm(false, false),
        inputs: &inputs,
        output: t(out, &[2, 2]),
        op_id: 1,
    };
    let fence = dev.launch(Q, &op).unwrap();
    dev.wait(fence, T).unwrap();
    assert_eq!(get(&mut dev, out, 4), [4., -1., 10., -1.]);

    // aᵀ·aᵀᵀ = [3,2]·[2,3] with both transposed reads of the same buffers.
    let out9 = dev.allocate(36, 4).unwrap();
    let inputs = [t(a, &[2, 3]), t(a, &[3, 2])];
    let op = OpDesc {
        kind: mm(true, true),
        inputs: &inputs,
        output: t(out9, &[3, 3]),
        op_id: 2,
    };
    dev.launch(Q, &op).unwrap();
    // aᵀ = [[1,4],[2,5],[3,6]]; (a as [3,2])ᵀ = [[1,3,5],[2,4,6]].
    assert_eq!(
        get(&mut dev, out9, 9),
        [9., 19., 29., 12., 26., 40., 15., 33., 51.]
    );

    let inputs = [t(out, &[4])];
    let relu = OpDesc {
        kind: OpKind::Relu,
        inputs: &inputs,
        output: t(out, &[4]),
        op_id: 3,
    };
    dev.launch(Q, &relu).unwrap();
    assert_eq!(get(&mut dev, out, 4), [4., 0., 10., 0.]);
}

#[test]
fn undeclared_ops_bad_shapes_and_foreign_addresses_are_refused() {
    let mut dev = npu();
    let x = put(&mut dev, &[1., 2.]);
    let inputs = [t(x, &[2])];
    let softmax = OpDesc {
        kind: OpKind::Softmax,
        inputs: &inputs,
        output: t(x, &[2]),
        op_id: 0,
    };
    let error = dev.launch(Q, &softmax).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unsupported);
    assert!(error.to_string().contains("Softmax"), "{error}");

    let wrong = OpDesc {
        kind: OpKind::Relu,
        inputs: &inputs,
        output: t(x, &[3]),
        op_id: 0,
    };
    assert_eq!(
        dev.launch(Q, &wrong).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    let outside = OpDesc {
        kind: OpKind::Relu,
        inputs: &[t(DeviceAddr(BASE + 4096), &[2])],
        output: t(x, &[2]),
        op_id: 0,
    };
    assert_eq!(
        dev.launch(Q, &outside).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert!(
        dev.fill(QueueId(2), x, 8, 0).is_err(),
        "the NPU has two queues"
    );
    assert!(dev.poll(tensorplug_core::accelerator::Fence(99)).is_err());
}

#[test]
fn the_allocator_aligns_frees_reuses_and_runs_out() {
    let mut dev = npu();
    let a = dev.allocate(100, 256).unwrap();
    assert_eq!(a.0 % 256, 0);
    assert!(a.0 >= BASE);
    let b = dev.allocate(100, 256).unwrap();
    assert!(b.0 >= a.0 + 100);
    dev.deallocate(a).unwrap();
    assert_eq!(
        dev.allocate(64, 64).unwrap(),
        a,
        "first fit reuses the hole"
    );
    assert_eq!(
        dev.allocate(1 << 20, 4).unwrap_err().kind(),
        ErrorKind::OutOfMemory
    );
    assert!(dev.deallocate(DeviceAddr(BASE + 3)).is_err());
    assert_eq!(dev.memory_usage().used, 164);
}

#[test]
fn profiling_records_op_spans_and_counts_drops() {
    let mut dev = npu();
    let x = put(&mut dev, &[1.; 4]);
    let inputs = [t(x, &[4])];
    let relu = OpDesc {
        kind: OpKind::Relu,
        inputs: &inputs,
        output: t(x, &[4]),
        op_id: 42,
    };
    dev.launch(Q, &relu).unwrap();
    let mut out = [Event::default(); 4];
    assert_eq!(
        dev.drain_events(&mut out).unwrap().events,
        0,
        "off: nothing"
    );

    dev.set_profiling(true).unwrap();
    dev.launch(Q, &relu).unwrap();
    let drained = dev.drain_events(&mut out).unwrap();
    assert_eq!((drained.events, drained.dropped), (2, 0));
    assert_eq!(out[0].kind(), Some(EventKind::OpBegin));
    assert_eq!(out[1].kind(), Some(EventKind::OpEnd));
    assert!(out.iter().take(2).all(|e| e.op_id == 42 && e.queue == 1));
    assert!(out[0].timestamp <= out[1].timestamp);

    let launches = tensorplug_device_npu::EVENT_CAPACITY / 2 + 3;
    for _ in 0..launches {
        dev.launch(Q, &relu).unwrap();
    }
    let mut all = vec![Event::default(); 2 * launches];
    let drained = dev.drain_events(&mut all).unwrap();
    assert_eq!(drained.events, tensorplug_device_npu::EVENT_CAPACITY);
    assert_eq!(drained.dropped, 6, "a full buffer drops and counts");
}
