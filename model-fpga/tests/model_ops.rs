//! Every opcode against the plain reference implementations.
#![cfg(feature = "std")]

mod model_support;

use model_support::*;
use tensorplug_abi::device::{CommandDescriptor, CommandFlags, CompletionStatus, Opcode};
use tensorplug_model_fpga::kernels::records::RECORDS;
use tensorplug_model_fpga::kernels::{BinaryOp, reference};
use tensorplug_model_fpga::model::{
    HostBus, SRC0_BCAST_K, SRC0_BCAST_M, SRC0_BCAST_N, SRC1_BCAST_K, SRC1_BCAST_M, SRC1_BCAST_N,
};

const A: u64 = DATA;
const B: u64 = DATA + 0x1_0000;
const C: u64 = DATA + 0x2_0000;
const OUT: u64 = DATA + 0x3_0000;

fn cmd(op: Opcode) -> CommandDescriptor {
    CommandDescriptor::new(op, 7, 1)
}

fn ok(rig: &mut Rig, c: CommandDescriptor) {
    let done = rig.run(c);
    assert_eq!(
        (done.status, done.detail),
        (CompletionStatus::OK, 0),
        "{c:?}"
    );
    assert_eq!((done.tag, done.stream), (7, 1));
}

#[test]
fn nop_completes() {
    let mut rig = Rig::standard();
    ok(&mut rig, cmd(Opcode::NOP));
}

#[test]
fn copies_move_bytes_between_host_and_device() {
    let mut rig = Rig::standard();
    let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
    rig.dev.bus_mut().write(HOST_BASE + 100, &data).unwrap();

    let mut h2d = cmd(Opcode::COPY_H2D);
    (h2d.src0, h2d.dst, h2d.len) = (HOST_BASE + 100, A + 1, 1000);
    ok(&mut rig, h2d);
    assert_eq!(rig.read_bytes(A + 1, 1000), data);

    let mut d2d = cmd(Opcode::COPY_D2D);
    (d2d.src0, d2d.dst, d2d.len) = (A + 1, A + 501, 1000); // overlapping: memmove
    ok(&mut rig, d2d);
    assert_eq!(rig.read_bytes(A + 501, 1000), data);

    let mut d2h = cmd(Opcode::COPY_D2H);
    (d2h.src0, d2h.dst, d2h.len) = (A + 501, HOST_BASE + 5000, 1000);
    ok(&mut rig, d2h);
    let mut back = vec![0; 1000];
    rig.dev.bus_mut().read(HOST_BASE + 5000, &mut back).unwrap();
    assert_eq!(back, data);
}

#[test]
fn dma_outside_host_memory_is_a_bus_error() {
    let mut rig = Rig::standard();
    let mut h2d = cmd(Opcode::COPY_H2D);
    (h2d.src0, h2d.dst, h2d.len) = (HOST_BASE + HOST_SIZE as u64 - 8, A, 16);
    let done = rig.run(h2d);
    assert_eq!((done.status, done.detail), (CompletionStatus::BUS_ERROR, 0));
}

#[test]
fn fill_repeats_the_immediate_at_any_alignment() {
    let mut rig = Rig::standard();
    let mut fill = cmd(Opcode::FILL);
    (fill.dst, fill.len, fill.imm) = (A + 3, 10, 0x4433_2211);
    ok(&mut rig, fill);
    assert_eq!(
        rig.read_bytes(A + 2, 12),
        [
            0, 0x11, 0x22, 0x33, 0x44, 0x11, 0x22, 0x33, 0x44, 0x11, 0x22, 0
        ]
    );
}

