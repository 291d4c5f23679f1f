//! The portable bodies of the int8 kernels and what they share
//! ([`Quant`], [`Geometry`], runs of pixels). A leaf: `int8.rs` dispatches
//! to these or to their `x86` builds, which compile the same bodies.

use core::ops::Range;
use tensorplug_core::accelerator::Window;
use tensorplug_core::quant::block::PerChannel;
use tensorplug_core::quant::{Requantize, Rounding};
use tensorplug_core::reference::Error;

/// Output channels accumulated together (one AVX-512 register of `i32`).
pub(super) const LANES: usize = 16;
/// Neighbouring output pixels accumulated together (sharing filter loads).
pub(super) const PIXELS: usize = if cfg!(feature = "std") { 4 } else { 1 };

/// A convolution's or `MatMulInt8`'s quantization, from its block.
pub(super) struct Quant<'a> {
    pub(super) input_zero_point: i16,
    pub(super) output_zero_point: i32,
    pub(super) min: i32,
    pub(super) max: i32,
    pub(super) rounding: Rounding,
    pub(super) bias: &'a [i32],
    pub(super) multipliers: &'a [i32],
    pub(super) shifts: &'a [i32],
}

impl<'a> Quant<'a> {
    /// The block for `channels` output channels, checked as the reference
    /// checks it ([`PerChannel::parse`]).
    pub(super) fn parse(block: &'a [i32], channels: usize) -> Result<Self, Error> {
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
    pub(super) fn output(&self, first: usize, acc: &[i32], out: &mut [i8]) {
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
    pub(super) fn centre(&self, x: i8) -> i32 {
        i32::from(i16::from(x) - self.input_zero_point)
    }
}

/// A convolution's geometry, NHWC, in elements.
#[derive(Clone, Copy, Debug)]
pub(super) struct Geometry {
    pub(super) n: usize,
    pub(super) h: usize,
    pub(super) w: usize,
    pub(super) c: usize,
    pub(super) kh: usize,
    pub(super) kw: usize,
    pub(super) oh: usize,
    pub(super) ow: usize,
    /// Output channels.
    pub(super) oc: usize,
    pub(super) stride: [usize; 2],
    pub(super) dilation: [usize; 2],
    /// Padding before the rows, before the columns.
    pub(super) pad: [usize; 2],
}

impl Geometry {
    pub(super) fn new(w: &Window, [n, h, wd, c]: [usize; 4], f: [usize; 4], o: [usize; 4]) -> Self {
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
    pub(super) fn pointwise(m: usize, k: usize, n: usize) -> Self {
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
    pub(super) fn taps(&self, axis: usize, o: usize) -> Range<usize> {
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
    pub(super) fn source(&self, axis: usize, o: usize, f: usize) -> usize {
        o * self.stride[axis] + f * self.dilation[axis] - self.pad[axis]
    }

    /// The output in runs of up to `max` neighbouring pixels of one row
    /// with the same valid taps, in order.
    #[inline(always)]
    pub(super) fn runs(&self, max: usize) -> Runs<'_> {
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
pub(super) struct Run {
    pub(super) b: usize,
    pub(super) oy: usize,
    pub(super) ox: usize,
    pub(super) pixels: usize,
    pub(super) rows: Range<usize>,
    pub(super) cols: Range<usize>,
}

impl Run {
    /// Index of its first pixel in the output.
    #[inline(always)]
    pub(super) fn pixel(&self, g: &Geometry) -> usize {
        (self.b * g.oh + self.oy) * g.ow + self.ox
    }
}

/// [`Geometry::runs`]: a plain iterator (no closure), so the bodies compile
/// whole for each instruction set.
pub(super) struct Runs<'g> {
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
pub(super) fn weights<const FULL: bool>(row: &[i8], first: usize, n: usize) -> [i16; LANES] {
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

#[inline(always)]
pub(super) fn conv_body(g: &Geometry, x: &[i8], filter: &[i8], q: &Quant<'_>, out: &mut [i8]) {
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
pub(super) fn conv_pixels<const P: usize>(
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
pub(super) fn conv_lanes<const P: usize, const FULL: bool>(
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

#[inline(always)]
pub(super) fn depthwise_body(
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

#[inline(always)]
pub(super) fn dot_body(
    m: usize,
    n: usize,
    k: usize,
    a: &[i8],
    b: &[i8],
    q: &Quant<'_>,
    out: &mut [i8],
) {
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
