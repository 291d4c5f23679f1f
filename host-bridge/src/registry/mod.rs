//! The device registry: every opened device by ordinal, reachable from every
//! plugin interface (StreamExecutor, kernels, profiler).
//!
//! `SE_InitPlugin` opens the devices of the device list once per
//! process; kernels find theirs from the `SP_Stream` TF hands them
//! ([`Stream::from_raw`](crate::se::stream_from_raw)), the profiler walks
//! [`devices`].

mod access;
mod device;
mod device_core;
mod handles;
mod inflight;
mod list;
mod poison;
mod stream;
mod worker;

pub use access::{Access, Range, Ranges};
pub use device::Device;
#[cfg(feature = "internals")]
pub use device_core::DeviceCore;
pub use inflight::OpLabel;
pub use list::{DeviceList, Opener, list_from_env, open};
pub use stream::Stream;

use crate::error::{Error, Result};
use crate::settings;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Wait budget when `TENSORPLUG_TIMEOUT_MS` is unset.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

static DEVICES: OnceLock<Vec<Arc<Device>>> = OnceLock::new();

/// Opens `list` as `<TYPE>:0..n` unless devices are already open; returns
/// the registry. A failure opens nothing (devices opened so far are closed);
/// its message names the item and the list.
pub fn open_all(plugin: &Opener, list: &DeviceList) -> Result<&'static [Arc<Device>]> {
    if let Some(open) = DEVICES.get() {
        return Ok(open);
    }
    let timeout = timeout_from_env()?;
    let mut opened = Vec::with_capacity(list.items.len());
    for (ordinal, item) in (0..).zip(&list.items) {
        let in_list = |error| match error {
            Error::Open { spec, reason } => Error::Open {
                spec,
                reason: format!("{reason} [item {} of {}]", ordinal + 1, list.source),
            },
            other => other,
        };
        let accel = open(plugin, item).map_err(in_list)?;
        opened.push(Device::new(ordinal, item, accel, timeout).map_err(in_list)?);
    }
    Ok(DEVICES.get_or_init(|| opened))
}

/// Every open device, by ordinal (empty before `SE_InitPlugin`).
pub fn devices() -> &'static [Arc<Device>] {
    DEVICES.get().map_or(&[], Vec::as_slice)
}

/// The device with `ordinal`.
pub fn device(ordinal: i32) -> Option<&'static Arc<Device>> {
    usize::try_from(ordinal).ok().and_then(|i| devices().get(i))
}

/// Setting `TIMEOUT_MS` (`TENSORPLUG_TIMEOUT_MS`), or 60 s
/// (`DEFAULT_TIMEOUT`).
pub fn timeout_from_env() -> Result<Duration> {
    let default = DEFAULT_TIMEOUT.as_millis() as u64;
    let ms = settings::positive(settings::TIMEOUT_MS, default, "number of milliseconds")?;
    Ok(Duration::from_millis(ms))
}
