//! Gradients of the window kernels. Each walks the forward op's output
//! pixels in order (`n`, `oh`, `ow`) and scatters into its result, so
//! `MaxPoolGrad` adds in the order of TF's CPU kernel. Plain loops and
//! closures, no iterator adapters: on the MCU the code stays the model's.

use super::window_spec::WindowSpec;

/// Calls `f(p, [n, oh, ow])` for each forward output pixel `p`, in order.
fn for_each_pixel(spec: &WindowSpec, mut f: impl FnMut(usize, [usize; 3])) {
    let [oh_n, ow_n] = spec.out;
    for p in 0..spec.n * oh_n * ow_n {
        f(p, [p / (oh_n * ow_n), p / ow_n % oh_n, p % ow_n]);
    }
}

/// Calls `f(tap, ih, iw)` for each in-bounds tap of pixel `[_, oh, ow]`.
fn for_each_tap(
    spec: &WindowSpec,
    [_, oh, ow]: [usize; 3],
    mut f: impl FnMut(usize, usize, usize),
) {
    let [kh, kw] = spec.size;
    for a in 0..kh {
        let Some(ih) = spec.source(0, oh, a) else {
            continue;
        };
        for b in 0..kw {
            if let Some(iw) = spec.source(1, ow, b) {
                f(a * kw + b, ih, iw);
            }
        }
    }
}

/// The first element of input pixel `[n, ih, iw]` in an NHWC tensor.
fn at(spec: &WindowSpec, n: usize, ih: usize, iw: usize) -> usize {
    let [h, w, c] = spec.hwc;
    ((n * h + ih) * w + iw) * c
}

/// `dx[pixel + tap] += filter[tap] · dy[pixel]` (a dot product over `k` per channel).
pub(super) fn conv_backprop_input(spec: &WindowSpec, dy: &[f32], filter: &[f32], dx: &mut [f32]) {
    let (c, k) = (spec.hwc[2], spec.k);
    dx.fill(0.0);
    for_each_pixel(spec, |p, pixel| {
        let g = &dy[p * k..][..k];
        for_each_tap(spec, pixel, |tap, ih, iw| {
            let row = &mut dx[at(spec, pixel[0], ih, iw)..][..c];
            for (ch, o) in row.iter_mut().enumerate() {
                let f = &filter[(tap * c + ch) * k..][..k];
                let mut sum = 0.0;
                for (&a, &b) in g.iter().zip(f) {
                    sum += a * b;
                }
                *o += sum;
            }
        });
    });
}

/// `df[tap] += x[pixel + tap]ᵀ · dy[pixel]` (an outer product `c × k`).
pub(super) fn conv_backprop_filter(spec: &WindowSpec, x: &[f32], dy: &[f32], df: &mut [f32]) {
    let (c, k) = (spec.hwc[2], spec.k);
    df.fill(0.0);
    for_each_pixel(spec, |p, pixel| {
        let g = &dy[p * k..][..k];
        for_each_tap(spec, pixel, |tap, ih, iw| {
            let x_row = &x[at(spec, pixel[0], ih, iw)..][..c];
            for (ch, &v) in x_row.iter().enumerate() {
                for (o, &gj) in df[(tap * c + ch) * k..][..k].iter_mut().zip(g) {
                    *o += v * gj;
                }
            }
        });
    });
}

/// Each `dy` to its window's first in-bounds tap, or a later one greater
/// than every tap before it (a NaN first tap keeps it; later NaNs never win).
/// Channels are taken 16 at a time, each tap once for all of them
/// (the same choice per channel as one channel at a time).
pub(super) fn max_pool_grad(spec: &WindowSpec, x: &[f32], dy: &[f32], dx: &mut [f32]) {
    const BLOCK: usize = 16;
    let c = spec.hwc[2];
    dx.fill(0.0);
    for_each_pixel(spec, |p, pixel| {
        for first in (0..c).step_by(BLOCK) {
            let width = BLOCK.min(c - first);
            // Each channel's winning tap (its input pixel) and value.
            let mut best_at = [0usize; BLOCK];
            let mut best = [0.0f32; BLOCK];
            let mut any = false;
            for_each_tap(spec, pixel, |_, ih, iw| {
                let base = at(spec, pixel[0], ih, iw) + first;
                for ch in 0..width {
                    let v = x[base + ch];
                    if !any || best[ch] < v {
                        best[ch] = v;
                        best_at[ch] = base + ch;
                    }
                }
                any = true;
            });
            if any {
                for ch in 0..width {
                    dx[best_at[ch]] += dy[p * c + first + ch];
                }
            }
        }
    });
}

/// Each `dy · (1 / taps)` (TF's CPU kernel multiplies by the reciprocal)
/// added to its window's in-bounds taps.
pub(super) fn avg_pool_grad(spec: &WindowSpec, dy: &[f32], dx: &mut [f32]) {
    let c = spec.hwc[2];
    dx.fill(0.0);
    for_each_pixel(spec, |p, pixel| {
        let mut taps = 0u32;
        for_each_tap(spec, pixel, |_, _, _| taps += 1);
        let scale = 1.0 / taps.max(1) as f32;
        let g = &dy[p * c..][..c];
        for_each_tap(spec, pixel, |_, ih, iw| {
            for (o, &v) in dx[at(spec, pixel[0], ih, iw)..][..c].iter_mut().zip(g) {
                *o += v * scale;
            }
        });
    });
}
