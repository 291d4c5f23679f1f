//! The sliding-window kernels over NHWC tensors: `Conv2D`,
//! `DepthwiseConv2dNative`, `MaxPool` and `AvgPool`, and the gradients
//! `Conv2DBackpropInput`, `Conv2DBackpropFilter`, `MaxPoolGrad`, `AvgPoolGrad`
//! and the depthwise ones (`window_grad.rs`). TF's `SAME`, `VALID` and `EXPLICIT` paddings are
//! resolved here into a [`Window`].

use super::window_grad;
use super::{Op, is_empty};
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::tf::{Construction, Context};
use std::ffi::CStr;
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

/// A window kernel.
pub struct WindowKernel {
    op: &'static CStr,
    kind: Kind,
}

/// `Conv2D`.
pub const CONV2D: WindowKernel = WindowKernel {
    op: c"Conv2D",
    kind: Kind::Conv,
};
/// `_FusedConv2D` (what the graph pass writes for `Conv2D → BiasAdd
/// (→ Relu | Relu6)`): `fused_ops` `[BiasAdd]`, `[BiasAdd, Relu]` or
/// `[BiasAdd, Relu6]`, `num_args` 1.
pub const FUSED_CONV2D: WindowKernel = WindowKernel {
    op: c"_FusedConv2D",
    kind: Kind::FusedConv,
};
/// `DepthwiseConv2dNative`.
pub const DEPTHWISE: WindowKernel = WindowKernel {
    op: c"DepthwiseConv2dNative",
    kind: Kind::Depthwise,
};
/// `MaxPool`.
pub const MAX_POOL: WindowKernel = WindowKernel {
    op: c"MaxPool",
    kind: Kind::MaxPool,
};
/// `AvgPool`.
pub const AVG_POOL: WindowKernel = WindowKernel {
    op: c"AvgPool",
    kind: Kind::AvgPool,
};

/// `Conv2DBackpropInput` (`input_sizes` in host memory).
pub const CONV2D_BACKPROP_INPUT: WindowKernel = WindowKernel {
    op: c"Conv2DBackpropInput",
    kind: Kind::ConvBackpropInput,
};
/// `Conv2DBackpropFilter` (`filter_sizes` in host memory).
pub const CONV2D_BACKPROP_FILTER: WindowKernel = WindowKernel {
    op: c"Conv2DBackpropFilter",
    kind: Kind::ConvBackpropFilter,
};
/// `MaxPoolGrad` (its `orig_output` is not read: the device finds each
/// window's maximum again).
pub const MAX_POOL_GRAD: WindowKernel = WindowKernel {
    op: c"MaxPoolGrad",
    kind: Kind::MaxPoolGrad,
};

/// `DepthwiseConv2dNativeBackpropInput` (`input_sizes` in host memory).
pub const DEPTHWISE_BACKPROP_INPUT: WindowKernel = WindowKernel {
    op: c"DepthwiseConv2dNativeBackpropInput",
    kind: Kind::DepthwiseBackpropInput,
};
/// `DepthwiseConv2dNativeBackpropFilter` (`filter_sizes` in host memory).
pub const DEPTHWISE_BACKPROP_FILTER: WindowKernel = WindowKernel {
    op: c"DepthwiseConv2dNativeBackpropFilter",
    kind: Kind::DepthwiseBackpropFilter,
};

/// `AvgPoolGrad` (`orig_input_shape` in host memory).
pub const AVG_POOL_GRAD: WindowKernel = WindowKernel {
    op: c"AvgPoolGrad",
    kind: Kind::AvgPoolGrad,
};

/// TF's `padding` attribute.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Padding {
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
    stride: [u16; 2],
    dilation: [u16; 2],
    padding: Padding,
    /// `_FusedConv2D`'s activation after the bias.
    activation: Activation,
}

impl Op for WindowKernel {
    type Attrs = WindowAttrs;

