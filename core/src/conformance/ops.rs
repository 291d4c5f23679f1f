//! The op cases: shapes and data for every op family, running one op on
//! the device, and comparing it with the reference kernels.

use crate::accelerator::prelude::*;
use std::format;
use std::string::String;
use std::vec;
use std::vec::Vec;

use super::case::{OpCase, elements, run_on_device, shape, stage, unstage, untouched};
use super::support::{Check, Scope, ensure, fail, show, values};
use super::types::{Config, Fixture, Outcome};
use crate::accelerator::{
    Accelerator, Activation, DType, Error, ErrorKind, MAX_RANK, OpKind, Shape, VendorOp, Window,
};
use crate::reference;

/// NumPy broadcast of two shapes (the cases only pair compatible ones).
fn broadcast(a: &[u64], b: &[u64]) -> Vec<u64> {
    let rank = a.len().max(b.len());
    let dim = |s: &[u64], i: usize| {
        if i + s.len() < rank {
            1
        } else {
            s[i + s.len() - rank]
        }
    };
    (0..rank)
        .map(|i| match (dim(a, i), dim(b, i)) {
            (1, y) => y,
            (x, _) => x,
        })
        .collect()
}

/// Infinities, NaN, signed zeros, a subnormal, `f32::MAX`: paired so that
/// `inf - inf`, `0 · inf`, `MAX + MAX` and `max(-0, 0)` all occur.
const SPECIAL_A: [f32; 12] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
    1e-40,
    -3.5,
    f32::MAX,
    0.0,
    f32::INFINITY,
];
const SPECIAL_B: [f32; 12] = [
    f32::MAX,
    0.0,
    1e-40,
    f32::NAN,
    f32::NEG_INFINITY,
    f32::INFINITY,
    -1.0,
    1.0,
    -0.0,
    f32::MAX,
    f32::INFINITY,
    f32::INFINITY,
];

fn input(dims: &[u64], seed: u32) -> (Vec<u64>, Vec<f32>) {
    (dims.to_vec(), values(elements(dims), seed))
}

fn matmul_cases(fused: bool) -> Vec<OpCase> {
    let shapes: &[(u64, u64, u64)] = if fused {
        &[(4, 6, 5), (9, 130, 7), (3, 0, 2)]
    } else {
        &[
            (5, 7, 3),
            (1, 1, 1),
            (17, 33, 9),
            (8, 130, 12),
            (3, 0, 2),
            (0, 4, 3),
        ]
    };
    let relus: &[bool] = if fused { &[false, true] } else { &[false] };
    let mut cases = Vec::new();
    let mut seed = 100;
    for &(m, k, n) in shapes {
        for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
            for &relu in relus {
                let kind = if fused {
                    OpKind::FusedMatMul {
                        transpose_a: ta,
                        transpose_b: tb,
                        relu,
                    }
                } else {
                    OpKind::MatMul {
                        transpose_a: ta,
                        transpose_b: tb,
                    }
                };
                let a = if ta { [k, m] } else { [m, k] };
                let b = if tb { [n, k] } else { [k, n] };
                let mut inputs = vec![input(&a, seed), input(&b, seed + 1)];
                if fused {
                    inputs.push(input(&[n], seed + 2));
                }
                seed += 3;
                cases.push(OpCase::new(kind, inputs, vec![m, n]));
            }
        }
    }
    cases
}

fn bias_add_cases() -> Vec<OpCase> {
    let shapes: [&[u64]; 6] = [
        &[2, 3, 4],
        &[5],
        &[3, 1],
        &[4, 130],
        &[2, 2, 2, 2, 3],
        &[0, 4],
    ];
    let mut cases: Vec<OpCase> = shapes
        .iter()
        .zip(200..)
        .map(|(&x, seed)| {
            let c = *x.last().unwrap_or(&1);
            let inputs = vec![input(x, seed), input(&[c], seed + 50)];
            OpCase::new(OpKind::BiasAdd, inputs, x.to_vec())
        })
        .collect();
    let specials = vec![
        (vec![6, 2], SPECIAL_A.to_vec()),
        (vec![2], vec![f32::INFINITY, -1.0]),
    ];
    cases.push(OpCase::new(OpKind::BiasAdd, specials, vec![6, 2]));
    cases
}

