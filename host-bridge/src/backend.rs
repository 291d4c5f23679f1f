//! The vendor seam: a [`Backend`] names a device type and opens its devices;
//! [`export_plugin!`](crate::export_plugin) turns it into TensorFlow's four
//! entry points. Everything else (streams, kernels, fusion, profiler) is the
//! bridge's, driven through [`tensorplug_core::accelerator::Accelerator`].
//!
//! Guide: `docs/vendor-guide.md`.

use crate::devices::DynAccelerator;
use crate::kernels::ops::TfKernel;
use std::ffi::CStr;
use std::sync::OnceLock;
use tensorplug_abi::validate;

/// Why a device could not be opened: any error, shown to the user as
/// `cannot open device `<spec>`: <error>`.
pub type OpenError = Box<dyn std::error::Error + Send + Sync>;

/// What a vendor implements to get a TensorFlow plugin.
///
/// ```
/// use std::ffi::CStr;
/// use tensorplug_host_bridge::{Backend, OpenError, devices::DynAccelerator};
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

    /// The device type as text.
    pub fn device_type_str(&self) -> &'static str {
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

/// The device type TF sees (`FPGA`), or `DEVICE` before any entry point ran.
pub fn device_type() -> &'static str {
    match (names(), installed()) {
        (Some(names), _) => names.device_type.to_str().unwrap_or("?"),
        (None, Some(plugin)) => plugin.device_type_str(),
        (None, None) => "DEVICE",
    }
}

/// [`device_type`] as a C string.
pub fn device_type_c() -> &'static CStr {
    match (names(), installed()) {
        (Some(names), _) => names.device_type,
        (None, Some(plugin)) => plugin.device_type,
        (None, None) => c"DEVICE",
    }
}

/// The names this process registers for the installed plugin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Names {
    /// The device type TF sees.
    pub device_type: &'static CStr,
    /// The platform name TF sees.
    pub platform_name: &'static CStr,
    /// Why the plugin declined (`None`: it serves its devices).
    pub declined: Option<String>,
}

static NAMES: OnceLock<Names> = OnceLock::new();

/// Claims `plugin`'s device type and platform name for this process, once.
///
/// A second plugin claiming the same type would make TF abort at `import
/// tensorflow` ("platform is already registered"). Instead, it declines:
/// it registers under a free `<TYPE>_DUPLICATE_<A..Z>` name with no device,
/// and says so once on stderr.
pub fn claim_names(plugin: &Plugin) -> &'static Names {
    NAMES.get_or_init(|| {
        let as_gpu = match crate::settings::flag(crate::settings::AS_GPU, false) {
            Ok(on) => on,
            Err(err) => {
                crate::log::error(format_args!("{err}; registering as usual"));
                false
            }
        };
        let (device_type, platform_name) = if as_gpu {
            (c"GPU", gpu_subtype(plugin))
        } else {
            (plugin.device_type, plugin.platform_name)
        };
        let ty = device_type.to_str().unwrap_or("?");
        let platform = platform_name.to_str().unwrap_or(ty);
        if crate::claim::claim(&format!("type.{ty}"))
            && (platform == ty || crate::claim::claim(&format!("type.{platform}")))
        {
            return Names {
                device_type,
                platform_name,
                declined: None,
            };
        }
        let free = (b'A'..=b'Z')
            .map(|letter| format!("{ty}_DUPLICATE_{}", letter as char))
            .find(|name| crate::claim::claim(&format!("type.{name}")))
            .unwrap_or_else(|| format!("{ty}_DUPLICATE"));
        let why = format!(
            "another plugin in this process already registered device type {ty}; this one \
             ({}) registers no device (as {free}). Install only one plugin per device type.",
            plugin_path().unwrap_or_else(|| "this plugin".into())
        );
        crate::log::error(format_args!("{why}"));
        // Leaked once per process: TF keeps the names for its lifetime.
        let name: &'static CStr = Box::leak(
            std::ffi::CString::new(free)
                .unwrap_or_default()
                .into_boxed_c_str(),
        );
        Names {
            device_type: name,
            platform_name: name,
            declined: Some(why),
        }
    })
}

/// The platform name (TF's device subtype) under `TENSORPLUG_AS_GPU`: the
/// backend's platform name, which must then differ from `GPU`.
fn gpu_subtype(plugin: &Plugin) -> &'static CStr {
    if plugin.platform_name == c"GPU" {
        c"GPU_PLUGGABLE"
    } else {
        plugin.platform_name
    }
}

/// The claimed names, once [`claim_names`] ran.
pub fn names() -> Option<&'static Names> {
    // In unit tests, installing the test backend claims its names.
    installed();
    NAMES.get()
}

