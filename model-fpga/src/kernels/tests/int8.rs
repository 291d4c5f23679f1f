//! The model's int8 kernels (`kernels::int8`, each build this CPU runs)
//! against `tensorplug_core::reference::int8::run`, byte for byte, on
//! seeded random geometries and quantization blocks.

use crate::kernels::int8::{Isa, int8_on};
use std::vec::Vec;
use std::{format, vec};
use tensorplug_core::accelerator::{OpKind, Shape, Window};
use tensorplug_core::quant::Rounding;
use tensorplug_core::quant::block::QuantHeader;
use tensorplug_core::reference::int8::{Data, DataMut, run};

/// xorshift64*: a seeded, reproducible stream.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }
    fn size(&mut self, lo: usize, hi: usize) -> usize {
        self.range(lo as i64, hi as i64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn i8s(&mut self, len: usize) -> Vec<i8> {
        (0..len).map(|_| self.next() as i8).collect()
    }
}

fn shape(d: &[usize]) -> Shape {
    Shape::new(&d.iter().map(|&v| v as u64).collect::<Vec<_>>()).unwrap()
}

/// A valid block for `channels` output channels: zero points anywhere in
/// int8, either rounding, a full, ReLU-like or narrow clamp, biases small or
/// near `i32`'s ends (so accumulators wrap), multipliers and shifts that
/// mostly land outputs inside the clamp, sometimes at their extremes.
fn block(rng: &mut Rng, channels: usize, depth: usize) -> Vec<i32> {
    let output_zero_point = rng.range(-128, 127) as i32;
    let (min, max) = match rng.range(0, 2) {
        0 => (-128, 127),
        1 => (output_zero_point, 127),
        _ => {
            let a = rng.range(-128, 127) as i32;
            let b = rng.range(-128, 127) as i32;
            (a.min(b), a.max(b))
        }
    };
    let h = QuantHeader {
        zero_points: [rng.range(-128, 127) as i32, 0],
        output_zero_point,
        min,
        max,
        rounding: if rng.chance(50) {
            Rounding::Double
        } else {
            Rounding::Single
        },
        channels: channels as u32,
    };
    let mut words = h.words().to_vec();
    let wraps = rng.chance(10);
    words.extend((0..channels).map(|_| match wraps {
        true => rng.range(i64::from(i32::MAX) - 50_000, i64::from(i32::MAX)) as i32,
        false => rng.range(-20_000, 20_000) as i32,
    }));
    words.extend((0..channels).map(|_| match rng.range(0, 9) {
        0 => 0,
        1 => i32::MAX,
        _ => rng.range(1 << 30, i64::from(i32::MAX)) as i32,
    }));
    // An accumulator of `depth` products is up to ~2^15·depth: shift it
    // into int8's range, give or take, and sometimes to the extremes.
    let fit = -(15 + (usize::BITS - depth.max(1).leading_zeros()) as i64) + 8;
    words.extend((0..channels).map(|_| match rng.range(0, 19) {
        0 => -31,
        1 => 30,
        2 => rng.range(-31, 30) as i32,
        _ => rng.range(fit - 3, (fit + 3).min(30)) as i32,
    }));
    words
}

/// What the outputs of all cases of one op covered: every case must match;
/// these show the cases were not degenerate.
#[derive(Default, Debug)]
struct Coverage {
    cases: usize,
    /// Accepted, with two outputs or more.
    sized: usize,
    /// Of those, not all one value.
    varied: usize,
    /// Accepted, with an output at the clamp's end.
    clamped: usize,
}

/// `kind` on the operands by the reference and by every build of the
/// model's kernels: the same result, the same bytes. The outputs start
/// different, so a byte left unwritten shows; a refusal writes nothing.
fn check(
    kind: OpKind,
    ops: [(&[i8], Shape); 2],
    block: &[i32],
    out_shape: Shape,
    cov: &mut Coverage,
    case: &str,
) {
    let inputs = [
        (Data::I8(ops[0].0), ops[0].1),
        (Data::I8(ops[1].0), ops[1].1),
        (Data::I32(block), shape(&[block.len()])),
    ];
    let len = out_shape.elements().unwrap() as usize;
    let mut want = vec![0x33i8; len];
    let expected = run(kind, &inputs, out_shape, DataMut::I8(&mut want));
    for isa in Isa::available() {
        let mut got = vec![0x55i8; len];
        let result = int8_on(isa, kind, &inputs, out_shape, DataMut::I8(&mut got));
        assert_eq!(result, expected, "{isa:?}, {case}");
        let differs = got.iter().zip(&want).position(|(g, w)| g != w);
        match (&expected, differs) {
            (Ok(()), Some(i)) => panic!(
                "{isa:?}, {case}: output {i} is {}, the reference's {}",
                got[i], want[i]
            ),
            (Err(_), _) => assert!(
                got.iter().all(|&v| v == 0x55),
                "{isa:?}, {case}: refused, but wrote"
            ),
            (Ok(()), None) => {}
        }
    }
    cov.cases += 1;
    if expected.is_ok() {
        cov.sized += usize::from(len >= 2);
        cov.varied += usize::from(want.iter().any(|&v| v != want[0]));
        let (min, max) = (block[3] as i8, block[4] as i8);
        cov.clamped += usize::from(want.iter().any(|&v| v == min || v == max));
    }
}

/// A random window: sizes 1–4, strides and dilations 1–3, each of the four
/// paddings 0–3 (so often asymmetric), on an `h × w` input.
fn window(rng: &mut Rng) -> Window {
    Window {
        size: [rng.range(1, 4) as u16, rng.range(1, 4) as u16],
        stride: [rng.range(1, 3) as u16, rng.range(1, 3) as u16],
        dilation: [rng.range(1, 3) as u16, rng.range(1, 3) as u16],
        pad: [0; 4].map(|_| rng.range(0, 3) as u16),
    }
}

fn assert_covered(op: &str, cov: &Coverage) {
    assert!(
        cov.sized * 10 >= cov.cases * 7
            && cov.varied * 10 >= cov.sized * 9
            && cov.clamped * 10 >= cov.cases,
        "{op}: too many degenerate cases: {cov:?}"
    );
}

#[test]
fn conv2d_int8_is_the_reference_byte_for_byte() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let mut cov = Coverage::default();
    for case in 0..400 {
        let w = window(&mut rng);
        let (n, h, wd) = (rng.size(1, 3), rng.size(1, 12), rng.size(1, 12));
        // Output channels around LANES (16): tails, one block, several;
        // input channels sometimes past the 32 the VNNI build centres at once.
        let c = if rng.chance(25) {
            rng.size(13, 70)
        } else {
            rng.size(1, 12)
        };
        let oc = rng.size(1, 40);
        let Ok([oh, ow]) = w.output_hw(h as u64, wd as u64) else {
            continue;
        };
        let [kh, kw] = w.size.map(usize::from);
        let x = rng.i8s(n * h * wd * c);
        let f = rng.i8s(kh * kw * c * oc);
        let q = block(&mut rng, oc, kh * kw * c);
        let out = shape(&[n, oh as usize, ow as usize, oc]);
        let what =
            format!("case {case}: x [{n}, {h}, {wd}, {c}], filter [{kh}, {kw}, {c}, {oc}], {w:?}");
        let ops = [
            (&x[..], shape(&[n, h, wd, c])),
            (&f[..], shape(&[kh, kw, c, oc])),
        ];
        check(OpKind::Conv2DInt8(w), ops, &q, out, &mut cov, &what);
    }
    assert!(cov.cases >= 300, "{cov:?}");
    assert_covered("Conv2DInt8", &cov);
}

