//! `spidev:<dev>`: the reference FPGA driver over the SPI frame protocol
//! (`docs/transports.md`) on a Linux spidev node, through
//! linux-embedded-hal's `SpidevDevice` (an embedded-hal 1.0 `SpiDevice`).
//! Mode 0, 8-bit words, at `TENSORPLUG_SPI_HZ` (default 10 MHz).

use super::DynAccelerator;
use crate::error::{Error, Result};
use std::path::Path;

/// The SPI clock, in Hz.
pub const SPI_HZ_ENV: &str = "TENSORPLUG_SPI_HZ";
/// The SPI clock when [`SPI_HZ_ENV`] is unset.
pub const DEFAULT_SPI_HZ: u32 = 10_000_000;

/// [`SPI_HZ_ENV`]'s value (`None`: unset) as a clock rate.
pub fn parse_spi_hz(value: Option<&str>) -> std::result::Result<u32, String> {
    super::positive_setting(SPI_HZ_ENV, value, DEFAULT_SPI_HZ, "clock rate in Hz")
}

#[cfg(target_os = "linux")]
pub fn open(path: &Path) -> Result<Box<DynAccelerator>> {
    use linux_embedded_hal::SpidevDevice;
    use linux_embedded_hal::spidev::{SpiModeFlags, SpidevOptions};
    use tensorplug_device_fpga::transport::spi::{SpiConfig, SpiTransport};

    let fail = |reason: String| Error::Open {
        spec: format!("spidev:{}", path.display()),
        reason,
    };
    let hz = parse_spi_hz(std::env::var(SPI_HZ_ENV).ok().as_deref()).map_err(fail)?;
    let mut spi = SpidevDevice::open(path).map_err(|e| {
        fail(format!(
            "cannot open it: {} (is the spidev driver bound to the FPGA's chip select?)",
            e.inner()
        ))
    })?;
    let options = SpidevOptions::new()
        .bits_per_word(8)
        .max_speed_hz(hz)
        .mode(SpiModeFlags::SPI_MODE_0)
        .build();
    spi.configure(&options)
        .map_err(|e| fail(format!("cannot configure mode 0 at {hz} Hz: {e}")))?;
    super::bring_up(SpiTransport::new(spi, SpiConfig::default()), fail)
}

#[cfg(not(target_os = "linux"))]
pub fn open(path: &Path) -> Result<Box<DynAccelerator>> {
    Err(Error::Open {
        spec: format!("spidev:{}", path.display()),
        reason: "spidev exists only on Linux".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spi_clock_defaults_to_10_mhz_and_refuses_nonsense() {
        assert_eq!(parse_spi_hz(None), Ok(DEFAULT_SPI_HZ));
        assert_eq!(parse_spi_hz(Some(" 2000000 ")), Ok(2_000_000));
        for bad in ["0", "-1", "fast", "10MHz"] {
            let error = parse_spi_hz(Some(bad)).unwrap_err();
            assert!(error.contains("TENSORPLUG_SPI_HZ"), "{error}");
        }
    }

    #[test]
    fn a_missing_spidev_node_is_a_clear_open_error() {
        let Err(error) = open(Path::new("/dev/spidev-tensorplug-missing")) else {
            panic!("opened a node that does not exist");
        };
        let text = error.to_string();
        assert!(
            text.contains("spidev:/dev/spidev-tensorplug-missing") && text.contains("cannot open"),
            "{text}"
        );
    }
}
