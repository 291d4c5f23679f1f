//! The graph optimizer interface: `TF_InitGraph` registers a grappler pass
//! for `FPGA` graphs that keeps the variables a session graph creates on
//! the host ([`session_variables`]), splits variable updates ([`assign`]),
//! runs TF's other variable ops on host copies ([`host_copy`]), runs the
//! bfloat16 and float16 ops TF put on the CPU in float32 on the device
//! ([`half`]), rewrites quantization-aware and QDQ graphs into int8 ops
//! ([`qat`]), folds
//! inference batch norms into convolutions ([`fold`]), fuses
//! `MatMul → BiasAdd (→ Relu)` into `_FusedMatMul` and
//! `Conv2D → BiasAdd (→ Relu | Relu6)` into `_FusedConv2D` ([`fuse`]), and makes
//! what TF's own passes (all left on, [`configs`]) left on the device
//! without a kernel runnable ([`runnable`]), then names the float ops TF
//! placed on the CPU because the device cannot run them ([`fallback`]).
//!
//! Every `extern "C"` function runs its body under
//! [`ffi::with_status`](crate::ffi::with_status) or
//! [`ffi::swallow`](crate::ffi::swallow). See `docs/graph-optimizer.md`.

mod assign;
mod configs;
mod context;
mod device;
pub(crate) mod edges;
pub(crate) mod fallback;
mod fold;
mod fuse;
mod half;
mod host_copy;
mod kernel_list;
mod list_dead;
mod list_grads;
mod list_host;
mod list_zeros;
mod lists;
pub(crate) mod nodes;
mod optimize;
mod passes;
mod program_defer;
mod program_native;
mod program_size;
mod programs;
pub mod proto;
mod qat;
mod runnable;
mod session_variables;
mod tf_grappler;
mod unfuse;

#[cfg(test)]
mod init_tests;
#[cfg(test)]
pub(crate) mod test_nodes;
#[cfg(test)]
mod tests;

pub use configs::optimizer_configs;
#[cfg(feature = "internals")]
pub use optimize::rewrite;

use crate::error::{Error, Result};
use crate::{ffi, identity};
use std::ffi::c_void;
use tensorplug_abi::tf::{
    GO_MAJOR, TF_Buffer, TF_GrapplerItem, TF_Status, TP_Optimizer, TP_OptimizerConfigs,
    TP_OptimizerRegistrationParams, Versioned,
};
use tensorplug_abi::{tf_field, validate};

/// The optimizer's (stateless) instance; `create_func` hands out its address.
static OPTIMIZER: u8 = 0;

/// `TF_InitGraph` (emitted by [`export_plugin!`](crate::export_plugin)):
/// registers the fusion pass for the plugin's device type.
///
/// # Safety
/// Called by TF with its registration params and a live status.
pub unsafe fn tf_init_graph(params: *mut TP_OptimizerRegistrationParams, status: *mut TF_Status) {
    // SAFETY: TF's contract.
    unsafe { ffi::with_status(status, "TF_InitGraph", || init_graph(params)) }
}

/// The body of `TF_InitGraph`.
///
/// # Safety
/// `params` is null or TF's registration params, whose `optimizer` and
/// `optimizer_configs` point to structs TF allocated with `struct_size` set.
pub unsafe fn init_graph(params: *mut TP_OptimizerRegistrationParams) -> Result<()> {
    // SAFETY: caller's contract.
    let mut view = unsafe { Versioned::from_raw(params) }.map_err(Error::abi)?;
    let major = view.require(tf_field!(TP_OptimizerRegistrationParams, major_version));
    match major {
        Ok(GO_MAJOR) => {}
        Ok(other) => {
            return Err(Error::Abi(format!(
                "TensorFlow's graph optimizer API is {other}.x, tensorplug speaks \
                 {GO_MAJOR}.x: use the tensorflow version tensorplug was built for"
            )));
        }
        Err(e) => return Err(Error::abi(e)),
    }
    let optimizer_out = view
        .require(tf_field!(TP_OptimizerRegistrationParams, optimizer))
        .map_err(Error::abi)?;
    let configs_out = view
        .require(tf_field!(TP_OptimizerRegistrationParams, optimizer_configs))
        .map_err(Error::abi)?;

    let ours = optimizer();
    let our_configs = optimizer_configs();
    validate::tp_optimizer(&ours).map_err(Error::abi)?;
    validate::tp_optimizer_configs(&our_configs).map_err(Error::abi)?;

    // SAFETY: TF's structs, valid for their struct_size (caller's contract).
    unsafe {
        ffi::write_tf_struct::<TP_Optimizer>(optimizer_out, &ours)?;
        ffi::write_tf_struct::<TP_OptimizerConfigs>(configs_out, &our_configs)?;
    }
    view.set(
        tf_field!(TP_OptimizerRegistrationParams, device_type),
        identity::device_type_c().as_ptr(),
    )
    .map_err(Error::abi)?;

    // What TF checks next, checked first: a failure here is our bug.
    let filled = view.read_covered();
    // SAFETY: the pointers are TF's (valid) and the name ours (static).
    unsafe { validate::tf_init_graph_result(&filled) }.map_err(Error::abi)
}

/// Our `TP_Optimizer`.
pub fn optimizer() -> TP_Optimizer {
    TP_Optimizer {
        create_func: Some(create_optimizer),
        optimize_func: Some(optimize_graph),
        destroy_func: Some(destroy_optimizer),
        ..TP_Optimizer::new()
    }
}

/// `create_func`: the pass keeps no state, so every instance is [`OPTIMIZER`].
unsafe extern "C" fn create_optimizer() -> *mut c_void {
    std::ptr::from_ref(&OPTIMIZER).cast_mut().cast()
}

/// `destroy_func`: nothing to free, so any number of calls is fine.
unsafe extern "C" fn destroy_optimizer(_optimizer: *mut c_void) {}

/// `optimize_func`.
///
/// # Safety
/// TF's contract: `graph_in` holds a serialized `GraphDef`, `item` is the
/// grappler item it came from, `graph_out` an empty buffer, `status` live.
unsafe extern "C" fn optimize_graph(
    optimizer: *mut c_void,
    graph_in: *const TF_Buffer,
    item: *const TF_GrapplerItem,
    graph_out: *mut TF_Buffer,
    status: *mut TF_Status,
) {
    // SAFETY: TF's contract.
    unsafe {
        ffi::with_status(status, "optimize_func", || {
            let ours = std::ptr::from_ref(&OPTIMIZER).cast_mut().cast::<c_void>();
            if !optimizer.is_null() && optimizer != ours {
                return Err(Error::InvalidArgument(
                    "optimize_func got an optimizer that create_func did not return".into(),
                ));
            }
            optimize::run(graph_in, item, graph_out)
        });
    }
}