fn binary_cases(kind: OpKind) -> Vec<OpCase> {
    let pairs: [(&[u64], &[u64]); 12] = [
        (&[3, 5], &[3, 5]),
        (&[4, 5, 6], &[6]),
        (&[3, 1], &[1, 4]),
        (&[1], &[2, 3]),
        (&[2, 3, 1], &[3, 4]),
        (&[2, 1, 2, 1, 2], &[1, 3, 1, 3, 1]),
        (&[2, 1, 3, 1, 2, 1], &[1, 2, 1, 2, 1, 2]),
        (&[], &[2, 3]),
        (&[2, 3], &[]),
        (&[], &[]),
        (&[1, 1, 1, 1, 1, 40], &[40]),
        (&[0, 3], &[1, 3]),
    ];
    let mut cases: Vec<OpCase> = pairs
        .iter()
        .zip(300..)
        .enumerate()
        .map(|(i, (&(a, b), seed))| {
            let inputs = vec![input(a, seed), input(b, seed + 50)];
            OpCase::new(with_param(kind, i), inputs, broadcast(a, b))
        })
        .collect();
    for i in 0..param_count(kind) {
        let specials = vec![
            (vec![12], SPECIAL_A.to_vec()),
            (vec![12], SPECIAL_B.to_vec()),
        ];
        cases.push(OpCase::new(with_param(kind, i), specials, vec![12]));
    }
    let scalar = vec![
        (vec![3, 4], SPECIAL_A.to_vec()),
        (vec![], vec![f32::INFINITY]),
    ];
    cases.push(OpCase::new(kind, scalar, vec![3, 4]));
    cases
}

fn unary_cases(kind: OpKind, long: u64) -> Vec<OpCase> {
    let shapes: [&[u64]; 5] = [&[4, 6], &[], &[2, 3, 1, 5], &[long], &[0]];
    let mut cases: Vec<OpCase> = shapes
        .iter()
        .zip(400..)
        .enumerate()
        .map(|(i, (&x, seed))| OpCase::new(with_param(kind, i), vec![input(x, seed)], x.to_vec()))
        .collect();
    for i in 0..param_count(kind) {
        let specials = vec![(vec![12], SPECIAL_A.to_vec())];
        cases.push(OpCase::new(with_param(kind, i), specials, vec![12]));
    }
    cases
}

/// An element-wise op with a parameter tries its rules' values in turn:
/// case `i` gets value `i` (cyclically); other ops are unchanged.
fn with_param(kind: OpKind, i: usize) -> OpKind {
    let pick = |p: &[f32]| p[i % p.len()];
    match kind {
        OpKind::Unary(op) if !op.rules().params.is_empty() => {
            OpKind::Unary(op.with_param(pick(op.rules().params)))
        }
        OpKind::Binary(op) if !op.rules().params.is_empty() => {
            OpKind::Binary(op.with_param(pick(op.rules().params)))
        }
        _ => kind,
    }
}

/// How many special-value cases an element-wise op gets: one per parameter value.
fn param_count(kind: OpKind) -> usize {
    let n = match kind {
        OpKind::Unary(op) => op.rules().params.len(),
        OpKind::Binary(op) => op.rules().params.len(),
        _ => 0,
    };
    n.max(1)
}

/// `size`, `stride`, `dilation`, `pad` (top, bottom, left, right).
fn window(size: [u16; 2], stride: u16, dilation: u16, pad: [u16; 4]) -> Window {
    Window {
        size,
        stride: [stride, stride],
        dilation: [dilation, dilation],
        pad,
    }
}

