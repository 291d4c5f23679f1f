//! The int8 ops as TF ops: `_Tensorplug<DEVICE><Op>` (for the FPGA,
//! `_TensorplugFPGAConv2DInt8` …), which the plugin defines itself (TF has
//! no op of these semantics) and registers kernels for. Each takes TF's
//! layouts and the quantization block (`int32`) as its last input, and
//! lowers to the catalogue op of the same name (`docs/ops.md`, "int8").
//!
//! The op names carry the device type so that two tensorplug plugins in one
//! process never define one op twice (TF aborts on a duplicate op).

use super::kernel::{Op, flat, is_empty};
use super::window::{self as window_kernels};
use super::window_geometry::{Kind, WindowAttrs, geometry};
use crate::identity;
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::op_def::define;
pub use crate::kernels::op_def::op_name;
use crate::kernels::tf::{AttrSource, Construction, Context, Tensor};
use std::ffi::CStr;
use std::sync::OnceLock;
use tensorplug_abi::tf::TF_DataType;
use tensorplug_core::accelerator::{DType, OpKind, Shape, TensorDesc, Window};

/// One int8 op: its name after `_Tensorplug<DEVICE>`, its catalogue op, and
/// its TF definition (`ops.h` specs).
pub struct Int8Kernel {
    suffix: &'static str,
    kind: OpKind,
    inputs: &'static [&'static CStr],
    output: &'static CStr,
    attrs: &'static [&'static CStr],
}

const WINDOW: Window = Window::new([1, 1]);
const CONV_ATTRS: &[&CStr] = &[
    c"strides: list(int)",
    c"padding: {'SAME', 'VALID', 'EXPLICIT'}",
    c"explicit_paddings: list(int) = []",
    c"dilations: list(int) = [1, 1, 1, 1]",
    c"data_format: {'NHWC'} = 'NHWC'",
];
const POOL_ATTRS: &[&CStr] = &[
    c"ksize: list(int)",
    c"strides: list(int)",
    c"padding: {'SAME', 'VALID'}",
    c"data_format: {'NHWC'} = 'NHWC'",
];
const CONV_INPUTS: &[&CStr] = &[c"input: int8", c"filter: int8", c"quantization: int32"];
const TWO_INPUTS: &[&CStr] = &[c"x: int8", c"y: int8", c"quantization: int32"];
const ONE_INPUT: &[&CStr] = &[c"input: int8", c"quantization: int32"];
const OUT_I8: &CStr = c"output: int8";

/// The int8 kernels, one per int8 op of the catalogue.
pub static KERNELS: [Int8Kernel; 11] = [
    Int8Kernel {
        suffix: "Conv2DInt8",
        kind: OpKind::Conv2DInt8(WINDOW),
        inputs: CONV_INPUTS,
        output: OUT_I8,
        attrs: CONV_ATTRS,
    },
    Int8Kernel {
        suffix: "DepthwiseConv2DInt8",
        kind: OpKind::DepthwiseConv2DInt8(WINDOW),
        inputs: CONV_INPUTS,
        output: OUT_I8,
        attrs: CONV_ATTRS,
    },
    Int8Kernel {
        suffix: "MatMulInt8",
        kind: OpKind::MatMulInt8 { transpose_b: false },
        inputs: &[c"a: int8", c"b: int8", c"quantization: int32"],
        output: OUT_I8,
        attrs: &[c"transpose_b: bool = false"],
    },
    Int8Kernel {
        suffix: "AddInt8",
        kind: OpKind::AddInt8,
        inputs: TWO_INPUTS,
        output: OUT_I8,
        attrs: &[],
    },
    Int8Kernel {
        suffix: "MaxPoolInt8",
        kind: OpKind::MaxPoolInt8(WINDOW),
        inputs: ONE_INPUT,
        output: OUT_I8,
        attrs: POOL_ATTRS,
    },
    Int8Kernel {
        suffix: "AvgPoolInt8",
        kind: OpKind::AvgPoolInt8(WINDOW),
        inputs: ONE_INPUT,
        output: OUT_I8,
        attrs: POOL_ATTRS,
    },
    Int8Kernel {
        suffix: "Quantize",
        kind: OpKind::Quantize,
        inputs: &[c"input: float", c"quantization: int32"],
        output: OUT_I8,
        attrs: &[],
    },
    Int8Kernel {
        suffix: "Dequantize",
        kind: OpKind::Dequantize,
        inputs: ONE_INPUT,
        output: c"output: float",
        attrs: &[],
    },
    Int8Kernel {
        suffix: "SoftmaxInt8",
        kind: OpKind::SoftmaxInt8,
        inputs: &[c"logits: int8", c"quantization: int32"],
        output: c"softmax: int8",
        attrs: &[],
    },
    Int8Kernel {
        suffix: "LookupInt8",
        kind: OpKind::LookupInt8,
        inputs: ONE_INPUT,
        output: OUT_I8,
        attrs: &[],
    },
    Int8Kernel {
        suffix: "MulInt8",
        kind: OpKind::MulInt8,
        inputs: TWO_INPUTS,
        output: OUT_I8,
        attrs: &[],
    },
];