fn gemm_case(m: usize, n: usize, k: usize, ta: bool, tb: bool, bias: bool, relu: bool) {
    let mut rig = Rig::standard();
    let (a, b, bv) = (values(m * k, 1), values(k * n, 2), values(n, 3));
    rig.write_f32(A, &a);
    rig.write_f32(B, &b);
    rig.write_f32(C, &bv);
    let mut c = cmd(match (bias, relu) {
        (false, _) => Opcode::GEMM_F32,
        (true, true) => Opcode::GEMM_BIAS_RELU_F32,
        (true, false) => Opcode::GEMM_BIAS_F32,
    });
    (c.src0, c.src1, c.dst) = (A, B, OUT);
    (c.m, c.n, c.k) = (m as u32, n as u32, k as u32);
    if bias {
        c.src2 = C;
    }
    let mut flags = 0;
    if ta {
        flags |= CommandFlags::TRANSPOSE_A.0;
    }
    if tb {
        flags |= CommandFlags::TRANSPOSE_B.0;
    }
    c.flags = CommandFlags(flags);
    ok(&mut rig, c);
    let got = rig.read_f32(OUT, m * n);
    let mut want = vec![0.0; m * n];
    let bias_ref = bias.then_some(&bv[..]);
    reference::gemm(m, n, k, ta, tb, &a, &b, bias_ref, relu, &mut want);
    for i in 0..m {
        for j in 0..n {
            let tol = reference::gemm_tolerance(m, n, k, ta, tb, &a, &b, bias_ref, i, j);
            let (g, w) = (got[i * n + j], want[i * n + j]);
            assert!(
                (g - w).abs() <= tol,
                "({i},{j}) {g} vs {w} ±{tol} ta={ta} tb={tb} bias={bias} relu={relu}"
            );
        }
    }
}

#[test]
fn gemm_matches_the_reference_with_every_transpose() {
    for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
        gemm_case(13, 7, 29, ta, tb, false, false);
        gemm_case(5, 17, 3, ta, tb, true, true);
        gemm_case(9, 4, 11, ta, tb, true, false);
    }
}

fn binary_op(op: Opcode) -> BinaryOp {
    match op {
        Opcode::ADD_F32 => BinaryOp::Add,
        Opcode::SUB_F32 => BinaryOp::Sub,
        Opcode::MUL_F32 => BinaryOp::Mul,
        _ => BinaryOp::Maximum,
    }
}

const BINARY: [Opcode; 4] = [
    Opcode::ADD_F32,
    Opcode::SUB_F32,
    Opcode::MUL_F32,
    Opcode::MAX_F32,
];

#[test]
fn flat_binary_ops_match_the_reference() {
    for op in BINARY {
        let mut rig = Rig::standard();
        let (a, b) = (values(101, 4), values(101, 5));
        rig.write_f32(A, &a);
        rig.write_f32(B, &b);
        let mut c = cmd(op);
        (c.src0, c.src1, c.dst, c.len) = (A, B, OUT, 101);
        ok(&mut rig, c);
        let mut want = vec![0.0; 101];
        reference::binary(binary_op(op), &a, &[101], &b, &[101], &mut want);
        assert_eq!(rig.read_f32(OUT, 101), want, "{op:?}");
        // In place: dst == src0.
        c.dst = A;
        ok(&mut rig, c);
        assert_eq!(rig.read_f32(A, 101), want, "{op:?} in place");
    }
}

/// The 3-D broadcast form against the reference's NumPy broadcasting.
fn broadcast_case(op: Opcode, dims: [usize; 3], s0: [bool; 3], s1: [bool; 3], in_place: bool) {
    let ext =
        |b: [bool; 3]| -> Vec<usize> { (0..3).map(|i| if b[i] { 1 } else { dims[i] }).collect() };
    let (e0, e1) = (ext(s0), ext(s1));
    let (a, b) = (
        values(e0.iter().product(), 6),
        values(e1.iter().product(), 7),
    );
    let mut rig = Rig::standard();
    rig.write_f32(A, &a);
    rig.write_f32(B, &b);
    let mut c = cmd(op);
    let len = dims.iter().product::<usize>();
    (c.src0, c.src1, c.dst, c.len) = (A, B, if in_place { A } else { OUT }, len as u64);
    (c.m, c.n, c.k) = (dims[0] as u32, dims[1] as u32, dims[2] as u32);
    let bits = [
        SRC0_BCAST_M,
        SRC0_BCAST_N,
        SRC0_BCAST_K,
        SRC1_BCAST_M,
        SRC1_BCAST_N,
        SRC1_BCAST_K,
    ];
    let set = s0.iter().chain(&s1);
    c.flags = CommandFlags(
        bits.iter()
            .zip(set)
            .filter(|(_, on)| **on)
            .map(|(b, _)| b)
            .sum(),
    );
    ok(&mut rig, c);
    // Reference: broadcast each source to the full shape explicitly, then
    // combine (NumPy can't express "both broadcast along an axis of size > 1").
    let full = |v: &[f32], e: &[usize]| -> Vec<f32> {
        let mut out = vec![0.0; len];
        reference::binary(BinaryOp::Add, v, e, &vec![0.0; len], &dims, &mut out);
        out
    };
    let mut want = vec![0.0; len];
    reference::binary(
        binary_op(op),
        &full(&a, &e0),
        &dims,
        &full(&b, &e1),
        &dims,
        &mut want,
    );
    let got = rig.read_f32(if in_place { A } else { OUT }, len);
    assert_eq!(
        got, want,
        "{op:?} {dims:?} src0 {s0:?} src1 {s1:?} in place {in_place}"
    );
}