/// VALID, SAME, strided with uneven padding, dilated, 1×1, a batch, empty.
fn window_cases(family: OpKind) -> Vec<OpCase> {
    let shapes: [([u64; 4], Window); 7] = [
        ([1, 5, 5, 3], window([3, 3], 1, 1, [0; 4])),
        ([1, 6, 5, 2], window([3, 3], 1, 1, [1, 1, 1, 1])),
        ([1, 7, 6, 3], window([3, 3], 2, 1, [0, 1, 1, 1])),
        ([1, 7, 7, 2], window([3, 2], 1, 2, [2, 2, 1, 1])),
        ([2, 4, 4, 8], window([1, 1], 1, 1, [0; 4])),
        ([3, 4, 3, 2], window([2, 2], 2, 1, [0, 0, 0, 1])),
        ([0, 4, 4, 2], window([2, 2], 1, 1, [0; 4])),
    ];
    shapes
        .iter()
        .zip(700..)
        .map(|(&(x, w), seed)| {
            let [kh, kw] = [u64::from(w.size[0]), u64::from(w.size[1])];
            let (kind, filter, out_c) = match family {
                OpKind::Conv2D(_) => (OpKind::Conv2D(w), Some([kh, kw, x[3], 5]), 5),
                OpKind::FusedConv2D(..) => {
                    let act = [Activation::None, Activation::Relu, Activation::Relu6];
                    let kind = OpKind::FusedConv2D(w, act[seed as usize % 3]);
                    (kind, Some([kh, kw, x[3], 5]), 5)
                }
                OpKind::DepthwiseConv2D(_) => (
                    OpKind::DepthwiseConv2D(w),
                    Some([kh, kw, x[3], 2]),
                    2 * x[3],
                ),
                OpKind::MaxPool(_) => (OpKind::MaxPool(w), None, x[3]),
                OpKind::AvgPool(_) => (OpKind::AvgPool(w), None, x[3]),
                _ => return window_grad_case(family, x, w, seed),
            };
            let [oh, ow] = w.output_hw(x[1], x[2]).unwrap_or([0, 0]);
            let mut inputs = vec![input(&x, seed)];
            inputs.extend(filter.map(|f| input(&f, seed + 50)));
            if matches!(kind, OpKind::FusedConv2D(..)) {
                inputs.push(input(&[out_c], seed + 90));
            }
            OpCase::new(kind, inputs, vec![x[0], oh, ow, out_c])
        })
        .collect()
}

/// A window gradient's case for the forward input `x` and window `w`.
fn window_grad_case(family: OpKind, x: [u64; 4], w: Window, seed: u32) -> OpCase {
    let [oh, ow] = w.output_hw(x[1], x[2]).unwrap_or([0, 0]);
    let filter = [u64::from(w.size[0]), u64::from(w.size[1]), x[3], 3];
    match family {
        OpKind::Conv2DBackpropInput(_) => OpCase::new(
            OpKind::Conv2DBackpropInput(w),
            vec![input(&[x[0], oh, ow, 3], seed), input(&filter, seed + 50)],
            x.to_vec(),
        ),
        OpKind::Conv2DBackpropFilter(_) => OpCase::new(
            OpKind::Conv2DBackpropFilter(w),
            vec![input(&x, seed), input(&[x[0], oh, ow, 3], seed + 50)],
            filter.to_vec(),
        ),
        OpKind::AvgPoolGrad(_) => OpCase::new(
            OpKind::AvgPoolGrad(w),
            vec![input(&[x[0], oh, ow, x[3]], seed)],
            x.to_vec(),
        ),
        _ => {
            // Small integers: most windows hold ties, which go to the first tap.
            let (dims, mut values) = input(&x, seed);
            values.iter_mut().for_each(|v| *v = v.round());
            let dy = input(&[x[0], oh, ow, x[3]], seed + 50);
            OpCase::new(OpKind::MaxPoolGrad(w), vec![(dims, values), dy], x.to_vec())
        }
    }
}

