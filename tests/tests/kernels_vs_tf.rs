//! The model's kernels against TensorFlow's CPU kernels on the same inputs.
//!
//! Writes every case's inputs as raw little-endian f32 files, runs
//! `tests/python/kernels_reference.py` once (one TF import for all cases) and
//! compares. Tolerances (see `docs/device-numerics.md`): element-wise ops
//! exact; GEMM `2·(k+2)·ε·(Σ|a·b| + |bias|)`; reduce-sum `2·(c+1)·ε·Σ|x|`;
//! softmax relative `2·(c + 8 + |x − max|)·ε`. Each is twice a bound that
//! both implementations meet against the exact result.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use tensorplug_model_fpga::kernels::{
    self, BinaryOp, GemmSpec, bias_add, binary, gemm, reduce_sum_last_axis, relu, softmax_last_axis,
};
use tensorplug_tests::run_python;

const EPS: f32 = f32::EPSILON;

/// SplitMix64: deterministic test data without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// Uniform in `[lo, hi)`.
    fn value(&mut self, lo: f32, hi: f32) -> f32 {
        let unit = (self.next() >> 40) as f32 / (1u64 << 24) as f32;
        lo + (hi - lo) * unit
    }
    fn values(&mut self, len: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..len).map(|_| self.value(lo, hi)).collect()
    }
}

enum Op {
    MatMul(GemmSpec, bool),
    BiasAdd(Vec<usize>),
    Binary(BinaryOp, Vec<usize>, Vec<usize>),
    Relu(Vec<usize>),
    Softmax(Vec<usize>),
    ReduceSum(Vec<usize>),
}

struct Case {
    op: Op,
    inputs: Vec<(&'static str, Vec<f32>)>,
}

fn elements(shape: &[usize]) -> usize {
    shape.iter().product()
}

fn dims(shape: &[usize]) -> String {
    if shape.is_empty() {
        return "-".into();
    }
    let parts: Vec<String> = shape.iter().map(usize::to_string).collect();
    parts.join(",")
}

fn binary_name(op: BinaryOp) -> &'static str {
    match op {
        BinaryOp::Add => "add",
        BinaryOp::Sub => "sub",
        BinaryOp::Mul => "mul",
        BinaryOp::Maximum => "maximum",
        _ => unreachable!("no TF mapping for {op:?}"),
    }
}

impl Case {
    fn kind(&self) -> &'static str {
        match self.op {
            Op::MatMul(..) => "matmul",
            Op::BiasAdd(_) => "bias_add",
            Op::Binary(..) => "binary",
            Op::Relu(_) => "relu",
            Op::Softmax(_) => "softmax",
            Op::ReduceSum(_) => "reduce_sum",
        }
    }

    fn manifest_line(&self, id: usize) -> String {
        match &self.op {
            Op::MatMul(s, bias) => format!(
                "matmul {id} {} {} {} {} {} {} {}",
                s.m,
                s.n,
                s.k,
                u8::from(s.transpose_a),
                u8::from(s.transpose_b),
                u8::from(*bias),
                u8::from(s.relu)
            ),
            Op::BiasAdd(shape) => format!("bias_add {id} {}", dims(shape)),
            Op::Binary(op, a, b) => {
                format!("binary {id} {} {} {}", binary_name(*op), dims(a), dims(b))
            }
            Op::Relu(shape) => format!("relu {id} {}", dims(shape)),
            Op::Softmax(shape) => format!("softmax {id} {}", dims(shape)),
            Op::ReduceSum(shape) => format!("reduce_sum {id} {}", dims(shape)),
        }
    }

    fn input(&self, name: &str) -> &[f32] {
        let found = self.inputs.iter().find(|(n, _)| *n == name);
        &found.expect("case has this input").1
    }

    /// Our result for an output of `out_len` elements (TF's output length).
    fn ours(&self, out_len: usize) -> Vec<f32> {
        let mut out = vec![f32::NAN; out_len];
        let x = || self.input("x");
        match &self.op {
            Op::MatMul(spec, with_bias) => {
                let bias = with_bias.then(|| self.input("bias"));
                gemm(spec, self.input("a"), self.input("b"), bias, &mut out)
            }
            Op::BiasAdd(_) => bias_add(x(), self.input("bias"), &mut out),
            Op::Binary(op, a_shape, b_shape) => binary(
                *op,
                self.input("a"),
                a_shape,
                self.input("b"),
                b_shape,
                &mut out,
            ),
            Op::Relu(_) => relu(x(), &mut out),
            Op::Softmax(shape) => softmax_last_axis(x(), last(shape), &mut out),
            Op::ReduceSum(shape) => reduce_sum_last_axis(x(), last(shape), &mut out),
        }
        .expect("consistent case");
        out
    }

    /// How far ours may be from TF's at element `i`; 0 means "exactly equal".
    fn tolerance(&self, i: usize, ours: &[f32]) -> f32 {
        match &self.op {
            Op::MatMul(s, with_bias) => {
                let bias = with_bias.then(|| self.input("bias"));
                let (row, col) = (i / s.n, i % s.n);
                let one = kernels::reference::gemm_tolerance(
                    s.m,
                    s.n,
                    s.k,
                    s.transpose_a,
                    s.transpose_b,
                    self.input("a"),
                    self.input("b"),
                    bias,
                    row,
                    col,
                );
                2.0 * one
            }
            Op::Softmax(shape) => {
                let c = last(shape);
                let row = &self.input("x")[i / c * c..][..c];
                let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let spread = (self.input("x")[i] - max).abs();
                2.0 * (c as f32 + 8.0 + spread) * EPS * ours[i] + f32::MIN_POSITIVE
            }
            Op::ReduceSum(shape) => {
                let c = last(shape);
                let abs: f32 = self.input("x")[i * c..][..c].iter().map(|v| v.abs()).sum();
                2.0 * (c as f32 + 1.0) * EPS * abs + f32::MIN_POSITIVE
            }
            _ => 0.0,
        }
    }
}

