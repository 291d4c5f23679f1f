//! The int8 commands' kernels: `Conv2DInt8`, `DepthwiseConv2DInt8` and
//! `MatMulInt8` computed here, byte for byte what
//! `tensorplug_core::reference::int8::run` (TFLite's reference kernels)
//! gives, the other int8 ops by that reference itself.
//!
//! Why the bytes are the same: TFLite accumulates `Σ (x − input_zp) · w`
//! (in-bounds taps only, padding adds nothing) plus the bias in `i32`, and
//! each product fits an `i32`; `i32` wrapping addition is associative and
//! commutative, so any order of the same products gives the same
//! accumulator. Each accumulator is then requantized as the reference does
//! (`Int8Layer::output`): the output channel's
//! [`Requantize::apply`](tensorplug_core::quant::Requantize::apply) in the
//! block's rounding, plus the output zero point, clamped.
//!
//! How it is faster than the reference: the valid taps of an output pixel
//! are one rectangle (computed once per run of pixels, no per-tap bounds
//! test), `x − zp` is formed once per input value and multiplied into a
//! block of [`LANES`](body::LANES) output channels kept in registers (the HWIO filter's
//! output channels are contiguous, so that loop vectorizes; `x − zp` and `w`
//! fit `i16`), and up to [`PIXELS`](body::PIXELS) neighbouring output pixels with the same
//! taps share each filter load. On x86-64 hosts (feature `std`) the same
//! code is also compiled for AVX2 and AVX-512BW, and the convolution has an
//! AVX-512 VNNI version (`x86`), picked at run time ([`Isa`]).
//!
//! `no_std`, no allocation: the accumulators are stack arrays of `PIXELS ×
//! LANES` `i32` (the VNNI version, host only, also keeps the filter
//! interleaved in a 32 KiB stack array).

use tensorplug_core::accelerator::{DType, DeviceAddr, OpDesc, OpKind, Shape, TensorDesc};
use tensorplug_core::reference::int8::{Data, DataMut};
use tensorplug_core::reference::{self, Error};

use body::{Geometry, Quant, conv_body, depthwise_body, dot_body};

