//! `TF_InitKernel`: the kernels of the plugin's device type, for the ops
//! (and element types) its devices declare ([`Capabilities`]).
//!
//! Each kernel ([`ops`]: one module per TF op, listed in [`KERNELS`]) reads
//! its attributes once at construction, and each compute call maps TF's
//! tensors to device descriptors through the registry's handle scheme,
//! enqueues the op on the stream TF gives
//! (`TF_GetStream`) and returns without waiting ([`launch`]). Failures reach
//! Python as `tf.errors.*Error` with `<TYPE> <op> '<node>': <cause>`: from the
//! kernel itself (shapes, attributes), or for device errors from the later
//! wait that observes them (the registry remembers each fence's op).
//!
//! Coverage, fallbacks and tolerances: `docs/ops.md`.

mod builder;
mod commands;
mod failure;
mod kernel_def;
mod launch;
mod op_def;
pub mod ops;
pub mod program;
pub mod qat;
pub mod shapes;
mod tf;
mod variables;

pub use failure::{Failure, KernelResult};
pub use launch::Launcher;
pub use ops::WAIT_ATTR;
pub use tf::{Construction, Context};

use crate::ffi;
use crate::{backend, log, registry};
use builder::{CreateFn, KernelBuilder};
use ops::{BUILTIN_COUNT, Kernel, TfKernel};
use std::ffi::{CStr, c_void};
use tensorplug_abi::tf::{TF_DataType, TF_OpKernelConstruction, TF_OpKernelContext};
use tensorplug_core::accelerator::{Capabilities, DType, Namespace, OpDecl, OpKind};

/// `TF_InitKernel` (emitted by [`export_plugin!`](crate::export_plugin)):
/// registers the kernels of `ops::KERNELS` that every open device declares. It
/// has no status: a kernel that fails to register is logged and skipped (its
/// op then runs on the CPU under soft placement), never aborting TF.
pub fn tf_init_kernel() {
    ffi::swallow("TF_InitKernel", (), || {
        let devices = registry::devices();
        if devices.is_empty() {
            return Ok(());
        }
        let caps = common_capabilities(devices.iter().map(|d| d.info().capabilities));
        warn_about_contradictions(&caps);
        let int8 = ops::int8::KERNELS
            .iter()
            .any(|k| ops::TfKernel::runs_on(k, &caps));
        if int8 {
            match ops::int8::define_ops() {
                // The QAT rewrite's CPU ops; without them it is skipped.
                Ok(()) => qat::register_all(),
                // The int8 kernels then fail to register and say so below.
                Err(failure) => log::error(format_args!(
                    "TF_InitKernel: defining the int8 ops: {}",
                    failure.cause
                )),
            }
        }
        if let Err(failure) = program::define_op() {
            // Its kernel then fails to register and says so below.
            log::error(format_args!(
                "TF_InitKernel: defining the program op: {}",
                failure.cause
            ));
        }
        let wanted = all_kernels()
            .filter(|def| def.runs_on(&caps) && def.available())
            .count();
        let registered = register_all(&caps);
        variables::register_all();
        if registered < wanted {
            log::error(format_args!(
                "TF_InitKernel: only {registered} of {wanted} {} kernels registered; the others \
                 run on the CPU",
                backend::device_type()
            ));
        }
        Ok(())
    });
}

/// What every device can do: TF's kernels apply to all devices of a type.
pub fn common_capabilities(each: impl Iterator<Item = Capabilities>) -> Capabilities {
    each.reduce(Capabilities::intersection)
        .unwrap_or(Capabilities::NONE)
}

/// Says once what a capability set declares that no kernel can use.
fn warn_about_contradictions(caps: &Capabilities) {
    for problem in contradictions(caps) {
        log::error(format_args!("TF_InitKernel: {problem}"));
    }
}