/// 2-D, NHWC to NCHW, a reversal, rank 5 with unit axes, empty, identity.
fn transpose_cases() -> Vec<OpCase> {
    let cases: [(&[u64], &[u8]); 7] = [
        (&[2, 3], &[1, 0]),
        (&[2, 3, 4], &[2, 0, 1]),
        (&[1, 4, 4, 3], &[0, 3, 1, 2]),
        (&[2, 3, 4, 5], &[3, 2, 1, 0]),
        (&[2, 1, 3, 1, 2], &[4, 0, 2, 1, 3]),
        (&[0, 3], &[1, 0]),
        (&[5], &[0]),
    ];
    cases
        .iter()
        .zip(800..)
        .map(|(&(x, p), seed)| {
            let mut perm = [0u8; MAX_RANK];
            perm[..p.len()].copy_from_slice(p);
            let out = p.iter().map(|&a| x[usize::from(a)]).collect();
            OpCase::new(OpKind::Transpose(perm), vec![input(x, seed)], out)
        })
        .collect()
}

fn softmax_cases(kind: OpKind) -> Vec<OpCase> {
    let shapes: [&[u64]; 5] = [&[2, 2, 6], &[3, 1], &[1, 130], &[5, 17], &[0, 5]];
    let mut cases: Vec<OpCase> = shapes
        .iter()
        .zip(500..)
        .map(|(&x, seed)| OpCase::new(kind, vec![input(x, seed)], x.to_vec()))
        .collect();
    // Logits whose exp overflows f32 unless the row maximum is subtracted.
    let large = vec![
        80.0, 100.0, 90.0, -50.0, -1e4, 0.0, 1e4, 5.0, 1e-3, 0.0, -1e-3, 0.0,
    ];
    cases.push(OpCase::new(kind, vec![(vec![3, 4], large)], vec![3, 4]));
    cases
}

fn reduce_sum_cases() -> Vec<OpCase> {
    let shapes: [(&[u64], &[u64]); 6] = [
        (&[4, 6], &[4]),
        (&[4, 6], &[4, 1]),
        (&[2, 3, 130], &[2, 3]),
        (&[5], &[]),
        (&[7, 1], &[7]),
        (&[3, 0], &[3]),
    ];
    let mut cases: Vec<OpCase> = shapes
        .iter()
        .zip(600..)
        .map(|(&(x, out), seed)| OpCase::new(OpKind::ReduceSum, vec![input(x, seed)], out.to_vec()))
        .collect();
    // Cancellation: the bound is relative to Σ|x|, not to the result.
    let cancel = vec![(vec![1, 4], vec![1e8, 1.0, -1e8, 1.0])];
    cases.push(OpCase::new(OpKind::ReduceSum, cancel, vec![1]));
    cases
}

/// `RandomUniform`: keys and counters, one across a 64-bit carry of the
/// counter, lengths not a multiple of four.
fn random_cases() -> Vec<OpCase> {
    let case = |key: u64, counter: [u64; 2], n: u64| {
        OpCase::new(OpKind::RandomUniform { key, counter }, vec![], vec![n])
    };
    vec![
        case(0x1234_5678_9abc_def0, [7, 0], 6),
        case(1, [u64::MAX - 3, 9], 1001),
        case(u64::MAX, [0, u64::MAX], 4),
        case(42, [3, 5], 1),
    ]
}

