//! The PluggableDevice / StreamExecutor interface: `SE_InitPlugin`, the
//! platform callbacks and the `SP_StreamExecutor` table.
//!
//! Every `extern "C"` function here runs its body under
//! [`ffi::with_status`](crate::ffi::with_status) (or
//! [`ffi::swallow`](crate::ffi::swallow) when TF gives no status).

mod copies;
mod events;
mod executor;
pub(crate) mod handles;
mod memory;
mod platform;
mod streams;
#[cfg(test)]
mod tests;
mod timers;

pub use platform::{platform, platform_fns};

use crate::error::{Error, Result};
use crate::{backend, ffi, registry};
use tensorplug_abi::tf::{
    SE_MAJOR, SE_PlatformRegistrationParams, SP_Platform, SP_PlatformFns, TF_Status, Versioned,
};
use tensorplug_abi::{tf_field, validate};

/// `SE_InitPlugin` (emitted by [`export_plugin!`](crate::export_plugin)):
/// checks TF's version, validates the device list, opens the devices and
/// registers the platform. An error status aborts TensorFlow, so on a TF
/// outside the tested range or devices that cannot be opened it declines
/// instead (`tf_versions.rs`): the platform with no device, and
/// one line on stderr. Only a struct TF passes that we cannot fill is an
/// error (it names the struct).
///
/// # Safety
/// Called by TF with its registration params and a live status.
pub unsafe fn se_init_plugin(params: *mut SE_PlatformRegistrationParams, status: *mut TF_Status) {
    // SAFETY: TF's contract.
    unsafe {
        ffi::with_status(status, "SE_InitPlugin", || {
            init_plugin(params, crate::tf_versions::refusal())
        });
    }
}

/// The body of `SE_InitPlugin`; `tf_refusal`: why this TF is not served.
///
/// # Safety
/// `params` is null or TF's registration params, whose `platform` and
/// `platform_fns` point to structs TF allocated with their `struct_size` set.
pub unsafe fn init_plugin(
    params: *mut SE_PlatformRegistrationParams,
    tf_refusal: Option<String>,
) -> Result<()> {
    let plugin = backend::installed().ok_or_else(|| {
        Error::Internal("SE_InitPlugin ran before a backend was installed".into())
    })?;
    let names = backend::claim_names(plugin);
    // Declined: by the claim (already said), TF's version, or the device list.
    let mut declined = names.declined.clone();
    if declined.is_none() {
        declined = tf_refusal.or_else(|| {
            registry::list_from_env(&plugin.opener())
                .and_then(|list| registry::timeout_from_env().map(|_| list))
                .and_then(|list| registry::open_all(&plugin.opener(), &list).map(drop))
                .err()
                .map(|e| e.to_string())
        });
        if let Some(why) = &declined {
            let line = crate::tf_versions::declined_line(backend::device_type(), why);
            crate::log::error(format_args!("{line}"));
        }
    }
    if let Some(why) = &declined {
        let none = registry::DeviceList {
            source: why.clone(),
            items: Vec::new(),
        };
        registry::open_all(&plugin.opener(), &none)?;
    }
    // SAFETY: caller's contract.
    let mut view = unsafe { Versioned::from_raw(params) }.map_err(Error::abi)?;
    // Another major version may lay the structs out differently: nothing is
    // written (TF then aborts with this message; no TF of the range has one).
    match view.require(tf_field!(SE_PlatformRegistrationParams, major_version)) {
        Ok(SE_MAJOR) => {}
        Ok(other) => {
            return Err(Error::Abi(format!(
                "TensorFlow's StreamExecutor C API is {other}.x, tensorplug speaks \
                 {SE_MAJOR}.x: install tensorflow-cpu>=2.15,<2.22"
            )));
        }
        Err(e) => return Err(Error::abi(e)),
    }
    let platform_out = view
        .require(tf_field!(SE_PlatformRegistrationParams, platform))
        .map_err(Error::abi)?;
    let fns_out = view
        .require(tf_field!(SE_PlatformRegistrationParams, platform_fns))
        .map_err(Error::abi)?;

    let ours = platform(names);
    let our_fns = platform_fns();
    // SAFETY: our names are static NUL-terminated strings.
    unsafe { validate::sp_platform(&ours) }.map_err(Error::abi)?;
    validate::sp_platform_fns(&our_fns).map_err(Error::abi)?;

    // SAFETY: TF's structs, valid for their struct_size (caller's contract).
    unsafe {
        ffi::write_tf_struct::<SP_Platform>(platform_out, &ours)?;
        ffi::write_tf_struct::<SP_PlatformFns>(fns_out, &our_fns)?;
    }
    view.set(
        tf_field!(SE_PlatformRegistrationParams, destroy_platform),
        Some(platform::destroy_platform),
    )
    .map_err(Error::abi)?;
    view.set(
        tf_field!(SE_PlatformRegistrationParams, destroy_platform_fns),
        Some(platform::destroy_platform_fns),
    )
    .map_err(Error::abi)?;

    // What TF checks next, checked first: a failure here is our bug.
    let filled = view.read_covered();
    // SAFETY: the pointers are TF's (valid) and the names ours (static).
    unsafe { validate::se_init_plugin_result(&filled) }.map_err(Error::abi)
}
