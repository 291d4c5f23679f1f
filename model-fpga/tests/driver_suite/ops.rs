//! Suite cases on a healthy device: bring-up, every op against
//! `kernels::reference`, copies, fills, the allocator, back-pressure,
//! events and the bad-input errors that need no fault injection.

use tensorplug_abi::device::{
    CommandDescriptor, CompletionStatus, DEVICE_ABI_VERSION, Opcode, REFERENCE_TIMESTAMP_FREQ_HZ,
};
use tensorplug_core::accelerator::prelude::*;
use tensorplug_core::accelerator::{
    Accelerator, Binary, DeviceAddr, ErrorKind, OpDesc, OpKind, Unary,
};
use tensorplug_core::event::{Event, EventKind};
use tensorplug_device_fpga::driver::Error;
use tensorplug_model_fpga::kernels::{BinaryOp, reference};

use super::*;

pub fn bring_up(f: &mut impl Fixture) {
    let dev = f.dev();
    let facts = *dev.facts();
    assert_eq!(facts.abi, DEVICE_ABI_VERSION);
    assert_eq!(facts.timestamp_hz, REFERENCE_TIMESTAMP_FREQ_HZ);
    let info = dev.info();
    assert_eq!(info.clock_hz, u64::from(REFERENCE_TIMESTAMP_FREQ_HZ));
    assert_eq!(info.abi_version.major, 1);
    // The rings sit above the heap, inside device memory.
    let rings = *dev.rings();
    assert!(rings.commands.base >= info.memory_bytes);
    assert!(rings.events.base + u64::from(rings.events.entries) * 16 <= facts.memory_bytes);
    assert_eq!(dev.memory_usage().used, 0);
    let t0 = dev.timestamp().unwrap();
    let t1 = dev.timestamp().unwrap();
    assert!(t1 >= t0);
    // A second bring-up (reset) keeps working.
    dev.reset().unwrap();
    let buf = dev.allocate(64, 64).unwrap();
    let fence = dev.fill(Q, buf, 64, 0).unwrap();
    dev.wait(fence, TIMEOUT).unwrap();
}

pub fn matmul_all_transposes(f: &mut impl Fixture) {
    let (m, k, n) = (5usize, 7usize, 3usize);
    let a = values(m * k, 1);
    let b = values(k * n, 2);
    for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
        let a_dims = if ta { [k, m] } else { [m, k] }.map(|d| d as u64);
        let b_dims = if tb { [n, k] } else { [k, n] }.map(|d| d as u64);
        let kind = OpKind::MatMul {
            transpose_a: ta,
            transpose_b: tb,
        };
        let got = run(
            f.dev(),
            kind,
            &[(&a_dims, &a), (&b_dims, &b)],
            &[m as u64, n as u64],
        );
        let mut want = vec![0.0; m * n];
        reference::gemm(m, n, k, ta, tb, &a, &b, None, false, &mut want);
        assert_close(&got, &want, 1e-5, &format!("matmul ta={ta} tb={tb}"));
    }
}

pub fn fused_matmul_with_and_without_relu(f: &mut impl Fixture) {
    let (m, k, n) = (4usize, 6usize, 5usize);
    let a = values(m * k, 3);
    let b = values(k * n, 4);
    let bias = values(n, 5);
    for relu in [true, false] {
        let kind = OpKind::FusedMatMul {
            transpose_a: false,
            transpose_b: true,
            relu,
        };
        let b_dims = [n as u64, k as u64];
        let inputs: [(&[u64], &[f32]); 3] = [
            (&[m as u64, k as u64], &a),
            (&b_dims, &b),
            (&[n as u64], &bias),
        ];
        let got = run(f.dev(), kind, &inputs, &[m as u64, n as u64]);
        let mut want = vec![0.0; m * n];
        reference::gemm(m, n, k, false, true, &a, &b, Some(&bias), relu, &mut want);
        assert_close(&got, &want, 1e-5, &format!("fused relu={relu}"));
        if relu {
            assert!(got.iter().all(|&v| v >= 0.0));
        } else {
            assert!(
                got.iter().any(|&v| v < 0.0),
                "test data must exercise negatives"
            );
        }
    }
}

pub fn empty_inner_dimension_gives_zeros_plus_bias(f: &mut impl Fixture) {
    let bias = [1.5f32, -2.0, 0.25];
    let plain = OpKind::MatMul {
        transpose_a: false,
        transpose_b: false,
    };
    let got = run(f.dev(), plain, &[(&[2, 0], &[]), (&[0, 3], &[])], &[2, 3]);
    assert_eq!(got, [0.0; 6]);
    for (relu, want) in [(false, [1.5, -2.0, 0.25]), (true, [1.5, 0.0, 0.25])] {
        let kind = OpKind::FusedMatMul {
            transpose_a: false,
            transpose_b: false,
            relu,
        };
        let inputs: [(&[u64], &[f32]); 3] = [(&[2, 0], &[]), (&[0, 3], &[]), (&[3], &bias)];
        let got = run(f.dev(), kind, &inputs, &[2, 3]);
        assert_eq!(got, [want, want].concat(), "relu={relu}");
    }
}

