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
//! (`Int8Layer::output`): the output channel's [`Requantize::apply`] in the
//! block's rounding, plus the output zero point, clamped.
//!
//! How it is faster than the reference: the valid taps of an output pixel
//! are one rectangle (computed once per run of pixels, no per-tap bounds
//! test), `x − zp` is formed once per input value and multiplied into a
//! block of [`LANES`] output channels kept in registers (the HWIO filter's
//! output channels are contiguous, so that loop vectorizes; `x − zp` and `w`
//! fit `i16`), and up to [`PIXELS`] neighbouring output pixels with the same
//! taps share each filter load. On x86-64 hosts (feature `std`) the same
//! code is also compiled for AVX2 and AVX-512BW, and the convolution has an
//! AVX-512 VNNI version (`x86`), picked at run time ([`Isa`]).
//!
//! `no_std`, no allocation: the accumulators are stack arrays of `PIXELS ×
//! LANES` `i32` (the VNNI version, host only, also keeps the filter
//! interleaved in a 32 KiB stack array).

use core::ops::Range;
use tensorplug_core::accelerator::{DType, DeviceAddr, OpDesc, OpKind, Shape, TensorDesc, Window};
use tensorplug_core::quant::block::PerChannel;
use tensorplug_core::quant::{Requantize, Rounding};
use tensorplug_core::reference::int8::{Data, DataMut};
use tensorplug_core::reference::{self, Error};

/// Output channels accumulated together (one AVX-512 register of `i32`).
const LANES: usize = 16;
/// Neighbouring output pixels accumulated together (sharing filter loads).
const PIXELS: usize = if cfg!(feature = "std") { 4 } else { 1 };

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

/// A convolution's or `MatMulInt8`'s quantization, from its block.
struct Quant<'a> {
    input_zero_point: i16,
    output_zero_point: i32,
    min: i32,
    max: i32,
    rounding: Rounding,
    bias: &'a [i32],
    multipliers: &'a [i32],
    shifts: &'a [i32],
}

impl<'a> Quant<'a> {
    /// The block for `channels` output channels, checked as the reference
    /// checks it ([`PerChannel::parse`]).
    fn parse(block: &'a [i32], channels: usize) -> Result<Self, Error> {
        let p = PerChannel::parse(block, channels).map_err(Error::Quant)?;
        Ok(Self {
            // A checked zero point is in [-128, 127].
            input_zero_point: p.header.zero_points[0] as i16,
            output_zero_point: p.header.output_zero_point,
            min: p.header.min,
            max: p.header.max,
            rounding: p.header.rounding,
            bias: p.bias,
            multipliers: p.multipliers,
            shifts: p.shifts,
        })
    }

    /// Output channels `first..first + acc.len()` from their accumulators
    /// (bias included), as `Int8Layer::output`.
    #[inline(always)]
    fn output(&self, first: usize, acc: &[i32], out: &mut [i8]) {
        // One loop per rounding, so `apply` is specialised inside it.
        match self.rounding {
            Rounding::Double => self.output_as(Rounding::Double, first, acc, out),
            Rounding::Single => self.output_as(Rounding::Single, first, acc, out),
        }
    }

    #[inline(always)]
    fn output_as(&self, rounding: Rounding, first: usize, acc: &[i32], out: &mut [i8]) {
        let n = acc.len();
        let (m, s) = (&self.multipliers[first..][..n], &self.shifts[first..][..n]);
        for (((o, &a), &multiplier), &shift) in out[..n].iter_mut().zip(acc).zip(m).zip(s) {
            let r = Requantize {
                multiplier,
                shift: shift as i8,
            };
            let v = r.apply(a, rounding).wrapping_add(self.output_zero_point);
            *o = v.clamp(self.min, self.max) as i8;
        }
    }

    /// `x − input_zero_point`, in `[−255, 255]`.
    #[inline(always)]
    fn centre(&self, x: i8) -> i32 {
        i32::from(i16::from(x) - self.input_zero_point)
    }
}

/// A convolution's geometry, NHWC, in elements.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    n: usize,
    h: usize,
    w: usize,
    c: usize,
    kh: usize,
    kw: usize,
    oh: usize,
    ow: usize,
    /// Output channels.
    oc: usize,
    stride: [usize; 2],
    dilation: [usize; 2],
    /// Padding before the rows, before the columns.
    pad: [usize; 2],
}

impl Geometry {
    fn new(w: &Window, [n, h, wd, c]: [usize; 4], f: [usize; 4], o: [usize; 4]) -> Self {
        Self {
            n,
            h,
            w: wd,
            c,
            kh: f[0],
            kw: f[1],
            oh: o[1],
            ow: o[2],
            oc: o[3],
            stride: w.stride.map(usize::from),
            dilation: w.dilation.map(usize::from),
            pad: [usize::from(w.pad[0]), usize::from(w.pad[2])],
        }
    }