#[test]
fn broadcast_binary_ops_match_numpy_broadcasting() {
    let f = false;
    let t = true;
    for op in BINARY {
        broadcast_case(op, [2, 3, 4], [f, f, f], [f, f, f], false);
        broadcast_case(op, [2, 3, 4], [f, f, f], [t, t, f], false); // bias-like
        broadcast_case(op, [2, 3, 4], [t, f, t], [f, t, f], false); // both broadcast
        broadcast_case(op, [3, 5, 2], [f, t, f], [t, f, t], false);
        broadcast_case(op, [4, 2, 3], [t, f, f], [t, f, f], false); // same axis, m > 1
        broadcast_case(op, [1, 6, 1], [f, f, f], [f, t, f], false);
        broadcast_case(op, [2, 3, 4], [f, f, f], [f, t, t], true);
    }
}

#[test]
fn relu_matches_the_reference_in_and_out_of_place() {
    let mut rig = Rig::standard();
    let x = values(77, 8);
    rig.write_f32(A, &x);
    let mut c = cmd(Opcode::RELU_F32);
    (c.src0, c.dst, c.len) = (A, OUT, 77);
    ok(&mut rig, c);
    let mut want = vec![0.0; 77];
    reference::relu(&x, &mut want);
    assert_eq!(rig.read_f32(OUT, 77), want);
    c.dst = A;
    ok(&mut rig, c);
    assert_eq!(rig.read_f32(A, 77), want);
}

#[test]
fn bias_add_matches_the_reference_in_and_out_of_place() {
    let mut rig = Rig::standard();
    let (x, bias) = (values(6 * 9, 9), values(9, 10));
    rig.write_f32(A, &x);
    rig.write_f32(B, &bias);
    let mut c = cmd(Opcode::BIAS_ADD_F32);
    (c.src0, c.src1, c.dst, c.m, c.n) = (A, B, OUT, 6, 9);
    ok(&mut rig, c);
    let mut want = vec![0.0; 54];
    reference::bias_add(&x, &bias, &mut want);
    assert_eq!(rig.read_f32(OUT, 54), want);
    c.dst = A;
    ok(&mut rig, c);
    assert_eq!(rig.read_f32(A, 54), want);
}

#[test]
fn softmax_matches_the_reference_within_tolerance() {
    let mut rig = Rig::standard();
    let x = values(5 * 33, 11);
    rig.write_f32(A, &x);
    let mut c = cmd(Opcode::SOFTMAX_F32);
    (c.src0, c.dst, c.m, c.n) = (A, OUT, 5, 33);
    ok(&mut rig, c);
    let mut want = vec![0.0; 165];
    reference::softmax(&x, 33, &mut want);
    let close = |got: &[f32]| {
        got.iter()
            .zip(&want)
            .all(|(g, w)| (g - w).abs() <= 4.0 * f32::EPSILON * w.abs().max(1e-30) + 1e-7)
    };
    assert!(close(&rig.read_f32(OUT, 165)));
    c.dst = A;
    ok(&mut rig, c);
    assert!(close(&rig.read_f32(A, 165)), "in place");
}

#[test]
fn reduce_sum_matches_the_reference_within_tolerance() {
    let mut rig = Rig::standard();
    let x = values(4 * 250, 12);
    rig.write_f32(A, &x);
    let mut c = cmd(Opcode::REDUCE_SUM_F32);
    (c.src0, c.dst, c.m, c.n) = (A, OUT, 4, 250);
    ok(&mut rig, c);
    let mut want = vec![0.0; 4];
    reference::reduce_sum(&x, 250, &mut want);
    for (r, (g, w)) in rig.read_f32(OUT, 4).iter().zip(&want).enumerate() {
        let bound = 251.0
            * f32::EPSILON
            * x[r * 250..(r + 1) * 250]
                .iter()
                .map(|v| v.abs())
                .sum::<f32>();
        assert!((g - w).abs() <= bound, "row {r}: {g} vs {w}");
    }
}

