//! FPGA kernels for the resource-variable updates TF would otherwise run
//! with its own `DEVICE_DEFAULT` kernels: they refuse with a clear error.
//!
//! TF 2.21 registers `AssignAddVariableOp` and `AssignSubVariableOp` for
//! `DEVICE_DEFAULT` as `AssignUpdateVariableOp<CPUDevice, T>`: on a variable
//! placed on `/device:FPGA:*` they run Eigen on the device buffer as if it
//! were host memory, and our handles (`registry/handles.rs`) fault (SIGSEGV).
//! Updating the variable ourselves needs `TF_AssignUpdateVariable`
//! (`kernels_experimental.h`), which the wheel does not export (FACTS.md).
//!
//! A device-specific registration wins over `DEVICE_DEFAULT` (TF's kernel
//! lookup only falls back to `DEVICE_DEFAULT` when no kernel of the device
//! matches), so these kernels, registered without a dtype constraint, take
//! every dtype. Their compute fails the op with `UNIMPLEMENTED` and says
//! what to do instead. Why only these two ops: `docs/ops.md`.

use super::failure::{Failure, KernelResult};
use super::tf::{Context, Status};
use crate::ffi::{self, tf_api};
use crate::log;
use std::ffi::{CStr, c_void};
use tensorplug_abi::tf::{TF_OpKernelConstruction, TF_OpKernelContext};

/// The ops refused on the FPGA.
pub const REFUSED_OPS: [&CStr; 2] = [c"AssignAddVariableOp", c"AssignSubVariableOp"];

/// What the user should do, after `<TYPE> <op> '<node>': `.
pub fn refusal() -> String {
    let device = crate::backend::device_type();
    format!(
        "updating a variable placed on an {device} device eagerly is not supported \
         (TensorFlow's C API cannot update resource variables); inside a tf.function, as Keras \
         fit runs it, tensorplug rewrites the update: wrap the update in a tf.function, or \
         create the variable under tf.device('/CPU:0') (see tensorplug's docs/ops.md, \
         'Variables and training')"
    )
}

/// Registers the refusing kernels; returns how many succeeded (failures are
/// logged: that op then keeps TF's crashing `DEVICE_DEFAULT` kernel).
pub fn register_all() -> usize {
    REFUSED_OPS
        .iter()
        .zip(COMPUTE)
        .filter(|&(op, compute)| match register(op, compute) {
            Ok(()) => true,
            Err(failure) => {
                log::error(format_args!(
                    "TF_InitKernel: cannot register the {} kernel refusing {op:?}: {}",
                    crate::backend::device_type(),
                    failure.cause
                ));
                false
            }
        })
        .count()
}

type ComputeFn = unsafe extern "C" fn(*mut c_void, *mut TF_OpKernelContext);

/// `compute` for each entry of [`REFUSED_OPS`] (the op is a const parameter).
const COMPUTE: [ComputeFn; REFUSED_OPS.len()] = [refuse::<0>, refuse::<1>];

fn register(op: &'static CStr, compute: ComputeFn) -> KernelResult<()> {
    let api = tf_api::kernel_api()?;
    let status = Status::new()?;
    // SAFETY: static NUL-terminated names; our callbacks have TF's signatures.
    let builder = unsafe {
        (api.new_kernel_builder)(
            op.as_ptr(),
            crate::backend::device_type_c().as_ptr(),
            Some(create),
            Some(compute),
            Some(delete),
        )
    };
    if builder.is_null() {
        return Err(Failure::invalid("TF_NewKernelBuilder returned null"));
    }
    // No `dtype` constraint: the kernel matches every dtype TF's
    // DEVICE_DEFAULT kernels take (all number types, int64 counters too).
    // SAFETY: live builder; static name.
    unsafe { (api.host_memory)(builder, c"resource".as_ptr()) };
    let name = format!(
        "tensorplug_{}_refuse_{}",
        crate::backend::device_type(),
        op.to_string_lossy()
    );
    let name = std::ffi::CString::new(name).map_err(|_| Failure::invalid("op name with NUL"))?;
    // SAFETY: TF takes ownership of the builder, whatever the outcome.
    unsafe { (api.register_kernel_builder)(name.as_ptr(), builder, status.fresh()) };
    status.check("TF_RegisterKernelBuilder")
}

/// The kernel has no state: compute only reports the refusal.
unsafe extern "C" fn create(_: *mut TF_OpKernelConstruction) -> *mut c_void {
    std::ptr::null_mut()
}

unsafe extern "C" fn delete(_: *mut c_void) {}

unsafe extern "C" fn refuse<const OP: usize>(_: *mut c_void, raw: *mut TF_OpKernelContext) {
    ffi::swallow("variable update refusal", (), || {
        // SAFETY: TF's live context for this call.
        match unsafe { Context::new(raw) } {
            Ok(ctx) => {
                let op = REFUSED_OPS[OP].to_str().unwrap_or("?");
                let failure = Failure::unimplemented(refusal());
                ctx.fail(failure.code, &failure.message(op, ctx.node_name()));
            }
            Err(failure) => log::error(format_args!("variable update refusal: {}", failure.cause)),
        }
        Ok(())
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_names_the_op_the_node_and_the_way_out() {
        let failure = Failure::unimplemented(refusal());
        assert_eq!(failure.code, tensorplug_abi::tf::TF_UNIMPLEMENTED);
        let message = failure.message("AssignSubVariableOp", "SGD/AssignSubVariableOp");
        assert!(
            message.starts_with("FPGA AssignSubVariableOp 'SGD/AssignSubVariableOp': "),
            "{message}"
        );
        for hint in [
            "eagerly",
            "wrap the update in a tf.function",
            "tf.device('/CPU:0')",
            "docs/ops.md",
        ] {
            assert!(message.contains(hint), "no {hint} in {message}");
        }
    }
}
