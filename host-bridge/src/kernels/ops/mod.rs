//! The TF kernels, one module each: its TF op, the attributes it reads at
//! construction, its shape rule and what each compute call enqueues. The
//! [`KERNELS`] table lists them; adding a kernel is a module plus a line
//! there (`docs/ops.md`, "Adding a kernel").

mod add_n;
mod batch_matmul;
mod batch_norm;
mod bias_add;
mod bias_add_grad;
mod binary;
mod bitcast;
mod blocks;
mod broadcast_to;
pub(crate) mod cast;
mod compare;
pub(crate) mod concat;
mod cumsum;
pub(crate) mod einsum;
mod fill;
pub(crate) mod fused_matmul;
#[cfg(feature = "internals")]
pub mod fuzzing;
mod gather;
pub(crate) mod half;
mod host_add;
pub mod int8;
mod int_add;
pub(crate) mod kernel;
mod logical;
mod matmul;
mod neg_square;
mod pad;
mod random;
mod reduce;
mod reverse;
mod select;
mod slice;
mod softmax;
pub(crate) mod split;
mod strided_slice;
mod sum;
mod tile;
mod transpose;
mod unary;
mod variant;
pub(crate) mod window;
mod window_geometry;
mod window_grad;
mod xent;

pub(crate) use batch_matmul::record_kind;
pub use kernel::{Kernel, Op, TfKernel, WAIT_ATTR, elementwise};
pub(crate) use matmul::Transposes;

use super::failure::KernelResult;
use super::launch::Launcher;
use super::tf::Context;

/// One compute call of `kernel`, its operands widened to float32 where it
/// is one of the half-precision or int8 registrations (`half.rs`).
pub fn compute(kernel: &Kernel, ctx: &Context) -> KernelResult<()> {
    let stream = ctx.stream()?;
    let mut run = Launcher::new(stream, kernel.op_type(), ctx.node_name());
    let widens = *kernel
        .widens
        .get_or_init(|| half::widens(kernel.op_type(), ctx));
    if widens {
        half::widen_inputs(ctx, &mut run)?;
    }
    kernel.def.compute(kernel.attrs.as_ref(), ctx, &mut run)?;
    if widens {
        half::narrow_outputs(ctx, &mut run)?;
    }
    run.finish().map(drop)
}

/// The f32 kernels besides the element-wise families'.
static KERNELS: &[&dyn TfKernel] = &[
    &matmul::MatMul,
    &fused_matmul::FusedMatMul,
    &bias_add::BiasAdd,
    &softmax::SOFTMAX,
    &sum::SUM,
    &bias_add_grad::BiasAddGrad,
    &neg_square::NEG,
    &neg_square::SQUARE,
    &broadcast_to::BroadcastTo,
    &tile::Tile,
    &softmax::LOG_SOFTMAX,
    &xent::SparseSoftmaxXent,
    &xent::SoftmaxXent,
    &sum::MEAN,
    &window::CONV2D,
    &window::DEPTHWISE,
    &window::MAX_POOL,
    &window::AVG_POOL,
    &pad::Pad,
    &window::CONV2D_BACKPROP_INPUT,
    &window::CONV2D_BACKPROP_FILTER,
    &window::MAX_POOL_GRAD,
    &window::AVG_POOL_GRAD,
    &slice::Slice,
    &concat::ConcatV2,
    &window::FUSED_CONV2D,
    &transpose::Transpose,
    &strided_slice::StridedSlice,
    &strided_slice::StridedSliceHost,
    &batch_norm::FusedBatchNorm,
    &window::DEPTHWISE_BACKPROP_INPUT,
    &window::DEPTHWISE_BACKPROP_FILTER,
    &split::KERNELS[0],
    &split::KERNELS[1],
    &split::KERNELS[2],
    &split::KERNELS[3],
    &reverse::ReverseV2,
    &fill::KERNELS[0],
    &fill::KERNELS[1],
    &strided_slice::StridedSliceGrad,
    &bitcast::Bitcast,
    &int_add::IntAdd,
    &batch_matmul::KERNELS[0],
    &batch_matmul::KERNELS[1],
    &batch_matmul::Int8BatchMatMul,
    &einsum::Einsum,
    &add_n::AddN,
    &gather::GatherV2,
    &gather::UnsortedSegmentSum,
    &reduce::KERNELS[0],
    &reduce::KERNELS[1],
    &reduce::KERNELS[2],
    &cast::Cast,
    &compare::KERNELS[0],
    &compare::KERNELS[1],
    &compare::KERNELS[2],
    &compare::KERNELS[3],
    &compare::KERNELS[4],
    &compare::KERNELS[5],
    &select::KERNELS[0],
    &select::KERNELS[1],
    &fill::FillValue,
    &reduce::ARG_KERNELS[0],
    &reduce::ARG_KERNELS[1],
    &random::StatelessUniform,
    &random::StatefulUniform,
    &compare::IsFinite,
    &cumsum::Cumsum,
    &variant::KERNELS[0],
    &variant::KERNELS[1],
    &logical::KERNELS[0],
    &logical::KERNELS[1],
    &logical::LogicalNot,
];

