//! The int8 ops' cases: random int8 tensors and quantization blocks, each
//! result compared bit for bit with [`reference::int8::run`] (TFLite's
//! reference kernels), and a corrupted block refused. [`check`] also runs
//! the index ops' cases (`super::index`), which take the same typed path.

use crate::accelerator::prelude::*;
use std::format;
use std::vec;
use std::vec::Vec;

use super::case::{OpCase, Values, run_for_bytes, shape, stage, unstage, untouched};
use super::support::{Check, Fail, Scope, describe, ensure, fail, first_difference};
use super::types::{Fixture, Outcome};
use crate::accelerator::Activation;
use crate::accelerator::{Accelerator, Error as _, ErrorKind, OpKind, Window};
use crate::quant::block::{self, HEADER_WORDS, QuantHeader};
use crate::quant::softmax::SoftmaxQuant;
use crate::quant::{Requantize, Rounding};
use crate::reference::{
    self,
    int8::{AddQuant, DataMut},
};

/// A small deterministic generator (an LCG), so every device sees the same cases.
struct Lcg(u32);

impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self.0.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        self.0 >> 8
    }
    /// Uniform in `[lo, hi]`.
    fn int(&mut self, lo: i32, hi: i32) -> i32 {
        lo + (self.next() % (hi - lo + 1) as u32) as i32
    }
    fn i8s(&mut self, n: u64) -> Values {
        Values::I8((0..n).map(|_| self.int(-128, 127) as i8).collect())
    }
    /// A real multiplier in `[2^lo, 2^hi)`.
    fn multiplier(&mut self, lo: i32, hi: i32) -> Requantize {
        let exp = self.int(lo, hi - 1);
        let frac = 1.0 + f64::from(self.next()) / f64::from(1u32 << 24);
        Requantize::from_real(frac * libm::pow(2.0, f64::from(exp))).unwrap_or_default()
    }
}

fn header(rng: &mut Lcg, channels: u32, rounding: Rounding, relu: bool) -> QuantHeader {
    let output_zero_point = rng.int(-20, 20);
    QuantHeader {
        zero_points: [rng.int(-30, 30), rng.int(-30, 30)],
        output_zero_point,
        min: if relu { output_zero_point } else { -128 },
        max: 127,
        rounding,
        channels,
    }
}

/// A convolution's or `MatMulInt8`'s block for `channels` outputs whose
/// accumulators sum about `terms` products.
fn per_channel(rng: &mut Lcg, channels: u64, terms: u64, rounding: Rounding, relu: bool) -> Values {
    let mut h = header(rng, channels as u32, rounding, relu);
    h.zero_points[1] = 0;
    let mut words = h.words().to_vec();
    let bias: Vec<i32> = (0..channels).map(|_| rng.int(-3000, 3000)).collect();
    // |acc| is about 74·74·√terms (uniform int8s): scale it to about ±64.
    let bits = 8 + (64 - terms.leading_zeros() as i32) / 2;
    let req: Vec<Requantize> = (0..channels)
        .map(|_| rng.multiplier(-bits - 1, -bits + 2))
        .collect();
    words.extend(bias);
    words.extend(req.iter().map(|r| r.multiplier));
    words.extend(req.iter().map(|r| i32::from(r.shift)));
    Values::I32(words)
}

fn out_hw(x: [u64; 2], w: &Window) -> [u64; 2] {
    let pad = [w.pad[0] + w.pad[1], w.pad[2] + w.pad[3]];
    [0, 1].map(|i| {
        let span = (u64::from(w.size[i]) - 1) * u64::from(w.dilation[i]) + 1;
        (x[i] + u64::from(pad[i]) - span) / u64::from(w.stride[i]) + 1
    })
}

fn window(size: u16, stride: u16, dilation: u16, pad: u16) -> Window {
    Window {
        size: [size, size],
        stride: [stride, stride],
        dilation: [dilation, dilation],
        pad: [pad; 4],
    }
}

fn block_case(kind: OpKind, inputs: Vec<(Vec<u64>, Values)>, out: Vec<u64>) -> OpCase {
    OpCase { kind, inputs, out }
}

