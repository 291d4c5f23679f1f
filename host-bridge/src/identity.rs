//! Which plugin this library serves, by name: the device type and platform
//! name it registers ([`names`], [`device_type`]) and its plane numbers. A
//! leaf every module may import; `backend.rs` installs the plugin.

use std::ffi::CStr;
use std::sync::OnceLock;

/// The installed plugin's device type ([`crate::backend::install`]).
static INSTALLED_TYPE: OnceLock<&'static CStr> = OnceLock::new();

/// Records the installed plugin's device type (its first install only).
pub(crate) fn set_installed_type(ty: &'static CStr) {
    let _ = INSTALLED_TYPE.set(ty);
}

/// The device type TF sees (`FPGA`), or `DEVICE` before any entry point ran.
pub fn device_type() -> &'static str {
    match (names(), INSTALLED_TYPE.get()) {
        (Some(names), _) => names.device_type.to_str().unwrap_or("?"),
        (None, Some(ty)) => ty.to_str().unwrap_or("?"),
        (None, None) => "DEVICE",
    }
}

/// [`device_type`] as a C string.
pub fn device_type_c() -> &'static CStr {
    match (names(), INSTALLED_TYPE.get()) {
        (Some(names), _) => names.device_type,
        (None, Some(ty)) => ty,
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

/// Claims device type `ty` and platform name `platform` for this process,
/// once.
///
/// A second plugin claiming the same type would make TF abort at `import
/// tensorflow` ("platform is already registered"). Instead, it declines:
/// it registers under a free `<TYPE>_DUPLICATE_<A..Z>` name with no device,
/// and says so once on stderr.
pub(crate) fn claim(ty: &'static CStr, platform: &'static CStr) -> &'static Names {
    NAMES.get_or_init(|| {
        let as_gpu = match crate::settings::flag(crate::settings::AS_GPU, false) {
            Ok(on) => on,
            Err(err) => {
                crate::log::error(format_args!("{err}; registering as usual"));
                false
            }
        };
        let (device_type, platform_name) = if as_gpu {
            (c"GPU", gpu_subtype(platform))
        } else {
            (ty, platform)
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
fn gpu_subtype(platform: &'static CStr) -> &'static CStr {
    if platform == c"GPU" {
        c"GPU_PLUGGABLE"
    } else {
        platform
    }
}

/// The claimed names, once [`claim_names`](crate::backend::claim_names) ran.
pub fn names() -> Option<&'static Names> {
    // In unit tests, installing the test backend claims its names.
    #[cfg(test)]
    crate::backend::installed();
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
