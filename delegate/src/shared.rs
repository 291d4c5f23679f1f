//! What the delegate and its kernels share: the device, what it declares,
//! the options and the report.

use crate::options::Options;
use crate::report::Report;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tensorplug_core::accelerator::Capabilities;
use tensorplug_host_bridge::prelude::DynAccelerator;

/// How long one invoke may wait for the device.
pub const DEVICE_TIMEOUT: Duration = Duration::from_secs(30);

/// The delegate's state; kernels hold it by `Arc`, so the device outlives
/// every kernel even if the delegate is destroyed first.
pub struct Shared {
    pub device: Mutex<Box<DynAccelerator>>,
    pub capabilities: Capabilities,
    pub options: Options,
    /// How int8 `FULLY_CONNECTED` requantizes: the option, or the
    /// runtime's own way.
    pub fc_rounding: tensorplug_core::quant::Rounding,
    pub report: Mutex<Report>,
    /// The first kernel `init` failure of the current `Prepare`.
    pub init_error: Mutex<Option<String>>,
    /// The device's events, with `profile_file`.
    pub trace: Mutex<crate::trace::Trace>,
    /// The constants on the device, by content (lock after `device`).
    pub constants: Mutex<crate::constants::Constants>,
    /// The cost model's figures, measured at the first graph that needs
    /// them (lock after `device`).
    pub cost: Mutex<Option<crate::cost::Figures>>,
}

/// Locks `m`, also after a panic elsewhere (the data is plain state).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    /// Writes the trace if `profile_file` is set (a failure goes to stderr).
    pub fn write_trace(&self) {
        let path = self.options.profile_file.as_deref();
        diagnostic(path, "profile", |p| lock(&self.trace).write(p));
    }

    /// Writes the report if `report_file` is set; a failure goes to stderr
    /// (the report is a diagnostic: it never fails an invoke).
    pub fn write_report(&self) {
        let path = self.options.report_file.as_deref();
        diagnostic(path, "report", |p| lock(&self.report).write(p));
    }
}

/// Writes a diagnostic file to `path` if one is set; a failure goes to
/// stderr, never to the invoke.
fn diagnostic(
    path: Option<&std::path::Path>,
    what: &str,
    write: impl FnOnce(&std::path::Path) -> std::io::Result<()>,
) {
    if let Some(path) = path
        && let Err(e) = write(path)
    {
        eprintln!(
            "tensorplug delegate: cannot write the {what} {}: {e}",
            path.display()
        );
    }
}