/// Every case of int8 op `kind` (attributes ignored), the first small.
pub(crate) fn cases(kind: OpKind) -> Vec<OpCase> {
    let mut rng = Lcg(kind.decl().id.code.into());
    let mut cases = Vec::new();
    let roundings = [Rounding::Double, Rounding::Single];
    match kind {
        OpKind::Conv2DInt8(_) | OpKind::DepthwiseConv2DInt8(_) => {
            let geometries = [
                ([1, 5, 6, 3], 3, window(3, 1, 1, 1), 4),
                ([2, 7, 7, 2], 2, window(2, 2, 1, 0), 3),
                ([1, 9, 9, 4], 3, window(3, 1, 2, 2), 2),
            ];
            for (i, (x, k, w, m)) in geometries.into_iter().enumerate() {
                let depthwise = matches!(kind, OpKind::DepthwiseConv2DInt8(_));
                let (filter, oc, kind, terms) = if depthwise {
                    (
                        vec![k, k, x[3], m],
                        x[3] * m,
                        OpKind::DepthwiseConv2DInt8(w),
                        k * k,
                    )
                } else {
                    (vec![k, k, x[3], m], m, OpKind::Conv2DInt8(w), k * k * x[3])
                };
                let [oh, ow] = out_hw([x[1], x[2]], &w);
                let q = per_channel(&mut rng, oc, terms, roundings[i % 2], i == 1);
                let inputs = vec![
                    (x.to_vec(), rng.i8s(x.iter().product())),
                    (filter.clone(), rng.i8s(filter.iter().product())),
                    (vec![HEADER_WORDS as u64 + 3 * oc], q),
                ];
                cases.push(block_case(kind, inputs, vec![x[0], oh, ow, oc]));
            }
        }
        OpKind::MatMulInt8 { .. } => {
            for (i, (m, k, n, transpose_b)) in
                [(3, 10, 4, false), (5, 33, 7, true), (1, 1, 1, false)]
                    .into_iter()
                    .enumerate()
            {
                let b = if transpose_b { vec![n, k] } else { vec![k, n] };
                let q = per_channel(&mut rng, n, k, roundings[i % 2], i == 0);
                let inputs = vec![
                    (vec![m, k], rng.i8s(m * k)),
                    (b, rng.i8s(n * k)),
                    (vec![HEADER_WORDS as u64 + 3 * n], q),
                ];
                cases.push(block_case(
                    OpKind::MatMulInt8 { transpose_b },
                    inputs,
                    vec![m, n],
                ));
            }
        }
        OpKind::AddInt8 => {
            // Same shapes, then `b` broadcast: the last axis, trailing
            // axes after a leading 1, one value.
            let shapes = [
                (vec![2, 3, 4], vec![2, 3, 4]),
                (vec![17], vec![17]),
                (vec![2, 3, 4], vec![4]),
                (vec![2, 3, 4], vec![1, 3, 4]),
                (vec![5, 3], vec![1, 1]),
            ];
            for (i, (dims, b_dims)) in shapes.into_iter().enumerate() {
                let h = header(&mut rng, 0, roundings[i % 2], i == 1);
                let scales = [0.05f32, 0.02, 0.06];
                let add = AddQuant::new(
                    [(scales[0], h.zero_points[0]), (scales[1], h.zero_points[1])],
                    (scales[2], h.output_zero_point),
                    Activation::None,
                    h.rounding,
                );
                let Ok(add) = add else { continue };
                let mut words = h.words().to_vec();
                for r in add.requantize {
                    words.extend([r.multiplier, i32::from(r.shift)]);
                }
                let n = dims.iter().product();
                let m = b_dims.iter().product();
                let inputs = vec![
                    (dims.clone(), rng.i8s(n)),
                    (b_dims, rng.i8s(m)),
                    (vec![words.len() as u64], Values::I32(words)),
                ];
                cases.push(block_case(OpKind::AddInt8, inputs, dims));
            }
        }
        OpKind::MaxPoolInt8(_) | OpKind::AvgPoolInt8(_) => {
            for (i, (x, w)) in [
                ([1u64, 5, 5, 3], window(2, 2, 1, 0)),
                ([2, 6, 5, 2], window(3, 1, 1, 1)),
            ]
            .into_iter()
            .enumerate()
            {
                let [oh, ow] = out_hw([x[1], x[2]], &w);
                let mut h = header(&mut rng, 0, Rounding::Double, i == 1);
                (h.zero_points, h.output_zero_point) = ([0, 0], 0);
                let words = h.words().to_vec();
                let kind = match kind {
                    OpKind::MaxPoolInt8(_) => OpKind::MaxPoolInt8(w),
                    _ => OpKind::AvgPoolInt8(w),
                };
                let inputs = vec![
                    (x.to_vec(), rng.i8s(x.iter().product())),
                    (vec![HEADER_WORDS as u64], Values::I32(words)),
                ];
                cases.push(block_case(kind, inputs, vec![x[0], oh, ow, x[3]]));
            }
        }
        OpKind::Quantize | OpKind::Dequantize => {
            for (i, channels) in [1u64, 5].into_iter().enumerate() {
                let dims = vec![4, 5];
                let mut h = header(&mut rng, channels as u32, Rounding::Double, false);
                h.zero_points[1] = 0;
                if i == 1 {
                    // Weights: symmetric, narrow range.
                    (h.zero_points[0], h.output_zero_point, h.min) = (0, 0, -127);
                }
                let mut words = h.words().to_vec();
                words.extend((0..channels).map(|c| (0.035 + 0.013 * c as f32).to_bits() as i32));
                let x = if kind == OpKind::Quantize {
                    Values::F32(super::support::values(20, 7 + i as u32))
                } else {
                    rng.i8s(20)
                };
                let inputs = vec![
                    (dims.clone(), x),
                    (vec![words.len() as u64], Values::I32(words)),
                ];
                cases.push(block_case(kind, inputs, dims));
            }
        }
        OpKind::SoftmaxInt8 => {
            // Rows of 10 (a classifier) and of 37 with scale 1, where
            // `diff_min` (−15) drops every ninth logit; both roundings.
            for (i, (dims, scale, spread)) in [(vec![6u64, 10], 0.02f32, 40), (vec![2, 37], 1.0, 3)]
                .into_iter()
                .enumerate()
            {
                let Ok(q) = SoftmaxQuant::new(1.0, scale, roundings[i % 2]) else {
                    continue;
                };
                let words = block::softmax(&q).to_vec();
                // Logits within ±spread quanta, every ninth far below the rest.
                let n: u64 = dims.iter().product();
                let logits = (0..n)
                    .map(|j| match j % 9 {
                        8 => -128,
                        _ => rng.int(-spread, spread) as i8,
                    })
                    .collect();
                let inputs = vec![
                    (dims.clone(), Values::I8(logits)),
                    (vec![words.len() as u64], Values::I32(words)),
                ];
                cases.push(block_case(kind, inputs, dims));
            }
        }
        OpKind::MulInt8 => {
            // b of a's shape, of its last axis, and one value; both roundings.
            for (i, (a, b)) in [
                (vec![4u64, 6], vec![4u64, 6]),
                (vec![3, 5], vec![5]),
                (vec![7], vec![1]),
            ]
            .into_iter()
            .enumerate()
            {
                let h = header(&mut rng, 0, roundings[i % 2], i == 1);
                let r = rng.multiplier(-9, -7);
                let mut words = h.words().to_vec();
                words.extend([r.multiplier, i32::from(r.shift)]);
                let inputs = vec![
                    (a.clone(), rng.i8s(a.iter().product())),
                    (b.clone(), rng.i8s(b.iter().product())),
                    (vec![words.len() as u64], Values::I32(words)),
                ];
                cases.push(block_case(kind, inputs, a));
            }
        }
        OpKind::LookupInt8 => {
            // A random table, looked up at every input byte.
            let mut table = [0i8; 256];
            for e in table.iter_mut() {
                *e = rng.int(-128, 127) as i8;
            }
            let words = block::lookup(&table).to_vec();
            let dims = vec![4u64, 64];
            let x = (0..256).map(|b: i32| b as u8 as i8).collect();
            let inputs = vec![
                (dims.clone(), Values::I8(x)),
                (vec![words.len() as u64], Values::I32(words)),
            ];
            cases.push(block_case(kind, inputs, dims));
        }
        _ => {}
    }
    cases
}