pub fn bias_add_flattens_leading_axes(f: &mut impl Fixture) {
    let x = values(2 * 3 * 4, 6);
    let bias = values(4, 7);
    let got = run(
        f.dev(),
        OpKind::BiasAdd,
        &[(&[2, 3, 4], &x), (&[4], &bias)],
        &[2, 3, 4],
    );
    let mut want = vec![0.0; x.len()];
    reference::bias_add(&x, &bias, &mut want);
    assert_exact(&got, &want, "bias_add");
}

pub fn binary_ops_flat_and_broadcast(f: &mut impl Fixture) {
    let cases: [(&[u64], &[u64]); 7] = [
        (&[3, 5], &[3, 5]),
        (&[4, 5, 6], &[6]),
        (&[3, 1], &[1, 4]),
        (&[1], &[2, 3]),
        (&[2, 3, 1], &[3, 4]),
        // Five coalesced axes: several commands over the outer two.
        (&[2, 1, 2, 1, 2], &[1, 3, 1, 3, 1]),
        (&[2, 1, 3, 1, 2, 1], &[1, 2, 1, 2, 1, 2]),
    ];
    let ops = [
        (OpKind::Binary(Binary::ADD), BinaryOp::Add),
        (OpKind::Binary(Binary::SUB), BinaryOp::Sub),
        (OpKind::Binary(Binary::MUL), BinaryOp::Mul),
        (OpKind::Binary(Binary::MAXIMUM), BinaryOp::Maximum),
    ];
    for (case, (a_dims, b_dims)) in cases.iter().enumerate() {
        let rank = a_dims.len().max(b_dims.len());
        let pad = |d: &[u64], i: usize| {
            if i + d.len() < rank {
                1
            } else {
                d[i + d.len() - rank]
            }
        };
        let out_dims: Vec<u64> = (0..rank)
            .map(|i| pad(a_dims, i).max(pad(b_dims, i)))
            .collect();
        let a = values(a_dims.iter().product::<u64>() as usize, 10 + case as u32);
        let b = values(b_dims.iter().product::<u64>() as usize, 20 + case as u32);
        for (kind, op) in ops {
            let got = run(f.dev(), kind, &[(a_dims, &a), (b_dims, &b)], &out_dims);
            let mut want = vec![0.0; got.len()];
            let us = |d: &[u64]| d.iter().map(|&x| x as usize).collect::<Vec<_>>();
            reference::binary(op, &a, &us(a_dims), &b, &us(b_dims), &mut want);
            assert_exact(&got, &want, &format!("{kind:?} {a_dims:?} {b_dims:?}"));
        }
    }
}

pub fn relu_softmax_reduce_sum(f: &mut impl Fixture) {
    let x = values(4 * 6, 30);
    let got = run(
        f.dev(),
        OpKind::Unary(Unary::RELU),
        &[(&[4, 6], &x)],
        &[4, 6],
    );
    let mut want = vec![0.0; x.len()];
    reference::relu(&x, &mut want);
    assert_exact(&got, &want, "relu");

    let got = run(f.dev(), OpKind::Softmax, &[(&[2, 2, 6], &x)], &[2, 2, 6]);
    reference::softmax(&x, 6, &mut want);
    assert_close(&got, &want, 1e-6, "softmax");

    let mut sums = vec![0.0; 4];
    reference::reduce_sum(&x, 6, &mut sums);
    let got = run(f.dev(), OpKind::ReduceSum, &[(&[4, 6], &x)], &[4]);
    assert_close(&got, &sums, 1e-6, "reduce_sum");
    let kept = run(f.dev(), OpKind::ReduceSum, &[(&[4, 6], &x)], &[4, 1]);
    assert_close(&kept, &sums, 1e-6, "reduce_sum keep dims");
}