/// `UNARY`/`BINARY` name the op by its catalogue code; every op of the
/// model's tables runs by it, and each per-op opcode of ABI ≤ 1.2 gives the
/// same bits as the catalogue command it stands for.
#[test]
fn catalogue_commands_run_every_listed_op_as_its_per_op_opcode_does() {
    use tensorplug_model_fpga::kernels::UnaryOp;
    let mut rig = Rig::standard();
    let (x, y) = (values(64, 5), values(64, 9));
    rig.write_f32(A, &x);
    rig.write_f32(B, &y);
    let run_with = |rig: &mut Rig, op: Opcode, imm: u32, binary: bool, src2: u64| {
        let mut c = cmd(op);
        (c.src0, c.src2, c.dst, c.len, c.imm) = (A, src2, OUT, 64, imm);
        if binary {
            c.src1 = B;
        }
        ok(rig, c);
        rig.read_f32(OUT, 64)
    };
    let run = |rig: &mut Rig, op: Opcode, imm: u32, binary: bool| run_with(rig, op, imm, binary, 0);
    for op in UnaryOp::ALL {
        // An op with a parameter takes it from `src2` (ABI 1.8).
        let p = if op.takes_param() { -0.375f32 } else { 0.0 };
        let src2 = u64::from(p.to_bits());
        let got = run_with(&mut rig, Opcode::UNARY, op as u32, false, src2);
        let want: Vec<f32> = x.iter().map(|&v| op.apply(v, p)).collect();
        assert_eq!(bits(&got), bits(&want), "{op:?}");
    }
    for op in BinaryOp::ALL {
        let p = if op.takes_param() { -0.375f32 } else { 0.0 };
        let src2 = u64::from(p.to_bits());
        let got = run_with(&mut rig, Opcode::BINARY, op as u32, true, src2);
        let want: Vec<f32> = x
            .iter()
            .zip(&y)
            .map(|(&a, &b)| op.apply_with(a, b, p))
            .collect();
        assert_eq!(bits(&got), bits(&want), "{op:?}");
    }
    for e in Opcode::PER_OP_ELEMENTWISE {
        let binary = UnaryOp::from_code(e.code).is_none();
        let per_op = run(&mut rig, e.opcode, 0, binary);
        let family = if binary {
            Opcode::BINARY
        } else {
            Opcode::UNARY
        };
        let by_code = run(&mut rig, family, e.code.into(), binary);
        assert_eq!(bits(&per_op), bits(&by_code), "{:?}", e.opcode.name());
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|f| f.to_bits()).collect()
}

/// A code the `OPS` registers do not list, or one of the other family, is
/// `UNSUPPORTED` with the code as detail; the registers list exactly the
/// model's kernels, and read 0 on a device without `CATALOGUE`.
/// `UNARY`'s and `BINARY`'s `src2` is an op's parameter (ABI 1.8): bits
/// 63..32 must be 0, and an op without a parameter must have 0 there.
#[test]
fn an_elementwise_parameter_is_checked() {
    use tensorplug_model_fpga::kernels::UnaryOp;
    let mut rig = Rig::standard();
    let src2_field = 24;
    let half = u64::from(0.5f32.to_bits());
    let unary = UnaryOp::ALL.into_iter().filter(|op| op.takes_param());
    let binary = BinaryOp::ALL.into_iter().filter(|op| op.takes_param());
    let mut cases = vec![
        (Opcode::UNARY, UnaryOp::Exp as u32, 1),
        (Opcode::UNARY, UnaryOp::Exp as u32, half),
        (Opcode::BINARY, BinaryOp::Add as u32, half),
    ];
    cases.extend(unary.map(|op| (Opcode::UNARY, op as u32, 1 << 32)));
    cases.extend(binary.map(|op| (Opcode::BINARY, op as u32, 1 << 32)));
    for (opcode, code, src2) in cases {
        let mut c = cmd(opcode);
        (c.src0, c.src2, c.dst, c.len, c.imm) = (A, src2, OUT, 4, code);
        if opcode == Opcode::BINARY {
            c.src1 = B;
        }
        let done = rig.run(c);
        assert_eq!(
            (done.status, done.detail),
            (CompletionStatus::INVALID_ARGUMENT, src2_field),
            "{:?} {code} {src2:#x}",
            opcode.name()
        );
    }
}

