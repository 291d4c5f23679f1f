//! What the window kernels and their gradients share: which op ([`Kind`]),
//! the attributes read at construction ([`WindowAttrs`]) and TF's padding
//! resolved into the device's [`Window`] ([`geometry`]). `window.rs` and
//! `window_grad.rs` both use it and do not import each other.

use crate::kernels::failure::{Failure, KernelResult};
use tensorplug_core::accelerator::{Activation, OpKind, Shape, Window};

/// Which window op, and the TF op it serves.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Conv,
    FusedConv,
    Depthwise,
    MaxPool,
    AvgPool,
    ConvBackpropInput,
    ConvBackpropFilter,
    MaxPoolGrad,
    AvgPoolGrad,
    /// Lowered to `ConvBackpropInput` over the block-diagonal full filter.
    DepthwiseBackpropInput,
    /// Lowered to `ConvBackpropFilter` into the full filter, then its diagonal.
    DepthwiseBackpropFilter,
}

impl Kind {
    /// The device op over `w`.
    pub(super) fn op(self, w: Window) -> OpKind {
        match self {
            Kind::Conv => OpKind::Conv2D(w),
            Kind::FusedConv => OpKind::FusedConv2D(w, Activation::None),
            Kind::Depthwise => OpKind::DepthwiseConv2D(w),
            Kind::MaxPool => OpKind::MaxPool(w),
            Kind::AvgPool => OpKind::AvgPool(w),
            Kind::ConvBackpropInput | Kind::DepthwiseBackpropInput => {
                OpKind::Conv2DBackpropInput(w)
            }
            Kind::ConvBackpropFilter | Kind::DepthwiseBackpropFilter => {
                OpKind::Conv2DBackpropFilter(w)
            }
            Kind::MaxPoolGrad => OpKind::MaxPoolGrad(w),
            Kind::AvgPoolGrad => OpKind::AvgPoolGrad(w),
        }
    }
}

/// TF's `padding` attribute.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum Padding {
    #[default]
    Valid,
    Same,
    /// Rows before and after, columns before and after.
    Explicit([u16; 4]),
}

/// What the kernel reads at construction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WindowAttrs {
    /// The pools' `ksize` (rows, columns); convolutions take the filter's.
    pub(super) size: [u16; 2],
    pub(super) stride: [u16; 2],
    pub(super) dilation: [u16; 2],
    pub(super) padding: Padding,
    /// `_FusedConv2D`'s activation after the bias.
    pub(super) activation: Activation,
}

/// The window of `kind` over an input of shape `sx` (with a filter of
/// shape `sf` for a convolution) and the forward op's output shape.
pub(super) fn geometry(
    kind: Kind,
    a: &WindowAttrs,
    sx: &Shape,
    sf: Option<&Shape>,
) -> KernelResult<(Window, Shape)> {
    let &[n, h, w, c] = sx.dims() else {
        return Err(Failure::invalid(format!(
            "input must be 4-dimensional, got shape {:?}",
            sx.dims()
        )));
    };
    let (size, out_c) = match sf {
        None => (a.size, c),
        Some(sf) => filter_geometry(kind, sf, c)?,
    };
    let mut window = Window {
        size,
        stride: a.stride,
        dilation: a.dilation,
        pad: [0; 4],
    };
    for (axis, extent) in [h, w].into_iter().enumerate() {
        let (before, after) = resolve(a.padding, &window, axis, extent)?;
        window.pad[2 * axis] = before;
        window.pad[2 * axis + 1] = after;
    }
    let [oh, ow] = window
        .output_hw(h, w)
        .map_err(|e| Failure::invalid(e.to_string()))?;
    Ok((window, dims(&[n, oh, ow, out_c])?))
}

/// The window size and output channels a filter gives; `c` input channels.
fn filter_geometry(kind: Kind, sf: &Shape, c: u64) -> KernelResult<([u16; 2], u64)> {
    let &[kh, kw, fc, k] = sf.dims() else {
        return Err(Failure::invalid(format!(
            "filter must be 4-dimensional, got shape {:?}",
            sf.dims()
        )));
    };
    if fc != c {
        let what = if kind != Kind::Depthwise {
            "grouped convolutions are not supported on the device"
        } else {
            "the filter's third dimension must be the input depth"
        };
        return Err(Failure::unimplemented(format!(
            "filter depth {fc} for input depth {c}: {what}"
        )));
    }
    let out_c = if kind == Kind::Depthwise {
        c.checked_mul(k)
            .ok_or_else(|| Failure::invalid(format!("output depth {c} × {k} is over 2^64")))?
    } else {
        k
    };
    Ok((
        [small(kh, "filter height")?, small(kw, "filter width")?],
        out_c,
    ))
}