pub fn copies_in_all_directions(f: &mut impl Fixture) {
    let dev = f.dev();
    let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 + 3) as u8).collect();
    let a = dev.allocate(data.len() as u64, 64).unwrap();
    let b = dev.allocate(data.len() as u64, 64).unwrap();
    // Host → device → device → host.
    dev.write_blocking(Q, a, &data, TIMEOUT).unwrap();
    let fence = dev.copy_on_device(Q, b, a, data.len()).unwrap();
    dev.wait(fence, TIMEOUT).unwrap();
    let mut back = vec![0u8; data.len()];
    dev.read_blocking(Q, &mut back, b, TIMEOUT).unwrap();
    assert_eq!(back, data);
    // Overlapping device copy has memmove semantics; an odd offset and length.
    let fence = dev.copy_on_device(Q, DeviceAddr(a.0 + 3), a, 4001).unwrap();
    dev.wait(fence, TIMEOUT).unwrap();
    let mut moved = vec![0u8; 4004];
    dev.read_blocking(Q, &mut moved, a, TIMEOUT).unwrap();
    assert_eq!(&moved[..3], &data[..3]);
    assert_eq!(&moved[3..], &data[..4001]);
    // A bulk-path read waits for the queued command before it.
    let fence = dev.fill(Q, b, 16, 0xA1B2_C3D4).unwrap();
    let mut head = [0u8; 16];
    dev.read_blocking(Q, &mut head, b, TIMEOUT).unwrap();
    assert!(dev.poll(fence).unwrap());
    assert_eq!(head, [0xD4, 0xC3, 0xB2, 0xA1].repeat(4).as_slice());
    // Zero-length copies are no-ops that complete at once.
    let fence = dev.copy_on_device(Q, b, a, 0).unwrap();
    assert!(dev.poll(fence).unwrap());
}

pub fn fills_any_length(f: &mut impl Fixture) {
    let dev = f.dev();
    let buf = dev.allocate(256, 64).unwrap();
    dev.write_blocking(Q, buf, &[0xEE; 256], TIMEOUT).unwrap();
    let fence = dev.fill(Q, DeviceAddr(buf.0 + 1), 99, 0x0403_0201).unwrap();
    dev.wait(fence, TIMEOUT).unwrap();
    let mut got = [0u8; 256];
    dev.read_blocking(Q, &mut got, buf, TIMEOUT).unwrap();
    assert_eq!(got[0], 0xEE);
    for (i, &b) in got[1..100].iter().enumerate() {
        assert_eq!(b, (i % 4 + 1) as u8, "byte {i}");
    }
    assert!(got[100..].iter().all(|&b| b == 0xEE));
}

pub fn allocator_limits_and_errors(f: &mut impl Fixture) {
    let dev = f.dev();
    let total = dev.memory_usage().total;
    let e = expect_kind(dev.allocate(total + 1, 64), ErrorKind::OutOfMemory);
    assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
    let a = dev.allocate(1000, 4096).unwrap();
    assert_eq!(a.0 % 4096, 0);
    assert_ne!(a.0, 0, "no allocation at address 0");
    let used = dev.memory_usage().used;
    assert!(used >= 1000);
    dev.deallocate(a).unwrap();
    let e = expect_kind(dev.deallocate(a), ErrorKind::InvalidArgument);
    assert_eq!(e, Error::UnknownAllocation { addr: a.0 });
    assert_eq!(dev.memory_usage().used, 0);
    // The whole heap in one piece, once everything is free.
    let all = dev.allocate(total, 64).unwrap();
    dev.deallocate(all).unwrap();
}

pub fn back_pressure_many_commands(f: &mut impl Fixture) {
    let dev = f.dev();
    // 300 commands through a 16-entry queue and an 8-entry completion queue.
    let buf = dev.allocate(300 * 4, 64).unwrap();
    let mut last = None;
    for i in 0..300u32 {
        last = Some(
            dev.fill(Q, DeviceAddr(buf.0 + u64::from(i) * 4), 4, i)
                .unwrap(),
        );
    }
    dev.wait(last.unwrap(), TIMEOUT).unwrap();
    let mut got = vec![0u8; 300 * 4];
    dev.read_blocking(Q, &mut got, buf, TIMEOUT).unwrap();
    for (i, word) in got.chunks_exact(4).enumerate() {
        assert_eq!(u32::from_le_bytes(word.try_into().unwrap()), i as u32);
    }
    let (submitted, completed) = dev.command_counts();
    assert_eq!(submitted, completed);
}