#[test]
fn a_mobilenet_sized_conv2d_int8_is_the_reference_byte_for_byte() {
    // The bench's geometry: [1, 48, 48, 16] by [3, 3, 16, 16], SAME.
    let mut rng = Rng(7);
    let mut cov = Coverage::default();
    for rounding_case in 0..4 {
        let w = Window {
            pad: [1; 4],
            ..Window::new([3, 3])
        };
        let x = rng.i8s(48 * 48 * 16);
        let f = rng.i8s(3 * 3 * 16 * 16);
        let q = block(&mut rng, 16, 144);
        let ops = [
            (&x[..], shape(&[1, 48, 48, 16])),
            (&f[..], shape(&[3, 3, 16, 16])),
        ];
        let what = format!("case {rounding_case}");
        check(
            OpKind::Conv2DInt8(w),
            ops,
            &q,
            shape(&[1, 48, 48, 16]),
            &mut cov,
            &what,
        );
    }
    assert_eq!(cov.varied, 4, "{cov:?}");
}

#[test]
fn a_conv2d_int8_with_a_filter_too_large_to_pack_is_the_reference_byte_for_byte() {
    // 3 · 3 · ⌈120 / 2⌉ = 540 interleaved pairs: more than the VNNI build
    // keeps, so it runs the AVX-512 one.
    let mut rng = Rng(11);
    let mut cov = Coverage::default();
    let w = Window {
        stride: [2, 1],
        pad: [1, 1, 0, 2],
        ..Window::new([3, 3])
    };
    let x = rng.i8s(2 * 5 * 6 * 120);
    let f = rng.i8s(3 * 3 * 120 * 20);
    let q = block(&mut rng, 20, 3 * 3 * 120);
    let ops = [
        (&x[..], shape(&[2, 5, 6, 120])),
        (&f[..], shape(&[3, 3, 120, 20])),
    ];
    let out = shape(&[2, 3, 6, 20]);
    check(
        OpKind::Conv2DInt8(w),
        ops,
        &q,
        out,
        &mut cov,
        "large filter",
    );
    assert_eq!(cov.varied, 1, "{cov:?}");
}

