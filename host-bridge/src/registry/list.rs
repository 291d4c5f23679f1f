//! The device list a plugin opens: one setting, or the backend's default.

use crate::devices::{DynAccelerator, OpenError};
use crate::error::{Error, Result};
use crate::settings;

/// What the registry needs of the installed backend to open its devices
/// ([`Plugin::opener`](crate::backend::Plugin::opener)).
#[derive(Clone, Copy, Debug)]
pub struct Opener {
    /// [`Backend::open`](crate::Backend::open).
    pub open: fn(&str) -> std::result::Result<Box<DynAccelerator>, OpenError>,
    /// [`Backend::DEVICE_KINDS`](crate::Backend::DEVICE_KINDS).
    pub device_kinds: &'static str,
    /// [`Backend::DEFAULT_DEVICES`](crate::Backend::DEFAULT_DEVICES).
    pub default_devices: &'static str,
}

/// The devices to open, and where the list came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceList {
    /// `TENSORPLUG_DEVICE="sim,sim"`, or the plugin's default list.
    pub source: String,
    /// One item per device, in ordinal order.
    pub items: Vec<String>,
}

/// The device list: setting `DEVICE` (`TENSORPLUG_<TYPE>_DEVICE`, else
/// `TENSORPLUG_DEVICE`), else the plugin's default.
pub fn list_from_env(plugin: &Opener) -> Result<DeviceList> {
    let (source, text) = match settings::get(settings::DEVICE)? {
        Some(value) => (format!("{}={:?}", value.var, value.text), value.text),
        None => (
            format!("the default device list {:?}", plugin.default_devices),
            plugin.default_devices.to_owned(),
        ),
    };
    let items = parse_list(&text).map_err(|reason| Error::DeviceSpec {
        value: source.clone(),
        reason: format!(
            "{reason}; expected a comma-separated list of {}",
            plugin.device_kinds
        ),
    })?;
    Ok(DeviceList { source, items })
}

/// Splits a device list; an empty item is an error that says which.
pub fn parse_list(text: &str) -> std::result::Result<Vec<String>, String> {
    text.split(',')
        .enumerate()
        .map(|(index, item)| match item.trim() {
            "" => Err(format!("item {} is empty", index + 1)),
            item => Ok(item.to_owned()),
        })
        .collect()
}

/// Opens one item through the plugin's backend.
pub fn open(plugin: &Opener, item: &str) -> Result<Box<DynAccelerator>> {
    (plugin.open)(item).map_err(|error| Error::Open {
        spec: item.to_owned(),
        reason: error.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_keep_their_order_and_name_empty_items() {
        assert_eq!(parse_list(" sim, pcie:/x ").unwrap(), ["sim", "pcie:/x"]);
        assert_eq!(parse_list("sim,,sim").unwrap_err(), "item 2 is empty");
    }
}
