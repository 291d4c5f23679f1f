//! 2-D sliding windows over NHWC tensors: convolutions and pools.

use super::shape_error::ShapeError;
use super::types::Shape;

/// Where a window op samples its input. TF's `SAME`/`VALID`/`EXPLICIT`
/// padding is resolved into [`pad`](Self::pad) by the caller.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Window {
    /// Window height and width; for convolutions, the filter's.
    pub size: [u16; 2],
    /// Steps between output rows and columns (≥ 1).
    pub stride: [u16; 2],
    /// Steps between the taps of one window (≥ 1).
    pub dilation: [u16; 2],
    /// Rows before and after, then columns before and after the input that
    /// the window sees as padding (zeros for convolutions, ignored by pools).
    pub pad: [u16; 4],
}

impl Window {
    /// A window of `size` with unit stride and dilation and no padding.
    pub const fn new(size: [u16; 2]) -> Self {
        Self {
            size,
            stride: [1, 1],
            dilation: [1, 1],
            pad: [0; 4],
        }
    }

    /// Output rows and columns for an input of `h × w`.
    pub fn output_hw(&self, h: u64, w: u64) -> Result<[u64; 2], ShapeError> {
        let mut out = [0u64; 2];
        for (axis, extent) in [h, w].into_iter().enumerate() {
            let (stride, dilation) = (self.stride[axis], self.dilation[axis]);
            if stride == 0 || dilation == 0 || self.size[axis] == 0 {
                return Err(ShapeError::Attrs);
            }
            let span = u64::from(dilation) * (u64::from(self.size[axis]) - 1) + 1;
            let pads = u64::from(self.pad[2 * axis]) + u64::from(self.pad[2 * axis + 1]);
            let padded = extent.checked_add(pads).ok_or(ShapeError::Overflow)?;
            out[axis] = match padded.checked_sub(span) {
                Some(room) => room / u64::from(stride) + 1,
                None => 0,
            };
        }
        Ok(out)
    }
}

/// The activation a fused convolution applies after its bias.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Activation {
    /// None: the bias only.
    #[default]
    None,
    /// `max(0, x)`.
    Relu,
    /// `min(max(x, 0), 6)`.
    Relu6,
}

impl Activation {
    /// Applies the activation to `x` (NaN stays NaN).
    pub fn apply(self, x: f32) -> f32 {
        match self {
            Self::None => x,
            Self::Relu if x < 0.0 => 0.0,
            Self::Relu6 if x < 0.0 => 0.0,
            Self::Relu6 if x > 6.0 => 6.0,
            _ => x,
        }
    }
}

/// What a window op does with its window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WindowOp {
    /// Filter `[kh, kw, c, oc]`, output channels `oc`.
    Conv,
    /// Filter `[kh, kw, c, m]`, output channels `c · m`.
    Depthwise,
    /// No filter, output channels `c`.
    Pool,
}

/// The output shape of a window op over `x` (`[n, h, w, c]`) with `filter`.
pub(super) fn window_shape(
    op: WindowOp,
    window: &Window,
    x: &Shape,
    filter: Option<&Shape>,
) -> Result<Shape, ShapeError> {
    let &[n, h, w, c] = x.dims() else {
        return Err(rank(0, 4, x));
    };
    let out_c = match (op, filter) {
        (WindowOp::Pool, _) => c,
        (_, None) => return Err(ShapeError::Overflow),
        (_, Some(f)) => {
            let &[kh, kw, fc, last] = f.dims() else {
                return Err(rank(1, 4, f));
            };
            for (axis, (got, want)) in [(kh, window.size[0]), (kw, window.size[1]), (fc, 0)]
                .into_iter()
                .enumerate()
            {
                let want = if axis == 2 { c } else { u64::from(want) };
                if got != want {
                    return Err(ShapeError::Dim {
                        operand: 1,
                        axis: axis as u8,
                        expected: want,
                        got,
                    });
                }
            }
            match op {
                WindowOp::Depthwise => c.checked_mul(last).ok_or(ShapeError::Overflow)?,
                _ => last,
            }
        }
    };
    let [oh, ow] = window.output_hw(h, w)?;
    Shape::new(&[n, oh, ow, out_c]).ok_or(ShapeError::Overflow)
}

fn rank(operand: u8, expected: u8, s: &Shape) -> ShapeError {
    ShapeError::Rank {
        operand,
        expected,
        got: s.dims().len() as u8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(d: &[u64]) -> Shape {
        Shape::new(d).unwrap()
    }

    #[test]
    fn output_sizes_follow_tf() {
        // VALID 3x3 over 7x7, stride 2: (7 - 3) / 2 + 1 = 3.
        let mut w = Window::new([3, 3]);
        w.stride = [2, 2];
        assert_eq!(w.output_hw(7, 7), Ok([3, 3]));
        // SAME: pad 1 each side keeps 7 at stride 1.
        let mut same = Window::new([3, 3]);
        same.pad = [1, 1, 1, 1];
        assert_eq!(same.output_hw(7, 7), Ok([7, 7]));
        // Dilation 2 widens a 3-tap window to 5.
        let mut dilated = Window::new([3, 3]);
        dilated.dilation = [2, 2];
        assert_eq!(dilated.output_hw(6, 5), Ok([2, 1]));
        // A window larger than the padded input gives nothing.
        assert_eq!(Window::new([4, 4]).output_hw(3, 9), Ok([0, 6]));
        assert!(Window::new([0, 1]).output_hw(3, 3).is_err());
        // Padding past u64::MAX is an error, not a wrap (found by fuzzing).
        let mut padded = Window::new([1, 1]);
        padded.pad = [1, 0, 0, 0];
        assert_eq!(padded.output_hw(u64::MAX, 1), Err(ShapeError::Overflow));
    }

    #[test]
    fn shapes_of_each_window_op() {
        let w = Window::new([3, 3]);
        let x = s(&[2, 5, 5, 4]);
        let conv = window_shape(WindowOp::Conv, &w, &x, Some(&s(&[3, 3, 4, 8])));
        assert_eq!(conv, Ok(s(&[2, 3, 3, 8])));
        let dw = window_shape(WindowOp::Depthwise, &w, &x, Some(&s(&[3, 3, 4, 2])));
        assert_eq!(dw, Ok(s(&[2, 3, 3, 8])));
        assert_eq!(
            window_shape(WindowOp::Pool, &w, &x, None),
            Ok(s(&[2, 3, 3, 4]))
        );
        // A filter whose input channels or size disagree.
        let bad = window_shape(WindowOp::Conv, &w, &x, Some(&s(&[3, 3, 5, 8])));
        assert!(matches!(
            bad,
            Err(ShapeError::Dim {
                operand: 1,
                axis: 2,
                ..
            })
        ));
        let bad = window_shape(WindowOp::Conv, &w, &x, Some(&s(&[1, 1, 4, 8])));
        assert!(matches!(
            bad,
            Err(ShapeError::Dim {
                operand: 1,
                axis: 0,
                ..
            })
        ));
        assert!(window_shape(WindowOp::Pool, &w, &s(&[5, 5, 4]), None).is_err());
    }
}