/// The ops [`reference::run_bytes`] runs: no bad input to refuse.
pub(crate) fn bytes_op(kind: OpKind) -> bool {
    matches!(
        kind,
        OpKind::Cast { .. } | OpKind::ArgMax(_) | OpKind::ArgMin(_)
    )
}

/// The reference result of an int8, index, `Cast` or `ArgMax` case, as device bytes.
pub(crate) fn expected(case: &OpCase) -> Check<Vec<u8>> {
    if bytes_op(case.kind) {
        let src = case.inputs[0].1.bytes();
        let n = case.out.iter().product::<u64>() as usize;
        let mut out = vec![0u8; n * case.out_dtype().size()];
        reference::run_bytes(case.kind, &src, shape(&case.inputs[0].0), &mut out).map_err(|e| {
            Fail(format!(
                "suite bug: reference refused {}: {e}",
                case.label()
            ))
        })?;
        return Ok(out);
    }
    let inputs: Vec<_> = case
        .inputs
        .iter()
        .map(|(d, v)| (v.as_data(), shape(d)))
        .collect();
    let out_shape = shape(&case.out);
    let n = case.out.iter().product::<u64>() as usize;
    let suite_bug = |e: reference::Error| {
        Fail(format!(
            "suite bug: reference refused {}: {e}",
            case.label()
        ))
    };
    if case.out_dtype() == crate::accelerator::DType::F32 {
        let mut out = vec![0f32; n];
        reference::int8::run(case.kind, &inputs, out_shape, DataMut::F32(&mut out))
            .map_err(suite_bug)?;
        return Ok(super::support::to_bytes(&out));
    }
    let mut out = vec![0i8; n];
    reference::int8::run(case.kind, &inputs, out_shape, DataMut::I8(&mut out))
        .map_err(suite_bug)?;
    Ok(out.iter().map(|&v| v as u8).collect())
}