fn last(shape: &[usize]) -> usize {
    shape.last().copied().unwrap_or(1)
}

fn matmul(rng: &mut Rng, m: usize, n: usize, k: usize, flags: u8) -> Case {
    let spec = GemmSpec {
        m,
        n,
        k,
        transpose_a: flags & 1 != 0,
        transpose_b: flags & 2 != 0,
        relu: flags & 4 != 0,
    };
    let with_bias = flags & 8 != 0 || spec.relu;
    let mut inputs = vec![
        ("a", rng.values(m * k, -4.0, 4.0)),
        ("b", rng.values(k * n, -4.0, 4.0)),
    ];
    if with_bias {
        inputs.push(("bias", rng.values(n, -4.0, 4.0)));
    }
    Case {
        op: Op::MatMul(spec, with_bias),
        inputs,
    }
}

fn unary(rng: &mut Rng, op: fn(Vec<usize>) -> Op, shape: &[usize], lo: f32, hi: f32) -> Case {
    Case {
        inputs: vec![("x", rng.values(elements(shape), lo, hi))],
        op: op(shape.to_vec()),
    }
}

fn two(rng: &mut Rng, op: BinaryOp, a: &[usize], b: &[usize]) -> Case {
    Case {
        inputs: vec![
            ("a", rng.values(elements(a), -4.0, 4.0)),
            ("b", rng.values(elements(b), -4.0, 4.0)),
        ],
        op: Op::Binary(op, a.to_vec(), b.to_vec()),
    }
}

/// A random shape of rank 1..=4 with dims 1..=5, and a shape that broadcasts
/// against it (a suffix with some axes set to 1).
fn broadcast_pair(rng: &mut Rng) -> (Vec<usize>, Vec<usize>) {
    let out: Vec<usize> = (0..1 + rng.below(4)).map(|_| 1 + rng.below(5)).collect();
    let rank = rng.below(out.len() + 1);
    let other = out[out.len() - rank..]
        .iter()
        .map(|&d| if rng.below(3) == 0 { 1 } else { d })
        .collect();
    (out, other)
}