    /// `[m, k] · [k, n]` as a 1×1 convolution.
    fn pointwise(m: usize, k: usize, n: usize) -> Self {
        Self {
            n: 1,
            h: 1,
            w: m,
            c: k,
            kh: 1,
            kw: 1,
            oh: 1,
            ow: m,
            oc: n,
            stride: [1, 1],
            dilation: [1, 1],
            pad: [0, 0],
        }
    }

    /// The filter rows (`axis` 0) or columns (1) whose input position for
    /// output row or column `o` is inside the input: `o·stride + f·dilation
    /// − pad` in `0..extent`. Increasing in `f`, so a range.
    #[inline(always)]
    fn taps(&self, axis: usize, o: usize) -> Range<usize> {
        let (size, extent) = [(self.kh, self.h), (self.kw, self.w)][axis];
        let (d, pad, start) = (self.dilation[axis], self.pad[axis], o * self.stride[axis]);
        let (lo, hi) = (
            pad.saturating_sub(start),
            (extent + pad).saturating_sub(start),
        );
        // Most windows are undilated: no division then.
        let (lo, hi) = match d {
            1 => (lo, hi),
            d => (lo.div_ceil(d), hi.div_ceil(d)),
        };
        let (lo, hi) = (lo.min(size), hi.min(size));
        lo..hi.max(lo)
    }

    /// The input row (`axis` 0) or column of output `o`'s tap `f`, which
    /// [`Self::taps`] gave.
    #[inline(always)]
    fn source(&self, axis: usize, o: usize, f: usize) -> usize {
        o * self.stride[axis] + f * self.dilation[axis] - self.pad[axis]
    }

    /// The output in runs of up to `max` neighbouring pixels of one row
    /// with the same valid taps, in order.
    #[inline(always)]
    fn runs(&self, max: usize) -> Runs<'_> {
        Runs {
            g: self,
            max,
            b: 0,
            oy: 0,
            ox: 0,
            rows: self.taps(0, 0),
        }
    }
}

/// Output pixels `(b, oy, ox + p)`, `p < pixels`, whose valid taps are
/// `rows × cols`.
#[derive(Clone, Debug)]
struct Run {
    b: usize,
    oy: usize,
    ox: usize,
    pixels: usize,
    rows: Range<usize>,
    cols: Range<usize>,
}

impl Run {
    /// Index of its first pixel in the output.
    #[inline(always)]
    fn pixel(&self, g: &Geometry) -> usize {
        (self.b * g.oh + self.oy) * g.ow + self.ox
    }
}

/// [`Geometry::runs`]: a plain iterator (no closure), so the bodies compile
/// whole for each instruction set.
struct Runs<'g> {
    g: &'g Geometry,
    max: usize,
    b: usize,
    oy: usize,
    ox: usize,
    rows: Range<usize>,
}

impl Iterator for Runs<'_> {
    type Item = Run;

    #[inline(always)]
    fn next(&mut self) -> Option<Run> {
        let g = self.g;
        if self.ox == g.ow {
            self.ox = 0;
            self.oy += 1;
            if self.oy == g.oh {
                self.oy = 0;
                self.b += 1;
            }
            self.rows = g.taps(0, self.oy);
        }
        if self.b >= g.n || g.ow == 0 || g.oh == 0 {
            return None;
        }
        let cols = g.taps(1, self.ox);
        let mut pixels = 1;
        while pixels < self.max && self.ox + pixels < g.ow && g.taps(1, self.ox + pixels) == cols {
            pixels += 1;
        }
        let run = Run {
            b: self.b,
            oy: self.oy,
            ox: self.ox,
            pixels,
            rows: self.rows.clone(),
            cols,
        };
        self.ox += pixels;
        Some(run)
    }
}

