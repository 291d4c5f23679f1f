//! What a kernel is ([`Op`], [`TfKernel`], [`Kernel`]) and the helpers the
//! op files share. A leaf of `ops`: it imports neither the backend nor the
//! kernel table (`ops/mod.rs`), so the op files and the backend can import it.

use super::super::failure::{Failure, KernelResult};
use super::super::launch::Launcher;
use super::super::tf::{Construction, Context, Tensor};
use std::any::Any;
use std::ffi::CStr;
use tensorplug_abi::tf::TF_DataType;
use tensorplug_core::accelerator::{Capabilities, DType, OpKind, Shape, TensorDesc};

/// Two type attributes and the types one registration constrains them to.
pub type TypePair = [(&'static CStr, TF_DataType); 2];

/// One TF kernel, written once per op (or per family of ops, as
/// the bridge's `binary::BinaryKernel`).
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
    /// Device op families compute launches when the device declares them,
    /// doing without otherwise (`ConcatV2`'s row joins).
    fn may_launch(&self) -> &'static [OpKind] {
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
    /// Integer attributes and the one value each registration allows
    /// (`GatherV2`'s `batch_dims`: 0): TF then places other values on the
    /// CPU, in eager mode too, instead of failing at construction.
    fn int_constraints(&self) -> &'static [(&'static CStr, i64)] {
        &[]
    }
    /// Whether it is registered as an async kernel where TF has them
    /// (`TF_NewAsyncKernelBuilder`). Its compute is the same and says it is
    /// done as it returns; but TF runs the nodes an async kernel makes ready
    /// on its thread pool, where it runs a pluggable device's other kernels
    /// inline, one after the other, on one thread. The program op is one:
    /// two independent loops (a BiLSTM's directions) then run in parallel.
    fn registers_async(&self) -> bool {
        false
    }
    /// Whether this TF has the C functions the kernel calls (`variant.rs`:
    /// `TF_AddNVariant`); a kernel without them is not registered.
    fn available(&self) -> bool {
        true
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
    /// See [`Op::may_launch`].
    fn may_launch(&self) -> &'static [OpKind];
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
    /// See [`Op::int_constraints`].
    fn int_constraints(&self) -> &'static [(&'static CStr, i64)];
    /// See [`Op::registers_async`].
    fn registers_async(&self) -> bool;
    /// See [`Op::available`].
    fn available(&self) -> bool;
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
            .all(|&kind| crate::kernels::launch::declares(caps, kind))
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

    fn may_launch(&self) -> &'static [OpKind] {
        Op::may_launch(self)
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

    fn int_constraints(&self) -> &'static [(&'static CStr, i64)] {
        Op::int_constraints(self)
    }

    fn registers_async(&self) -> bool {
        Op::registers_async(self)
    }

    fn available(&self) -> bool {
        Op::available(self)
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
    /// Whether its operands are widened to float32 (`half.rs`): found at
    /// its first compute call, as its types are fixed.
    pub widens: std::sync::OnceLock<bool>,
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

/// An element-wise op's input 0 and its output, of the same shape (TF may
/// hand input 0's buffer over as the output); `None` when it is empty.
pub fn elementwise(ctx: &Context) -> KernelResult<Option<(Tensor, Shape, Tensor)>> {
    let x = ctx.input(0, false)?;
    let shape = x.shape()?;
    let out = ctx.output(&shape, &[0])?;
    Ok((!is_empty(&shape)).then_some((x, shape, out)))
}

/// Whether a tensor of `shape` has no elements (nothing to launch).
pub(super) fn is_empty(shape: &Shape) -> bool {
    shape.elements() == Some(0)
}

/// A device temporary and its descriptor. TF frees a temp's memory as soon
/// as its tensor is dropped, so the tensor is held here until every launch
/// that reads the descriptor is enqueued (a dropped temp could be handed to
/// another op and overwritten before the device reads it).
pub(super) struct HeldTemp {
    _tensor: Tensor,
    pub(super) desc: TensorDesc,
}

/// A device scalar holding `value` (a temp filled on the device).
pub(super) fn scalar(ctx: &Context, run: &mut Launcher<'_>, value: f32) -> KernelResult<HeldTemp> {
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
pub(super) fn flat(dims: &[u64]) -> KernelResult<Shape> {
    Shape::new(dims).ok_or_else(|| Failure::invalid("bad rank"))
}

/// An element-wise op's parameter from its TF attribute ([`OpDecl::param`]:
/// `LeakyRelu`'s `alpha`), 0.0 for an op without one.
///
/// [`OpDecl::param`]: tensorplug_core::accelerator::OpDecl::param
pub(super) fn param_attr(kind: OpKind, ctx: &Construction) -> KernelResult<f32> {
    match kind.decl().param() {
        Some(name) => {
            let name = std::ffi::CString::new(name)
                .map_err(|_| Failure::invalid("a NUL in an attribute name"))?;
            ctx.float_attr(&name)
        }
        None => Ok(0.0),
    }
}

/// `kind` with its parameter set (an element-wise op that has one).
pub(crate) fn with_param(kind: OpKind, value: f32) -> OpKind {
    match kind {
        OpKind::Unary(op) => OpKind::Unary(op.with_param(value)),
        OpKind::Binary(op) => OpKind::Binary(op.with_param(value)),
        kind => kind,
    }
}