#[test]
fn depthwise_conv2d_int8_is_the_reference_byte_for_byte() {
    let mut rng = Rng(0x0bad_cafe_f00d_0001);
    let mut cov = Coverage::default();
    for case in 0..400 {
        let w = window(&mut rng);
        let (n, h, wd) = (rng.size(1, 3), rng.size(1, 12), rng.size(1, 12));
        // Channels × multiplier up to 60: tails of LANES and several blocks.
        let (c, m) = (rng.size(1, 20), rng.size(1, 3));
        let Ok([oh, ow]) = w.output_hw(h as u64, wd as u64) else {
            continue;
        };
        let [kh, kw] = w.size.map(usize::from);
        let x = rng.i8s(n * h * wd * c);
        let f = rng.i8s(kh * kw * c * m);
        let q = block(&mut rng, c * m, kh * kw);
        let out = shape(&[n, oh as usize, ow as usize, c * m]);
        let what =
            format!("case {case}: x [{n}, {h}, {wd}, {c}], filter [{kh}, {kw}, {c}, {m}], {w:?}");
        let ops = [
            (&x[..], shape(&[n, h, wd, c])),
            (&f[..], shape(&[kh, kw, c, m])),
        ];
        check(
            OpKind::DepthwiseConv2DInt8(w),
            ops,
            &q,
            out,
            &mut cov,
            &what,
        );
    }
    assert!(cov.cases >= 300, "{cov:?}");
    assert_covered("DepthwiseConv2DInt8", &cov);
}