/// Output channels `first..first + n` (`n ≤ LANES`) of filter row `row`
/// (its `oc` channels), as `i16`, zero past `n`.
#[inline(always)]
fn weights<const FULL: bool>(row: &[i8], first: usize, n: usize) -> [i16; LANES] {
    if FULL {
        let w: &[i8; LANES] = row[first..][..LANES].try_into().unwrap_or(&[0; LANES]);
        w.map(i16::from)
    } else {
        let mut w = [0i16; LANES];
        for (d, &s) in w.iter_mut().zip(&row[first..][..n]) {
            *d = i16::from(s);
        }
        w
    }
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

#[inline(always)]
fn conv_body(g: &Geometry, x: &[i8], filter: &[i8], q: &Quant<'_>, out: &mut [i8]) {
    if g.oc == 0 {
        return;
    }
    for run in g.runs(PIXELS) {
        let out = &mut out[run.pixel(g) * g.oc..][..run.pixels * g.oc];
        if run.pixels == PIXELS {
            conv_pixels::<PIXELS>(g, &run, x, filter, q, out);
        } else {
            for (i, out) in out.chunks_exact_mut(g.oc).enumerate() {
                let one = Run {
                    ox: run.ox + i,
                    ..run.clone()
                };
                conv_pixels::<1>(g, &one, x, filter, q, out);
            }
        }
    }
}

#[inline(always)]
fn conv_pixels<const P: usize>(
    g: &Geometry,
    at: &Run,
    x: &[i8],
    filter: &[i8],
    q: &Quant<'_>,
    out: &mut [i8],
) {
    let mut first = 0;
    while first + LANES <= g.oc {
        conv_lanes::<P, true>(g, at, x, filter, q, first, LANES, out);
        first += LANES;
    }
    if first < g.oc {
        conv_lanes::<P, false>(g, at, x, filter, q, first, g.oc - first, out);
    }
}

/// Output channels `first..first + n` of the `P` pixels of `at`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn conv_lanes<const P: usize, const FULL: bool>(
    g: &Geometry,
    at: &Run,
    x: &[i8],
    filter: &[i8],
    q: &Quant<'_>,
    first: usize,
    n: usize,
    out: &mut [i8],
) {
    let (c, oc) = (g.c, g.oc);
    let mut acc = [[0i32; LANES]; P];
    for a in acc.iter_mut() {
        a[..n].copy_from_slice(&q.bias[first..][..n]);
    }
    for fy in at.rows.clone() {
        let row = (at.b * g.h + g.source(0, at.oy, fy)) * g.w;
        for fx in at.cols.clone() {
            let col = g.source(1, at.ox, fx);
            let xs: [&[i8]; P] =
                core::array::from_fn(|p| &x[(row + col + p * g.stride[1]) * c..][..c]);
            let taps = &filter[(fy * g.kw + fx) * c * oc..][..c * oc];
            for (ci, w_row) in taps.chunks_exact(oc).enumerate() {
                let w = weights::<FULL>(w_row, first, n);
                for (a, xs) in acc.iter_mut().zip(&xs) {
                    let v = q.centre(xs[ci]);
                    for (a, &w) in a.iter_mut().zip(&w) {
                        *a = a.wrapping_add(v * i32::from(w));
                    }
                }
            }
        }
    }
    for (p, a) in acc.iter().enumerate() {
        q.output(first, &a[..n], &mut out[p * oc + first..][..n]);
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

#[inline(always)]
fn depthwise_body(
    g: &Geometry,
    multiplier: usize,
    x: &[i8],
    filter: &[i8],
    q: &Quant<'_>,
    out: &mut [i8],
) {
    let (c, oc) = (g.c, g.oc);
    if oc == 0 || multiplier == 0 {
        return;
    }
    for run in g.runs(PIXELS) {
        let (b, oy) = (run.b, run.oy);
        for ox in run.ox..run.ox + run.pixels {
            let pixel = (b * g.oh + oy) * g.ow + ox;
            let out = &mut out[pixel * oc..][..oc];
            let mut first = 0;
            while first < oc {
                let n = LANES.min(oc - first);
                let mut acc = [0i32; LANES];
                acc[..n].copy_from_slice(&q.bias[first..][..n]);
                for fy in run.rows.clone() {
                    let row = (b * g.h + g.source(0, oy, fy)) * g.w;
                    for fx in run.cols.clone() {
                        let xs = &x[(row + g.source(1, ox, fx)) * c..][..c];
                        let taps = &filter[(fy * g.kw + fx) * oc + first..][..n];
                        if multiplier == 1 {
                            let xs = &xs[first..][..n];
                            for ((a, &w), &v) in acc.iter_mut().zip(taps).zip(xs) {
                                *a = a.wrapping_add(q.centre(v) * i32::from(w));
                            }
                        } else {
                            for (i, (a, &w)) in acc.iter_mut().zip(taps).enumerate() {
                                let v = q.centre(xs[(first + i) / multiplier]);
                                *a = a.wrapping_add(v * i32::from(w));
                            }
                        }
                    }
                }
                q.output(first, &acc[..n], &mut out[first..][..n]);
                first += n;
            }
        }
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

#[inline(always)]
fn dot_body(m: usize, n: usize, k: usize, a: &[i8], b: &[i8], q: &Quant<'_>, out: &mut [i8]) {
    if n == 0 {
        return;
    }
    for (r, out) in out.chunks_exact_mut(n).enumerate().take(m) {
        let xs = &a[r * k..][..k];
        for (j, o) in out.iter_mut().enumerate() {
            let ws = &b[j * k..][..k];
            let mut acc = q.bias[j];
            for (&v, &w) in xs.iter().zip(ws) {
                acc = acc.wrapping_add(q.centre(v) * i32::from(w));
            }
            q.output(j, &[acc], core::slice::from_mut(o));
        }
    }
}

/// The same bodies compiled for AVX2 and for AVX-512BW, and a convolution
/// written for AVX-512 VNNI.
#[cfg(all(feature = "std", target_arch = "x86_64"))]
mod x86;