/// `Select`: random conditions (about half true), NaN and −0 conditions.
fn select_cases() -> Vec<OpCase> {
    let mut cases = Vec::new();
    for (dims, seed) in [(&[7][..], 620), (&[3, 130][..], 621), (&[1][..], 622)] {
        let n = elements(dims);
        let cond: Vec<f32> = values(n, seed)
            .iter()
            .map(|&v| if v > 0.0 { 1.0 } else { 0.0 })
            .collect();
        let ins = vec![
            (dims.to_vec(), cond),
            input(dims, seed + 10),
            input(dims, seed + 20),
        ];
        cases.push(OpCase::new(OpKind::Select, ins, dims.to_vec()));
    }
    let cond = vec![f32::NAN, -0.0, 0.0, 2.0, f32::INFINITY, -1.0];
    let a = SPECIAL_A[..6].to_vec();
    let b = SPECIAL_B[..6].to_vec();
    cases.push(OpCase::new(
        OpKind::Select,
        vec![(vec![6], cond), (vec![6], a), (vec![6], b)],
        vec![6],
    ));
    cases
}

/// `ReduceMax`, `ReduceMin`, `ReduceProd`: the shapes of `ReduceSum`, and
/// rows of special values (NaN, infinities, signed zeros; products kept
/// in range).
fn reduce_cases(kind: OpKind) -> Vec<OpCase> {
    let mut cases: Vec<OpCase> = reduce_sum_cases()
        .into_iter()
        .filter(|c| c.inputs[0].1.floats().iter().all(|v| v.abs() < 1e4))
        .map(|c| OpCase { kind, ..c })
        .collect();
    let special = |v: &[f32]| (vec![1, v.len() as u64], v.to_vec());
    let nan = f32::NAN;
    for row in [
        &[1.0, nan, 3.0][..],
        &[nan, -1.0],
        &[-0.0, 0.0],
        &[0.0, -0.0],
        &[f32::NEG_INFINITY, f32::INFINITY, 2.0],
    ] {
        cases.push(OpCase::new(kind, vec![special(row)], vec![1]));
    }
    cases
}

/// Every case of `family` (attributes ignored), the first one small and
/// non-empty, with the default [`Config`]'s sizes.
pub(crate) fn cases_for(family: OpKind) -> Vec<OpCase> {
    cases_with(family, &Config::default())
}

/// [`cases_for`] with `cfg`'s sizes ([`Config::long_vector`]).
pub(crate) fn cases_with(family: OpKind, cfg: &Config) -> Vec<OpCase> {
    match family {
        OpKind::MatMul { .. } => matmul_cases(false),
        OpKind::FusedMatMul { .. } => matmul_cases(true),
        OpKind::BiasAdd => bias_add_cases(),
        OpKind::Unary(_) => unary_cases(family, cfg.long_vector),
        OpKind::Binary(_) => binary_cases(family),
        OpKind::Conv2D(_)
        | OpKind::FusedConv2D(..)
        | OpKind::DepthwiseConv2D(_)
        | OpKind::MaxPool(_)
        | OpKind::AvgPool(_)
        | OpKind::Conv2DBackpropInput(_)
        | OpKind::Conv2DBackpropFilter(_)
        | OpKind::MaxPoolGrad(_)
        | OpKind::AvgPoolGrad(_) => window_cases(family),
        OpKind::Softmax | OpKind::LogSoftmax => softmax_cases(family),
        OpKind::Transpose(_) => transpose_cases(),
        OpKind::ReduceSum => reduce_sum_cases(),
        OpKind::ReduceMax | OpKind::ReduceMin | OpKind::ReduceProd => reduce_cases(family),
        OpKind::Gather(_)
        | OpKind::SegmentSum(_)
        | OpKind::Cast { .. }
        | OpKind::ArgMax(_)
        | OpKind::ArgMin(_)
        | OpKind::Concat(_) => super::index::cases(family),
        OpKind::Select => select_cases(),
        OpKind::RandomUniform { .. } => random_cases(),
        OpKind::Vendor(op) | OpKind::Record(op) => vendor_cases(op),
        _ => super::int8::cases(family),
    }
}

