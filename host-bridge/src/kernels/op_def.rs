//! Defining TF ops with TF's ops API, and their per-device names (the int8
//! ops and the QAT rewrite's). A leaf both `ops::int8` and `qat` import.

use crate::ffi::tf_api;
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::tf::Status;
use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::sync::{Mutex, OnceLock};

/// `_Tensorplug<device><suffix>`, made once per device type and name.
pub fn op_name(device: &str, suffix: &str) -> &'static CStr {
    static NAMES: OnceLock<Mutex<HashMap<String, &'static CStr>>> = OnceLock::new();
    let name = format!("_Tensorplug{device}{suffix}");
    let mut names = NAMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    names.entry(name.clone()).or_insert_with(|| {
        // A bounded leak: eight names per device type.
        let c = CString::new(name).unwrap_or_else(|_| c"_TensorplugInvalid".into());
        Box::leak(c.into_boxed_c_str())
    })
}

/// Defines op `name` with TF's ops API from `ops.h` specs.
pub(crate) fn define(
    name: &CStr,
    inputs: &[&CStr],
    outputs: &[&CStr],
    attrs: &[&CStr],
) -> KernelResult<()> {
    let api = tf_api::ops_api()?;
    // SAFETY: a NUL-terminated name; TF returns a fresh builder.
    let builder = unsafe { (api.new_builder)(name.as_ptr()) };
    if builder.is_null() {
        return Err(Failure::invalid("TF_NewOpDefinitionBuilder returned null"));
    }
    // SAFETY: a live builder and NUL-terminated specs.
    unsafe {
        for spec in inputs {
            (api.add_input)(builder, spec.as_ptr());
        }
        for spec in outputs {
            (api.add_output)(builder, spec.as_ptr());
        }
        for spec in attrs {
            (api.add_attr)(builder, spec.as_ptr());
        }
    }
    let status = Status::new()?;
    // SAFETY: TF takes the builder, whatever the outcome.
    unsafe { (api.register)(builder, status.fresh()) };
    status.check(&format!(
        "TF_RegisterOpDefinition({})",
        name.to_string_lossy()
    ))
}