/// Defines the int8 TF ops of the installed device type, once per process
/// (TF aborts on a duplicate op; `TF_InitKernel` runs once per plugin).
pub fn define_ops() -> KernelResult<()> {
    static DEFINED: OnceLock<Result<(), String>> = OnceLock::new();
    DEFINED
        .get_or_init(|| {
            define_all()
                .and_then(|()| crate::kernels::qat::define_ops())
                .map_err(|f| f.cause)
        })
        .clone()
        .map_err(Failure::invalid)
}

fn define_all() -> KernelResult<()> {
    for k in &KERNELS {
        define(Op::op(k), k.inputs, &[k.output], k.attrs)?;
    }
    Ok(())
}

/// An int8 kernel's attributes: the window's, or `MatMulInt8`'s transpose.
#[derive(Clone, Copy, Default)]
pub struct Int8Attrs {
    window: WindowAttrs,
    transpose_b: bool,
}

impl Int8Kernel {
    /// The window op whose TF attributes and geometry this one shares.
    fn window_kind(&self) -> Option<Kind> {
        match self.kind {
            OpKind::Conv2DInt8(_) => Some(Kind::Conv),
            OpKind::DepthwiseConv2DInt8(_) => Some(Kind::Depthwise),
            OpKind::MaxPoolInt8(_) => Some(Kind::MaxPool),
            OpKind::AvgPoolInt8(_) => Some(Kind::AvgPool),
            _ => None,
        }
    }
}

impl Op for Int8Kernel {
    type Attrs = Int8Attrs;

    fn op(&self) -> &'static CStr {
        op_name(identity::device_type(), self.suffix)
    }

    fn family(&self) -> Option<OpKind> {
        Some(self.kind)
    }

    fn type_attr(&self) -> Option<&'static CStr> {
        None
    }

    fn construct(&self, ctx: &Construction) -> KernelResult<Int8Attrs> {
        let window = match self.window_kind() {
            Some(kind) => window_kernels::read_attrs(kind, ctx)?,
            None => WindowAttrs::default(),
        };
        let transpose_b = match self.kind {
            OpKind::MatMulInt8 { .. } => ctx.bool_attr(c"transpose_b")?,
            _ => false,
        };
        Ok(Int8Attrs {
            window,
            transpose_b,
        })
    }

    fn compute(&self, a: &Int8Attrs, ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let (types, out_type) = self.types()?;
        let mut tensors: Vec<(Tensor, Shape)> = Vec::new();
        for (i, &dtype) in types.iter().enumerate() {
            let t = ctx.input(i, true)?;
            if t.dtype() != tf_type(dtype) {
                return Err(Failure::invalid(format!(
                    "input {i} is {:?}, expected {}",
                    t.dtype(),
                    dtype.name()
                )));
            }
            let shape = t.shape()?;
            tensors.push((t, shape));
        }
        let shapes: Vec<Shape> = tensors.iter().map(|(_, s)| *s).collect();
        let (kind, out_shape) = self.plan(a, &shapes)?;
        let out = ctx.output(&out_shape, &[])?;
        if is_empty(&out_shape) {
            return Ok(());
        }
        let inputs = tensors
            .iter()
            .zip(types)
            .map(|((t, s), &d)| run.typed_desc(t, *s, d))
            .collect::<KernelResult<Vec<TensorDesc>>>()?;
        let output = run.typed_desc(&out, out_shape, out_type)?;
        run.launch(kind, &inputs, output)
    }
}

impl Int8Kernel {
    /// The operands' types and the output's.
    fn types(&self) -> KernelResult<(&'static [DType], DType)> {
        self.kind
            .operand_types()
            .ok_or_else(|| Failure::invalid("not an int8 op"))
    }

