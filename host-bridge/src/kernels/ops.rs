//! The registered kernels: which TF op, how its attributes are read at
//! construction, and what each compute call enqueues.

use super::failure::{Failure, KernelResult};
use super::launch::Launcher;
use super::shapes::{self, SumPlan};
use super::tf::{Construction, Context, Tensor};
use std::ffi::CStr;
use tensorplug_abi::tf::TF_DataType;
use tensorplug_core::accelerator::{Capabilities, DType, OpKind, Shape};

/// What a kernel computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelKind {
    /// `MatMul` (`transpose_a`, `transpose_b`).
    MatMul,
    /// `_FusedMatMul` with `fused_ops` `[BiasAdd]` or `[BiasAdd, Relu]`.
    FusedMatMul,
    /// `BiasAdd` (channels last).
    BiasAdd,
    /// A broadcasting element-wise op (`Add`, `Sub`, `Mul`, `Maximum`).
    Binary(OpKind),
    /// `Relu`.
    Relu,
    /// `Softmax` over the last axis.
    Softmax,
    /// `Sum` over a leading or trailing block of axes.
    Sum,
}

impl KernelKind {
    /// The device op family this kernel launches.
    pub const fn op_kind(self) -> OpKind {
        match self {
            Self::MatMul => OpKind::MatMul {
                transpose_a: false,
                transpose_b: false,
            },
            Self::FusedMatMul => OpKind::FusedMatMul {
                transpose_a: false,
                transpose_b: false,
                relu: false,
            },
            Self::BiasAdd => OpKind::BiasAdd,
            Self::Binary(kind) => kind,
            Self::Relu => OpKind::Relu,
            Self::Softmax => OpKind::Softmax,
            Self::Sum => OpKind::ReduceSum,
        }
    }

    /// [`Self::op_kind`]'s family name.
    pub const fn op_family(self) -> &'static str {
        self.op_kind().name()
    }

    /// Whether devices with `caps` run this kernel (f32 only, for now).
    pub const fn runs_on(self, caps: &Capabilities) -> bool {
        caps.supports(self.op_kind(), DType::F32)
    }
}

/// One kernel registration.
#[derive(Debug)]
pub struct KernelDef {
    /// The TF op.
    pub op: &'static CStr,
    /// What it computes.
    pub kind: KernelKind,
    /// Inputs TF keeps in host memory.
    pub host_memory: &'static [&'static CStr],
}

const fn def(op: &'static CStr, kind: KernelKind) -> KernelDef {
    KernelDef {
        op,
        kind,
        host_memory: &[],
    }
}

/// Every f32 kernel the bridge can register for a device type.
pub static KERNELS: [KernelDef; 11] = [
    def(c"MatMul", KernelKind::MatMul),
    def(c"_FusedMatMul", KernelKind::FusedMatMul),
    def(c"BiasAdd", KernelKind::BiasAdd),
    def(c"AddV2", KernelKind::Binary(OpKind::Add)),
    def(c"Add", KernelKind::Binary(OpKind::Add)),
    def(c"Sub", KernelKind::Binary(OpKind::Sub)),
    def(c"Mul", KernelKind::Binary(OpKind::Mul)),
    def(c"Maximum", KernelKind::Binary(OpKind::Maximum)),
    def(c"Relu", KernelKind::Relu),
    def(c"Softmax", KernelKind::Softmax),
    KernelDef {
        op: c"Sum",
        kind: KernelKind::Sum,
        host_memory: &[c"reduction_indices"],
    },
];

/// Attributes read once, at construction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Attrs {
    /// `transpose_a`.
    pub transpose_a: bool,
    /// `transpose_b`.
    pub transpose_b: bool,
    /// `_FusedMatMul` ends in `Relu`.
    pub relu: bool,
    /// `Sum`'s `keep_dims`.
    pub keep_dims: bool,
    /// `BiasAdd` with `data_format = "NCHW"`.
    pub nchw: bool,
}

/// One kernel instance (TF's `OpKernel`).
#[derive(Debug)]
pub struct Kernel {
    /// Its registration.
    pub def: &'static KernelDef,
    /// Its attributes.
    pub attrs: Attrs,
    /// The node name at construction.
    pub node: String,
    /// Whether compute waits for the device and reports its failure itself
    /// (the node has [`WAIT_ATTR`] set: a variable update's arithmetic).
    pub wait: bool,
}

/// A node attribute the graph pass sets on the arithmetic of a variable
/// update: its kernel waits, so a device fault fails the step before the
/// variable is assigned (`docs/ops.md`, "Variables and training").
pub const WAIT_ATTR: &std::ffi::CStr = c"_tensorplug_wait_for_device";

