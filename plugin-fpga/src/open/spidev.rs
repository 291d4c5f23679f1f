//! `spidev:<dev>`: the reference FPGA driver over the SPI frame protocol
//! (`docs/transports.md`) on a Linux spidev node, through
//! linux-embedded-hal's `SpidevDevice` (an embedded-hal 1.0 `SpiDevice`).
//! Mode 0, 8-bit words, at `TENSORPLUG_SPI_HZ` (default 10 MHz).

use std::path::Path;
use tensorplug_host_bridge::prelude::{DynAccelerator, OpenError, settings};

/// The SPI clock in Hz: setting `SPI_HZ` (`TENSORPLUG_SPI_HZ`).
pub const SPI_HZ: &str = "SPI_HZ";
/// The SPI clock when [`SPI_HZ`] is unset.
pub const DEFAULT_SPI_HZ: u32 = 10_000_000;

#[cfg(target_os = "linux")]
pub fn open(path: &Path) -> Result<Box<DynAccelerator>, OpenError> {
    use linux_embedded_hal::SpidevDevice;
    use linux_embedded_hal::spidev::{SpiModeFlags, SpidevOptions};
    use tensorplug_device_fpga::transport::spi::{SpiConfig, SpiTransport};

    let hz = settings::positive(SPI_HZ, DEFAULT_SPI_HZ, "clock rate in Hz")?;
    let mut spi = SpidevDevice::open(path).map_err(|e| {
        format!(
            "cannot open it: {} (is the spidev driver bound to the FPGA's chip select?)",
            e.inner()
        )
    })?;
    let options = SpidevOptions::new()
        .bits_per_word(8)
        .max_speed_hz(hz)
        .mode(SpiModeFlags::SPI_MODE_0)
        .build();
    spi.configure(&options)
        .map_err(|e| format!("cannot configure mode 0 at {hz} Hz: {e}"))?;
    super::bring_up(SpiTransport::new(spi, SpiConfig::default()))
}

#[cfg(not(target_os = "linux"))]
pub fn open(_path: &Path) -> Result<Box<DynAccelerator>, OpenError> {
    Err("spidev exists only on Linux".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_spidev_node_is_a_clear_open_error() {
        let Err(error) = open(Path::new("/dev/spidev-tensorplug-missing")) else {
            panic!("opened a node that does not exist");
        };
        let text = error.to_string();
        assert!(text.contains("cannot open"), "{text}");
    }
}