pub fn events_have_kinds_tags_and_order(f: &mut impl Fixture) {
    let dev = f.dev();
    let x = upload(dev, &values(64, 40));
    let y = dev.allocate(256, 64).unwrap();
    // Nothing is recorded while profiling is off.
    let fence = dev.fill(Q, y, 256, 0).unwrap();
    dev.wait(fence, TIMEOUT).unwrap();
    let mut events = [Event::default(); 16];
    assert_eq!(dev.drain_events(&mut events).unwrap().events, 0);

    dev.set_profiling(true).unwrap();
    let inputs = [tensor(x, &[64])];
    let op = OpDesc {
        kind: OpKind::Unary(Unary::RELU),
        inputs: &inputs,
        output: tensor(y, &[64]),
        op_id: 42,
    };
    dev.launch(QueueId(3), &op).unwrap();
    dev.copy_on_device(QueueId(2), x, y, 200).unwrap();
    // A copy and a fill on behalf of a profiled op carry its tag.
    dev.copy_on_device_tagged(QueueId(2), x, y, 100, 43)
        .unwrap();
    let fence = dev.fill_tagged(QueueId(2), y, 64, 0, 44).unwrap();
    dev.wait(fence, TIMEOUT).unwrap();
    dev.set_profiling(false).unwrap();

    let drained = dev.drain_events(&mut events).unwrap();
    assert_eq!(drained.dropped, 0);
    let got = &events[..drained.events];
    let kinds: Vec<(u8, u16, u8, u32)> = got
        .iter()
        .map(|e| (e.kind, e.op_id, e.queue, e.arg))
        .collect();
    let (relu, fill) = (u32::from(Opcode::UNARY.0), u32::from(Opcode::FILL.0));
    assert_eq!(
        kinds,
        [
            (EventKind::OpBegin as u8, 42, 3, relu),
            (EventKind::OpEnd as u8, 42, 3, relu),
            (EventKind::CopyD2DBegin as u8, 0, 2, 200),
            (EventKind::CopyD2DEnd as u8, 0, 2, 200),
            (EventKind::CopyD2DBegin as u8, 43, 2, 100),
            (EventKind::CopyD2DEnd as u8, 43, 2, 100),
            (EventKind::OpBegin as u8, 44, 2, fill),
            (EventKind::OpEnd as u8, 44, 2, fill),
        ]
    );
    assert!(got.windows(2).all(|w| w[0].timestamp <= w[1].timestamp));
    // Drained events are gone.
    assert_eq!(dev.drain_events(&mut events).unwrap().events, 0);
}

pub fn bad_inputs_are_specific_errors(f: &mut impl Fixture) {
    let dev = f.dev();
    let total = dev.memory_usage().total;
    let buf = dev.allocate(64, 64).unwrap();
    // Out-of-range addresses: refused by the driver before the bus...
    let e = expect_kind(
        dev.write_blocking(Q, DeviceAddr(total + 64), &[0; 64], TIMEOUT),
        ErrorKind::InvalidArgument,
    );
    assert!(matches!(e, Error::OutOfRange { .. }), "{e}");
    expect_kind(
        dev.fill(Q, DeviceAddr(u64::MAX - 8), 64, 0),
        ErrorKind::InvalidArgument,
    );
    // ... and by the device for a raw descriptor.
    let mut fill = CommandDescriptor::new(Opcode::FILL, 9, 0);
    fill.dst = dev.facts().memory_bytes;
    fill.len = 4;
    let fence = dev.submit_raw(&fill).unwrap();
    let e = expect_kind(dev.wait(fence, TIMEOUT), ErrorKind::InvalidArgument);
    assert!(
        matches!(
            e,
            Error::Command {
                status: CompletionStatus::OUT_OF_RANGE,
                tag: 9,
                ..
            }
        ),
        "{e}"
    );
    // Inconsistent shapes: refused before submission...
    let (a, b) = (tensor(buf, &[2, 3]), tensor(buf, &[4, 2]));
    let op = OpDesc {
        kind: OpKind::MatMul {
            transpose_a: false,
            transpose_b: false,
        },
        inputs: &[a, b],
        output: tensor(buf, &[2, 2]),
        op_id: 1,
    };
    let e = expect_kind(dev.launch(Q, &op), ErrorKind::InvalidArgument);
    assert!(matches!(e, Error::Shape(_)), "{e}");
    // ... and by the device: `len` is not m·n·k.
    let mut add = CommandDescriptor::new(Opcode::ADD_F32, 10, 0);
    (add.src0, add.src1, add.dst) = (buf.0, buf.0, buf.0);
    (add.m, add.n, add.k, add.len) = (2, 2, 2, 7);
    let fence = dev.submit_raw(&add).unwrap();
    let e = expect_kind(dev.wait(fence, TIMEOUT), ErrorKind::InvalidArgument);
    assert!(
        matches!(
            e,
            Error::Command {
                status: CompletionStatus::INVALID_ARGUMENT,
                tag: 10,
                ..
            }
        ),
        "{e}"
    );
    // An unknown opcode is a failure too, and the queue goes on.
    let fence = dev
        .submit_raw(&CommandDescriptor::new(Opcode(0x7777), 11, 0))
        .unwrap();
    expect_kind(dev.wait(fence, TIMEOUT), ErrorKind::InvalidArgument);
    let fence = dev.fill(Q, buf, 64, 1).unwrap();
    dev.wait(fence, TIMEOUT).unwrap();
}
