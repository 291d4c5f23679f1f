//! The TensorFlow versions the plugin serves. On any other, and when its
//! devices cannot be opened, the plugin declines: it registers its platform
//! with no device and says why once on stderr, and TF goes on with the CPU
//! (an error status from `SE_InitPlugin` would abort `import tensorflow`).
//! `docs/tf-abi.md`, "Versions".

use crate::ffi::tf_api;
use crate::settings;

/// The oldest and newest TF minor versions the one build is tested with
/// (`cargo xtask test --tf-matrix`); the wheel requires this range.
pub const TESTED: [(u32, u32); 2] = [(2, 15), (2, 21)];

/// `major.minor` of a TF version string (`2.15.1`, `2.16.0-rc1`).
pub fn minor_version(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor: String = parts
        .next()?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    Some((major, minor.parse().ok()?))
}

/// Why TF `version` (`None`: not found) is not served, unless
/// `allow_untested` (then only an unreadable version declines).
pub fn version_refusal(version: Option<&str>, allow_untested: bool) -> Option<String> {
    let [(a, b), (c, d)] = TESTED;
    let range = format!("{a}.{b} to {c}.{d}");
    let fix = format!(
        "install tensorflow-cpu>={a}.{b},<{c}.{} (or set TENSORPLUG_ALLOW_UNTESTED_TF=1 to \
         try this TensorFlow anyway)",
        d + 1
    );
    let Some(version) = version else {
        return Some(format!(
            "cannot read TensorFlow's version (TF_Version not found); this plugin serves \
             TensorFlow {range}: {fix}"
        ));
    };
    let Some(minor) = minor_version(version) else {
        return Some(format!(
            "cannot parse TensorFlow's version {version:?}: {fix}"
        ));
    };
    if (TESTED[0]..=TESTED[1]).contains(&minor) || allow_untested {
        return None;
    }
    Some(format!(
        "TensorFlow {version} is outside the versions this plugin serves ({range}): {fix}"
    ))
}

/// Why this process's TF is not served (`None`: it is). A bad
/// `TENSORPLUG_ALLOW_UNTESTED_TF` declines too, naming the variable.
pub fn refusal() -> Option<String> {
    let allow = match settings::flag(settings::ALLOW_UNTESTED_TF, false) {
        Ok(allow) => allow,
        Err(e) => return Some(e.to_string()),
    };
    version_refusal(tf_version().as_deref(), allow)
}

/// `TF_Version()`: TF's own version string.
pub fn tf_version() -> Option<String> {
    let address = tf_api::lookup(c"TF_Version").ok()?;
    // SAFETY: `const char* TF_Version(void)` (c_api.h): a static string.
    let version: unsafe extern "C" fn() -> *const std::ffi::c_char =
        unsafe { std::mem::transmute::<*mut std::ffi::c_void, _>(address) };
    // SAFETY: as above; null is checked.
    let text = unsafe { version() };
    if text.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated static string.
    Some(
        unsafe { std::ffi::CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// Whether this TF aborts the process when a device-to-host copy fails
/// (`LOG(FATAL) "PluggableDevice->CPU Memcpy failed"` in TF 2.15 and 2.16;
/// 2.17 and later return the error to the op). There every kernel waits
/// for the device, so a device fault fails its own op instead of a later
/// copy, at the cost of the host running ahead of the device.
pub fn copy_failure_aborts() -> bool {
    static ABORTS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ABORTS.get_or_init(|| {
        let old = tf_version()
            .as_deref()
            .and_then(minor_version)
            .is_some_and(|v| v < (2, 17));
        if old {
            crate::log::warn(format_args!(
                "TensorFlow {} aborts on a failed device-to-host copy: every kernel waits for \
                 the device, so a device fault fails its op instead",
                tf_version().unwrap_or_default()
            ));
        }
        old
    })
}

/// The one line a declining plugin prints.
pub fn declined_line(device_type: &str, why: &str) -> String {
    format!("no {device_type} device is registered, TensorFlow runs on the CPU: {why}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tested_range_is_served_and_others_declined_with_the_fix() {
        for served in ["2.15.1", "2.16.0-rc1", "2.21.0", "2.18.1"] {
            assert_eq!(version_refusal(Some(served), false), None, "{served}");
        }
        for (outside, allowed) in [("2.14.1", true), ("2.22.0", true), ("3.0.0", true)] {
            let why = version_refusal(Some(outside), false).expect("declined");
            assert!(
                why.contains(outside) && why.contains("2.15 to 2.21"),
                "{why}"
            );
            assert!(why.contains("tensorflow-cpu>=2.15,<2.22"), "{why}");
            assert_eq!(version_refusal(Some(outside), true).is_none(), allowed);
        }
        assert!(
            version_refusal(None, true)
                .unwrap()
                .contains("TF_Version not found")
        );
        assert!(
            version_refusal(Some("nightly"), true)
                .unwrap()
                .contains("cannot parse")
        );
        assert_eq!(minor_version("2.16.0-rc1"), Some((2, 16)));
    }
}