/// The `[1, h, w, 1]` of a 4-entry attribute, as `[h, w]`.
pub(super) fn spatial(values: &[i64], name: &str) -> KernelResult<[u16; 2]> {
    match *values {
        [1, h, w, 1] if h > 0 && w > 0 => Ok([small(h as u64, name)?, small(w as u64, name)?]),
        _ => Err(Failure::unimplemented(format!(
            "{name} {values:?}: the device needs [1, h, w, 1] with h, w ≥ 1"
        ))),
    }
}

/// `explicit_paddings` `[0, 0, top, bottom, left, right, 0, 0]` (NHWC).
pub(super) fn explicit(values: &[i64]) -> KernelResult<Padding> {
    match *values {
        [0, 0, t, b, l, r, 0, 0] if [t, b, l, r].iter().all(|&p| p >= 0) => {
            let p = |v: i64| small(v as u64, "explicit_paddings");
            Ok(Padding::Explicit([p(t)?, p(b)?, p(l)?, p(r)?]))
        }
        _ => Err(Failure::invalid(format!(
            "explicit_paddings {values:?}: 8 entries, non-negative, none on the batch or \
             channel axes"
        ))),
    }
}

/// TF's padding before and after on `axis` for an input `extent` long.
fn resolve(padding: Padding, w: &Window, axis: usize, extent: u64) -> KernelResult<(u16, u16)> {
    // In u128: `extent` comes from TF's shape and may be near u64::MAX.
    let stride = u128::from(w.stride[axis]);
    let span = u128::from(w.dilation[axis]) * (u128::from(w.size[axis]).max(1) - 1) + 1;
    let extent = u128::from(extent);
    match padding {
        Padding::Valid => Ok((0, 0)),
        Padding::Explicit(p) => Ok((p[2 * axis], p[2 * axis + 1])),
        Padding::Same => {
            let out = extent.div_ceil(stride);
            // TF's (out − 1)·stride + span − extent, at least 0; with an
            // empty input (out 0) that is no padding, and an empty output.
            let total = (out * stride + span).saturating_sub(stride + extent);
            let before = total / 2;
            let small = |v: u128| small(u64::try_from(v).unwrap_or(u64::MAX), "padding");
            Ok((small(before)?, small(total - before)?))
        }
    }
}

fn small(v: u64, what: &str) -> KernelResult<u16> {
    u16::try_from(v).map_err(|_| Failure::unimplemented(format!("{what} {v} is over 65535")))
}

pub(super) fn dims(d: &[u64]) -> KernelResult<Shape> {
    Shape::new(d).ok_or_else(|| Failure::invalid("bad rank"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_padding_follows_tf() {
        // An empty input: no padding (TF's), so the output is empty too
        // (found by fuzzing: it was 1 row).
        let wide = Window {
            stride: [44, 44],
            ..Window::new([44, 44])
        };
        assert_eq!(resolve(Padding::Same, &wide, 0, 0), Ok((0, 0)));
        // Depthwise output depth c × k past 2^64: refused (found by fuzzing).
        let huge = 1u64 << 40;
        let x = Shape::new(&[0, 4, 4, huge]).unwrap();
        let f = Shape::new(&[3, 3, huge, huge]).unwrap();
        let attrs = WindowAttrs {
            stride: [1, 1],
            dilation: [1, 1],
            ..WindowAttrs::default()
        };
        assert!(geometry(Kind::Depthwise, &attrs, &x, Some(&f)).is_err());
        // A dim near 2^64 does not overflow (found by fuzzing too).
        let three = Window::new([3, 3]);
        assert_eq!(resolve(Padding::Same, &three, 0, u64::MAX), Ok((1, 1)));
        let mut w = Window::new([3, 3]);
        // Stride 1: one row on each side.
        assert_eq!(resolve(Padding::Same, &w, 0, 7), Ok((1, 1)));
        // Stride 2 over 8: out 4, total (4-1)·2 + 3 − 8 = 1, all after.
        w.stride = [2, 2];
        assert_eq!(resolve(Padding::Same, &w, 0, 8), Ok((0, 1)));
        // Stride 2 over 7: out 4, total 2.
        assert_eq!(resolve(Padding::Same, &w, 1, 7), Ok((1, 1)));
        // A 1x1 window never pads.
        assert_eq!(
            resolve(Padding::Same, &Window::new([1, 1]), 0, 5),
            Ok((0, 0))
        );
        let explicit = Padding::Explicit([1, 2, 3, 4]);
        assert_eq!(resolve(explicit, &w, 1, 9), Ok((3, 4)));
    }

    #[test]
    fn attributes_the_device_cannot_run_are_named() {
        assert!(spatial(&[1, 2, 2, 1], "strides").is_ok());
        let e = spatial(&[2, 1, 1, 1], "strides").unwrap_err();
        assert!(e.cause.contains("strides [2, 1, 1, 1]"), "{}", e.cause);
        assert!(explicit(&[0, 0, 1, 1, 2, 2, 0, 0]).is_ok());
        assert!(explicit(&[1, 0, 1, 1, 2, 2, 0, 0]).is_err());
    }
}