/// A vendor op's or a record's own cases ([`VendorRules::cases`]).
fn vendor_cases(op: VendorOp) -> Vec<OpCase> {
    let cases = op.decl.reference().map_or(&[][..], |r| r.cases);
    cases
        .iter()
        .map(|c| {
            // A vendor's op or a record, as declared.
            let kind = op.decl.kind(&c.attrs).unwrap_or(OpKind::Vendor(VendorOp {
                decl: op.decl,
                attrs: c.attrs,
            }));
            let inputs = c
                .inputs
                .iter()
                .map(|(d, v)| (d.to_vec(), v.to_vec()))
                .collect();
            OpCase::new(kind, inputs, c.out.to_vec())
        })
        .collect()
}

/// Every vendor op the device declares, each against its cases; a
/// declared op without cases fails.
pub(crate) fn check_vendor_ops<F: Fixture>(s: &mut Scope<'_, F>) -> Check<Outcome> {
    let caps = s.dev().info().capabilities;
    let mut launches = 0;
    let mut worst = 0.0f64;
    for decl in caps.vendor_ops.iter() {
        let cases = cases_for(decl.default_kind());
        ensure!(
            !cases.is_empty(),
            "vendor op {} ({:?}) declares no conformance cases",
            decl.name,
            decl.id
        );
        for case in &cases {
            let got = run_on_device(s, case, 0x180 + launches as u16)?;
            worst = worst.max(compare(case, &got)?);
            launches += 1;
        }
    }
    if launches == 0 {
        return Ok(Outcome::Skipped("the device declares no vendor op".into()));
    }
    Ok(Outcome::Passed(format!(
        "{launches} launches of {} vendor ops match their reference kernels (worst error \
         {worst:.3} of the bound)",
        caps.vendor_ops.0.len()
    )))
}

/// The reference result and per-element bound of `case`.
pub(crate) fn expected(case: &OpCase) -> Check<(Vec<f32>, Vec<f32>)> {
    let ins: Vec<(&[f32], Shape)> = case
        .inputs
        .iter()
        .map(|(d, v)| (v.floats(), shape(d)))
        .collect();
    let n = elements(&case.out);
    let (mut want, mut tol) = (vec![0.0; n], vec![0.0; n]);
    let out = shape(&case.out);
    let suite_bug = |e: reference::Error| {
        super::support::Fail(format!(
            "suite bug: reference refused {}: {e}",
            case.label()
        ))
    };
    reference::run(case.kind, &ins, out, &mut want).map_err(suite_bug)?;
    reference::tolerance(case.kind, &ins, out, &want, &mut tol).map_err(suite_bug)?;
    Ok((want, tol))
}

/// Checks `got` against the reference; returns the worst `|err| / bound`.
pub(crate) fn compare(case: &OpCase, got: &[f32]) -> Check<f64> {
    let (want, tol) = expected(case)?;
    ensure!(
        got.len() == want.len(),
        "{}: {} outputs, expected {}",
        case.label(),
        got.len(),
        want.len()
    );
    let mut bad = Vec::new();
    let mut worst = 0.0f64;
    for (i, ((&g, &w), &t)) in got.iter().zip(&want).zip(&tol).enumerate() {
        if !reference::within(g, w, t) {
            bad.push(i);
        } else if w.is_finite() && t > 0.0 {
            worst = worst.max((f64::from(g) - f64::from(w)).abs() / f64::from(t));
        }
    }
    if let Some(&first) = bad.first() {
        let shown: Vec<String> = bad
            .iter()
            .take(4)
            .map(|&i| {
                format!(
                    "out[{i}] = {:e}, expected {:e} ± {:e}",
                    got[i], want[i], tol[i]
                )
            })
            .collect();
        fail!(
            "{}: {} of {} outputs outside the tolerance (first at {first}): {}",
            case.label(),
            bad.len(),
            got.len(),
            shown.join("; ")
        );
    }
    Ok(worst)
}

