//! x86-64 builds of the int8 kernels, picked at run time (`Isa`):
//! the portable bodies compiled with AVX2 and with AVX-512BW, and
//! `Conv2DInt8` written for AVX-512 VNNI.
//!
//! The VNNI convolution multiplies pairs of input channels at once:
//! `vpdpwssd` adds `a₀·b₀ + a₁·b₁` (`i16` products) to each `i32` lane,
//! wrapping as `i32::wrapping_add` does. Lane `o` of the filter operand
//! holds `(w[ci][o], w[ci + 1][o])`, interleaved from two HWIO rows; the
//! input operand is the pair `(x[ci] − zp, x[ci + 1] − zp)` broadcast to
//! every lane (each in `[−255, 255]`). A missing last channel of an odd
//! count is a zero input. Up to `VNNI_PIXELS` output pixels share each
//! interleaved filter pair.

use super::{Geometry, LANES, Quant, Run, conv_body, depthwise_body, dot_body};
use core::arch::x86_64::{
    __m128i, __m512i, _mm_maskz_loadu_epi8, _mm256_cvtepi8_epi16, _mm256_maskz_loadu_epi8,
    _mm512_castsi256_si512, _mm512_cvtepi8_epi16, _mm512_dpwssd_epi32, _mm512_loadu_si512,
    _mm512_maskz_sub_epi16, _mm512_permutex2var_epi16, _mm512_set1_epi16, _mm512_set1_epi32,
    _mm512_setzero_si512, _mm512_storeu_si512,
};

#[target_feature(enable = "avx2")]
pub(super) fn conv_avx2(g: &Geometry, x: &[i8], f: &[i8], q: &Quant<'_>, out: &mut [i8]) {
    conv_body(g, x, f, q, out);
}
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn conv_avx512(g: &Geometry, x: &[i8], f: &[i8], q: &Quant<'_>, out: &mut [i8]) {
    conv_body(g, x, f, q, out);
}
#[target_feature(enable = "avx2")]
pub(super) fn depthwise_avx2(
    g: &Geometry,
    multiplier: usize,
    x: &[i8],
    f: &[i8],
    q: &Quant<'_>,
    out: &mut [i8],
) {
    depthwise_body(g, multiplier, x, f, q, out);
}
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn depthwise_avx512(
    g: &Geometry,
    multiplier: usize,
    x: &[i8],
    f: &[i8],
    q: &Quant<'_>,
    out: &mut [i8],
) {
    depthwise_body(g, multiplier, x, f, q, out);
}
#[target_feature(enable = "avx2")]
pub(super) fn dot_avx2(
    m: usize,
    n: usize,
    k: usize,
    a: &[i8],
    b: &[i8],
    q: &Quant<'_>,
    out: &mut [i8],
) {
    dot_body(m, n, k, a, b, q, out);
}
#[target_feature(enable = "avx512f,avx512bw")]
pub(super) fn dot_avx512(
    m: usize,
    n: usize,
    k: usize,
    a: &[i8],
    b: &[i8],
    q: &Quant<'_>,
    out: &mut [i8],
) {
    dot_body(m, n, k, a, b, q, out);
}

/// Output pixels sharing each filter pair (their accumulators, one register
/// each, plus the filter pair fit the 32 registers).
const VNNI_PIXELS: usize = 8;
/// Input channels centred per step: one register of `i16`.
const CHANNELS: usize = 32;
/// Interleaved filter pairs of one block of [`LANES`] output channels the
/// VNNI convolution keeps (on the stack, 64 bytes each: 32 KiB): `kh · kw ·
/// ⌈c / 2⌉` up to this; a larger filter runs [`conv_avx512`].
const PACKED: usize = 512;

/// `Conv2DInt8` with AVX-512 VNNI (and BW, VL for the masked loads).
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
pub(super) fn conv_vnni(g: &Geometry, x: &[i8], filter: &[i8], q: &Quant<'_>, out: &mut [i8]) {
    let per_tap = g.c.div_ceil(2);
    let pairs = g.kh * g.kw * per_tap;
    if pairs > PACKED {
        return conv_body(g, x, filter, q, out);
    }
    let mut packed = [_mm512_setzero_si512(); PACKED];
    let packed = &mut packed[..pairs];
    let mut first = 0;
    while first < g.oc {
        let n = LANES.min(g.oc - first);
        pack(g, filter, first, n, packed);
        for run in g.runs(VNNI_PIXELS) {
            let out = &mut out[run.pixel(g) * g.oc..][..run.pixels * g.oc];
            // The run in blocks of 8, 4, 2 and 1 pixels.
            let mut done = 0;
            while done < run.pixels {
                let at = Run {
                    ox: run.ox + done,
                    ..run.clone()
                };
                let block = Block {
                    g,
                    at: &at,
                    packed,
                    first,
                    n,
                };
                let out = &mut out[done * g.oc..];
                done += match run.pixels - done {
                    8.. => vnni_pixels::<8>(&block, x, q, out),
                    4.. => vnni_pixels::<4>(&block, x, q, out),
                    2.. => vnni_pixels::<2>(&block, x, q, out),
                    _ => vnni_pixels::<1>(&block, x, q, out),
                };
            }
        }
        first += n;
    }
}