#[test]
fn unlisted_codes_are_unsupported_and_the_ops_registers_list_the_kernels() {
    use tensorplug_abi::device::{Features, OPS_WORDS, REFERENCE_FEATURES, Register};
    use tensorplug_model_fpga::kernels::UnaryOp;
    use tensorplug_model_fpga::model::ModelConfig;
    let mut rig = Rig::standard();
    let exp = UnaryOp::Exp as u32;
    let add = BinaryOp::Add as u32;
    for (op, imm) in [
        (Opcode::UNARY, 1),
        (Opcode::UNARY, add),
        (Opcode::BINARY, exp),
        (Opcode::UNARY, 0),
        (Opcode::BINARY, 0xFFFF),
        (Opcode::UNARY, 0x1_0008),
    ] {
        let mut c = cmd(op);
        (c.src0, c.dst, c.len, c.imm) = (A, OUT, 4, imm);
        if op == Opcode::BINARY {
            c.src1 = B;
        }
        let done = rig.run(c);
        assert_eq!(
            (done.status, done.detail),
            (CompletionStatus::UNSUPPORTED, imm),
            "{:?} {imm}",
            op.name()
        );
    }
    let mut listed = Vec::new();
    for w in 0..OPS_WORDS {
        let word = rig.reg(Register::ops(w));
        listed.extend(
            (0..32)
                .filter(|b| word & (1 << b) != 0)
                .map(|b| 32 * w as u32 + b + 1),
        );
    }
    let mut kernels: Vec<u32> = UnaryOp::ALL.iter().map(|op| *op as u32).collect();
    kernels.extend(BinaryOp::ALL.iter().map(|op| *op as u32));
    kernels.extend(RECORDS.iter().map(|r| u32::from(r.code)));
    kernels.sort();
    assert_eq!(listed, kernels);

    rig.dev = model_with(ModelConfig {
        features: Features(REFERENCE_FEATURES.0 & !Features::CATALOGUE.0),
        ..ModelConfig::default()
    });
    rig.bring_up(tensorplug_abi::device::Control(0));
    assert!((0..OPS_WORDS).all(|w| rig.reg(Register::ops(w)) == 0));
    let mut c = cmd(Opcode::UNARY);
    (c.src0, c.dst, c.len, c.imm) = (A, OUT, 4, exp);
    let done = rig.run(c);
    assert_eq!(
        (done.status, done.detail),
        (CompletionStatus::UNSUPPORTED, Features::CATALOGUE.0)
    );
}