/// What `caps` declares that the kernels cannot honour.
pub fn contradictions(caps: &Capabilities) -> Vec<String> {
    let device = backend::device_type();
    let mut problems = Vec::new();
    if !caps.ops.is_empty() && !caps.dtypes.contains(DType::F32) {
        problems.push(format!(
            "the {device} devices declare ops {:?} but not f32, the element type of tensorplug's \
             kernels besides the int8 ones; those ops run on the CPU (declare DType::F32 in the \
             capabilities)",
            caps.ops
        ));
    }
    let int8: Vec<&str> = caps
        .ops
        .iter()
        .filter(|k| k.is_int8())
        .map(OpKind::name)
        .collect();
    if !int8.is_empty() && !caps.dtypes.contains(DType::I8) {
        problems.push(format!(
            "the {device} devices declare the int8 ops {int8:?} but not the element type i8; \
             their kernels are not registered (declare DType::I8 in the capabilities)"
        ));
    }
    for decl in caps.vendor_ops.iter() {
        if decl.id.namespace == Namespace::TENSORPLUG {
            problems.push(format!(
                "the {device} devices declare vendor op {} in tensorplug's namespace (0); it is \
                 refused (use Namespace::named)",
                decl.name
            ));
        }
        let twins = caps.vendor_ops.iter().filter(|d| d.id == decl.id).count();
        if twins > 1 {
            problems.push(format!(
                "the {device} devices declare {twins} vendor ops with the identity of {} ({:?})",
                decl.name, decl.id
            ));
        }
    }
    let lowered = |kind: OpKind| {
        all_kernels().any(|def| {
            def.family()
                .iter()
                .chain(def.may_launch())
                .any(|f| f.decl().id == kind.decl().id)
        })
    };
    for kind in caps
        .ops
        .iter()
        .chain(caps.vendor_ops.iter().map(OpDecl::default_kind))
    {
        if !lowered(kind) {
            problems.push(format!(
                "the {device} devices declare {} but no TF kernel lowers to it; it is unused",
                kind.name()
            ));
        }
    }
    problems
}

/// tensorplug's kernels, then the installed backend's
/// ([`Backend::KERNELS`](crate::Backend::KERNELS)); a kernel's position is
/// its `create` index.
fn all_kernels() -> impl Iterator<Item = &'static dyn TfKernel> {
    let vendor = backend::installed().map_or(&[][..], |p| p.kernels);
    let program: &'static dyn TfKernel = &program::PROGRAM;
    ops::builtin()
        .chain(std::iter::once(program))
        .chain(vendor.iter().copied())
}

/// The kernel at `index` of [`all_kernels`].
fn kernel_at(index: usize) -> Option<&'static dyn TfKernel> {
    all_kernels().nth(index)
}

/// Registers every kernel the capabilities allow; returns how many succeeded.
pub fn register_all(caps: &Capabilities) -> usize {
    // The half-precision registrations cast on the device (`ops/half.rs`).
    let casts = all_kernels().any(|def| def.op() == c"Cast" && def.runs_on(caps));
    all_kernels()
        .enumerate()
        .filter(|(_, def)| def.runs_on(caps) && def.available())
        .filter(|&(index, def)| match register(index, def, casts) {
            Ok(()) => true,
            Err(failure) => {
                log::error(format_args!(
                    "TF_InitKernel: cannot register the {} kernel for {:?}: {}",
                    backend::device_type(),
                    def.op(),
                    failure.cause
                ));
                false
            }
        })
        .count()
}

fn register(index: usize, def: &'static dyn TfKernel, casts: bool) -> KernelResult<()> {
    let Some(&create) = CREATE.get(index) else {
        return Err(Failure::invalid(format!(
            "the plugin has more than {MAX_KERNELS} kernels (tensorplug's and its own); raise \
             MAX_KERNELS in host-bridge/src/kernels/mod.rs"
        )));
    };
    for (i, pair) in def.type_pairs().iter().enumerate() {
        register_for(def, create, pair, &format!("_{i}"))?;
    }
    if !def.type_pairs().is_empty() {
        return Ok(());
    }
    let f32_first = [TF_DataType::TF_FLOAT];
    let f32_first = if def.registers_f32() {
        &f32_first[..]
    } else {
        &[]
    };
    let half = match def.op().to_str() {
        Ok(op) if casts && def.registers_f32() && ops::half::OPS.contains(&op) => {
            &ops::half::TYPES[..]
        }
        _ => &[],
    };
    let types = f32_first.iter().chain(def.more_types()).chain(half);
    for (i, &dtype) in types.enumerate() {
        let constraints: Vec<(&CStr, TF_DataType)> = def
            .type_attr()
            .map(|attr| (attr, dtype))
            .into_iter()
            .collect();
        let suffix = if i == 0 && dtype == TF_DataType::TF_FLOAT {
            String::new()
        } else {
            format!("_{dtype:?}")
        };
        register_for(def, create, &constraints, &suffix)?;
    }
    Ok(())
}

/// One registration of `def` with its type attributes constrained,
/// named `tensorplug_<TYPE>_<op><suffix>`.
fn register_for(
    def: &'static dyn TfKernel,
    create: CreateFn,
    constraints: &[(&CStr, TF_DataType)],
    suffix: &str,
) -> KernelResult<()> {
    let device = backend::device_type_c();
    let async_builder = match def.registers_async() {
        true => KernelBuilder::new_async(def.op(), device, create, compute_async, delete)?,
        false => None,
    };
    let mut builder = match async_builder {
        Some(builder) => builder,
        None => KernelBuilder::new(def.op(), device, create, compute, delete)?,
    };
    for &(attr, dtype) in constraints {
        builder.type_constraint(attr, dtype)?;
    }
    for arg in def.host_memory() {
        builder.host_memory(arg);
    }
    let name = format!(
        "tensorplug_{}_{}{suffix}",
        backend::device_type(),
        def.op().to_string_lossy()
    );
    let with_ints = kernel_def::Constraints {
        op: def.op(),
        device,
        types: constraints,
        ints: def.int_constraints(),
        host_memory: def.host_memory(),
    };
    // Integer constraints need the KernelDef form (when TF has it).
    let encoded = match def.int_constraints().is_empty() {
        true => None,
        false => with_ints.encode(),
    };
    builder.register(&name, encoded.as_deref())
}

