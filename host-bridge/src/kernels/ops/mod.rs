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
mod cast;
mod compare;
mod concat;
pub(crate) mod einsum;
mod fill;
pub(crate) mod fused_matmul;
#[doc(hidden)]
pub mod fuzzing;
mod gather;
pub mod int8;
mod int_add;
mod matmul;
mod neg_square;
mod pad;
mod random;
mod reduce;
mod reverse;
mod select;
mod slice;
mod softmax;
mod split;
mod strided_slice;
mod sum;
mod tile;
mod transpose;
mod unary;
pub(crate) mod window;
mod window_geometry;
mod window_grad;
mod xent;

use super::failure::{Failure, KernelResult};
use super::launch::Launcher;
use super::tf::{Construction, Context, Tensor};
use std::any::Any;
use std::ffi::CStr;
use tensorplug_abi::tf::TF_DataType;
use tensorplug_core::accelerator::{Capabilities, DType, OpKind, Shape, TensorDesc};

/// Two type attributes and the types one registration constrains them to.
pub type TypePair = [(&'static CStr, TF_DataType); 2];

/// One TF kernel, written once per op (or per family of ops, as
/// [`binary::BinaryKernel`]).
pub trait Op: Sync + 'static {
    /// What the kernel reads from the node at construction (`()` for none).
    type Attrs: Default + Send + Sync + 'static;
    /// The TF op type it is registered for.
    fn op(&self) -> &'static CStr;
    /// The device op family it lowers to: the kernel is registered when
    /// every device declares it ([`Capabilities`]). `None`: the kernel only
    /// copies and fills, which every device does.
    fn family(&self) -> Option<OpKind>;
    /// Other device op families compute may launch: the kernel is
    /// registered only when the device declares these too.
    fn also_launches(&self) -> &'static [OpKind] {
        &[]
    }
    /// Device op families the kernel does not launch but is registered
    /// beside only (the collectives' int64 `Add`: where f32 `Add` runs).
    fn only_beside(&self) -> &'static [OpKind] {
        &[]
    }
    /// Inputs TF keeps in host memory (`HostMemory` in TF's registrations).
    fn host_memory(&self) -> &'static [&'static CStr] {
        &[]
    }
    /// The type attribute the registration constrains to float32 (`T`);
    /// `None` for an op of fixed types (the int8 ops).
    fn type_attr(&self) -> Option<&'static CStr> {
        Some(c"T")
    }
    /// Types besides float32 the kernel is also registered for under
    /// [`Op::type_attr`] (a fill: `int32`, which TF's own `DEVICE_DEFAULT`
    /// kernels would otherwise read from device memory as host memory).
    fn more_types(&self) -> &'static [TF_DataType] {
        &[]
    }
    /// Whether it is registered for float32 under [`Op::type_attr`] (false:
    /// only for [`Op::more_types`], as the collectives' integer `Add`).
    fn registers_f32(&self) -> bool {
        true
    }
    /// The registrations, when they constrain two type attributes together
    /// (`Cast`'s `SrcT` and `DstT`): one per pair, instead of
    /// [`Op::type_attr`] and [`Op::more_types`].
    fn type_pairs(&self) -> &'static [TypePair] {
        &[]
    }
    /// Reads and checks the attributes; an unsupported value is a failure
    /// that names the attribute. The default reads none.
    fn construct(&self, _ctx: &Construction) -> KernelResult<Self::Attrs> {
        Ok(Self::Attrs::default())
    }
    /// One compute call: validates shapes, allocates the outputs and
    /// enqueues device work through `run`.
    fn compute(
        &self,
        attrs: &Self::Attrs,
        ctx: &Context,
        run: &mut Launcher<'_>,
    ) -> KernelResult<()>;
}

/// An [`Op`] with its attributes type erased, as the table holds it.
pub trait TfKernel: Sync {
    /// The TF op type.
    fn op(&self) -> &'static CStr;
    /// See [`Op::family`].
    fn family(&self) -> Option<OpKind>;
    /// See [`Op::also_launches`].
    fn also_launches(&self) -> &'static [OpKind];
    /// See [`Op::only_beside`].
    fn only_beside(&self) -> &'static [OpKind];
    /// See [`Op::host_memory`].
    fn host_memory(&self) -> &'static [&'static CStr];
    /// See [`Op::type_attr`].
    fn type_attr(&self) -> Option<&'static CStr>;
    /// See [`Op::more_types`].
    fn more_types(&self) -> &'static [TF_DataType];
    /// See [`Op::registers_f32`].
    fn registers_f32(&self) -> bool;
    /// See [`Op::type_pairs`].
    fn type_pairs(&self) -> &'static [TypePair];
    /// See [`Op::construct`].
    fn construct(&self, ctx: &Construction) -> KernelResult<Box<dyn Any + Send + Sync>>;
    /// See [`Op::compute`]; `attrs` is what [`Self::construct`] returned.
    fn compute(
        &self,
        attrs: &(dyn Any + Send + Sync),
        ctx: &Context,
        run: &mut Launcher<'_>,
    ) -> KernelResult<()>;

    /// The device op family's name (`None` for copies and fills only).
    fn op_family(&self) -> Option<&'static str> {
        self.family().map(OpKind::name)
    }

    /// Whether devices with `caps` run this kernel: its op families on f32
    /// (on i8 for the int8 ones). A kernel that only copies and fills runs
    /// on devices that compute something in f32, beside the kernels that do.
    fn runs_on(&self, caps: &Capabilities) -> bool {
        if self.family().is_none() && (caps.ops.is_empty() || !caps.dtypes.contains(DType::F32)) {
            return false;
        }
        self.family()
            .iter()
            .chain(self.also_launches())
            .chain(self.only_beside())
            .all(|&kind| {
                let dtype = if kind.is_int8() {
                    DType::I8
                } else {
                    DType::F32
                };
                caps.supports(kind, dtype)
            })
    }
}