/// `RECORD` runs each record of the catalogue on its record's cases, as
/// the record's device arguments say, equal to core's reference bit for
/// bit (within its tolerance for a record that has one), and refuses what
/// a record's kernel refuses.
#[test]
fn record_commands_run_the_records_and_check_their_arguments() {
    use tensorplug_core::accelerator::{
        DType, DeviceAddr, OpDesc, OpKind, Shape, TensorDesc, Tolerance, records,
    };
    use tensorplug_core::reference as core_ref;
    let mut rig = Rig::standard();
    let mut ran = Vec::new();
    for kind in records() {
        let (decl, record) = (kind.decl(), kind.decl().record().unwrap());
        let reference = decl.reference().unwrap();
        for case in reference.cases {
            let kind = decl.kind(&case.attrs).unwrap();
            let shapes: Vec<Shape> = case
                .inputs
                .iter()
                .map(|(d, _)| Shape::new(d).unwrap())
                .collect();
            let data: Vec<(&[f32], Shape)> = case
                .inputs
                .iter()
                .zip(&shapes)
                .map(|((_, x), &s)| (*x, s))
                .collect();
            let out = Shape::new(case.out).unwrap();
            let mut want = vec![0.0; out.elements().unwrap() as usize];
            core_ref::run(kind, &data, out, &mut want).unwrap();
            if want.is_empty() {
                continue;
            }
            let t = |addr: u64, shape| TensorDesc::new(DeviceAddr(addr), DType::F32, shape);
            let addrs = [A, B, C];
            let inputs: Vec<TensorDesc> = shapes.iter().zip(addrs).map(|(&s, a)| t(a, s)).collect();
            let op = OpDesc {
                kind,
                inputs: &inputs,
                output: t(OUT, out),
                op_id: 0,
            };
            op.validate().unwrap();
            let args = (record.args)(&case.attrs, op.inputs).unwrap();
            let mut c = cmd(Opcode::RECORD);
            for ((x, _), addr) in data.iter().zip(addrs) {
                rig.write_f32(addr, x);
            }
            [c.src0, c.src1, c.src2] = [0, 1, 2].map(|i| if i < data.len() { addrs[i] } else { 0 });
            c.dst = OUT;
            [c.m, c.n, c.k] = [args.dims[0], args.dims[1], args.dims[2]];
            c.len = u64::from(args.dims[3]);
            c.imm = u32::from(decl.id.code) | u32::from(args.bits) << 16;
            ok(&mut rig, c);
            let got = rig.read_f32(OUT, want.len());
            if reference.tolerance == Tolerance::EXACT {
                assert_eq!(bits(&got), bits(&want), "{kind:?} {:?}", case.inputs[0].0);
            } else {
                let tol = reference.tolerance;
                for (g, w) in got.iter().zip(&want) {
                    assert!(
                        (g - w).abs() <= tol.abs + tol.rel * w.abs(),
                        "{kind:?}: {g} against {w}"
                    );
                }
            }
            ran.push(decl.name);
        }
    }
    let non_empty = |k: OpKind| {
        let cases = k.decl().reference().unwrap().cases;
        cases
            .iter()
            .filter(|c| c.out.iter().product::<u64>() > 0)
            .count()
    };
    assert_eq!(ran.len(), records().map(non_empty).sum::<usize>());
    let refused = |rig: &mut Rig, c: CommandDescriptor| {
        let done = rig.run(c);
        (done.status, done.detail)
    };
    let mut c = cmd(Opcode::RECORD);
    (c.src0, c.dst, c.m, c.n, c.k, c.imm) = (A, OUT, 2, 5, 3, 0xFFFF);
    assert_eq!(
        refused(&mut rig, c),
        (CompletionStatus::UNSUPPORTED, 0xFFFF)
    );
    // A one-input record of `m·n·k` elements (`Cumsum`'s form), if any.
    let Some(kind) = records().find(|k| k.decl().inputs == 1) else {
        return;
    };
    c.imm = u32::from(kind.decl().id.code);
    let bad_bits = CommandDescriptor {
        imm: c.imm | 0x8000 << 16,
        ..c
    };
    assert_eq!(
        refused(&mut rig, bad_bits),
        (CompletionStatus::INVALID_ARGUMENT, 60)
    );
    // A fourth extent (`len`) the record does not have.
    let stray_len = CommandDescriptor { len: 1, ..c };
    assert_eq!(
        refused(&mut rig, stray_len),
        (CompletionStatus::INVALID_ARGUMENT, 60)
    );
    let stray_src = CommandDescriptor { src1: B, ..c };
    assert_eq!(
        refused(&mut rig, stray_src),
        (CompletionStatus::INVALID_ARGUMENT, 16)
    );
    let overlap = CommandDescriptor { dst: A + 4, ..c };
    assert_eq!(
        refused(&mut rig, overlap),
        (CompletionStatus::INVALID_ARGUMENT, 32)
    );
    let empty = CommandDescriptor { n: 0, ..c };
    assert_eq!(
        refused(&mut rig, empty),
        (CompletionStatus::INVALID_ARGUMENT, 60)
    );
    // Extents whose product overflows are refused, not wrapped.
    let huge = CommandDescriptor {
        m: u32::MAX,
        n: u32::MAX,
        k: u32::MAX,
        ..c
    };
    assert_eq!(
        refused(&mut rig, huge),
        (CompletionStatus::INVALID_ARGUMENT, 60)
    );
    // Ranges before alignment: a misaligned source and an output past the
    // memory's end report the range.
    let (src0, dst) = (A + 2, MEM_SIZE as u64);
    let order = CommandDescriptor { src0, dst, ..c };
    assert_eq!(
        refused(&mut rig, order),
        (CompletionStatus::OUT_OF_RANGE, 32)
    );
    let misaligned = CommandDescriptor { src0, ..c };
    assert_eq!(
        refused(&mut rig, misaligned),
        (CompletionStatus::MISALIGNED, 8)
    );
}