/// Every kernel the bridge can register for a device type: [`KERNELS`],
/// the element-wise families' tables, then the int8 ops'.
pub fn builtin() -> impl Iterator<Item = &'static dyn TfKernel> {
    let unary = unary::KERNELS.iter().map(|k| k as &dyn TfKernel);
    let binary = binary::KERNELS.iter().map(|k| k as &dyn TfKernel);
    let int8 = int8::KERNELS.iter().map(|k| k as &dyn TfKernel);
    KERNELS
        .iter()
        .copied()
        .chain(unary)
        .chain(binary)
        .chain(int8)
}

/// How many kernels [`builtin`] gives.
pub const BUILTIN_COUNT: usize =
    KERNELS.len() + unary::KERNELS.len() + binary::KERNELS.len() + int8::KERNELS.len();

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    /// Each op of core's catalogue is what some TF kernel lowers to (the
    /// program kernel's fused commands included), so TF can place it and
    /// the op sweep (which fails on a registered op without cases) reaches it.
    #[test]
    fn every_declared_device_op_has_a_tf_kernel() {
        for decl in tensorplug_core::accelerator::BUILTIN {
            let id = decl.id;
            let program: &dyn TfKernel = &crate::kernels::program::PROGRAM;
            let lowered = builtin().chain([program]).any(|k| {
                k.family()
                    .iter()
                    .chain(k.also_launches())
                    .chain(k.may_launch())
                    .any(|f| f.decl().id == id)
            });
            assert!(
                lowered,
                "no TF kernel lowers to the device op {}",
                decl.name
            );
        }
    }

    #[test]
    fn the_table_registers_each_op_once_and_host_memory_inputs_are_the_shape_ones() {
        let mut ops: Vec<_> = builtin().map(|k| k.op()).collect();
        ops.sort();
        ops.dedup();
        // StridedSlice twice: float32 on the device, int32 on the host;
        // Add twice: float32 (element-wise family) and int64 on the host;
        // AddN and ZerosLike twice: float32 and variant (`variant.rs`).
        assert_eq!(ops.len(), BUILTIN_COUNT - 4);
        for kernel in builtin() {
            let host: &[&CStr] = match kernel.op().to_bytes() {
                b"Sum" | b"Mean" | b"Max" | b"Min" | b"Prod" => &[c"reduction_indices"],
                b"GatherV2" => &[c"axis"],
                b"ArgMax" | b"ArgMin" => &[c"dimension"],
                b"StatelessRandomUniformV2" => &[c"shape", c"key", c"counter", c"alg"],
                b"RandomUniform" => &[c"shape"],
                b"UnsortedSegmentSum" => &[c"num_segments"],
                b"Pad" => &[c"paddings"],
                b"BroadcastTo" => &[c"shape"],
                b"Tile" => &[c"multiples"],
                b"SparseSoftmaxCrossEntropyWithLogits" => &[c"labels"],
                b"Conv2DBackpropInput" | b"DepthwiseConv2dNativeBackpropInput" => &[c"input_sizes"],
                b"Conv2DBackpropFilter" | b"DepthwiseConv2dNativeBackpropFilter" => {
                    &[c"filter_sizes"]
                }
                b"AvgPoolGrad" => &[c"orig_input_shape"],
                b"Slice" => &[c"begin", c"size"],
                b"ConcatV2" => &[c"axis"],
                b"Transpose" => &[c"perm"],
                b"StridedSlice" if kernel.host_memory().len() == 5 => {
                    &[c"input", c"begin", c"end", c"strides", c"output"]
                }
                b"StridedSlice" => &[c"begin", c"end", c"strides"],
                b"StridedSliceGrad" => &[c"shape", c"begin", c"end", c"strides"],
                b"Fill" => &[c"dims"],
                b"Split" => &[c"split_dim"],
                b"SplitV" => &[c"size_splits", c"split_dim"],
                b"ReverseV2" | b"Cumsum" => &[c"axis"],
                b"LogicalAnd" | b"LogicalOr" => &[c"x", c"y", c"z"],
                b"LogicalNot" => &[c"x", c"y"],
                _ => &[],
            };
            assert_eq!(kernel.host_memory(), host, "{:?}", kernel.op());
        }
    }
}