/// Runs the int8 op `kind` as `tensorplug_core::reference::int8::run` does,
/// with the same result bytes and the same errors: the convolutions and
/// `MatMulInt8` here, every other op (and any operand the reference would
/// refuse before reading the quantization block) by the reference.
pub fn int8(
    kind: OpKind,
    inputs: &[(Data<'_>, Shape)],
    out_shape: Shape,
    out: DataMut<'_>,
) -> Result<(), Error> {
    int8_on(Isa::detect(), kind, inputs, out_shape, out)
}

/// [`int8`] with the kernels compiled for `isa` (which the CPU has).
pub(crate) fn int8_on(
    isa: Isa,
    kind: OpKind,
    inputs: &[(Data<'_>, Shape)],
    out_shape: Shape,
    out: DataMut<'_>,
) -> Result<(), Error> {
    let fast = matches!(
        kind,
        OpKind::Conv2DInt8(_) | OpKind::DepthwiseConv2DInt8(_) | OpKind::MatMulInt8 { .. }
    );
    match (inputs, out) {
        (&[(Data::I8(x), xs), (Data::I8(f), fs), (Data::I32(block), bs)], DataMut::I8(out))
            if fast
                && checked(
                    kind,
                    [(x.len(), xs), (f.len(), fs), (block.len(), bs)],
                    (out.len(), out_shape),
                ) =>
        {
            let (x_dims, f_dims, o_dims) = (dims(&xs), dims(&fs), dims(&out_shape));
            match kind {
                OpKind::MatMulInt8 { transpose_b } => {
                    let [m, n] = [o_dims[0], o_dims[1]];
                    let q = Quant::parse(block, n)?;
                    let k = x_dims[1];
                    if transpose_b {
                        dot(isa, m, n, k, x, f, &q, out);
                    } else {
                        // `[m, k] · [k, n]` is a 1×1 convolution of an
                        // `[1, 1, m, k]` input by a `[1, 1, k, n]` filter.
                        let g = Geometry::pointwise(m, k, n);
                        conv(isa, &g, x, f, &q, out);
                    }
                }
                OpKind::Conv2DInt8(w) | OpKind::DepthwiseConv2DInt8(w) => {
                    let q = Quant::parse(block, o_dims[3])?;
                    let g = Geometry::new(&w, x_dims, f_dims, o_dims);
                    if let OpKind::Conv2DInt8(_) = kind {
                        conv(isa, &g, x, f, &q, out);
                    } else {
                        depthwise(isa, &g, f_dims[3], x, f, &q, out);
                    }
                }
                _ => {}
            }
            Ok(())
        }
        (_, out) => reference::int8::run(kind, inputs, out_shape, out),
    }
}

/// Which build of the kernels runs. Only [`Isa::detect`] and
/// `Isa::available` make one other than `Portable`, after checking that
/// the CPU has its instructions: the `unsafe` calls of the builds rely on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Isa {
    /// Compiled for the target's baseline (the MCU's, x86-64's SSE2).
    Portable,
    /// Compiled with AVX2.
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    Avx2,
    /// Compiled with AVX-512F and BW.
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    Avx512,
    /// As `Avx512`, and the convolution written for AVX-512 VNNI.
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    Avx512Vnni,
}

impl Isa {
    /// The best build this CPU runs.
    pub(crate) fn detect() -> Self {
        #[cfg(all(feature = "std", target_arch = "x86_64"))]
        {
            if vnni() {
                return Self::Avx512Vnni;
            }
            if std::is_x86_feature_detected!("avx512bw") {
                return Self::Avx512;
            }
            if std::is_x86_feature_detected!("avx2") {
                return Self::Avx2;
            }
        }
        Self::Portable
    }

    /// Every build this CPU runs.
    #[cfg(test)]
    pub(crate) fn available() -> std::vec::Vec<Self> {
        #[allow(unused_mut)] // Without `std` or off x86-64: only `Portable`.
        let mut all = std::vec![Self::Portable];
        #[cfg(all(feature = "std", target_arch = "x86_64"))]
        {
            if std::is_x86_feature_detected!("avx2") {
                all.push(Self::Avx2);
            }
            if std::is_x86_feature_detected!("avx512bw") {
                all.push(Self::Avx512);
            }
            if vnni() {
                all.push(Self::Avx512Vnni);
            }
        }
        all
    }
}

/// Whether the CPU runs [`x86::conv_vnni`].
#[cfg(all(feature = "std", target_arch = "x86_64"))]
fn vnni() -> bool {
    std::is_x86_feature_detected!("avx512bw")
        && std::is_x86_feature_detected!("avx512vl")
        && std::is_x86_feature_detected!("avx512vnni")
}

/// Whether the operands are this module's: the shapes valid for `kind`
/// ([`OpDesc::validate`]), each slice as long as its shape (so the
/// reference would accept them up to the block), and none empty.
fn checked(
    kind: OpKind,
    inputs: [(usize, Shape); 3],
    (out_len, out_shape): (usize, Shape),
) -> bool {
    let desc = |d: DType, shape| TensorDesc::new(DeviceAddr(0), d, shape);
    let descs = [
        desc(DType::I8, inputs[0].1),
        desc(DType::I8, inputs[1].1),
        desc(DType::I32, inputs[2].1),
    ];
    let op = OpDesc {
        kind,
        inputs: &descs,
        output: desc(DType::I8, out_shape),
        op_id: 0,
    };
    let fits = |len: usize, shape: Shape| {
        shape
            .elements()
            .and_then(|n| usize::try_from(n).ok())
            .is_some_and(|n| n == len)
    };
    // The reference refuses some empty operands (a depthwise filter
    // without channels, a `MatMulInt8` without depth) after the block: it
    // keeps every empty case.
    op.validate().is_ok()
        && inputs.iter().all(|&(len, shape)| fits(len, shape))
        && fits(out_len, out_shape)
        && inputs[..2].iter().all(|&(len, _)| len > 0)
        && out_len > 0
}

/// A validated shape's dims (its elements fit `usize`, so each does).
fn dims(shape: &Shape) -> [usize; 4] {
    let mut d = [0usize; 4];
    for (slot, &v) in d.iter_mut().zip(shape.dims()) {
        *slot = v as usize;
    }
    d
}

/// `Conv2DInt8` on an HWIO filter.
fn conv(isa: Isa, g: &Geometry, x: &[i8], filter: &[i8], q: &Quant<'_>, out: &mut [i8]) {
    match isa {
        // SAFETY (all): an `Isa` other than `Portable` is one the CPU has.
        #[cfg(all(feature = "std", target_arch = "x86_64"))]
        Isa::Avx512Vnni => unsafe { x86::conv_vnni(g, x, filter, q, out) },
        #[cfg(all(feature = "std", target_arch = "x86_64"))]
        Isa::Avx512 => unsafe { x86::conv_avx512(g, x, filter, q, out) },
        #[cfg(all(feature = "std", target_arch = "x86_64"))]
        Isa::Avx2 => unsafe { x86::conv_avx2(g, x, filter, q, out) },
        Isa::Portable => conv_body(g, x, filter, q, out),
    }
}

/// `DepthwiseConv2DInt8`: output channel `ic · multiplier + j` is input
/// channel `ic` by filter column `ic · multiplier + j` (`[kh, kw, c, m]`).
fn depthwise(
    isa: Isa,
    g: &Geometry,
    multiplier: usize,
    x: &[i8],
    filter: &[i8],
    q: &Quant<'_>,
    out: &mut [i8],
) {
    match isa {
        // SAFETY (both): an `Isa` other than `Portable` is one the CPU has.
        #[cfg(all(feature = "std", target_arch = "x86_64"))]
        Isa::Avx512 | Isa::Avx512Vnni => unsafe {
            x86::depthwise_avx512(g, multiplier, x, filter, q, out)
        },
        #[cfg(all(feature = "std", target_arch = "x86_64"))]
        Isa::Avx2 => unsafe { x86::depthwise_avx2(g, multiplier, x, filter, q, out) },
        Isa::Portable => depthwise_body(g, multiplier, x, filter, q, out),
    }
}

/// `MatMulInt8` with `transpose_b`: `out[r][j] = Σ_d (a[r][d] − zp) ·
/// b[j][d] + bias[j]`, requantized; `a` `[m, k]`, `b` `[n, k]`.
#[allow(clippy::too_many_arguments)]
fn dot(isa: Isa, m: usize, n: usize, k: usize, a: &[i8], b: &[i8], q: &Quant<'_>, out: &mut [i8]) {
    match isa {
        // SAFETY (both): an `Isa` other than `Portable` is one the CPU has.
        #[cfg(all(feature = "std", target_arch = "x86_64"))]
        Isa::Avx512 | Isa::Avx512Vnni => unsafe { x86::dot_avx512(m, n, k, a, b, q, out) },
        #[cfg(all(feature = "std", target_arch = "x86_64"))]
        Isa::Avx2 => unsafe { x86::dot_avx2(m, n, k, a, b, q, out) },
        Isa::Portable => dot_body(m, n, k, a, b, q, out),
    }
}

mod body;
/// The same bodies compiled for AVX2 and for AVX-512BW, and a convolution
/// written for AVX-512 VNNI.
#[cfg(all(feature = "std", target_arch = "x86_64"))]
mod x86;