impl Kernel {
    /// The TF op type, e.g. `MatMul`.
    pub fn op_type(&self) -> &'static str {
        self.def.op.to_str().unwrap_or("?")
    }
}

/// Reads the attributes `def` needs; unsupported values are failures.
pub fn construct(def: &'static KernelDef, ctx: &Construction) -> KernelResult<Attrs> {
    let mut attrs = Attrs::default();
    match def.kind {
        KernelKind::MatMul | KernelKind::FusedMatMul => {
            attrs.transpose_a = ctx.bool_attr(c"transpose_a")?;
            attrs.transpose_b = ctx.bool_attr(c"transpose_b")?;
        }
        KernelKind::BiasAdd => match ctx.string_attr(c"data_format")?.as_str() {
            "NHWC" => {}
            "NCHW" => attrs.nchw = true,
            other => return Err(Failure::unimplemented(format!("data_format {other:?}"))),
        },
        KernelKind::Sum => attrs.keep_dims = ctx.bool_attr(c"keep_dims")?,
        KernelKind::Binary(_) | KernelKind::Relu | KernelKind::Softmax => {}
    }
    if def.kind == KernelKind::FusedMatMul {
        attrs.relu = fused_relu(&ctx.string_list_attr(c"fused_ops")?)?;
        let num_args = ctx.int_attr(c"num_args")?;
        if num_args != 1 {
            return Err(Failure::unimplemented(format!(
                "num_args = {num_args} (the device fuses one bias)"
            )));
        }
    }
    Ok(attrs)
}

/// `fused_ops` → whether a ReLU follows the bias.
pub fn fused_relu(fused_ops: &[String]) -> KernelResult<bool> {
    match fused_ops {
        [bias] if bias == "BiasAdd" => Ok(false),
        [bias, relu] if bias == "BiasAdd" && relu == "Relu" => Ok(true),
        other => Err(Failure::unimplemented(format!(
            "fused_ops {other:?} (the device fuses [BiasAdd] and [BiasAdd, Relu])"
        ))),
    }
}

/// One compute call of `kernel`.
pub fn compute(kernel: &Kernel, ctx: &Context) -> KernelResult<()> {
    let stream = ctx.stream()?;
    let mut run = Launcher::new(stream, kernel.op_type(), ctx.node_name());
    let attrs = kernel.attrs;
    match kernel.def.kind {
        KernelKind::MatMul | KernelKind::FusedMatMul => {
            let (a, b) = (ctx.input(0, false)?, ctx.input(1, false)?);
            let (sa, sb) = (a.shape()?, b.shape()?);
            let out_shape = shapes::matmul(&sa, &sb, attrs.transpose_a, attrs.transpose_b)?;
            let out = ctx.output(&out_shape, &[])?;
            if is_empty(&out_shape) {
                return Ok(());
            }
            let mut inputs = vec![run.desc(&a, sa)?, run.desc(&b, sb)?];
            let kind = if kernel.def.kind == KernelKind::MatMul {
                OpKind::MatMul {
                    transpose_a: attrs.transpose_a,
                    transpose_b: attrs.transpose_b,
                }
            } else {
                let bias = ctx.input(2, false)?;
                let bias_shape = bias.shape()?;
                shapes::bias(&out_shape, &bias_shape)?;
                inputs.push(run.desc(&bias, bias_shape)?);
                OpKind::FusedMatMul {
                    transpose_a: attrs.transpose_a,
                    transpose_b: attrs.transpose_b,
                    relu: attrs.relu,
                }
            };
            run.launch(kind, &inputs, run.desc(&out, out_shape)?)?;
        }
        KernelKind::BiasAdd => {
            let (x, bias) = (ctx.input(0, false)?, ctx.input(1, false)?);
            let (sx, sb) = (x.shape()?, bias.shape()?);
            if attrs.nchw && sx.dims().len() > 2 {
                return Err(Failure::unimplemented(
                    "data_format NCHW on tensors of rank > 2 (channels must be last)",
                ));
            }
            shapes::bias(&sx, &sb)?;
            let out = ctx.output(&sx, &[0])?;
            if is_empty(&sx) {
                return Ok(());
            }
            let inputs = [run.desc(&x, sx)?, run.desc(&bias, sb)?];
            run.launch(OpKind::BiasAdd, &inputs, run.desc(&out, sx)?)?;
        }
        KernelKind::Binary(kind) => {
            let (a, b) = (ctx.input(0, false)?, ctx.input(1, false)?);
            let (sa, sb) = (a.shape()?, b.shape()?);
            let out_shape = shapes::broadcast(&sa, &sb)?;
            let out = ctx.output(&out_shape, &[0, 1])?;
            if is_empty(&out_shape) {
                return Ok(());
            }
            let inputs = [run.desc(&a, sa)?, run.desc(&b, sb)?];
            run.launch(kind, &inputs, run.desc(&out, out_shape)?)?;
        }
        KernelKind::Relu | KernelKind::Softmax => {
            let x = ctx.input(0, false)?;
            let sx = x.shape()?;
            let (kind, candidates): (_, &[_]) = if kernel.def.kind == KernelKind::Relu {
                (OpKind::Relu, &[0])
            } else {
                if sx.dims().is_empty() {
                    return Err(Failure::invalid("logits must have >= 1 dimension, got []"));
                }
                (OpKind::Softmax, &[])
            };
            let out = ctx.output(&sx, candidates)?;
            if is_empty(&sx) {
                return Ok(());
            }
            run.launch(kind, &[run.desc(&x, sx)?], run.desc(&out, sx)?)?;
        }
        KernelKind::Sum => sum(ctx, &mut run, attrs.keep_dims)?,
    }
    run.finish().map(drop)
}

