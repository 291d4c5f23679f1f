//! FPGA kernels for the ops TF runs where a resource variable lives and
//! that our C API kernels cannot run: they refuse with a clear error.
//!
//! - `AssignAddVariableOp` and `AssignSubVariableOp`: TF registers them for
//!   `DEVICE_DEFAULT` as `AssignUpdateVariableOp<CPUDevice, T>`, which runs
//!   Eigen on the device buffer as if it were host memory, and our handles
//!   (`registry/handles.rs`) fault (SIGSEGV).
//! - The [`VARIABLE_OPS`] (gathers, scatters, fused optimizer updates,
//!   stateful random ops): TF has no kernel for our device, so a variable
//!   on it makes placement fail for the whole step.
//!
//! Running them needs the variable's tensor (`kernels_experimental.h`),
//! which the wheel does not export (FACTS.md). With these kernels TF places
//! the ops beside their variable, and inside a `tf.function` the graph pass
//! rewrites every one of them (`graph/assign.rs`, `graph/host_copy.rs`);
//! only an eager call reaches a kernel, whose compute fails the op with
//! `UNIMPLEMENTED` and says what to do instead.
//!
//! A device-specific registration wins over `DEVICE_DEFAULT` (TF's kernel
//! lookup only falls back to `DEVICE_DEFAULT` when no kernel of the device
//! matches), so these kernels, registered without a dtype constraint, take
//! every dtype; where TF has a `DEVICE_DEFAULT` kernel for `DT_VARIANT`
//! variables, ours take every other type. `docs/ops.md`.

use super::builder::KernelBuilder;
use super::failure::{Failure, KernelResult};
use super::tf::Context;
use crate::ffi;
use crate::log;
use crate::variable_ops::VARIABLE_OPS;
use std::ffi::{CString, c_void};
use tensorplug_abi::tf::{TF_DataType, TF_OpKernelConstruction, TF_OpKernelContext};

/// The update ops the graph pass splits (`graph/assign.rs`).
pub const SPLIT_UPDATES: [&str; 2] = ["AssignAddVariableOp", "AssignSubVariableOp"];

/// The element types TF's CPU kernels of these ops take, but `DT_VARIANT`.
const NON_VARIANT: [TF_DataType; 15] = [
    TF_DataType::TF_FLOAT,
    TF_DataType::TF_DOUBLE,
    TF_DataType::TF_INT32,
    TF_DataType::TF_UINT8,
    TF_DataType::TF_INT16,
    TF_DataType::TF_INT8,
    TF_DataType::TF_COMPLEX64,
    TF_DataType::TF_INT64,
    TF_DataType::TF_BOOL,
    TF_DataType::TF_BFLOAT16,
    TF_DataType::TF_UINT16,
    TF_DataType::TF_COMPLEX128,
    TF_DataType::TF_HALF,
    TF_DataType::TF_UINT32,
    TF_DataType::TF_UINT64,
];

/// What the user should do, after `<TYPE> variable op '<node>': `.
pub fn refusal() -> String {
    let device = crate::identity::device_type();
    format!(
        "this op updates or reads a variable placed on an {device} device, which runs only \
         inside a tf.function, where tensorplug rewrites it (TensorFlow's C API cannot reach \
         resource variables): call it from a tf.function, as Keras fit and predict do, or \
         create the variable under tf.device('/CPU:0') (see tensorplug's docs/ops.md, \
         'Variables and training')"
    )
}

/// Every op that gets a refusing kernel, with the `dtype` attr to
/// constrain (all but `DT_VARIANT`) where TF has a `DEVICE_DEFAULT` kernel
/// for variant variables.
pub fn refused_ops() -> impl Iterator<Item = (&'static str, Option<&'static str>)> {
    let split = SPLIT_UPDATES.iter().map(|op| (*op, None));
    let others = VARIABLE_OPS.iter().map(|op| {
        let constrained = op.default_for_variant.then_some("dtype");
        (op.name, constrained)
    });
    split.chain(others)
}

/// Registers the refusing kernels; returns how many ops got one (failures
/// are logged: that op then keeps TF's behaviour without us).
pub fn register_all() -> usize {
    refused_ops()
        .filter(|&(op, constrained)| {
            let result = match constrained {
                None => register(op, None),
                Some(attr) => NON_VARIANT
                    .iter()
                    .try_for_each(|&dtype| register(op, Some((attr, dtype)))),
            };
            match result {
                Ok(()) => true,
                Err(failure) => {
                    log::error(format_args!(
                        "TF_InitKernel: cannot register the {} kernel refusing {op}: {}",
                        crate::identity::device_type(),
                        failure.cause
                    ));
                    false
                }
            }
        })
        .count()
}

fn register(op: &str, constraint: Option<(&str, TF_DataType)>) -> KernelResult<()> {
    let c = |text: &str| CString::new(text).map_err(|_| Failure::invalid("name with NUL"));
    let device = crate::identity::device_type_c();
    let mut builder = KernelBuilder::new(&c(op)?, device, create, refuse, delete)?;
    let mut name = format!("tensorplug_{}_refuse_{op}", crate::identity::device_type());
    if let Some((attr, dtype)) = constraint {
        builder.type_constraint(&c(attr)?, dtype)?;
        name.push_str(&format!("_{}", dtype.0));
    }
    builder.register(&name, None)
}

/// The kernel has no state: compute only reports the refusal.
unsafe extern "C" fn create(_: *mut TF_OpKernelConstruction) -> *mut c_void {
    std::ptr::null_mut()
}

unsafe extern "C" fn delete(_: *mut c_void) {}

unsafe extern "C" fn refuse(_: *mut c_void, raw: *mut TF_OpKernelContext) {
    ffi::swallow("variable op refusal", (), || {
        // SAFETY: TF's live context for this call.
        match unsafe { Context::new(raw) } {
            Ok(ctx) => {
                let failure = Failure::unimplemented(refusal());
                ctx.fail(
                    failure.code,
                    &failure.message("variable op", ctx.node_name()),
                );
            }
            Err(failure) => log::error(format_args!("variable op refusal: {}", failure.cause)),
        }
        Ok(())
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_names_the_node_and_the_way_out() {
        let failure = Failure::unimplemented(refusal());
        assert_eq!(failure.code, tensorplug_abi::tf::TF_UNIMPLEMENTED);
        let message = failure.message("variable op", "SGD/AssignSubVariableOp");
        assert!(
            message.starts_with("FPGA variable op 'SGD/AssignSubVariableOp': "),
            "{message}"
        );
        for hint in [
            "inside a tf.function",
            "call it from a tf.function",
            "tf.device('/CPU:0')",
            "docs/ops.md",
        ] {
            assert!(message.contains(hint), "no {hint} in {message}");
        }
    }

    #[test]
    fn every_variable_op_is_refused_and_variant_is_left_to_tf() {
        let refused: Vec<_> = refused_ops().collect();
        assert_eq!(refused.len(), 2 + VARIABLE_OPS.len());
        assert!(refused.contains(&("ResourceGather", Some("dtype"))));
        assert!(refused.contains(&("ResourceApplyAdam", None)));
        assert!(!NON_VARIANT.contains(&TF_DataType::TF_VARIANT));
    }
}