/// Planes each plugin may number (its TF ordinals).
pub const PLANES_PER_PLUGIN: u32 = 100;

/// The first plane number of this plugin's devices: 0 for the first plugin
/// that profiles in this process, then 100, 200, ... so that two plugins'
/// planes (`/device:GPU:<1000 + n>`) never share a name or an id.
pub fn plane_base() -> u32 {
    static BASE: OnceLock<u32> = OnceLock::new();
    *BASE.get_or_init(|| {
        (0..64)
            .map(|k| k * PLANES_PER_PLUGIN)
            .find(|base| crate::claim::claim(&format!("plane.{base}")))
            .unwrap_or(0)
    })
}

/// The file this library was loaded from, for messages.
fn plugin_path() -> Option<String> {
    #[cfg(unix)]
    {
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        // SAFETY: `dladdr` only reads our own function's address.
        let found = unsafe { libc::dladdr(plugin_path as *const libc::c_void, &mut info) };
        if found != 0 && !info.dli_fname.is_null() {
            // SAFETY: dladdr returns a NUL-terminated path owned by the loader.
            let path = unsafe { CStr::from_ptr(info.dli_fname) };
            return Some(path.to_string_lossy().into_owned());
        }
    }
    None
}

/// Compile-time check of a device type or platform name; panics (a compile
/// error inside `const _`) with TF's rule.
pub const fn assert_valid_name(name: &CStr) {
    if validate::check_device_type(name.to_bytes()).is_err() {
        panic!("tensorplug: a device type / platform name must match [A-Z][A-Z_]* (TF's rule)");
    }
}

/// Emits `SE_InitPlugin`, `TF_InitKernel`, `TF_InitGraph` and
/// `TF_InitProfiler` for a [`Backend`]. Use it once, in a `cdylib` crate.
///
/// An invalid device type does not compile:
/// ```compile_fail
/// # use std::ffi::CStr;
/// # use tensorplug_host_bridge::{Backend, OpenError, devices::DynAccelerator};
/// struct Bad;
/// impl Backend for Bad {
///     const DEVICE_TYPE: &'static CStr = c"Npu2";
///     const VENDOR: &'static CStr = c"x";
///     const DEVICE_KINDS: &'static str = "";
///     fn open(_: &str) -> Result<Box<DynAccelerator>, OpenError> { Err("no".into()) }
/// }
/// tensorplug_host_bridge::export_plugin!(Bad);
/// ```
#[macro_export]
macro_rules! export_plugin {
    ($backend:ty) => {
        const _: () = {
            $crate::backend::assert_valid_name(<$backend as $crate::Backend>::DEVICE_TYPE);
            $crate::backend::assert_valid_name(<$backend as $crate::Backend>::PLATFORM_NAME);
        };

        /// TF's StreamExecutor entry point.
        ///
        /// # Safety
        /// Called by TF with its registration params and a live status.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn SE_InitPlugin(
            params: *mut $crate::abi::tf::SE_PlatformRegistrationParams,
            status: *mut $crate::abi::tf::TF_Status,
        ) {
            $crate::backend::install($crate::backend::Plugin::of::<$backend>());
            // SAFETY: TF's contract.
            unsafe { $crate::se::se_init_plugin(params, status) }
        }

        /// TF's kernel entry point.
        #[unsafe(no_mangle)]
        pub extern "C" fn TF_InitKernel() {
            $crate::backend::install($crate::backend::Plugin::of::<$backend>());
            $crate::kernels::tf_init_kernel()
        }

        /// TF's graph-optimizer entry point.
        ///
        /// # Safety
        /// Called by TF with its registration params and a live status.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn TF_InitGraph(
            params: *mut $crate::abi::tf::TP_OptimizerRegistrationParams,
            status: *mut $crate::abi::tf::TF_Status,
        ) {
            $crate::backend::install($crate::backend::Plugin::of::<$backend>());
            // SAFETY: TF's contract.
            unsafe { $crate::graph::tf_init_graph(params, status) }
        }

        /// TF's profiler entry point.
        ///
        /// # Safety
        /// Called by TF with its registration params and a live status.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn TF_InitProfiler(
            params: *mut $crate::abi::tf::TF_ProfilerRegistrationParams,
            status: *mut $crate::abi::tf::TF_Status,
        ) {
            $crate::backend::install($crate::backend::Plugin::of::<$backend>());
            // SAFETY: TF's contract.
            unsafe { $crate::profiler::tf_init_profiler(params, status) }
        }
    };
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