/// Every case bit for bit, then a corrupted block (a zero point of 300)
/// that must fail, at launch or at its fence, and write nothing.
pub(crate) fn check<F: Fixture>(s: &mut Scope<'_, F>, cases: &[OpCase]) -> Check<Outcome> {
    let mut outputs = 0;
    for (i, case) in cases.iter().enumerate() {
        let got = run_for_bytes(s, case, 0x140 + i as u16)?;
        let want = expected(case)?;
        if let Some(diff) = first_difference(&got, &want) {
            fail!(
                "{}: not bit-exact with TFLite's reference kernel: {diff}",
                case.label()
            );
        }
        outputs += case.out.iter().product::<u64>();
    }
    let Some(first) = cases.first() else {
        fail!("suite bug: no int8 cases");
    };
    if bytes_op(first.kind) || matches!(first.kind, OpKind::Concat(_)) {
        return Ok(Outcome::Passed(format!(
            "{} launches, {outputs} outputs bit-exact with the reference",
            cases.len()
        )));
    }
    let mut bad = OpCase {
        kind: first.kind,
        inputs: first.inputs.clone(),
        out: first.out.clone(),
    };
    // An int8 op's block gets a zero point of 300; an index op's indices
    // one out of range.
    let int8 = first.kind.is_int8();
    if let Some((_, Values::I64(last))) = bad.inputs.last_mut() {
        match last.first_mut() {
            Some(v) => *v = i64::MAX,
            None => fail!(
                "suite bug: the first case of {} has no indices",
                first.label()
            ),
        }
    }
    if let Some((_, Values::I32(last))) = bad.inputs.last_mut() {
        match last.first_mut() {
            Some(v) => *v = if int8 { 300 } else { i32::MAX },
            None => fail!(
                "suite bug: the first case of {} has no indices",
                first.label()
            ),
        }
    }
    let what = if int8 {
        "a zero point of 300"
    } else {
        "an index out of range"
    };
    let staged = stage(s, &bad, 0)?;
    let (q, timeout) = (s.cfg.queue, s.cfg.timeout);
    let failed = match s.dev().launch(q, &staged.op(&bad, 0x1FE)) {
        Err(e) => Err(e),
        Ok(fence) => s.dev().wait_or_reset(fence, timeout),
    };
    match failed {
        Err(e) if e.kind() == ErrorKind::InvalidArgument => {}
        Err(e) => fail!(
            "{} with {what} failed with {}, expected kind InvalidArgument",
            bad.label(),
            describe(&e)
        ),
        Ok(()) => fail!("{} with {what} completed", bad.label()),
    }
    untouched(s, &staged, &format!("{what} was refused"))?;
    unstage(s, staged)?;
    ensure!(outputs > 0, "suite bug: empty int8 cases");
    let (standard, bad) = match int8 {
        true => ("TFLite's reference kernels", "a bad block"),
        false => ("the reference", "an index out of range"),
    };
    Ok(Outcome::Passed(format!(
        "{} launches, {outputs} outputs bit-exact with {standard}; {bad} refused",
        cases.len()
    )))
}
