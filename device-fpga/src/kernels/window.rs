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
    let [h, w, c] = spec.hwc;
    let oc_n = spec.out_channels(op)?;
    let [oh_n, ow_n] = spec.out;
    for (i, o) in out.iter_mut().enumerate() {
        let oc = i % oc_n;
        let ow = i / oc_n % ow_n;
        let oh = i / (oc_n * ow_n) % oh_n;
        let n = i / (oc_n * ow_n * oh_n);
        let (mut acc, mut count) = (0.0f32, 0u32);
        let mut max = f32::MIN;
        for a in 0..spec.size[0] {
            let Some(ih) = spec.source(0, oh, a) else {
                continue;
            };
            for b in 0..spec.size[1] {
                let Some(iw) = spec.source(1, ow, b) else {
                    continue;
                };
                let row = ((n * h + ih) * w + iw) * c;
                let tap = (a * spec.size[1] + b) * c;
                count += 1;
                match op {
                    WindowOp::Conv => {
                        for ch in 0..c {
                            acc += x[row + ch] * filter[(tap + ch) * spec.k + oc];
                        }
                    }
                    WindowOp::Depthwise => {
                        let (ch, j) = (oc / spec.k, oc % spec.k);
                        acc += x[row + ch] * filter[(tap + ch) * spec.k + j];
                    }
                    WindowOp::MaxPool => {
                        let v = x[row + oc];
                        if v > max {
                            max = v;
                        }
                    }
                    WindowOp::AvgPool => acc += x[row + oc],
                }
            }
        }
        *o = match op {
            WindowOp::MaxPool => max,
            WindowOp::AvgPool if count == 0 => 0.0,
            WindowOp::AvgPool => acc / count as f32,
            _ => acc,
        };
    }
    Ok(())
}