fn cases() -> Vec<Case> {
    let mut rng = Rng(0x7e50_4b1e);
    let mut cases = Vec::new();
    // GEMM: every transpose/bias/relu combination, empty, 1×1, non-square,
    // and sizes large enough for TF's and our blocked paths.
    for flags in 0..16 {
        cases.push(matmul(&mut rng, 7, 5, 3, flags));
        cases.push(matmul(&mut rng, 33, 65, 129, flags));
    }
    for (m, n, k) in [
        (0, 3, 4),
        (3, 0, 4),
        (3, 4, 0),
        (1, 1, 1),
        (1, 200, 1),
        (130, 70, 300),
    ] {
        cases.push(matmul(&mut rng, m, n, k, 8));
    }
    for _ in 0..6 {
        let (m, n, k) = (1 + rng.below(90), 1 + rng.below(90), 1 + rng.below(90));
        let flags = rng.below(16) as u8;
        cases.push(matmul(&mut rng, m, n, k, flags));
    }
    // Element-wise with broadcasting, both operand orders.
    let ops = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Maximum,
    ];
    for op in ops {
        cases.push(two(&mut rng, op, &[4, 5], &[4, 5]));
        cases.push(two(&mut rng, op, &[2, 3, 4], &[4]));
        cases.push(two(&mut rng, op, &[3, 1], &[1, 5]));
        cases.push(two(&mut rng, op, &[], &[6]));
        cases.push(two(&mut rng, op, &[2, 1, 3, 1, 2, 2], &[3, 5, 2, 1]));
        cases.push(two(&mut rng, op, &[0, 3], &[3]));
        for _ in 0..4 {
            let (a, b) = broadcast_pair(&mut rng);
            let (a, b) = if rng.below(2) == 0 { (a, b) } else { (b, a) };
            cases.push(two(&mut rng, op, &a, &b));
        }
    }
    // NaN, ±∞ and ±0 through maximum and ReLU: must match TF bit for bit in kind.
    let special = vec![
        f32::NAN,
        1.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        -0.0,
        0.0,
        -3.0,
        2.0,
    ];
    cases.push(Case {
        op: Op::Binary(BinaryOp::Maximum, vec![8], vec![8]),
        inputs: vec![
            ("a", special.clone()),
            ("b", special.iter().rev().copied().collect()),
        ],
    });
    cases.push(Case {
        op: Op::Relu(vec![8]),
        inputs: vec![("x", special)],
    });
    for shape in [&[3, 17][..], &[2, 3, 4], &[1], &[0, 5]] {
        cases.push(unary(&mut rng, Op::Relu, shape, -4.0, 4.0));
        cases.push(unary(&mut rng, Op::ReduceSum, shape, -4.0, 4.0));
        // tf.nn.bias_add wants rank >= 2 (our kernel also takes rank 1).
        if shape.len() >= 2 {
            let mut bias = unary(&mut rng, Op::BiasAdd, shape, -4.0, 4.0);
            bias.inputs
                .push(("bias", rng.values(last(shape), -4.0, 4.0)));
            cases.push(bias);
        }
    }
    // Softmax: narrow and wide rows, large logits (stability), empty rows.
    for (shape, lo, hi) in [
        (&[4, 10][..], -4.0, 4.0),
        (&[3, 1000], -20.0, 20.0),
        (&[2, 2, 7], 80.0, 100.0),
        (&[5, 3], -1e4, 1e4),
        (&[1], 0.0, 1.0),
        (&[3, 0], 0.0, 1.0),
    ] {
        cases.push(unary(&mut rng, Op::Softmax, shape, lo, hi));
    }
    cases.push(unary(&mut rng, Op::ReduceSum, &[4, 1000], -4.0, 4.0));
    cases.push(unary(&mut rng, Op::ReduceSum, &[3, 0], -4.0, 4.0));
    cases
}

fn write_f32(path: &Path, values: &[f32]) {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    fs::write(path, bytes).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

fn read_f32(path: &Path) -> Vec<f32> {
    let bytes = fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    assert_eq!(bytes.len() % 4, 0, "{} is not whole f32s", path.display());
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

fn case_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("kernels_vs_tf");
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("create case dir");
    dir
}

#[test]
fn kernels_match_tensorflow_cpu() {
    let cases = cases();
    let dir = case_dir();
    let mut manifest = String::new();
    for (id, case) in cases.iter().enumerate() {
        writeln!(manifest, "{}", case.manifest_line(id)).unwrap();
        for (name, values) in &case.inputs {
            write_f32(&dir.join(format!("{id}.{name}.f32")), values);
        }
    }
    fs::write(dir.join("cases.txt"), &manifest).expect("write manifest");

    let run = run_python("kernels_reference.py", &[dir.to_str().expect("utf-8 path")]);
    assert!(
        run.status.success(),
        "kernels_reference.py failed ({}):\n{}",
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );

    let mut failures = Vec::new();
    // Largest |ours - TF| / tolerance per op kind, for the docs.
    let mut worst: BTreeMap<&str, f32> = BTreeMap::new();
    for (id, case) in cases.iter().enumerate() {
        let tf = read_f32(&dir.join(format!("{id}.out.f32")));
        let ours = case.ours(tf.len());
        for (i, (&o, &t)) in ours.iter().zip(&tf).enumerate() {
            let tol = case.tolerance(i, &ours);
            let ok = if tol == 0.0 {
                o == t || (o.is_nan() && t.is_nan())
            } else {
                (o - t).abs() <= tol
            };
            if tol > 0.0 && (o - t).abs() > 0.0 {
                let kind = worst.entry(case.kind()).or_default();
                *kind = kind.max((o - t).abs() / tol);
            }
            if !ok && failures.len() < 20 {
                failures.push(format!(
                    "case {id} `{}` element {i}: ours {o}, TF {t}, tolerance {tol}",
                    case.manifest_line(id)
                ));
            }
        }
    }
    println!(
        "{} cases; largest |ours - TF| / tolerance: {worst:?}",
        cases.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