impl<T: Op> TfKernel for T {
    fn op(&self) -> &'static CStr {
        Op::op(self)
    }

    fn family(&self) -> Option<OpKind> {
        Op::family(self)
    }

    fn also_launches(&self) -> &'static [OpKind] {
        Op::also_launches(self)
    }

    fn only_beside(&self) -> &'static [OpKind] {
        Op::only_beside(self)
    }

    fn host_memory(&self) -> &'static [&'static CStr] {
        Op::host_memory(self)
    }

    fn type_attr(&self) -> Option<&'static CStr> {
        Op::type_attr(self)
    }

    fn more_types(&self) -> &'static [TF_DataType] {
        Op::more_types(self)
    }

    fn registers_f32(&self) -> bool {
        Op::registers_f32(self)
    }

    fn type_pairs(&self) -> &'static [TypePair] {
        Op::type_pairs(self)
    }

    fn construct(&self, ctx: &Construction) -> KernelResult<Box<dyn Any + Send + Sync>> {
        Ok(Box::new(Op::construct(self, ctx)?))
    }

    fn compute(
        &self,
        attrs: &(dyn Any + Send + Sync),
        ctx: &Context,
        run: &mut Launcher<'_>,
    ) -> KernelResult<()> {
        let attrs = attrs
            .downcast_ref::<T::Attrs>()
            .ok_or_else(|| Failure::invalid("kernel attributes of another op"))?;
        Op::compute(self, attrs, ctx, run)
    }
}

/// The f32 kernels besides the element-wise families'.
static KERNELS: [&dyn TfKernel; 66] = [
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

/// One kernel instance (TF's `OpKernel`).
pub struct Kernel {
    /// Its table entry.
    pub def: &'static dyn TfKernel,
    /// Its attributes ([`TfKernel::construct`]).
    pub attrs: Box<dyn Any + Send + Sync>,
    /// The node name at construction.
    pub node: String,
    /// Whether compute waits for the device and reports its failure itself
    /// (the node has [`WAIT_ATTR`] set: a variable update's arithmetic; or
    /// every kernel on a TF that aborts on a failed copy, `support`).
    pub wait: bool,
}

/// A node attribute the graph pass sets on the arithmetic of a variable
/// update: its kernel waits, so a device fault fails the step before the
/// variable is assigned (`docs/ops.md`, "Variables and training").
pub const WAIT_ATTR: &CStr = c"_tensorplug_wait_for_device";

impl Kernel {
    /// The TF op type, e.g. `MatMul`.
    pub fn op_type(&self) -> &'static str {
        self.def.op().to_str().unwrap_or("?")
    }
}

/// One compute call of `kernel`.
pub fn compute(kernel: &Kernel, ctx: &Context) -> KernelResult<()> {
    let stream = ctx.stream()?;
    let mut run = Launcher::new(stream, kernel.op_type(), ctx.node_name());
    kernel.def.compute(kernel.attrs.as_ref(), ctx, &mut run)?;
    run.finish().map(drop)
}

/// An element-wise op's input 0 and its output, of the same shape (TF may
/// hand input 0's buffer over as the output); `None` when it is empty.
pub fn elementwise(ctx: &Context) -> KernelResult<Option<(Tensor, Shape, Tensor)>> {
    let x = ctx.input(0, false)?;
    let shape = x.shape()?;
    let out = ctx.output(&shape, &[0])?;
    Ok((!is_empty(&shape)).then_some((x, shape, out)))
}

/// Whether a tensor of `shape` has no elements (nothing to launch).
fn is_empty(shape: &Shape) -> bool {
    shape.elements() == Some(0)
}

/// A device temporary and its descriptor. TF frees a temp's memory as soon
/// as its tensor is dropped, so the tensor is held here until every launch
/// that reads the descriptor is enqueued (a dropped temp could be handed to
/// another op and overwritten before the device reads it).
struct HeldTemp {
    _tensor: Tensor,
    desc: TensorDesc,
}

/// A device scalar holding `value` (a temp filled on the device).
fn scalar(ctx: &Context, run: &mut Launcher<'_>, value: f32) -> KernelResult<HeldTemp> {
    let shape = flat(&[])?;
    let tensor = ctx.temp(&shape)?;
    let desc = run.desc(&tensor, shape)?;
    run.fill(desc, value.to_bits())?;
    Ok(HeldTemp {
        _tensor: tensor,
        desc,
    })
}

/// A shape from dims the kernel computed itself.
fn flat(dims: &[u64]) -> KernelResult<Shape> {
    Shape::new(dims).ok_or_else(|| Failure::invalid("bad rank"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each op of core's catalogue is what some TF kernel lowers to, so TF
    /// can place it and the op sweep (which fails on a registered op
    /// without cases) reaches it.
    #[test]
    fn every_declared_device_op_has_a_tf_kernel() {
        for decl in tensorplug_core::accelerator::BUILTIN {
            let id = decl.id;
            let lowered = builtin().any(|k| {
                k.family()
                    .iter()
                    .chain(k.also_launches())
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
        // Add twice: float32 (element-wise family) and int64 on the host.
        assert_eq!(ops.len(), BUILTIN_COUNT - 2);
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
                b"ReverseV2" => &[c"axis"],
                _ => &[],
            };
            assert_eq!(kernel.host_memory(), host, "{:?}", kernel.op());
        }
    }
}
