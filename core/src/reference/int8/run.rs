//! The ops of the catalogue whose operands differ in type
//! ([`OpKind::operand_types`]) on typed slices: the shapes checked with
//! [`OpDesc::validate`]; for the int8 ops the quantization block parsed
//! and checked ([`crate::quant::block`]), then TFLite's kernel; for the
//! index ops [`super::super::index`].

use super::super::error::{Error, check_len, elements};
use super::kernels::{
    AddQuant, Int8Layer, Layout, Pool, add, conv2d, depthwise_conv2d, fully_connected, pool,
};
use crate::accelerator::{DType, DeviceAddr, OpDesc, OpKind, Shape, TensorDesc};
use crate::quant::block::{self, PerChannel, QuantHeader};

/// An input of an int8 op.
#[derive(Clone, Copy, Debug)]
pub enum Data<'a> {
    /// int8 values.
    I8(&'a [i8]),
    /// int32 values (a quantization block, indices).
    I32(&'a [i32]),
    /// int64 values (indices).
    I64(&'a [i64]),
    /// f32 values (`Quantize`'s input).
    F32(&'a [f32]),
}

/// The output of an int8 op.
#[derive(Debug)]
pub enum DataMut<'a> {
    /// int8 values.
    I8(&'a mut [i8]),
    /// f32 values (`Dequantize`'s output).
    F32(&'a mut [f32]),
}

impl Data<'_> {
    fn dtype(&self) -> DType {
        match self {
            Self::I8(_) => DType::I8,
            Self::I32(_) => DType::I32,
            Self::I64(_) => DType::I64,
            Self::F32(_) => DType::F32,
        }
    }
    fn len(&self) -> usize {
        match self {
            Self::I8(d) => d.len(),
            Self::I32(d) => d.len(),
            Self::I64(d) => d.len(),
            Self::F32(d) => d.len(),
        }
    }
}

/// Runs the int8 op `kind` on `inputs` (data, shape) into `out` of
/// `out_shape`, as TFLite's reference kernels do; or an index op
/// (`Gather`, `SegmentSum`).
pub fn run(
    kind: OpKind,
    inputs: &[(Data<'_>, Shape)],
    out_shape: Shape,
    mut out: DataMut<'_>,
) -> Result<(), Error> {
    let desc = |d: DType, shape| TensorDesc::new(DeviceAddr(0), d, shape);
    let mut descs = [desc(DType::I8, Shape::SCALAR); 3];
    let n = inputs.len().min(descs.len());
    for (d, (data, shape)) in descs.iter_mut().zip(inputs) {
        *d = desc(data.dtype(), *shape);
    }
    let out_dtype = match out {
        DataMut::I8(_) => DType::I8,
        DataMut::F32(_) => DType::F32,
    };
    OpDesc {
        kind,
        inputs: &descs[..n],
        output: desc(out_dtype, out_shape),
        op_id: 0,
    }
    .validate()?;
    if let (OpKind::Gather(_) | OpKind::SegmentSum(_), DataMut::F32(out)) = (kind, &mut out) {
        return index(kind, inputs, out_shape, out);
    }
    if let OpKind::Concat(_) = kind {
        return concat(inputs, out);
    }
    if !kind.is_int8() || inputs.len() != n {
        return Err(Error::Shape(crate::accelerator::ShapeError::DType {
            operand: 0,
        }));
    }
    for (i, (data, shape)) in inputs.iter().enumerate() {
        check_len(i as u8, elements(shape)?, data.len())?;
    }
    let out_len = match &out {
        DataMut::I8(o) => o.len(),
        DataMut::F32(o) => o.len(),
    };
    check_len(n as u8, elements(&out_shape)?, out_len)?;
    // Validation fixed every operand's type.
    let i8s = |i: usize| match inputs[i].0 {
        Data::I8(d) => d,
        _ => &[],
    };
    let quant = match inputs[n - 1].0 {
        Data::I32(d) => d,
        _ => &[],
    };
    let dims = |s: &Shape| -> Result<[usize; 4], Error> {
        let mut d = [0usize; 4];
        for (slot, &v) in d.iter_mut().zip(s.dims()) {
            *slot = usize::try_from(v).map_err(|_| Error::Overflow)?;
        }
        Ok(d)
    };
    let q = Error::Quant;
    match (kind, out) {
        (OpKind::Conv2DInt8(w) | OpKind::DepthwiseConv2DInt8(w), DataMut::I8(out)) => {
            let out_dims = dims(&out_shape)?;
            let p = PerChannel::parse(quant, out_dims[3]).map_err(q)?;
            let layer = layer(&p);
            let (x, f) = (dims(&inputs[0].1)?, dims(&inputs[1].1)?);
            if let OpKind::Conv2DInt8(_) = kind {
                let filter = (i8s(1), f, Layout::Hwio);
                conv2d(&layer, i8s(0), x, filter, Some(p.bias), &w, out, out_dims)
            } else {
                // `[kh, kw, c, m]` is TFLite's `[1, kh, kw, c·m]`.
                let f = [1, f[0], f[1], f[2] * f[3]];
                depthwise_conv2d(
                    &layer,
                    i8s(0),
                    x,
                    i8s(1),
                    f,
                    Some(p.bias),
                    &w,
                    out,
                    out_dims,
                )
            }
        }
        (OpKind::MatMulInt8 { transpose_b }, DataMut::I8(out)) => {
            let channels = dims(&out_shape)?[1];
            let p = PerChannel::parse(quant, channels).map_err(q)?;
            let layout = if transpose_b {
                Layout::Ohwi
            } else {
                Layout::Hwio
            };
            let filter = (i8s(1), layout);
            fully_connected(&layer(&p), i8s(0), filter, channels, Some(p.bias), out)
        }
        (OpKind::AddInt8, DataMut::I8(out)) => {
            let (h, requantize) = block::parse_add(quant).map_err(q)?;
            let quant = AddQuant {
                zero_points: [h.zero_points[0], h.zero_points[1], h.output_zero_point],
                requantize,
                rounding: h.rounding,
                min: h.min,
                max: h.max,
            };
            add(&quant, i8s(0), i8s(1), out)
        }
        (OpKind::MaxPoolInt8(w) | OpKind::AvgPoolInt8(w), DataMut::I8(out)) => {
            let h = QuantHeader::parse_sized(quant, 0, 0, 0).map_err(q)?;
            let which = match kind {
                OpKind::MaxPoolInt8(_) => Pool::Max,
                _ => Pool::Average,
            };
            let (x, o) = (dims(&inputs[0].1)?, dims(&out_shape)?);
            pool(which, i8s(0), x, &w, h.min, h.max, out, o)
        }
        (OpKind::Quantize, DataMut::I8(out)) => {
            let x = match inputs[0].0 {
                Data::F32(d) => d,
                _ => &[],
            };
            let last = usize::try_from(inputs[0].1.last()).map_err(|_| Error::Overflow)?;
            let (h, scales) = block::parse_scales(quant, last).map_err(q)?;
            for (i, (o, &v)) in out.iter_mut().zip(x).enumerate() {
                *o = quantize(v, scale(scales, i), h);
            }
            Ok(())
        }
        (OpKind::Dequantize, DataMut::F32(out)) => {
            let last = usize::try_from(out_shape.last()).map_err(|_| Error::Overflow)?;
            let (h, scales) = block::parse_scales(quant, last).map_err(q)?;
            for (i, (o, &v)) in out.iter_mut().zip(i8s(0)).enumerate() {
                *o = dequantize(v, scale(scales, i), h.zero_points[0]);
            }
            Ok(())
        }
        (OpKind::SoftmaxInt8, DataMut::I8(out)) => {
            let softmax = block::parse_softmax(quant).map_err(q)?;
            let depth = usize::try_from(inputs[0].1.last()).map_err(|_| Error::Overflow)?;
            if depth > 0 {
                for (x, o) in i8s(0).chunks(depth).zip(out.chunks_mut(depth)) {
                    softmax.row(x, o);
                }
            }
            Ok(())
        }
        (OpKind::MulInt8, DataMut::I8(out)) => {
            let (h, r) = block::parse_mul(quant).map_err(q)?;
            let (a, b) = (i8s(0), i8s(1));
            for (i, (o, &x)) in out.iter_mut().zip(a).enumerate() {
                let y = b[i % b.len()];
                let product = (i32::from(x) - h.zero_points[0]) * (i32::from(y) - h.zero_points[1]);
                let v = r
                    .apply(product, h.rounding)
                    .saturating_add(h.output_zero_point);
                *o = v.clamp(h.min, h.max) as i8;
            }
            Ok(())
        }
        (OpKind::LookupInt8, DataMut::I8(out)) => {
            let table = block::parse_lookup(quant).map_err(q)?;
            for (o, &x) in out.iter_mut().zip(i8s(0)) {
                *o = table[x as u8 as usize];
            }
            Ok(())
        }
        // Validation matched the output's type to the op.
        _ => Err(Error::Shape(crate::accelerator::ShapeError::DType {
            operand: n as u8,
        })),
    }
}

fn layer<'a>(p: &PerChannel<'a>) -> Int8Layer<'a> {
    Int8Layer {
        input_zero_point: p.header.zero_points[0],
        output_zero_point: p.header.output_zero_point,
        multipliers: p.multipliers,
        shifts: p.shifts,
        rounding: p.header.rounding,
        min: p.header.min,
        max: p.header.max,
    }
}

/// Element `i`'s scale: the only one, or its last-axis position's.
fn scale(scales: &[i32], i: usize) -> f32 {
    f32::from_bits(scales[i % scales.len()] as u32)
}

/// TFLite's `AffineQuantize`: `round(x / scale)` (f32 division, half away
/// from zero) plus the zero point, clamped to `[min, max]`. NaN gives the
/// zero point, ±∞ the clamp's end.
pub fn quantize(x: f32, scale: f32, h: QuantHeader) -> i8 {
    let q = libm::roundf(x / scale) as i32;
    q.saturating_add(h.output_zero_point).clamp(h.min, h.max) as i8
}

/// TFLite's `Dequantize`: `scale · (q − zero_point)`, in f64, rounded once
/// to f32. Computed in f32: the f64 product of an f32 and an integer of at
/// most 2²⁴ is exact, so its one rounding to f32 is the f32 product's
/// (bit for bit, `dequantize_in_f32_is_tflites_f64_product`). An int8 zero
/// point keeps `|q − zero_point|` ≤ 255; an MCU then needs no software
/// f64 multiply.
pub fn dequantize(q: i8, scale: f32, zero_point: i32) -> f32 {
    scale * (i32::from(q) - zero_point) as f32
}

/// `Gather` or `SegmentSum` on validated operands (f32 data, i32 or i64 indices).
fn index(
    kind: OpKind,
    inputs: &[(Data<'_>, Shape)],
    out_shape: Shape,
    out: &mut [f32],
) -> Result<(), Error> {
    for (i, (data, shape)) in inputs.iter().enumerate() {
        check_len(i as u8, elements(shape)?, data.len())?;
    }
    check_len(2, elements(&out_shape)?, out.len())?;
    use super::super::index::{self, Ids};
    let (data, indices) = match (inputs[0].0, inputs[1].0) {
        (Data::F32(data), Data::I32(i)) => (data, Ids::I32(i)),
        (Data::F32(data), Data::I64(i)) => (data, Ids::I64(i)),
        _ => {
            return Err(Error::Shape(crate::accelerator::ShapeError::DType {
                operand: 0,
            }));
        }
    };
    let dims = out_shape.dims();
    match kind {
        OpKind::Gather(_) => index::gather(data, &inputs[0].1, indices, out),
        _ => index::segment_sum(
            data,
            usize::try_from(out_shape.last()).map_err(|_| Error::Overflow)?,
            indices,
            usize::try_from(dims[0]).map_err(|_| Error::Overflow)?,
            out,
        ),
    }
}

/// `Concat`: each output row is `a`'s row then `b`'s (validated shapes).
fn concat(inputs: &[(Data<'_>, Shape)], out: DataMut<'_>) -> Result<(), Error> {
    fn rows<T: Copy>(a: &[T], b: &[T], out: &mut [T], p: usize, q: usize) -> Result<(), Error> {
        let outer = match p + q {
            0 => 0,
            w => out.len() / w,
        };
        check_len(0, outer * p, a.len())?;
        check_len(1, outer * q, b.len())?;
        for r in 0..outer {
            let o = &mut out[r * (p + q)..(r + 1) * (p + q)];
            o[..p].copy_from_slice(&a[r * p..(r + 1) * p]);
            o[p..].copy_from_slice(&b[r * q..(r + 1) * q]);
        }
        Ok(())
    }
    let width = |i: usize| usize::try_from(inputs[i].1.last()).map_err(|_| Error::Overflow);
    let (p, q) = (width(0)?, width(1)?);
    match (inputs[0].0, inputs[1].0, out) {
        (Data::F32(a), Data::F32(b), DataMut::F32(o)) => rows(a, b, o, p, q),
        (Data::I8(a), Data::I8(b), DataMut::I8(o)) => rows(a, b, o, p, q),
        _ => Err(Error::Shape(crate::accelerator::ShapeError::DType {
            operand: 0,
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accelerator::Window;
    use std::vec::Vec;

    extern crate std;

    fn block(channels: usize, rounding: Rounding) -> Vec<i32> {
        let h = QuantHeader {
            zero_points: [3, 0],
            output_zero_point: -2,
            min: -128,
            max: 127,
            rounding,
            channels: channels as u32,
        };
        let mut w = h.words().to_vec();
        w.extend((0..channels).map(|c| c as i32 * 50 - 40));
        w.extend((0..channels).map(|c| (1 << 30) + c as i32 * 1000));
        w.extend((0..channels).map(|c| -6 - c as i32));
        w
    }

    use crate::quant::Rounding;

    #[test]
    fn a_tf_layout_conv_equals_the_tflite_layout_one_transposed() {
        let (x_dims, [kh, kw, c, oc]) = ([1, 4, 5, 3], [2, 3, 3, 4]);
        let x: Vec<i8> = (0..60).map(|i| (i * 37 % 251) as i8).collect();
        let hwio: Vec<i8> = (0..kh * kw * c * oc)
            .map(|i| (i * 53 % 255) as i8)
            .collect();
        let mut ohwi = std::vec![0i8; hwio.len()];
        for (i, &v) in hwio.iter().enumerate() {
            let (o, rest) = (i % oc, i / oc);
            ohwi[o * kh * kw * c + rest] = v;
        }
        let w = Window::new([2, 3]);
        let q = block(oc, Rounding::Double);
        let shape =
            |d: &[usize]| Shape::new(&d.iter().map(|&v| v as u64).collect::<Vec<_>>()).unwrap();
        let mut got = std::vec![0i8; 3 * 3 * oc];
        run(
            OpKind::Conv2DInt8(w),
            &[
                (Data::I8(&x), shape(&x_dims)),
                (Data::I8(&hwio), shape(&[kh, kw, c, oc])),
                (Data::I32(&q), shape(&[q.len()])),
            ],
            shape(&[1, 3, 3, oc]),
            DataMut::I8(&mut got),
        )
        .unwrap();
        let p = PerChannel::parse(&q, oc).unwrap();
        let mut want = std::vec![0i8; got.len()];
        conv2d(
            &layer(&p),
            &x,
            x_dims,
            (&ohwi, [oc, kh, kw, c], Layout::Ohwi),
            Some(p.bias),
            &w,
            &mut want,
            [1, 3, 3, oc],
        )
        .unwrap();
        assert_eq!(got, want);
        assert!(want.iter().any(|&v| v != want[0]), "a case that varies");
        // A bad block is a quantization error, not a wrong answer.
        let mut bad = q.clone();
        bad[2] = 200;
        let err = run(
            OpKind::Conv2DInt8(w),
            &[
                (Data::I8(&x), shape(&x_dims)),
                (Data::I8(&hwio), shape(&[kh, kw, c, oc])),
                (Data::I32(&bad), shape(&[q.len()])),
            ],
            shape(&[1, 3, 3, oc]),
            DataMut::I8(&mut got),
        );
        assert_eq!(
            err,
            Err(Error::Quant(crate::quant::QuantError::ZeroPoint {
                value: 200
            }))
        );
    }

    #[test]
    fn quantize_and_dequantize_are_tflites() {
        let h = QuantHeader {
            zero_points: [0, 0],
            output_zero_point: 4,
            min: -128,
            max: 127,
            rounding: Rounding::Double,
            channels: 1,
        };
        // 0.25 / 0.5 = 0.5 rounds away from zero to 1; -0.25 to -1.
        assert_eq!(quantize(0.25, 0.5, h), 5);
        assert_eq!(quantize(-0.25, 0.5, h), 3);
        assert_eq!(quantize(1e9, 0.5, h), 127);
        assert_eq!(quantize(f32::NEG_INFINITY, 0.5, h), -128);
        assert_eq!(dequantize(-128, 0.1, -3), (0.1f32 as f64 * -125.0) as f32);
    }

    #[test]
    fn dequantize_in_f32_is_tflites_f64_product() {
        // Scales from the smallest subnormal to the largest finite, with
        // every mantissa pattern class, against TFLite's f64 arithmetic.
        let mut bits = 0x9e37_79b9_u32;
        let random = core::iter::repeat_with(|| {
            bits ^= bits << 13;
            bits ^= bits >> 17;
            bits ^= bits << 5;
            f32::from_bits(bits & 0x7fff_ffff)
        });
        let edges = [f32::from_bits(1), f32::MIN_POSITIVE, f32::MAX, 1.0, 0.1];
        for scale in edges
            .into_iter()
            .chain(random.take(200))
            .filter(|s| s.is_finite())
        {
            for zero in -128..=127 {
                for q in i8::MIN..=i8::MAX {
                    let want = (f64::from(scale) * f64::from(i32::from(q) - zero)) as f32;
                    assert_eq!(
                        dequantize(q, scale, zero).to_bits(),
                        want.to_bits(),
                        "{scale:e} · ({q} − {zero})"
                    );
                }
            }
        }
    }
}
