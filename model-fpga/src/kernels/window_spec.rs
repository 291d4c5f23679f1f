//! What a window command computes ([`WindowOp`]) and its geometry
//! ([`WindowSpec`]): shared by the forward kernels (`window`) and the
//! gradients (`window_grad`), which do not import each other.

use super::error::{KernelError, mul};

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
    /// `Conv`'s gradient by its input: `src0` dy, `src1` filter, `dst` dx.
    ConvBackpropInput,
    /// `Conv`'s gradient by its filter: `src0` x, `src1` dy, `dst` the filter's.
    ConvBackpropFilter,
    /// `MaxPool`'s gradient: `src0` x, `src1` dy, `dst` dx (TF's CPU tie rule).
    MaxPoolGrad,
    /// `AvgPool`'s gradient: `src0` dy, `dst` dx.
    AvgPoolGrad,
}

impl WindowOp {
    /// The forward op whose geometry (and input, filter, output) this one uses.
    pub(super) fn forward(self) -> Self {
        match self {
            Self::ConvBackpropInput | Self::ConvBackpropFilter => Self::Conv,
            Self::MaxPoolGrad => Self::MaxPool,
            Self::AvgPoolGrad => Self::AvgPool,
            op => op,
        }
    }
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
    /// Output channels of the forward op of `op`.
    pub fn out_channels(&self, op: WindowOp) -> Result<usize, KernelError> {
        match op.forward() {
            WindowOp::Conv => Ok(self.k),
            WindowOp::Depthwise => mul(self.hwc[2], self.k),
            _ => Ok(self.hwc[2]),
        }
    }

    /// Elements of `src0`, `src1` (0 for pools) and `dst`.
    pub fn lens(&self, op: WindowOp) -> Result<[usize; 3], KernelError> {
        let [x, filter, out] = self.forward_lens(op.forward())?;
        Ok(match op {
            WindowOp::ConvBackpropInput => [out, filter, x],
            WindowOp::ConvBackpropFilter => [x, out, filter],
            WindowOp::MaxPoolGrad => [x, out, x],
            WindowOp::AvgPoolGrad => [out, 0, x],
            _ => [x, filter, out],
        })
    }

    /// Multiply-adds (or compares) of `op`: those of its forward op.
    pub fn flops(&self, op: WindowOp) -> u64 {
        let [_, _, out] = self.forward_lens(op.forward()).unwrap_or([0; 3]);
        let taps = (self.size[0] * self.size[1]) as u64;
        let per_out = match op.forward() {
            WindowOp::Conv => 2 * taps * self.hwc[2] as u64,
            WindowOp::Depthwise => 2 * taps,
            _ => taps,
        };
        (out as u64).saturating_mul(per_out)
    }

    /// Elements of the forward op's input, filter (0 for pools) and output.
    fn forward_lens(&self, op: WindowOp) -> Result<[usize; 3], KernelError> {
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
    pub(super) fn source(&self, axis: usize, o: usize, a: usize) -> Option<usize> {
        (o * self.stride[axis] + a * self.dilation[axis])
            .checked_sub(self.pad[axis])
            .filter(|&i| i < self.hwc[axis])
    }
}