#[test]
fn matmul_int8_is_the_reference_byte_for_byte() {
    let mut rng = Rng(0x5eed_0000_0000_0023);
    let mut cov = Coverage::default();
    for case in 0..400 {
        let (m, k, n) = (rng.size(1, 9), rng.size(1, 70), rng.size(1, 40));
        let transpose_b = rng.chance(50);
        let a = rng.i8s(m * k);
        let b = rng.i8s(k * n);
        let q = block(&mut rng, n, k);
        let b_shape = if transpose_b { [n, k] } else { [k, n] };
        let what = format!("case {case}: [{m}, {k}] x {b_shape:?}, transpose_b {transpose_b}");
        let ops = [(&a[..], shape(&[m, k])), (&b[..], shape(&b_shape))];
        let kind = OpKind::MatMulInt8 { transpose_b };
        check(kind, ops, &q, shape(&[m, n]), &mut cov, &what);
    }
    assert_covered("MatMulInt8", &cov);
}

#[test]
fn bad_blocks_and_operands_are_refused_as_the_reference_refuses_them() {
    let mut rng = Rng(99);
    let mut cov = Coverage::default();
    let w = Window {
        pad: [1, 0, 0, 2],
        ..Window::new([3, 2])
    };
    let (x, f) = (rng.i8s(2 * 5 * 6 * 3), rng.i8s(3 * 2 * 3 * 4));
    let ops = [
        (&x[..], shape(&[2, 5, 6, 3])),
        (&f[..], shape(&[3, 2, 3, 4])),
    ];
    let out = shape(&[2, 4, 7, 4]);
    let good = block(&mut rng, 4, 18);
    check(OpKind::Conv2DInt8(w), ops, &good, out, &mut cov, "good");
    // A zero point, the clamp, the rounding, the reserved word, a shift.
    for (word, value) in [
        (0, 200),
        (2, -129),
        (3, 50),
        (5, 2),
        (7, 1),
        (8 + 2 * 4, 31),
    ] {
        let mut bad = good.clone();
        bad[word] = value;
        if word == 3 {
            bad[4] = 10;
        }
        check(
            OpKind::Conv2DInt8(w),
            ops,
            &bad,
            out,
            &mut cov,
            &format!("word {word} = {value}"),
        );
    }
    // Too short, and for another channel count.
    check(
        OpKind::Conv2DInt8(w),
        ops,
        &good[..good.len() - 1],
        out,
        &mut cov,
        "short",
    );
    let mut three = block(&mut rng, 3, 18);
    three.extend_from_slice(&[0, 0, 0]);
    check(
        OpKind::Conv2DInt8(w),
        ops,
        &three,
        out,
        &mut cov,
        "channels",
    );
    // A wrong output shape, and a short input: the reference's own errors.
    check(
        OpKind::Conv2DInt8(w),
        ops,
        &good,
        shape(&[2, 4, 6, 4]),
        &mut cov,
        "out shape",
    );
    let short = [(&x[1..], shape(&[2, 5, 6, 3])), ops[1]];
    check(
        OpKind::Conv2DInt8(w),
        short,
        &good,
        out,
        &mut cov,
        "short input",
    );
    // The other int8 ops go to the reference.
    let mut y = vec![0i8; 1];
    let pool = [
        (Data::I8(&x[..1]), shape(&[1, 1, 1, 1])),
        (Data::I32(&good[..8]), shape(&[8])),
    ];
    let kind = OpKind::MaxPoolInt8(Window::new([1, 1]));
    let mut h = QuantHeader::parse(&good[..8]).unwrap();
    h.channels = 0;
    let header = h.words();
    let pool_ok = [pool[0], (Data::I32(&header), shape(&[8]))];
    let mut want = vec![0i8; 1];
    assert_eq!(
        int8_on(
            Isa::Portable,
            kind,
            &pool_ok,
            shape(&[1, 1, 1, 1]),
            DataMut::I8(&mut y)
        ),
        run(kind, &pool_ok, shape(&[1, 1, 1, 1]), DataMut::I8(&mut want)),
    );
    assert_eq!(y, want);
    assert!(
        int8_on(
            Isa::Portable,
            kind,
            &pool,
            shape(&[1, 1, 1, 1]),
            DataMut::I8(&mut y)
        )
        .is_err()
    );
}
