//! `TF_InitKernel`: the f32 kernels of the `FPGA` device.
//!
//! Each kernel reads its attributes once ([`ops::construct`]), and each
//! compute call maps TF's tensors to device descriptors through the
//! registry's handle scheme, enqueues the op on the stream TF gives
//! (`TF_GetStream`) and returns without waiting ([`launch`]). Failures reach
//! Python as `tf.errors.*Error` with `FPGA <op> '<node>': <cause>`: from the
//! kernel itself (shapes, attributes), or for device errors from the later
//! wait that observes them (the registry remembers each fence's op).
//!
//! Coverage, fallbacks and tolerances: `docs/ops.md`.

mod failure;
mod launch;
pub mod ops;
pub mod shapes;
mod tf;
mod variables;

pub use failure::{Failure, KernelResult};

use crate::ffi::{self, tf_api};
use crate::log;
use ops::{KERNELS, Kernel, KernelDef};
use std::ffi::{CString, c_void};
use tensorplug_abi::tf::{TF_DataType, TF_OpKernelConstruction, TF_OpKernelContext};
use tf::{Construction, Context, Status};

/// `TF_InitKernel`: registers every kernel of [`KERNELS`] for `FPGA`. It has
/// no status: a kernel that fails to register is logged and skipped (its op
/// then runs on the CPU under soft placement), never aborting TF.
#[unsafe(no_mangle)]
pub extern "C" fn TF_InitKernel() {
    ffi::swallow("TF_InitKernel", (), || {
        let registered = register_all();
        variables::register_all();
        if registered < KERNELS.len() {
            log::error(format_args!(
                "TF_InitKernel: only {registered} of {} FPGA kernels registered; the others run \
                 on the CPU",
                KERNELS.len()
            ));
        }
        Ok(())
    });
}

/// Registers every kernel; returns how many succeeded.
pub fn register_all() -> usize {
    KERNELS
        .iter()
        .enumerate()
        .filter(|&(index, def)| match register(index, def) {
            Ok(()) => true,
            Err(failure) => {
                log::error(format_args!(
                    "TF_InitKernel: cannot register the FPGA kernel for {:?}: {}",
                    def.op, failure.cause
                ));
                false
            }
        })
        .count()
}

fn register(index: usize, def: &'static KernelDef) -> KernelResult<()> {
    let api = tf_api::kernel_api()?;
    let status = Status::new()?;
    let device = crate::se::DEVICE_TYPE;
    // SAFETY: static NUL-terminated names; our callbacks have TF's signatures.
    let builder = unsafe {
        (api.new_kernel_builder)(
            def.op.as_ptr(),
            device.as_ptr(),
            CREATE.get(index).copied(),
            Some(compute),
            Some(delete),
        )
    };
    if builder.is_null() {
        return Err(Failure::invalid("TF_NewKernelBuilder returned null"));
    }
    // SAFETY: live builder and status; static names.
    unsafe {
        (api.type_constraint)(
            builder,
            c"T".as_ptr(),
            TF_DataType::TF_FLOAT,
            status.fresh(),
        )
    };
    if let Err(failure) = status.check("TF_KernelBuilder_TypeConstraint") {
        // SAFETY: the builder was not registered, so it is still ours.
        unsafe { (api.delete_kernel_builder)(builder) };
        return Err(failure);
    }
    for arg in def.host_memory {
        // SAFETY: live builder; static name.
        unsafe { (api.host_memory)(builder, arg.as_ptr()) };
    }
    let name = CString::new(format!("tensorplug_FPGA_{}", def.op.to_string_lossy()))
        .map_err(|_| Failure::invalid("op name with NUL"))?;
    // SAFETY: TF takes ownership of the builder, whatever the outcome.
    unsafe { (api.register_kernel_builder)(name.as_ptr(), builder, status.fresh()) };
    status.check("TF_RegisterKernelBuilder")
}

type CreateFn = unsafe extern "C" fn(*mut TF_OpKernelConstruction) -> *mut c_void;

/// `create` for each entry of [`KERNELS`] (TF passes no user data, so the
/// entry is a const parameter); the array type keeps the lengths equal.
const CREATE: [CreateFn; KERNELS.len()] = [
    create::<0>,
    create::<1>,
    create::<2>,
    create::<3>,
    create::<4>,
    create::<5>,
    create::<6>,
    create::<7>,
    create::<8>,
    create::<9>,
    create::<10>,
];

unsafe extern "C" fn create<const INDEX: usize>(raw: *mut TF_OpKernelConstruction) -> *mut c_void {
    ffi::swallow("kernel create", std::ptr::null_mut(), || {
        let def = &KERNELS[INDEX];
        // SAFETY: TF's live construction context for this call.
        let ctx = match unsafe { Construction::new(raw) } {
            Ok(ctx) => ctx,
            Err(failure) => {
                log::error(format_args!("kernel create: {}", failure.cause));
                return Ok(std::ptr::null_mut());
            }
        };
        let node = ctx.node_name();
        match ops::construct(def, &ctx) {
            Ok(attrs) => Ok(Box::into_raw(Box::new(Kernel { def, attrs, node })).cast()),
            Err(failure) => {
                let op_type = def.op.to_string_lossy();
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
                "FPGA kernel: compute without a constructed kernel",
            );
            return Ok(());
        };
        let outcome = ffi::run("kernel compute", || Ok(ops::compute(kernel, &ctx)))
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

unsafe extern "C" fn delete(kernel: *mut c_void) {
    if !kernel.is_null() {
        // SAFETY: the box `create` made; TF calls delete once.
        drop(unsafe { Box::from_raw(kernel.cast::<Kernel>()) });
    }
}