    /// The catalogue op with its geometry, and the output shape, for
    /// inputs of `shapes`.
    fn plan(&self, a: &Int8Attrs, shapes: &[Shape]) -> KernelResult<(OpKind, Shape)> {
        let (types, _) = self.types()?;
        if shapes.len() != types.len() {
            return Err(Failure::invalid(format!(
                "{} inputs, expected {}",
                shapes.len(),
                types.len()
            )));
        }
        let shape = |i: usize| shapes[i];
        Ok(match (self.kind, self.window_kind()) {
            (_, Some(window_kind)) => {
                let filter = (types.len() == 3).then(|| shape(1));
                let (w, out) = geometry(window_kind, &a.window, &shape(0), filter.as_ref())?;
                let kind = match self.kind {
                    OpKind::Conv2DInt8(_) => OpKind::Conv2DInt8(w),
                    OpKind::DepthwiseConv2DInt8(_) => OpKind::DepthwiseConv2DInt8(w),
                    OpKind::MaxPoolInt8(_) => OpKind::MaxPoolInt8(w),
                    _ => OpKind::AvgPoolInt8(w),
                };
                (kind, out)
            }
            (OpKind::MatMulInt8 { .. }, None) => {
                let kind = OpKind::MatMulInt8 {
                    transpose_b: a.transpose_b,
                };
                let (sa, sb) = (shape(0), shape(1));
                let n = match (sb.dims(), a.transpose_b) {
                    ([n, _], true) | ([_, n], false) => *n,
                    _ => return Err(Failure::invalid(format!("b must be a matrix, got {sb:?}"))),
                };
                let m = sa.dims().first().copied().unwrap_or(0);
                (kind, flat(&[m, n])?)
            }
            (kind, None) => (kind, shape(0)),
        })
    }
}

/// The int8 op `op` (`_Tensorplug<DEVICE><Op>`) as one program command:
/// its catalogue op and output shape for inputs of `shapes`, with the
/// attributes a node gives (`transpose_b` is `MatMulInt8`'s); `None` for an
/// op that is none of these.
pub(crate) fn lower_for_program(
    op: &str,
    attrs: &impl AttrSource,
    transpose_b: bool,
    shapes: &[Shape],
) -> Option<KernelResult<(OpKind, Shape)>> {
    let k = int8_kernel(op)?;
    Some((|| {
        let window = match k.window_kind() {
            Some(kind) => window_kernels::read_attrs(kind, attrs)?,
            None => WindowAttrs::default(),
        };
        let a = Int8Attrs {
            window,
            transpose_b,
        };
        k.plan(&a, shapes)
    })())
}

/// Whether a program holds the int8 op `op` with these attributes (a
/// window's its kernel reads).
pub(crate) fn program_holds(op: &str, attrs: &impl AttrSource) -> bool {
    int8_kernel(op).is_some_and(|k| {
        k.window_kind()
            .is_none_or(|kind| window_kernels::read_attrs(kind, attrs).is_ok())
    })
}

/// The kernel of the int8 op called `op` on the installed device type.
pub(crate) fn int8_kernel(op: &str) -> Option<&'static Int8Kernel> {
    KERNELS
        .iter()
        .find(|k| Op::op(*k).to_bytes() == op.as_bytes())
}

fn tf_type(dtype: DType) -> TF_DataType {
    match dtype {
        DType::I8 => TF_DataType::TF_INT8,
        DType::I32 => TF_DataType::TF_INT32,
        _ => TF_DataType::TF_FLOAT,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_int8_op_has_one_kernel_named_for_the_device() {
        use tensorplug_core::accelerator::BUILTIN;
        let int8: Vec<_> = BUILTIN
            .iter()
            .filter(|d| d.default_kind().is_int8())
            .collect();
        assert_eq!(int8.len(), KERNELS.len());
        for (decl, k) in int8.iter().zip(&KERNELS) {
            assert_eq!(k.kind.decl().id, decl.id);
            assert_eq!(
                decl.name.trim_end_matches("Int8"),
                k.suffix.trim_end_matches("Int8")
            );
            // Inputs: the op's, the block last.
            assert_eq!(k.inputs.len(), decl.inputs as usize, "{}", decl.name);
            let last = k.inputs.last().unwrap().to_str().unwrap();
            assert_eq!(last, "quantization: int32");
        }
        let name = op_name("FPGA", "Conv2DInt8");
        assert_eq!(name, c"_TensorplugFPGAConv2DInt8");
        assert!(
            std::ptr::eq(name, op_name("FPGA", "Conv2DInt8")),
            "made once"
        );
    }
}
