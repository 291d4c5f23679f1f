//! `Conv` on the host build (`std`): GEMMs through `matrixmultiply` or the
//! `gemm` crate instead of the portable loop of [`super::window`].

use super::error::KernelError;
use super::gemm::host::{Strided, gemm_accumulate, gemm_strided};
use super::window_spec::WindowSpec;

/// The host `Conv`: [`conv_wide`] for stride 1 without dilation (not 1×1),
/// else [`conv_by_rows`].
pub(super) fn conv(
    spec: &WindowSpec,
    x: &[f32],
    filter: &[f32],
    out: &mut [f32],
) -> Result<(), KernelError> {
    if spec.stride == [1, 1] && spec.dilation == [1, 1] && spec.size != [1, 1] {
        conv_wide(spec, x, filter, out)
    } else {
        conv_by_rows(spec, x, filter, out)
    }
}

/// `Conv` with stride 1 and no dilation on the host path, as one GEMM per
/// filter row over the whole image, with no im2col copy:
///
/// - the image is copied once into a zero-padded one `P` of
///   `(oh + kh - 1) × (ow + kw - 1) = hp × wp` pixels;
/// - output pixel `(o, j)` is computed at the "wide" index `q = o·wp + j`
///   (the `kw - 1` columns per row past `ow` are computed and dropped);
/// - filter row `a` reads `P`'s pixels `q + a·wp .. q + a·wp + kw`: `kw·c`
///   contiguous floats, so the `[rows, kw·c]` operand is `P` itself with a
///   row stride of `c` (overlapping rows), against the filter's `[kw·c, k]`
///   block of row `a`.
///
/// The first filter row writes the wide output, the others add to it; then
/// the valid columns are copied out. The sum order is a GEMM's, as in
/// [`conv_by_rows`].
fn conv_wide(
    spec: &WindowSpec,
    x: &[f32],
    filter: &[f32],
    out: &mut [f32],
) -> Result<(), KernelError> {
    let [h, w, c] = spec.hwc;
    let (k, [kh, kw], [oh, ow], [pt, pl]) = (spec.k, spec.size, spec.out, spec.pad);
    if spec.n == 0 || oh == 0 || ow == 0 || k == 0 || c == 0 || kh == 0 || kw == 0 {
        out.fill(0.0);
        return Ok(());
    }
    let (hp, wp) = (oh + kh - 1, ow + kw - 1);
    let rows = (oh - 1) * wp + ow;
    let at = |start, row_stride| Strided { start, row_stride };
    WIDE_SCRATCH.with(|scratch| {
        let mut scratch = scratch.borrow_mut();
        let (padded, wide) = &mut *scratch;
        padded.clear();
        padded.resize(hp * wp * c, 0.0);
        wide.resize(rows * k, 0.0);
        // The input columns that land inside the padded image.
        let cols = w.min(wp.saturating_sub(pl));
        for n in 0..spec.n {
            for ih in 0..h.min(hp.saturating_sub(pt)) {
                let src = &x[((n * h + ih) * w) * c..][..cols * c];
                padded[((ih + pt) * wp + pl) * c..][..cols * c].copy_from_slice(src);
            }
            for a in 0..kh {
                gemm_strided(
                    [rows, kw * c, k],
                    (padded, at(a * wp * c, c)),
                    (filter, at(a * kw * c * k, k)),
                    (wide, at(0, k)),
                    a > 0,
                )?;
            }
            for o in 0..oh {
                out[((n * oh + o) * ow) * k..][..ow * k]
                    .copy_from_slice(&wide[o * wp * k..][..ow * k]);
            }
        }
        Ok(())
    })
}

std::thread_local! {
    /// `conv_wide`'s padded image and wide output, kept between calls.
    static WIDE_SCRATCH: core::cell::RefCell<(std::vec::Vec<f32>, std::vec::Vec<f32>)> =
        const { core::cell::RefCell::new((std::vec::Vec::new(), std::vec::Vec::new())) };
}

/// `Conv` on the host path: for each output row and tap, one GEMM of the
/// output columns whose tap is inside the input (`[cols, c] · [c, k]`,
/// strided rows of `x`) accumulated into that output row with
/// `matrixmultiply`. The sum order differs from the portable loop (it is a
/// GEMM's); the bound of `docs/device-numerics.md` covers both.
fn conv_by_rows(
    spec: &WindowSpec,
    x: &[f32],
    filter: &[f32],
    out: &mut [f32],
) -> Result<(), KernelError> {
    let [h, w, c] = spec.hwc;
    let (k, [oh_n, ow_n]) = (spec.k, spec.out);
    let pointwise = spec.size == [1, 1] && spec.stride == [1, 1] && spec.pad == [0, 0];
    if pointwise && spec.out == [h, w] && c > 0 {
        // A 1×1 convolution is one GEMM over every pixel of the batch,
        // written without reading `out`.
        let rows = spec.n * h * w;
        let at = |row_stride| Strided {
            start: 0,
            row_stride,
        };
        return gemm_strided(
            [rows, c, k],
            (x, at(c)),
            (filter, at(k)),
            (out, at(k)),
            false,
        );
    }
    out.fill(0.0);
    for n in 0..spec.n {
        for oh in 0..oh_n {
            for a in 0..spec.size[0] {
                let Some(ih) = spec.source(0, oh, a) else {
                    continue;
                };
                for b in 0..spec.size[1] {
                    // The output columns whose input column is inside `0..w`
                    // (a contiguous range: the input column grows with them).
                    let inside = |ow: &usize| spec.source(1, *ow, b).is_some();
                    let Some(ow0) = (0..ow_n).find(inside) else {
                        continue;
                    };
                    let count = (ow0..ow_n).take_while(inside).count();
                    let iw0 = spec.source(1, ow0, b).unwrap_or(0);
                    let a_at = Strided {
                        start: ((n * h + ih) * w + iw0) * c,
                        row_stride: spec.stride[1] * c,
                    };
                    let b_at = Strided {
                        start: (a * spec.size[1] + b) * c * k,
                        row_stride: k,
                    };
                    let out_at = Strided {
                        start: ((n * oh_n + oh) * ow_n + ow0) * k,
                        row_stride: k,
                    };
                    gemm_accumulate([count, c, k], (x, a_at), (filter, b_at), (out, out_at))?;
                }
            }
        }
    }
    Ok(())
}
