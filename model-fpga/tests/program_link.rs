//! Device programs over the op-level link (protocol 2.3): a program
//! crosses once, each run is one request, its result equals the same ops
//! launched one by one, and a bad program is refused by name while the
//! link goes on serving.
#![cfg(feature = "std")]

use std::net::TcpStream;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use tensorplug_core::accelerator::prelude::*;
use tensorplug_core::accelerator::{
    Binary, DType, DeviceAddr, Error as _, ErrorKind, OpDesc, OpKind, QueueId, Shape, TensorDesc,
    Unary, VendorOps,
};
use tensorplug_core::program::{BufferKind, ProgramBuilder};
use tensorplug_link_host::RemoteAccelerator;

mod link_support;
use link_support::{Counting, serve_model};

const T: Duration = Duration::from_secs(5);
const Q: QueueId = QueueId(0);

fn shape(d: &[u64]) -> Shape {
    Shape::new(d).unwrap()
}

fn floats(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// `y = exp(relu(x·w + b) · relu(x·w + b))` through four scratch buffers,
/// the square on views of two of them as `[64]`.
fn program() -> Vec<u8> {
    program_tagged(0)
}

/// [`program`] with its op ids moved by `8 · tag`: the same computation,
/// another CRC.
fn program_tagged(tag: u16) -> Vec<u8> {
    let id = |k: u16| 8 * tag + k;
    let mut b = ProgramBuilder::new();
    let f = DType::F32;
    let x = b.buffer(BufferKind::Input, f, shape(&[4, 8])).unwrap();
    let w = b.buffer(BufferKind::Constant, f, shape(&[8, 16])).unwrap();
    let bias = b.buffer(BufferKind::Constant, f, shape(&[16])).unwrap();
    let y = b.buffer(BufferKind::Output, f, shape(&[4, 16])).unwrap();
    let mut t: Vec<_> = (0..3)
        .map(|_| b.buffer(BufferKind::Scratch, f, shape(&[4, 16])).unwrap())
        .collect();
    t.push(b.buffer(BufferKind::Scratch, f, shape(&[64])).unwrap());
    let mm = OpKind::MatMul {
        transpose_a: false,
        transpose_b: false,
    };
    b.launch(mm, id(1), &[x, w], t[0]).unwrap();
    b.launch(OpKind::BiasAdd, id(2), &[t[0], bias], t[1])
        .unwrap();
    b.launch(OpKind::Unary(Unary::RELU), id(3), &[t[1]], t[2])
        .unwrap();
    // The square through views (format 1.1): `[64]` in, `[4, 16]` out.
    let flat = b.view(t[2], shape(&[64])).unwrap();
    b.launch(OpKind::Binary(Binary::MUL), id(4), &[flat, flat], t[3])
        .unwrap();
    let square = b.view(t[3], shape(&[4, 16])).unwrap();
    b.launch(OpKind::Unary(Unary::EXP), id(5), &[square], y)
        .unwrap();
    b.finish(&VendorOps::NONE).unwrap().bytes
}

struct Buffers {
    x: DeviceAddr,
    w: DeviceAddr,
    bias: DeviceAddr,
    y: DeviceAddr,
    arena: DeviceAddr,
}

fn upload(dev: &mut RemoteAccelerator<Counting>) -> Buffers {
    let mut alloc = |bytes| dev.allocate(bytes, 64).unwrap();
    let b = Buffers {
        x: alloc(4 * 8 * 4),
        w: alloc(8 * 16 * 4),
        bias: alloc(16 * 4),
        y: alloc(4 * 16 * 4),
        arena: alloc(4096),
    };
    let x: Vec<f32> = (0..32).map(|i| (i as f32 - 16.0) / 16.0).collect();
    let w: Vec<f32> = (0..128)
        .map(|i| ((i * 37 % 17) as f32 - 8.0) / 40.0)
        .collect();
    let bias: Vec<f32> = (0..16).map(|i| i as f32 / 32.0 - 0.25).collect();
    for (addr, data) in [(b.x, &x), (b.w, &w), (b.bias, &bias)] {
        dev.write_blocking(Q, addr, &floats(data), T).unwrap();
    }
    b
}

fn read(dev: &mut RemoteAccelerator<Counting>, addr: DeviceAddr, n: usize) -> Vec<f32> {
    let mut out = vec![0u8; 4 * n];
    dev.read_blocking(Q, &mut out, addr, T).unwrap();
    out.chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// The same five ops, launched one by one into buffers of their own.
fn op_by_op(dev: &mut RemoteAccelerator<Counting>, b: &Buffers) -> Vec<f32> {
    let s = shape(&[4, 16]);
    let t: Vec<_> = (0..4).map(|_| dev.allocate(256, 64).unwrap()).collect();
    let desc = |addr, dims: &[u64]| TensorDesc::new(addr, DType::F32, shape(dims));
    let mm = OpKind::MatMul {
        transpose_a: false,
        transpose_b: false,
    };
    let steps: [(OpKind, Vec<TensorDesc>, DeviceAddr); 5] = [
        (mm, vec![desc(b.x, &[4, 8]), desc(b.w, &[8, 16])], t[0]),
        (
            OpKind::BiasAdd,
            vec![desc(t[0], &[4, 16]), desc(b.bias, &[16])],
            t[1],
        ),
        (OpKind::Unary(Unary::RELU), vec![desc(t[1], &[4, 16])], t[2]),
        (
            OpKind::Binary(Binary::MUL),
            vec![desc(t[2], &[4, 16]), desc(t[2], &[4, 16])],
            t[3],
        ),
        (OpKind::Unary(Unary::EXP), vec![desc(t[3], &[4, 16])], b.y),
    ];
    let mut last = None;
    for (i, (kind, inputs, out)) in steps.iter().enumerate() {
        let op = OpDesc {
            kind: *kind,
            inputs,
            output: TensorDesc::new(*out, DType::F32, s),
            op_id: i as u16 + 1,
        };
        last = Some(dev.launch(Q, &op).unwrap());
    }
    dev.wait(last.unwrap(), T).unwrap();
    read(dev, b.y, 64)
}

#[test]
fn a_program_crosses_once_and_each_run_is_one_request() {
    let stream = Counting::new(TcpStream::connect(serve_model()).unwrap());
    let frames = stream.frames.clone();
    let mut dev = RemoteAccelerator::connect(stream, T).unwrap();
    assert!(dev.runs_programs(), "the model server speaks 2.3");
    let b = upload(&mut dev);
    let want = op_by_op(&mut dev, &b);
    let cleared = dev.fill(Q, b.y, 256, 0).unwrap();
    dev.wait(cleared, T).unwrap();

    let bytes = program();
    let before = frames.load(Relaxed);
    let name = dev
        .load_program(&bytes)
        .unwrap()
        .expect("the peer keeps programs");
    assert_eq!(
        frames.load(Relaxed) - before,
        1,
        "{} bytes in one chunk",
        bytes.len()
    );
    assert_eq!(dev.load_program(&bytes).unwrap(), Some(name), "stored once");
    assert_eq!(frames.load(Relaxed) - before, 1, "not sent again");

    let slots = [b.x, b.w, b.bias, b.y];
    for _ in 0..3 {
        let before = frames.load(Relaxed);
        let fence = dev
            .run_program(Q, name, &slots, b.arena)
            .expect("the peer keeps programs")
            .unwrap();
        dev.wait(fence, T).unwrap();
        assert_eq!(frames.load(Relaxed) - before, 1, "one request per run");
        assert_eq!(read(&mut dev, b.y, 64), want, "equal to the ops one by one");
        let cleared = dev.fill(Q, b.y, 256, 0).unwrap();
        dev.wait(cleared, T).unwrap();
    }
}

/// The model server's store holds 8 programs: a ninth empties it (its
/// programs stay known to the host), and each evicted one is loaded again
/// before its next run; every run equals the ops one by one.
#[test]
fn a_full_store_makes_room_and_evicted_programs_load_again_before_they_run() {
    let stream = Counting::new(TcpStream::connect(serve_model()).unwrap());
    let frames = stream.frames.clone();
    let mut dev = RemoteAccelerator::connect(stream, T).unwrap();
    let b = upload(&mut dev);
    let want = op_by_op(&mut dev, &b);
    let mut names = Vec::new();
    for tag in 0..9 {
        let before = frames.load(Relaxed);
        let name = dev
            .load_program(&program_tagged(tag))
            .unwrap()
            .expect("the peer keeps programs");
        let sent = frames.load(Relaxed) - before;
        // The ninth: refused (the store is full), ForgetPrograms, loaded.
        assert_eq!(sent, if tag < 8 { 1 } else { 3 }, "program {tag}");
        names.push(name);
    }
    names.dedup();
    assert_eq!(names.len(), 9, "nine programs");
    let slots = [b.x, b.w, b.bias, b.y];
    let mut run = |name: u32| {
        let before = frames.load(Relaxed);
        let fence = dev
            .run_program(Q, name, &slots, b.arena)
            .expect("the peer keeps programs")
            .unwrap();
        dev.wait(fence, T).unwrap();
        let got = read(&mut dev, b.y, 64);
        let cleared = dev.fill(Q, b.y, 256, 0).unwrap();
        dev.wait(cleared, T).unwrap();
        (frames.load(Relaxed) - before, got)
    };
    // The ninth is stored: one request. The first was evicted: loaded,
    // then run (two); it is stored now (one).
    for (name, sent) in [(names[8], 1), (names[0], 2), (names[0], 1)] {
        let (frames_sent, got) = run(name);
        // Each run also sends its fill and its read.
        assert_eq!(frames_sent - 2, sent, "program {name:08x}");
        assert_eq!(got, want, "equal to the ops one by one");
    }
}

#[test]
fn a_bad_program_or_run_is_refused_by_name_and_the_link_goes_on() {
    let stream = Counting::new(TcpStream::connect(serve_model()).unwrap());
    let mut dev = RemoteAccelerator::connect(stream, T).unwrap();
    let b = upload(&mut dev);

    // A buffer's dtype changed, CRC resealed: the MCU's validator names it.
    let mut bad = program();
    bad[24 + 32 + 1] = 2; // buffer 1 (w): f16
    let n = bad.len();
    let crc = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC).checksum(&bad[..n - 4]);
    bad[n - 4..].copy_from_slice(&crc.to_le_bytes());
    let error = dev.load_program(&bad).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidArgument, "{error}");
    assert!(
        error.to_string().contains("program command 0: Shape"),
        "{error}"
    );

    // Bindings short of one: the run's fence fails with the reason.
    let name = dev
        .load_program(&program())
        .unwrap()
        .expect("the peer keeps programs");
    let fence = dev
        .run_program(Q, name, &[b.x, b.w, b.bias], b.arena)
        .expect("the peer keeps programs")
        .unwrap();
    let error = dev.wait(fence, T).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("takes 4 bindings, the run gave 3"),
        "{error}"
    );

    // Forgotten on the MCU: a clear error, and loading it again works.
    dev.forget_programs().unwrap();
    let error = dev
        .run_program(Q, name, &[b.x, b.w, b.bias, b.y], b.arena)
        .expect("the peer keeps programs")
        .unwrap_err();
    assert!(error.to_string().contains("was not loaded"), "{error}");
    let name = dev
        .load_program(&program())
        .unwrap()
        .expect("the peer keeps programs");
    let fence = dev
        .run_program(Q, name, &[b.x, b.w, b.bias, b.y], b.arena)
        .expect("the peer keeps programs")
        .unwrap();
    dev.wait(fence, T).unwrap();
    assert!(
        read(&mut dev, b.y, 64)
            .iter()
            .all(|v| v.is_finite() && *v >= 1.0)
    );
}
