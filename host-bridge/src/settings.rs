//! Every environment setting the bridge reads, with one vocabulary.
//!
//! A setting `NAME` is read from `TENSORPLUG_<TYPE>_NAME` (the plugin's
//! device type, e.g. `TENSORPLUG_NPU_DEVICE`), else from `TENSORPLUG_NAME`,
//! so two plugins in one process can be told apart and one plugin needs no
//! prefix. Unset, empty or blank means "the default". Booleans are
//! `1`/`on`/`true`/`yes` or `0`/`off`/`false`/`no`, any case. A value that
//! is none of the accepted forms is an error that names the variable.

use crate::error::{Error, Result};
use std::sync::OnceLock;

static DEVICE_TYPE: OnceLock<&'static str> = OnceLock::new();

/// Sets the `<TYPE>` of `TENSORPLUG_<TYPE>_NAME` (the backend does, once).
pub(crate) fn set_device_type(device_type: &'static str) {
    let _ = DEVICE_TYPE.set(device_type);
}

/// `TENSORPLUG_DEVICE`: the devices to open.
pub const DEVICE: &str = "DEVICE";
/// `TENSORPLUG_TIMEOUT_MS`: the budget of every wait on a device.
pub const TIMEOUT_MS: &str = "TIMEOUT_MS";
/// `TENSORPLUG_PROFILER`: whether profiler sessions trace the devices.
pub const PROFILER: &str = "PROFILER";
/// `TENSORPLUG_GRAPH_FUSION`: whether the fusion pass rewrites graphs.
pub const GRAPH_FUSION: &str = "GRAPH_FUSION";
/// `TENSORPLUG_GRAPH_INT8`: whether the pass runs quantization-aware graphs in int8.
pub const GRAPH_INT8: &str = "GRAPH_INT8";
/// `TENSORPLUG_GRAPH_HALF`: whether the pass lowers half-precision ops on
/// the device to float32 ops between casts.
pub const GRAPH_HALF: &str = "GRAPH_HALF";
/// `TENSORPLUG_GRAPH_LIST_GRADS`: whether a `while` loop's list gradients
/// accumulate in place on the device (`graph/list_grads.rs`).
pub const GRAPH_LIST_GRADS: &str = "GRAPH_LIST_GRADS";
/// `TENSORPLUG_GRAPH_PROGRAMS`: whether device segments become program
/// nodes (default on since stop 65; `off` runs them op by op).
pub const GRAPH_PROGRAMS: &str = "GRAPH_PROGRAMS";
/// `TENSORPLUG_PROGRAM_FUSION`: whether a program's compile fuses groups of
/// nodes into one command (`kernels/program/fuse.rs`).
pub const PROGRAM_FUSION: &str = "PROGRAM_FUSION";
/// `TENSORPLUG_FALLBACK`: `warn`, `off` or `error` for float ops placed on the CPU.
pub const FALLBACK: &str = "FALLBACK";
/// `TENSORPLUG_FALLBACK_FILE`: append every fallback found to this file.
pub const FALLBACK_FILE: &str = "FALLBACK_FILE";
/// `TENSORPLUG_GRAPH_DUMP_DIR`: where to write every graph the pass sees.
pub const GRAPH_DUMP_DIR: &str = "GRAPH_DUMP_DIR";
/// `TENSORPLUG_AS_GPU`: register the devices as TF device type `GPU` (the
/// backend's platform name becomes the subtype), so that TF's strategies and
/// GPU-only paths pick them. `docs/multi-worker.md`.
pub const AS_GPU: &str = "AS_GPU";
/// `TENSORPLUG_ALLOW_UNTESTED_TF`: serve devices on a TF outside the tested range.
pub const ALLOW_UNTESTED_TF: &str = "ALLOW_UNTESTED_TF";

/// A setting's value and the variable it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Value {
    /// The variable that held it (`TENSORPLUG_NPU_DEVICE`).
    pub var: String,
    /// Its trimmed, non-empty text.
    pub text: String,
}

impl Value {
    /// An error about this value: `<VAR>="<text>": <why>`.
    pub fn error(&self, why: impl std::fmt::Display) -> Error {
        Error::InvalidArgument(format!("{}={:?}: {why}", self.var, self.text))
    }
}

/// The variable names `name` is read from, most specific first.
pub fn vars(name: &str) -> [String; 2] {
    [
        format!(
            "TENSORPLUG_{}_{name}",
            DEVICE_TYPE.get().copied().unwrap_or("UNSET")
        ),
        format!("TENSORPLUG_{name}"),
    ]
}

/// `name`'s value, or `None` when unset or blank everywhere.
pub fn get(name: &str) -> Result<Option<Value>> {
    for var in vars(name) {
        match std::env::var(&var) {
            Ok(text) if !text.trim().is_empty() => {
                let text = text.trim().to_owned();
                return Ok(Some(Value { var, text }));
            }
            Ok(_) | Err(std::env::VarError::NotPresent) => {}
            Err(std::env::VarError::NotUnicode(raw)) => {
                return Err(Error::InvalidArgument(format!(
                    "{var}={raw:?}: the value is not valid UTF-8"
                )));
            }
        }
    }
    Ok(None)
}

/// A boolean setting; `default` when unset.
pub fn flag(name: &str, default: bool) -> Result<bool> {
    get(name)?.map_or(Ok(default), |value| parse_flag(&value))
}

/// Parses a boolean in the module's vocabulary.
pub fn parse_flag(value: &Value) -> Result<bool> {
    match value.text.to_ascii_lowercase().as_str() {
        "1" | "on" | "true" | "yes" => Ok(true),
        "0" | "off" | "false" | "no" => Ok(false),
        _ => Err(value.error("expected 1/on/true/yes or 0/off/false/no")),
    }
}

/// A positive number setting; `default` when unset.
pub fn positive<T>(name: &str, default: T, what: &str) -> Result<T>
where
    T: std::str::FromStr + PartialOrd + Default,
{
    get(name)?.map_or(Ok(default), |value| parse_positive(&value, what))
}

/// Parses a positive number; the error says what it should be.
pub fn parse_positive<T>(value: &Value, what: &str) -> Result<T>
where
    T: std::str::FromStr + PartialOrd + Default,
{
    match value.text.parse::<T>() {
        Ok(n) if n > T::default() => Ok(n),
        _ => Err(value.error(format!("expected a positive {what}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: &str) -> Value {
        Value {
            var: "TENSORPLUG_X".into(),
            text: text.into(),
        }
    }

    #[test]
    fn one_boolean_vocabulary() {
        for on in ["1", "on", "TRUE", "yes"] {
            assert!(parse_flag(&value(on)).unwrap(), "{on}");
        }
        for off in ["0", "Off", "false", "no"] {
            assert!(!parse_flag(&value(off)).unwrap(), "{off}");
        }
        let error = parse_flag(&value("maybe")).unwrap_err().to_string();
        assert!(error.contains("TENSORPLUG_X=\"maybe\""), "{error}");
    }

    #[test]
    fn positive_numbers_refuse_zero_and_text() {
        assert_eq!(
            parse_positive::<u32>(&value("9600"), "baud rate").unwrap(),
            9600
        );
        for bad in ["0", "-1", "fast", "10MHz"] {
            let error = parse_positive::<u64>(&value(bad), "count").unwrap_err();
            assert!(
                error.to_string().contains("expected a positive count"),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_typed_variable_comes_first() {
        let [typed, plain] = vars("DEVICE");
        assert!(typed.starts_with("TENSORPLUG_") && typed.ends_with("_DEVICE"));
        assert_eq!(plain, "TENSORPLUG_DEVICE");
    }
}