fn is_empty(shape: &Shape) -> bool {
    shape.elements() == Some(0)
}

fn flat(dims: &[u64]) -> KernelResult<Shape> {
    Shape::new(dims).ok_or_else(|| Failure::invalid("bad rank"))
}

fn sum(ctx: &Context, run: &mut Launcher<'_>, keep_dims: bool) -> KernelResult<()> {
    let x = ctx.input(0, false)?;
    let sx = x.shape()?;
    let axes = read_axes(&ctx.input(1, true)?)?;
    let (out_shape, plan) = shapes::sum(&sx, &axes, keep_dims)?;
    let out = ctx.output(&out_shape, &[])?;
    match plan {
        SumPlan::Nothing => {}
        SumPlan::Zeros => run.fill(run.desc(&out, out_shape)?, 0)?,
        SumPlan::Copy => run.copy(run.desc(&out, out_shape)?, run.desc(&x, sx)?)?,
        SumPlan::Trailing { rows, len } => {
            let input = run.desc(&x, flat(&[rows, len])?)?;
            run.launch(OpKind::ReduceSum, &[input], run.desc(&out, flat(&[rows])?)?)?;
        }
        SumPlan::Leading { len, cols } => {
            let ones_shape = flat(&[1, len])?;
            let ones = ctx.temp(&ones_shape)?;
            let ones = run.desc(&ones, ones_shape)?;
            run.fill(ones, 1.0f32.to_bits())?;
            let inputs = [ones, run.desc(&x, flat(&[len, cols])?)?];
            let kind = OpKind::MatMul {
                transpose_a: false,
                transpose_b: false,
            };
            run.launch(kind, &inputs, run.desc(&out, flat(&[1, cols])?)?)?;
        }
    }
    Ok(())
}

/// The host-memory `reduction_indices` (int32 or int64, scalar or vector).
fn read_axes(tensor: &Tensor) -> KernelResult<Vec<i64>> {
    let bytes = tensor.byte_size();
    let data = tensor.data().cast::<u8>();
    if bytes > 0 && data.is_null() {
        return Err(Failure::invalid("reduction_indices has no data"));
    }
    let width = match tensor.dtype() {
        TF_DataType::TF_INT32 => 4,
        TF_DataType::TF_INT64 => 8,
        other => {
            return Err(Failure::invalid(format!(
                "reduction_indices must be int32 or int64, not {other:?}"
            )));
        }
    };
    Ok((0..bytes / width)
        .map(|i| {
            // SAFETY: host memory (HostMemory input) of `bytes` bytes; unaligned reads.
            unsafe {
                let at = data.add(i * width);
                if width == 4 {
                    i64::from(at.cast::<i32>().read_unaligned())
                } else {
                    at.cast::<i64>().read_unaligned()
                }
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fused_ops_accepted_are_the_device_ones() {
        let list = |ops: &[&str]| ops.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(fused_relu(&list(&["BiasAdd"])), Ok(false));
        assert_eq!(fused_relu(&list(&["BiasAdd", "Relu"])), Ok(true));
        let error = fused_relu(&list(&["BiasAdd", "Relu6"])).unwrap_err();
        assert_eq!(error.code, tensorplug_abi::tf::TF_UNIMPLEMENTED);
        assert!(error.cause.contains("Relu6"));
        assert!(fused_relu(&[]).is_err());
    }

    #[test]
    fn the_table_registers_each_op_once_and_sum_reads_axes_on_the_host() {
        let mut ops: Vec<_> = KERNELS.iter().map(|k| k.op).collect();
        ops.sort();
        ops.dedup();
        assert_eq!(ops.len(), KERNELS.len());
        for kernel in &KERNELS {
            let host = kernel.kind == KernelKind::Sum;
            assert_eq!(
                kernel.host_memory == [c"reduction_indices"],
                host,
                "{kernel:?}"
            );
        }
    }
}
