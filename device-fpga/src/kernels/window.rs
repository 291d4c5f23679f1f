//! Sliding-window kernels over NHWC tensors: convolution, depthwise
//! convolution, max and average pooling. Each output element accumulates its
//! taps in `f32`, in window order (rows, columns, then input channels).

use super::error::{KernelError, Operand, expect_len, mul};

/// What a window kernel computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum WindowOp {
    /// Filter `[kh, kw, c, k]`; `k` output channels.
    Conv,
    /// Filter `[kh, kw, c, k]`; output channel `ch·k + j`.
    Depthwise,
    /// The largest in-bounds tap above `f32::MIN` (NaN and −∞ never win), as TF.
    MaxPool,
    /// The mean of the in-bounds taps.
    AvgPool,
}

/// The geometry of a window kernel call (all counts, see `docs/device-abi.md`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct WindowSpec {
    /// Batch.
    pub n: usize,
    /// Input height, width, channels.
    pub hwc: [usize; 3],
    /// Output channels (`Conv`), multiplier (`Depthwise`); unused by pools.
    pub k: usize,
    /// Window height and width.
    pub size: [usize; 2],
    /// Output height and width.
    pub out: [usize; 2],
    /// Strides.
    pub stride: [usize; 2],
    /// Dilations.
    pub dilation: [usize; 2],
    /// Padding rows before the input, then columns.
    pub pad: [usize; 2],
}

impl WindowSpec {
    /// Output channels of `op`.
    pub fn out_channels(&self, op: WindowOp) -> Result<usize, KernelError> {
        match op {
            WindowOp::Conv => Ok(self.k),
            WindowOp::Depthwise => mul(self.hwc[2], self.k),
            _ => Ok(self.hwc[2]),
        }
    }

    /// Elements of the input, the filter (0 for pools) and the output.
    pub fn lens(&self, op: WindowOp) -> Result<[usize; 3], KernelError> {
        let [h, w, c] = self.hwc;
        let x = mul(mul(mul(self.n, h)?, w)?, c)?;
        let filter = match op {
            WindowOp::Conv | WindowOp::Depthwise => {
                mul(mul(mul(self.size[0], self.size[1])?, c)?, self.k)?
            }
            _ => 0,
        };
        let out = mul(
            mul(mul(self.n, self.out[0])?, self.out[1])?,
            self.out_channels(op)?,
        )?;
        Ok([x, filter, out])
    }

    /// Input index of tap `a` of output index `o` on `axis`, or `None` in the padding.
    fn source(&self, axis: usize, o: usize, a: usize) -> Option<usize> {
        (o * self.stride[axis] + a * self.dilation[axis])
            .checked_sub(self.pad[axis])
            .filter(|&i| i < self.hwc[axis])
    }
}

/// Runs `op` over `x` (and `filter`) into `out`, after checking every length.
pub fn window(
    op: WindowOp,
    spec: &WindowSpec,
    x: &[f32],
    filter: &[f32],
    out: &mut [f32],
) -> Result<(), KernelError> {
    let [x_len, f_len, out_len] = spec.lens(op)?;
    expect_len(Operand::Input, x_len, x.len())?;
    expect_len(Operand::Rhs, f_len, filter.len())?;
    expect_len(Operand::Output, out_len, out.len())?;
    #[cfg(feature = "std")]
    if op == WindowOp::Conv {
        return conv_by_rows(spec, x, filter, out);
    }
    let oc_n = spec.out_channels(op)?;
    if oc_n == 0 {
        return Ok(());
    }
    let [oh_n, ow_n] = spec.out;
    for (p, out_row) in out.chunks_exact_mut(oc_n).enumerate() {
        let (n, oh, ow) = (p / (oh_n * ow_n), p / ow_n % oh_n, p % ow_n);
        pixel(op, spec, x, filter, [n, oh, ow], out_row);
    }
    Ok(())
}

/// One output pixel `[n, oh, ow]`: every output channel, accumulated tap
/// by tap with the channels innermost (contiguous, so the loops vectorize).
fn pixel(
    op: WindowOp,
    spec: &WindowSpec,
    x: &[f32],
    filter: &[f32],
    [n, oh, ow]: [usize; 3],
    out: &mut [f32],
) {
    let [h, w, c] = spec.hwc;
    let k = spec.k;
    out.fill(match op {
        WindowOp::MaxPool => f32::MIN,
        _ => 0.0,
    });
    let mut count = 0u32;
    for a in 0..spec.size[0] {
        let Some(ih) = spec.source(0, oh, a) else {
            continue;
        };
        for b in 0..spec.size[1] {
            let Some(iw) = spec.source(1, ow, b) else {
                continue;
            };
            let x_row = &x[((n * h + ih) * w + iw) * c..][..c];
            let tap = (a * spec.size[1] + b) * c * k;
            count += 1;
            match op {
                WindowOp::Conv => {
                    for (ch, &v) in x_row.iter().enumerate() {
                        let f_row = &filter[tap + ch * k..][..k];
                        for (o, &f) in out.iter_mut().zip(f_row) {
                            *o += v * f;
                        }
                    }
                }
                WindowOp::Depthwise => {
                    // Output channel `ch·k + j` uses filter `tap + ch·k + j`.
                    let f_row = &filter[tap..][..c * k];
                    if k == 1 {
                        for ((o, &f), &v) in out.iter_mut().zip(f_row).zip(x_row) {
                            *o += v * f;
                        }
                    } else {
                        for ((o, &f), i) in out.iter_mut().zip(f_row).zip(0..) {
                            *o += x_row[i / k] * f;
                        }
                    }
                }
                WindowOp::MaxPool => {
                    for (o, &v) in out.iter_mut().zip(x_row) {
                        if v > *o {
                            *o = v;
                        }
                    }
                }
                WindowOp::AvgPool => {
                    for (o, &v) in out.iter_mut().zip(x_row) {
                        *o += v;
                    }
                }
            }
        }
    }
    if op == WindowOp::AvgPool && count > 0 {
        for o in out.iter_mut() {
            *o /= count as f32;
        }
    }
}

/// `Conv` on the host path: for each output row and tap, one GEMM of the
/// output columns whose tap is inside the input (`[cols, c] · [c, k]`,
/// strided rows of `x`) accumulated into that output row with
/// `matrixmultiply`. The sum order differs from the portable loop (it is a
/// GEMM's); the bound of `docs/device-numerics.md` covers both.
#[cfg(feature = "std")]
fn conv_by_rows(
    spec: &WindowSpec,
    x: &[f32],
    filter: &[f32],
    out: &mut [f32],
) -> Result<(), KernelError> {
    use super::gemm::host::{Strided, gemm_accumulate};
    let [h, w, c] = spec.hwc;
    let (k, [oh_n, ow_n]) = (spec.k, spec.out);
    out.fill(0.0);
    let pointwise = spec.size == [1, 1] && spec.stride == [1, 1] && spec.pad == [0, 0];
    if pointwise && spec.out == [h, w] {
        // A 1×1 convolution is one GEMM over every pixel of the batch.
        let rows = spec.n * h * w;
        let at = |row_stride| Strided {
            start: 0,
            row_stride,
        };
        return gemm_accumulate([rows, c, k], (x, at(c)), (filter, at(k)), (out, at(k)));
    }
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
