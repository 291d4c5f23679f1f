//! The sliding-window kernels over NHWC tensors: `Conv2D`,
//! `DepthwiseConv2dNative`, `MaxPool` and `AvgPool`, and the gradients
//! `Conv2DBackpropInput`, `Conv2DBackpropFilter`, `MaxPoolGrad`, `AvgPoolGrad`
//! and the depthwise ones (`window_grad.rs`). TF's `SAME`, `VALID` and
//! `EXPLICIT` paddings become a [`Window`] in `window_geometry.rs`.

use super::kernel::{Op, is_empty};
use super::window_geometry::{Kind, Padding, WindowAttrs, explicit, geometry, spatial};
use super::window_grad;
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::tf::{AttrSource, Construction, Context};
use std::ffi::CStr;
use tensorplug_core::accelerator::{Activation, OpKind, Window};

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
        read_attrs(self.kind, ctx)
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

/// The forward window ops a device program holds, by TF op name.
const FORWARD: [&WindowKernel; 5] = [&CONV2D, &FUSED_CONV2D, &DEPTHWISE, &MAX_POOL, &AVG_POOL];

fn forward(op: &str) -> Option<&'static WindowKernel> {
    FORWARD
        .iter()
        .copied()
        .find(|k| k.op.to_bytes() == op.as_bytes())
}

/// Whether `op` is a window op a program holds (forward, or a gradient of
/// [`GRADIENTS`]) and the device takes its attributes (`attrs`).
pub(crate) fn program_holds(op: &str, attrs: &impl AttrSource) -> bool {
    forward(op)
        .or_else(|| gradient(op).map(|(k, _)| k))
        .is_some_and(|k| read_attrs(k.kind, attrs).is_ok())
}

/// The window gradients a device program holds, by TF op name, each with
/// its host-memory sizes input (`input_sizes`, `filter_sizes`,
/// `orig_input_shape`), if it has one: a program holds such a node only
/// when a `Const` gives it (the graph pass writes it into the segment's
/// copy of the node and drops the input). The depthwise gradients launch
/// several commands and stay op by op.
const GRADIENTS: [(&WindowKernel, Option<usize>); 4] = [
    (&CONV2D_BACKPROP_INPUT, Some(0)),
    (&CONV2D_BACKPROP_FILTER, Some(1)),
    (&MAX_POOL_GRAD, None),
    (&AVG_POOL_GRAD, Some(0)),
];

fn gradient(op: &str) -> Option<(&'static WindowKernel, Option<usize>)> {
    GRADIENTS
        .iter()
        .copied()
        .find(|(k, _)| k.op.to_bytes() == op.as_bytes())
}

/// The TF names of the window gradients a program holds.
pub(crate) fn gradient_ops() -> impl Iterator<Item = &'static str> {
    GRADIENTS.iter().filter_map(|(k, _)| k.op.to_str().ok())
}

/// For a window gradient a program holds: the index of its host-memory
/// sizes input (`None`: it has none).
pub(crate) fn gradient_sizes_input(op: &str) -> Option<Option<usize>> {
    gradient(op).map(|(_, sizes)| sizes)
}

/// A window gradient node as one command of a device program, its sizes
/// input (if any) given as `sizes` and dropped from `shapes` (the other
/// inputs' shapes, in the node's order): its op, its output shape and
/// which of those inputs the command reads, in its own order. The same
/// geometry and checks as the kernel's (`window_grad.rs`).
pub(crate) fn lower_gradient_for_program(
    op: &str,
    attrs: &impl AttrSource,
    shapes: &[tensorplug_core::accelerator::Shape],
    sizes: &[i64],
) -> Option<KernelResult<(OpKind, tensorplug_core::accelerator::Shape, Vec<usize>)>> {
    let (k, _) = gradient(op)?;
    Some((|| {
        let a = read_attrs(k.kind, attrs)?;
        let input = |i: usize| {
            shapes
                .get(i)
                .copied()
                .ok_or_else(|| Failure::invalid(format!("{op} takes more inputs")))
        };
        let given = |name| window_grad::sizes_shape(sizes, name);
        // The forward input's and filter's shapes, the gradient's input
        // index, the output shape and the command's inputs.
        let (sx, sf, dy, operands) = match k.kind {
            Kind::ConvBackpropInput => (given("input_sizes")?, Some(input(0)?), 1, vec![1, 0]),
            Kind::ConvBackpropFilter => (input(0)?, Some(given("filter_sizes")?), 1, vec![0, 1]),
            Kind::MaxPoolGrad => (input(0)?, None, 2, vec![0, 2]),
            _ => (given("orig_input_shape")?, None, 0, vec![0]),
        };
        let (window, forward) = geometry(k.kind, &a, &sx, sf.as_ref())?;
        window_grad::same_as_forward(&input(dy)?, &forward)?;
        let out = match (k.kind, sf) {
            (Kind::ConvBackpropFilter, Some(sf)) => sf,
            _ => sx,
        };
        Ok((k.kind.op(window), out, operands))
    })())
}

