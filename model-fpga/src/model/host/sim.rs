//! A whole simulated FPGA on this host: the model on its own thread and the
//! reference driver over a waking MMIO transport to it. What the host
//! bridge's `sim` device and the bridge's own tests run.

use super::in_process::InProcessDevice;
use super::serve::ServeOptions;
use super::waking::WakingTransport;
use std::format;
use std::string::String;
use std::sync::Arc;
use tensorplug_device_fpga::driver::{Driver, DriverConfig, StdClock};
use tensorplug_device_fpga::transport::mmio::{HeapBar, MmioTransport};

/// Live device allocations per driver (TF's BFC allocator makes few, large ones).
pub const SIM_MAX_ALLOCATIONS: usize = 1024;
/// Device memory of a `sim` device.
pub const SIM_MEMORY_BYTES: usize = 256 << 20;
/// DMA window of a `sim` device (host copies are staged through it).
pub const SIM_DMA_BYTES: usize = 8 << 20;

/// The driver of a `sim` device.
pub type SimDriver =
    Driver<WakingTransport<MmioTransport<Arc<HeapBar>>>, StdClock, SIM_MAX_ALLOCATIONS>;

/// Starts the model thread and brings up the driver with `config`. Drop
/// the driver before the device (the device's drop stops the thread).
pub fn open_sim(config: DriverConfig) -> Result<(SimDriver, InProcessDevice), String> {
    let device = InProcessDevice::spawn(SIM_MEMORY_BYTES, SIM_DMA_BYTES, ServeOptions::default())
        .map_err(|e| format!("cannot start the model thread: {e}"))?;
    let transport = WakingTransport::new(device.transport(), device.waker());
    let driver = Driver::new(transport, StdClock::default(), config)
        .map_err(|e| format!("driver bring-up failed: {e}"))?;
    Ok((driver, device))
}