/// `[create::<0>, create::<1>, ...]` for the listed indexes.
macro_rules! create_fns {
    ($($index:literal)*) => {
        [$(create::<$index>),*]
    };
}

/// `create` for each entry of [`KERNELS`], by index (TF passes no user
/// data): room for [`MAX_KERNELS`], so a new table entry needs nothing here.
const CREATE: [CreateFn; MAX_KERNELS] = create_fns![
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
    32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63
    64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95
    96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120
    121 122 123 124 125 126 127 128 129 130 131 132 133 134 135 136
    137 138 139 140 141 142 143 144 145 146 147 148 149 150 151 152
    153 154 155 156 157 158 159 160 161 162 163 164 165 166 167 168
    169 170 171 172 173 174 175 176 177 178 179 180 181 182 183 184
    185 186 187 188 189 190 191
];
/// How many kernels [`CREATE`] has room for (tensorplug's, about 130, and a
/// vendor's own).
const MAX_KERNELS: usize = 192;
const _: () = assert!(BUILTIN_COUNT <= MAX_KERNELS, "raise MAX_KERNELS");

unsafe extern "C" fn create<const INDEX: usize>(raw: *mut TF_OpKernelConstruction) -> *mut c_void {
    ffi::swallow("kernel create", std::ptr::null_mut(), || {
        let Some(def) = kernel_at(INDEX) else {
            return Ok(std::ptr::null_mut());
        };
        // SAFETY: TF's live construction context for this call.
        let ctx = match unsafe { Construction::new(raw) } {
            Ok(ctx) => ctx,
            Err(failure) => {
                log::error(format_args!("kernel create: {}", failure.cause));
                return Ok(std::ptr::null_mut());
            }
        };
        let node = ctx.node_name();
        // Absent on every node but the graph pass's update arithmetic; every
        // kernel waits where a failed copy would abort TF (TF 2.15, 2.16).
        let wait = ctx.bool_attr(ops::WAIT_ATTR).unwrap_or(false)
            || crate::tf_versions::copy_failure_aborts();
        match def.construct(&ctx) {
            Ok(attrs) => Ok(Box::into_raw(Box::new(Kernel {
                def,
                attrs,
                node,
                wait,
                widens: std::sync::OnceLock::new(),
            }))
            .cast()),
            Err(failure) => {
                let op_type = def.op().to_string_lossy();
                ctx.fail(failure.code, &failure.message(&op_type, &node));
                Ok(std::ptr::null_mut())
            }
        }
    })
}

unsafe extern "C" fn compute(kernel: *mut c_void, raw: *mut TF_OpKernelContext) {
    ffi::swallow("kernel compute", (), || {
        // SAFETY: TF's live context for this call.
        let ctx = match unsafe { Context::new(raw) } {
            Ok(ctx) => ctx,
            Err(failure) => {
                log::error(format_args!("kernel compute: {}", failure.cause));
                return Ok(());
            }
        };
        // SAFETY: `kernel` is null or the box `create` made, alive until `delete`.
        let Some(kernel) = (unsafe { kernel.cast::<Kernel>().as_ref() }) else {
            ctx.fail(
                tensorplug_abi::tf::TF_INTERNAL,
                "tensorplug kernel: compute without a constructed kernel",
            );
            return Ok(());
        };
        let outcome = ffi::run("kernel compute", || {
            Ok(ops::compute(kernel, &ctx).and_then(|()| {
                if kernel.wait {
                    let stream = ctx.stream()?;
                    // Where failed copies abort TF, waits leave it to kernels.
                    stream.device().core().report_unreported()?;
                    stream.wait_queued("the op")?;
                }
                Ok(())
            }))
        })
        .unwrap_or_else(|panic| Err(Failure::from(panic)));
        if let Err(failure) = outcome {
            let node = match ctx.node_name() {
                "" => kernel.node.as_str(),
                name => name,
            };
            ctx.fail(failure.code, &failure.message(kernel.op_type(), node));
        }
        Ok(())
    });
}

