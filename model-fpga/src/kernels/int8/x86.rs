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
//! interleaved filter pair. The input is centred once per call into those
//! `i32` pairs (a thread-local buffer), not once per tap.

use super::body::{Geometry, LANES, Quant, Run, conv_body, depthwise_body, dot_body};
use core::arch::x86_64::{
    __m128i, __m512i, _mm_maskz_loadu_epi8, _mm256_cvtepi8_epi16, _mm512_castsi256_si512,
    _mm512_dpwssd_epi32, _mm512_loadu_si512, _mm512_permutex2var_epi16, _mm512_set1_epi32,
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
/// Interleaved filter pairs of one block of [`LANES`] output channels the
/// VNNI convolution keeps (on the stack, 64 bytes each: 32 KiB): `kh · kw ·
/// ⌈c / 2⌉` up to this; a larger filter runs [`conv_avx512`].
const PACKED: usize = 512;

/// `Conv2DInt8` with AVX-512 VNNI (and BW, VL for the masked loads).
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
pub(super) fn conv_vnni(g: &Geometry, x: &[i8], filter: &[i8], q: &Quant<'_>, out: &mut [i8]) {
    let per_tap = g.c.div_ceil(2);
    let pairs = g.kh * g.kw * per_tap;
    if pairs > PACKED || g.c == 0 {
        return conv_body(g, x, filter, q, out);
    }
    let mut packed = [_mm512_setzero_si512(); PACKED];
    let packed = &mut packed[..pairs];
    CENTRED.with(|centred| {
        let mut centred = centred.borrow_mut();
        centre(x, g.c, q.input_zero_point, &mut centred);
        conv_blocks(g, &centred, filter, q, packed, out);
    });
}

std::thread_local! {
    /// The input of the current call, centred into channel pairs.
    static CENTRED: core::cell::RefCell<std::vec::Vec<i32>> =
        const { core::cell::RefCell::new(std::vec::Vec::new()) };
}

/// `x − zp` of each pixel's channels as `i16` pairs, one `i32` each
/// (`x[2j] − zp` low, `x[2j + 1] − zp` high, 0 past the last channel).
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn centre(x: &[i8], c: usize, zp: i16, out: &mut std::vec::Vec<i32>) {
    let per_tap = c.div_ceil(2);
    out.clear();
    out.resize(x.len() / c * per_tap, 0);
    let pair = |lo: i8, hi: Option<i8>| {
        let lo = (i16::from(lo) - zp) as u16;
        let hi = hi.map_or(0, |hi| (i16::from(hi) - zp) as u16);
        (u32::from(lo) | (u32::from(hi) << 16)) as i32
    };
    for (pixel, dst) in x.chunks_exact(c).zip(out.chunks_exact_mut(per_tap)) {
        for (d, s) in dst.iter_mut().zip(pixel.chunks_exact(2)) {
            *d = pair(s[0], Some(s[1]));
        }
        if c % 2 == 1 {
            dst[per_tap - 1] = pair(pixel[c - 1], None);
        }
    }
}

/// [`conv_vnni`] over the centred input.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
fn conv_blocks(
    g: &Geometry,
    x: &[i32],
    filter: &[i8],
    q: &Quant<'_>,
    packed: &mut [__m512i],
    out: &mut [i8],
) {
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
fn vnni_pixels<const P: usize>(b: &Block<'_>, x: &[i32], q: &Quant<'_>, out: &mut [i8]) -> usize {
    let (g, at, first, n) = (b.g, b.at, b.first, b.n);
    let oc = g.oc;
    let per_tap = g.c.div_ceil(2);
    let mut acc = [_mm512_setzero_si512(); P];
    for fy in at.rows.clone() {
        let row = (at.b * g.h + g.source(0, at.oy, fy)) * g.w;
        for fx in at.cols.clone() {
            let col = g.source(1, at.ox, fx);
            let tap = &b.packed[(fy * g.kw + fx) * per_tap..][..per_tap];
            // Each pixel's centred channel pairs.
            // (A loop, not `array::from_fn`: its closure would not be
            // inlined into this AVX-512 function.)
            let mut pixels: [&[i32]; P] = [&[]; P];
            for (p, pixel) in pixels.iter_mut().enumerate() {
                *pixel = &x[(row + col + p * g.stride[1]) * per_tap..][..per_tap];
            }
            for (j, &w) in tap.iter().enumerate() {
                for (acc, pixel) in acc.iter_mut().zip(&pixels) {
                    *acc = _mm512_dpwssd_epi32(*acc, _mm512_set1_epi32(pixel[j]), w);
                }
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
