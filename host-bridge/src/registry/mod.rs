//! The device registry: every opened device by ordinal, reachable from every
//! plugin interface (StreamExecutor, kernels, profiler).
//!
//! `SE_InitPlugin` opens the devices named by `TENSORPLUG_DEVICE` once per
//! process; kernels find theirs from the `SP_Stream` TF hands them
//! ([`Stream::from_raw`](crate::se::stream_from_raw)), the profiler walks
//! [`devices`].

mod core;
mod device;
mod handles;
mod inflight;
mod stream;
mod worker;

pub use self::core::{DeviceCore, DeviceState};
pub use device::{ALLOCATION_ALIGN, AllocStats, Device};
pub use handles::{HandleWindow, MIN_WINDOW};
pub use inflight::{MAX_IN_FLIGHT, OpLabel};
pub use stream::Stream;
pub use worker::{Completion, CompletionWorker};

use crate::devices::{self, DeviceSpec};
use crate::error::{Error, Result};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Wait budget when `TENSORPLUG_TIMEOUT_MS` is unset.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The environment variable that bounds every wait on a device.
pub const TIMEOUT_ENV: &str = "TENSORPLUG_TIMEOUT_MS";

static DEVICES: OnceLock<Vec<Arc<Device>>> = OnceLock::new();

/// Opens `specs` as `FPGA:0..n` unless devices are already open; returns
/// the registry. A failure opens nothing (devices opened so far are closed).
pub fn open_all(specs: &[DeviceSpec]) -> Result<&'static [Arc<Device>]> {
    if let Some(open) = DEVICES.get() {
        return Ok(open);
    }
    let timeout = timeout_from_env()?;
    let mut opened = Vec::with_capacity(specs.len());
    for (ordinal, spec) in specs.iter().enumerate() {
        let accel = devices::open(spec)?;
        let ordinal = i32::try_from(ordinal)
            .map_err(|_| Error::InvalidArgument("too many devices".into()))?;
        opened.push(Device::new(ordinal, &spec.to_string(), accel, timeout)?);
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

/// `TENSORPLUG_TIMEOUT_MS`, or [`DEFAULT_TIMEOUT`].
pub fn timeout_from_env() -> Result<Duration> {
    match std::env::var(TIMEOUT_ENV) {
        Err(_) => Ok(DEFAULT_TIMEOUT),
        Ok(text) => match text.trim().parse::<u64>() {
            Ok(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
            _ => Err(Error::InvalidArgument(format!(
                "{TIMEOUT_ENV}={text:?}: expected a positive number of milliseconds"
            ))),
        },
    }
}