/// `Concat`'s f32 cases, and its int8 ones on a device that computes
/// int8; refused when undeclared.
pub(crate) fn check_concat<F: Fixture>(s: &mut Scope<'_, F>) -> Check<Outcome> {
    let caps = s.dev().info().capabilities;
    let f32 = OpKind::Concat(DType::F32);
    let cases: Vec<OpCase> = cases_for(f32)
        .into_iter()
        .filter(|c| caps.supports(c.kind, c.out_dtype()))
        .collect();
    if cases.is_empty() {
        return refused(s, f32, &cases_for(f32)[0]);
    }
    super::int8::check(s, &cases)
}

/// The case of one op family: every shape against the reference when the
/// device declares the family, else a check that launch refuses it.
pub(crate) fn check_family<F: Fixture>(s: &mut Scope<'_, F>, family: OpKind) -> Check<Outcome> {
    let caps = s.dev().info().capabilities;
    let cases = cases_with(family, s.cfg);
    if !caps.supports(family, compute_type(family)) {
        return refused(s, family, &cases[0]);
    }
    if family.operand_types().is_some() {
        return super::int8::check(s, &cases);
    }
    let mut worst = 0.0f64;
    for (i, case) in cases.iter().enumerate() {
        let got = run_on_device(s, case, 0x100 + i as u16)?;
        worst = worst.max(compare(case, &got)?);
    }
    Ok(Outcome::Passed(format!(
        "{} launches match the reference (worst error {worst:.3} of the bound)",
        cases.len()
    )))
}

/// Each of `members` (a family's ops) as [`check_family`], one after the
/// other; the first failure names its op.
pub(crate) fn check_members<F: Fixture>(
    s: &mut Scope<'_, F>,
    members: impl Iterator<Item = OpKind>,
) -> Check<Outcome> {
    let (mut ran, mut refused) = (Vec::new(), Vec::new());
    for kind in members {
        check_family(s, kind)
            .map_err(|e| super::support::Fail(format!("{}: {}", kind.name(), e.0)))?;
        if s.dev()
            .info()
            .capabilities
            .supports(kind, compute_type(kind))
        {
            ran.push(kind.name());
        } else {
            refused.push(kind.name());
        }
    }
    let list = |names: Vec<&str>| match names.is_empty() {
        true => String::from("none"),
        false => names.join(", "),
    };
    Ok(Outcome::Passed(format!(
        "matched the reference: {}; refused as undeclared: {}",
        list(ran),
        list(refused)
    )))
}

/// The element type a device declares to run `kind`: i8 for the int8
/// ops, f32 for the rest.
pub(crate) fn compute_type(kind: OpKind) -> DType {
    if kind.is_int8() {
        DType::I8
    } else {
        DType::F32
    }
}

/// An undeclared op must be refused at launch and leave its output alone.
fn refused<F: Fixture>(s: &mut Scope<'_, F>, family: OpKind, case: &OpCase) -> Check<Outcome> {
    let staged = stage(s, case, 0)?;
    let (q, timeout) = (s.cfg.queue, s.cfg.timeout);
    let name = family.name();
    let kind = match s.dev().launch(q, &staged.op(case, 0x1FF)) {
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::Unsupported | ErrorKind::InvalidArgument
            ) =>
        {
            e.kind()
        }
        Err(e) => fail!(
            "{name} is not declared; launch refused it with {}, expected kind Unsupported or InvalidArgument",
            super::support::describe(&e)
        ),
        Ok(fence) => {
            let waited = s.dev().wait_or_reset(fence, timeout);
            fail!(
                "{name} is not declared, yet launch accepted it (fence {}; its wait: {})",
                fence.0,
                show(&waited)
            )
        }
    };
    untouched(s, &staged, &format!("{name} was refused"))?;
    unstage(s, staged)?;
    Ok(Outcome::Passed(format!(
        "not declared; launch refused it ({kind:?}) and wrote nothing"
    )))
}