/// TF's `compute_async` for an async registration ([`Op::registers_async`]):
/// the same compute, which catches every panic, then `done`, once. The
/// kernel was registered through `async_kernels`, so it is there.
///
/// [`Op::registers_async`]: ops::Op::registers_async
unsafe extern "C" fn compute_async(
    kernel: *mut c_void,
    raw: *mut TF_OpKernelContext,
    done: *mut c_void,
) {
    // SAFETY: TF's arguments for this call.
    unsafe { compute(kernel, raw) };
    if let Ok(Some(api)) = ffi::tf_api::kernel_api().map(|api| api.async_kernels) {
        // SAFETY: TF's callback for this call, run once.
        unsafe { (api.run_done)(done) };
    }
}

unsafe extern "C" fn delete(kernel: *mut c_void) {
    if !kernel.is_null() {
        // SAFETY: the box `create` made; TF calls delete once.
        drop(unsafe { Box::from_raw(kernel.cast::<Kernel>()) });
    }
}

#[cfg(test)]
mod capability_tests {
    use super::*;
    use tensorplug_core::accelerator::{Binary, DTypeSet, OpKind, OpSet, Unary};

    /// The kernels that only copy and fill, in table order.
    const COPIES: [&str; 14] = [
        "Pad",
        "Slice",
        "ConcatV2",
        "StridedSlice",
        "StridedSlice",
        "Split",
        "SplitV",
        "Unpack",
        "Pack",
        "ReverseV2",
        "ZerosLike",
        "OnesLike",
        "StridedSliceGrad",
        "Bitcast",
    ];
    /// The one that only fills, later in the table: `ZerosLike` of variant.
    const VARIANT: &str = "ZerosLike";
    /// Then those computed on the host, in host memory.
    const HOST: [&str; 3] = ["LogicalAnd", "LogicalOr", "LogicalNot"];

    const MATMUL: OpKind = OpKind::MatMul {
        transpose_a: false,
        transpose_b: false,
    };

    fn registered(caps: &Capabilities) -> Vec<&'static str> {
        ops::builtin()
            .filter(|def| def.runs_on(caps))
            .map(|def| def.op().to_str().unwrap())
            .collect()
    }

    #[test]
    fn kernels_follow_the_declared_ops() {
        let npu = Capabilities::f32(OpSet::of(&[MATMUL, OpKind::Unary(Unary::RELU)]), true);
        // BiasAddGrad and the batched MatMuls lower to MatMuls; Pad, Slice,
        // ConcatV2, … only copy and fill.
        let copies = COPIES;
        assert_eq!(
            registered(&npu),
            [
                &["MatMul", "BiasAddGrad"][..],
                &copies,
                &["BatchMatMul", "BatchMatMulV2", VARIANT],
                &HOST,
                &["Relu"]
            ]
            .concat()
        );
        let mul = Capabilities::f32(OpSet::of(&[OpKind::Binary(Binary::MUL)]), true);
        assert_eq!(
            registered(&mul),
            [
                &["Neg", "Square", "BroadcastTo", "Tile"][..],
                &copies,
                &["Fill", VARIANT],
                &HOST,
                &["Mul"]
            ]
            .concat()
        );
        // Every op on f32 only: no int8 kernel; with i8, every kernel.
        let all = Capabilities::f32(OpSet::ALL, true);
        let int8 = ops::int8::KERNELS.len();
        assert_eq!(registered(&all).len(), BUILTIN_COUNT - int8);
        let all = all.with_dtype(DType::I8);
        assert_eq!(registered(&all).len(), BUILTIN_COUNT);
        assert!(registered(&Capabilities::NONE).is_empty());
    }

    #[test]
    fn devices_of_one_type_share_what_all_of_them_declare() {
        let a = Capabilities::f32(OpSet::of(&[MATMUL, OpKind::Unary(Unary::RELU)]), true);
        let b = Capabilities::f32(
            OpSet::of(&[OpKind::Unary(Unary::RELU), OpKind::Binary(Binary::ADD)]),
            false,
        );
        let both = common_capabilities([a, b].into_iter());
        assert_eq!(
            registered(&both),
            [&COPIES[..], &[VARIANT], &HOST, &["Relu"]].concat()
        );
        assert!(!both.profiling);
        assert_eq!(common_capabilities(std::iter::empty()), Capabilities::NONE);
    }

    #[test]
    fn a_capability_set_that_contradicts_the_kernels_is_named() {
        let no_f32 = Capabilities {
            ops: OpSet::of(&[OpKind::Unary(Unary::RELU)]),
            dtypes: DTypeSet::EMPTY,
            ..Capabilities::NONE
        };
        let problems = contradictions(&no_f32);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("not f32"), "{}", problems[0]);
        assert!(
            contradictions(&Capabilities::f32(OpSet::ALL, true).with_dtype(DType::I8)).is_empty()
        );
        let problems = contradictions(&Capabilities::f32(OpSet::ALL, true));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].contains("not the element type i8"),
            "{}",
            problems[0]
        );
    }
}
