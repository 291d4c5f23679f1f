//! The vendor seam: a [`Backend`] names a device type and opens its devices;
//! [`export_plugin!`](crate::export_plugin) turns it into TensorFlow's four
//! entry points. Everything else (streams, kernels, fusion, profiler) is the
//! bridge's, driven through [`tensorplug_core::accelerator::Accelerator`].
//!
//! Guide: `docs/vendor-guide.md`.

use crate::devices::DynAccelerator;
use crate::kernels::ops::kernel::TfKernel;
use std::ffi::CStr;
use std::sync::OnceLock;
use tensorplug_abi::validate;

pub use crate::devices::OpenError;
pub use crate::identity::{Names, device_type, device_type_c, names};

/// What a vendor implements to get a TensorFlow plugin.
///
/// ```
/// use std::ffi::CStr;
/// use tensorplug_host_bridge::prelude::*;
///
/// struct Npu;
/// impl Backend for Npu {
///     const DEVICE_TYPE: &'static CStr = c"NPU";
///     const VENDOR: &'static CStr = c"Example Co.";
///     const DEVICE_KINDS: &'static str = "`sim`";
///     fn open(spec: &str) -> Result<Box<DynAccelerator>, OpenError> {
///         Err(format!("unknown device `{spec}`").into())
///     }
/// }
/// tensorplug_host_bridge::export_plugin!(Npu);
/// ```
pub trait Backend: 'static {
    /// The TF device type, `[A-Z][A-Z_]*`: devices appear as
    /// `/device:<DEVICE_TYPE>:<n>`. [`export_plugin!`](crate::export_plugin)
    /// refuses to compile an invalid one.
    const DEVICE_TYPE: &'static CStr;
    /// The StreamExecutor platform name (same rule); defaults to the type.
    const PLATFORM_NAME: &'static CStr = Self::DEVICE_TYPE;
    /// `SP_Device.device_vendor`.
    const VENDOR: &'static CStr;
    /// The device kinds [`Backend::open`] accepts, quoted in errors
    /// (e.g. "`sim`, `pcie:<file>`").
    const DEVICE_KINDS: &'static str;
    /// The device list when `TENSORPLUG_<TYPE>_DEVICE` and
    /// `TENSORPLUG_DEVICE` are unset or empty.
    const DEFAULT_DEVICES: &'static str = "sim";
    /// TF kernels of the vendor's own ops, registered beside tensorplug's
    /// when every device declares their op ([`TfKernel::family`]; write one
    /// with [`Op`](crate::kernels::ops::Op)). `docs/vendor-guide.md`, "Your
    /// own ops and element types".
    const KERNELS: &'static [&'static dyn TfKernel] = &[];

    /// Opens one item of the device list (trimmed, non-empty). Wrap the
    /// driver with [`crate::devices::erase`].
    fn open(spec: &str) -> Result<Box<DynAccelerator>, OpenError>;
}

/// A [`Backend`] as plain data: what the bridge's entry points read.
#[derive(Clone, Copy)]
pub struct Plugin {
    /// [`Backend::DEVICE_TYPE`].
    pub device_type: &'static CStr,
    /// [`Backend::PLATFORM_NAME`].
    pub platform_name: &'static CStr,
    /// [`Backend::VENDOR`].
    pub vendor: &'static CStr,
    /// [`Backend::DEVICE_KINDS`].
    pub device_kinds: &'static str,
    /// [`Backend::DEFAULT_DEVICES`].
    pub default_devices: &'static str,
    /// [`Backend::open`].
    pub open: fn(&str) -> Result<Box<DynAccelerator>, OpenError>,
    /// [`Backend::KERNELS`].
    pub kernels: &'static [&'static dyn TfKernel],
}

impl core::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Plugin")
            .field("device_type", &self.device_type)
            .field("platform_name", &self.platform_name)
            .field("vendor", &self.vendor)
            .field("device_kinds", &self.device_kinds)
            .field("default_devices", &self.default_devices)
            .field("kernels", &self.kernels.len())
            .finish_non_exhaustive()
    }
}

impl Plugin {
    /// `B`'s plugin description.
    pub const fn of<B: Backend>() -> Self {
        Self {
            device_type: B::DEVICE_TYPE,
            platform_name: B::PLATFORM_NAME,
            vendor: B::VENDOR,
            device_kinds: B::DEVICE_KINDS,
            default_devices: B::DEFAULT_DEVICES,
            open: B::open,
            kernels: B::KERNELS,
        }
    }

    /// What the device registry needs to open this backend's devices.
    pub(crate) fn opener(&self) -> crate::registry::Opener {
        crate::registry::Opener {
            open: self.open,
            device_kinds: self.device_kinds,
            default_devices: self.default_devices,
        }
    }

    /// The device type as text.
    pub(crate) fn device_type_str(&self) -> &'static str {
        // Checked at compile time to be `[A-Z][A-Z_]*` (ASCII).
        self.device_type.to_str().unwrap_or("?")
    }
}

static INSTALLED: OnceLock<Plugin> = OnceLock::new();

/// Makes `plugin` the one this library serves; every entry point calls it
/// first. The first call wins (a `.so` exports exactly one backend).
pub fn install(plugin: Plugin) -> &'static Plugin {
    INSTALLED.get_or_init(|| {
        crate::settings::set_device_type(plugin.device_type_str());
        crate::identity::set_installed_type(plugin.device_type);
        plugin
    })
}

/// The installed plugin, if an entry point ran (in unit tests: the test
/// backend, installed on first use).
pub fn installed() -> Option<&'static Plugin> {
    #[cfg(test)]
    if INSTALLED.get().is_none() {
        crate::testing::install_backend();
    }
    INSTALLED.get()
}

/// Claims `plugin`'s device type and platform name for this process, once
/// (a second plugin of the same type declines: `identity.rs`).
pub fn claim_names(plugin: &Plugin) -> &'static Names {
    crate::identity::claim(plugin.device_type, plugin.platform_name)
}

/// Compile-time check of a device type or platform name; panics (a compile
/// error inside `const _`) with TF's rule.
pub const fn assert_valid_name(name: &CStr) {
    if validate::check_device_type(name.to_bytes()).is_err() {
        panic!("tensorplug: a device type / platform name must match [A-Z][A-Z_]* (TF's rule)");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_tfs_rule() {
        assert_valid_name(c"FPGA");
        assert_valid_name(c"NPU_X");
        for bad in [c"Fpga", c"NPU2", c"", c"_NPU"] {
            let result = std::panic::catch_unwind(|| assert_valid_name(bad));
            assert!(result.is_err(), "{bad:?} accepted");
        }
    }
}