    fn op(&self) -> &'static CStr {
        self.op
    }

    fn family(&self) -> Option<OpKind> {
        Some(self.kind.op(Window::new([1, 1])))
    }

    fn host_memory(&self) -> &'static [&'static CStr] {
        match self.kind {
            Kind::ConvBackpropInput | Kind::DepthwiseBackpropInput => &[c"input_sizes"],
            Kind::ConvBackpropFilter | Kind::DepthwiseBackpropFilter => &[c"filter_sizes"],
            Kind::AvgPoolGrad => &[c"orig_input_shape"],
            _ => &[],
        }
    }

    fn construct(&self, ctx: &Construction) -> KernelResult<WindowAttrs> {
        let format = ctx.string_attr(c"data_format")?;
        if format != "NHWC" {
            return Err(Failure::unimplemented(format!(
                "data_format {format}: the device runs NHWC only (Keras' default, \
                 channels_last)"
            )));
        }
        let conv = matches!(
            self.kind,
            Kind::Conv
                | Kind::FusedConv
                | Kind::Depthwise
                | Kind::ConvBackpropInput
                | Kind::ConvBackpropFilter
                | Kind::DepthwiseBackpropInput
                | Kind::DepthwiseBackpropFilter
        );
        let activation = match self.kind {
            Kind::FusedConv => fused_activation(ctx)?,
            _ => Activation::None,
        };
        let stride = spatial(&ctx.int_list_attr(c"strides")?, "strides")?;
        let dilation = if conv {
            spatial(&ctx.int_list_attr(c"dilations")?, "dilations")?
        } else {
            [1, 1]
        };
        let size = if conv {
            [0, 0]
        } else {
            spatial(&ctx.int_list_attr(c"ksize")?, "ksize")?
        };
        let padding = match ctx.string_attr(c"padding")?.as_str() {
            "VALID" => Padding::Valid,
            "SAME" => Padding::Same,
            "EXPLICIT" => explicit(&ctx.int_list_attr(c"explicit_paddings")?)?,
            other => return Err(Failure::unimplemented(format!("padding {other}"))),
        };
        Ok(WindowAttrs {
            size,
            stride,
            dilation,
            padding,
            activation,
        })
    }

    fn compute(&self, a: &WindowAttrs, ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        if matches!(
            self.kind,
            Kind::ConvBackpropInput
                | Kind::ConvBackpropFilter
                | Kind::MaxPoolGrad
                | Kind::AvgPoolGrad
                | Kind::DepthwiseBackpropInput
                | Kind::DepthwiseBackpropFilter
        ) {
            return window_grad::compute(self.kind, a, ctx, run);
        }
        let x = ctx.input(0, false)?;
        let sx = x.shape()?;
        let filter = match self.kind {
            Kind::Conv | Kind::FusedConv | Kind::Depthwise => Some(ctx.input(1, false)?),
            _ => None,
        };
        let sf = filter.as_ref().map(|f| f.shape()).transpose()?;
        let (window, out_shape) = geometry(self.kind, a, &sx, sf.as_ref())?;
        let out = ctx.output(&out_shape, &[])?;
        if is_empty(&out_shape) {
            return Ok(());
        }
        let kind = match self.kind {
            Kind::FusedConv => OpKind::FusedConv2D(window, a.activation),
            other => other.op(window),
        };
        let mut inputs = vec![run.desc(&x, sx)?];
        if let (Some(f), Some(sf)) = (&filter, sf) {
            inputs.push(run.desc(f, sf)?);
        }
        if self.kind == Kind::FusedConv {
            let bias = ctx.input(2, false)?;
            let sb = bias.shape()?;
            crate::kernels::shapes::bias(&out_shape, &sb)?;
            inputs.push(run.desc(&bias, sb)?);
        }
        run.launch(kind, &inputs, run.desc(&out, out_shape)?)
    }
}

/// `_FusedConv2D`'s `fused_ops` (and `num_args` 1) as the activation after the bias.
fn fused_activation(ctx: &Construction) -> KernelResult<Activation> {
    let num_args = ctx.int_attr(c"num_args")?;
    let ops = ctx.string_list_attr(c"fused_ops")?;
    let ops: Vec<&str> = ops.iter().map(String::as_str).collect();
    let activation = match ops[..] {
        ["BiasAdd"] => Activation::None,
        ["BiasAdd", "Relu"] => Activation::Relu,
        ["BiasAdd", "Relu6"] => Activation::Relu6,
        _ => {
            return Err(Failure::unimplemented(format!(
                "fused_ops {ops:?}: the device fuses [BiasAdd], [BiasAdd, Relu] or [BiasAdd, Relu6]"
            )));
        }
    };
    if num_args != 1 {
        return Err(Failure::unimplemented(format!(
            "num_args = {num_args} (the device fuses one bias)"
        )));
    }
    Ok(activation)
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
    let out_c = if kind == Kind::Depthwise { c * k } else { k };
    Ok((
        [small(kh, "filter height")?, small(kw, "filter width")?],
        out_c,
    ))
}

/// The `[1, h, w, 1]` of a 4-entry attribute, as `[h, w]`.
fn spatial(values: &[i64], name: &str) -> KernelResult<[u16; 2]> {
    match *values {
        [1, h, w, 1] if h > 0 && w > 0 => Ok([small(h as u64, name)?, small(w as u64, name)?]),
        _ => Err(Failure::unimplemented(format!(
            "{name} {values:?}: the device needs [1, h, w, 1] with h, w ≥ 1"
        ))),
    }
}

/// `explicit_paddings` `[0, 0, top, bottom, left, right, 0, 0]` (NHWC).
fn explicit(values: &[i64]) -> KernelResult<Padding> {
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
    let stride = u64::from(w.stride[axis]);
    let span = u64::from(w.dilation[axis]) * (u64::from(w.size[axis]).max(1) - 1) + 1;
    match padding {
        Padding::Valid => Ok((0, 0)),
        Padding::Explicit(p) => Ok((p[2 * axis], p[2 * axis + 1])),
        Padding::Same => {
            let out = extent.div_ceil(stride);
            let total = ((out.max(1) - 1) * stride + span).saturating_sub(extent);
            let before = total / 2;
            Ok((small(before, "padding")?, small(total - before, "padding")?))
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