/// A forward window node as one command of a device program: its op and
/// output shape over inputs of `shapes` (input, then a convolution's
/// filter, then `_FusedConv2D`'s bias); `None` if `op` is not one.
pub(crate) fn lower_for_program(
    op: &str,
    attrs: &impl AttrSource,
    shapes: &[tensorplug_core::accelerator::Shape],
) -> Option<KernelResult<(OpKind, tensorplug_core::accelerator::Shape)>> {
    let k = forward(op)?;
    Some((|| {
        let a = read_attrs(k.kind, attrs)?;
        let sf = match k.kind {
            Kind::Conv | Kind::FusedConv | Kind::Depthwise => shapes.get(1),
            _ => None,
        };
        let sx = shapes.first().ok_or_else(|| Failure::invalid("no input"))?;
        let (window, out) = geometry(k.kind, &a, sx, sf)?;
        if k.kind == Kind::FusedConv {
            let sb = shapes.get(2).ok_or_else(|| Failure::invalid("no bias"))?;
            crate::kernels::shapes::bias(&out, sb)?;
        }
        let kind = match k.kind {
            Kind::FusedConv => OpKind::FusedConv2D(window, a.activation),
            other => other.op(window),
        };
        Ok((kind, out))
    })())
}

/// The window attributes of a `kind` node (`data_format` NHWC only).
pub(super) fn read_attrs(kind: Kind, ctx: &impl AttrSource) -> KernelResult<WindowAttrs> {
    let format = ctx.string(c"data_format")?;
    if format != "NHWC" {
        return Err(Failure::unimplemented(format!(
            "data_format {format}: the device runs NHWC only (Keras' default, \
             channels_last)"
        )));
    }
    let conv = matches!(
        kind,
        Kind::Conv
            | Kind::FusedConv
            | Kind::Depthwise
            | Kind::ConvBackpropInput
            | Kind::ConvBackpropFilter
            | Kind::DepthwiseBackpropInput
            | Kind::DepthwiseBackpropFilter
    );
    let activation = match kind {
        Kind::FusedConv => fused_activation(ctx)?,
        _ => Activation::None,
    };
    let stride = spatial(&ctx.int_list(c"strides")?, "strides")?;
    let dilation = if conv {
        spatial(&ctx.int_list(c"dilations")?, "dilations")?
    } else {
        [1, 1]
    };
    let size = if conv {
        [0, 0]
    } else {
        spatial(&ctx.int_list(c"ksize")?, "ksize")?
    };
    let padding = match ctx.string(c"padding")?.as_str() {
        "VALID" => Padding::Valid,
        "SAME" => Padding::Same,
        "EXPLICIT" => explicit(&ctx.int_list(c"explicit_paddings")?)?,
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

/// `_FusedConv2D`'s `fused_ops` (and `num_args` 1) as the activation after the bias.
fn fused_activation(ctx: &impl AttrSource) -> KernelResult<Activation> {
    let num_args = ctx.int(c"num_args")?;
    let ops = ctx.string_list(c"fused_ops")?;
    let ops: Vec<&str> = ops.iter().map(String::as_str).collect();
    fused_conv_activation(&ops, i64::from(num_args))
}

/// The activation of a `_FusedConv2D` with these `fused_ops` and
/// `num_args`, or why the device does not fuse them. The graph pass asks
/// too, before it puts such a node on the device (`graph::kernel_list`).
pub(crate) fn fused_conv_activation(ops: &[&str], num_args: i64) -> KernelResult<Activation> {
    let activation = match ops {
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