/// The first `s.len() ≤ 16` bytes of `s`, zero after.
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn load16(s: &[i8]) -> __m128i {
    let mask = ((1u32 << s.len().min(16)) - 1) as u16;
    // SAFETY: the mask enables only the first `s.len()` bytes, all in `s`;
    // masked-off bytes are not read (they cannot fault).
    unsafe { _mm_maskz_loadu_epi8(mask, s.as_ptr()) }
}

/// Output channels `first..first + n` of the HWIO filter as interleaved
/// `i16` pairs: entry `tap · ⌈c / 2⌉ + j` holds, in lane `o`,
/// `(w[tap][2j][o], w[tap][2j + 1][o])` (0 for a channel past `c` or `n`).
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn pack(g: &Geometry, filter: &[i8], first: usize, n: usize, packed: &mut [__m512i]) {
    let (c, oc) = (g.c, g.oc);
    // Element 2o of a pair is a[o] (index o), element 2o + 1 is b[o]
    // (index 32 + o).
    let order: [i16; 32] = core::array::from_fn(|e| (e / 2 + 32 * (e % 2)) as i16);
    // SAFETY: `order` holds 64 bytes.
    let order = unsafe { _mm512_loadu_si512(order.as_ptr().cast()) };
    let row = |tap: usize, ci: usize| match ci < c {
        true => &filter[(tap * c + ci) * oc + first..][..n],
        false => &[],
    };
    let per_tap = c.div_ceil(2);
    for (i, slot) in packed.iter_mut().enumerate() {
        let (tap, ci) = (i / per_tap, i % per_tap * 2);
        let a = _mm512_castsi256_si512(_mm256_cvtepi8_epi16(load16(row(tap, ci))));
        let b = _mm512_castsi256_si512(_mm256_cvtepi8_epi16(load16(row(tap, ci + 1))));
        *slot = _mm512_permutex2var_epi16(a, order, b);
    }
}

/// One block of output channels, packed, for the pixels of `at`.
struct Block<'a> {
    g: &'a Geometry,
    at: &'a Run,
    packed: &'a [__m512i],
    first: usize,
    n: usize,
}

/// Output channels `first..first + n` of the `P` pixels of `b.at`.
/// Returns `P`.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
fn vnni_pixels<const P: usize>(b: &Block<'_>, x: &[i8], q: &Quant<'_>, out: &mut [i8]) -> usize {
    let (g, at, first, n) = (b.g, b.at, b.first, b.n);
    let (c, oc) = (g.c, g.oc);
    let per_tap = c.div_ceil(2);
    let zp = _mm512_set1_epi16(q.input_zero_point);
    let mut acc = [_mm512_setzero_si512(); P];
    for fy in at.rows.clone() {
        let row = (at.b * g.h + g.source(0, at.oy, fy)) * g.w;
        for fx in at.cols.clone() {
            let col = g.source(1, at.ox, fx);
            let tap = &b.packed[(fy * g.kw + fx) * per_tap..][..per_tap];
            let mut ci0 = 0;
            while ci0 < c {
                let count = CHANNELS.min(c - ci0);
                // `x − zp` of each pixel's channels `ci0..ci0 + count` as
                // `i16`, zero past `count`: 16 pairs.
                let mut centred = [[0i32; 16]; P];
                let mask = (u64::MAX >> (64 - count)) as u32;
                for (p, centred) in centred.iter_mut().enumerate() {
                    let xs = &x[(row + col + p * g.stride[1]) * c + ci0..][..count];
                    // SAFETY: the mask enables the first `count` bytes, all
                    // in `xs`; masked-off bytes are not read.
                    let v = unsafe { _mm256_maskz_loadu_epi8(mask, xs.as_ptr()) };
                    let v = _mm512_maskz_sub_epi16(mask, _mm512_cvtepi8_epi16(v), zp);
                    // SAFETY: `centred` holds 64 bytes.
                    unsafe { _mm512_storeu_si512(centred.as_mut_ptr().cast(), v) };
                }
                for (j, &w) in tap[ci0 / 2..][..count.div_ceil(2)].iter().enumerate() {
                    for (acc, centred) in acc.iter_mut().zip(&centred) {
                        *acc = _mm512_dpwssd_epi32(*acc, _mm512_set1_epi32(centred[j]), w);
                    }
                }
                ci0 += count;
            }
        }
    }
    for (p, acc) in acc.iter().enumerate() {
        let mut sums = [0i32; LANES];
        // SAFETY: `sums` holds 64 bytes.
        unsafe { _mm512_storeu_si512(sums.as_mut_ptr().cast(), *acc) };
        for (s, &b) in sums.iter_mut().zip(&q.bias[first..][..n]) {
            *s = s.wrapping_add(b);
        }
        q.output(first, &sums[..n], &mut out[p * oc + first..][..n]);
    }
    P
}
