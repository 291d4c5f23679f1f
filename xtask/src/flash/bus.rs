//! The SPI device under the programmer: the model's W25Q128JV over a
//! memory-mapped file, or a real flash on Linux spidev.

use super::write_atomically;
use anyhow::{Context, Result, anyhow, bail};
use embedded_hal::spi::{self, ErrorType, Operation, SpiDevice};
use memmap2::MmapMut;
use std::fs::{self, File, OpenOptions};
use std::path::Path;
use tensorplug_abi::device::flash::CONFIG_FLASH_MIN_SIZE;
use tensorplug_model_fpga::model::HostClock;
use tensorplug_model_fpga::model::nor_flash::NorFlash;

/// Size of the simulated W25Q128JV (and of its file).
pub const SIM_FLASH_SIZE: usize = CONFIG_FLASH_MIN_SIZE as usize;

/// The simulated flash's storage: a 16 MiB file mapped shared, so every
/// erase and page program lands in the file as it happens (an interrupted
/// run leaves exactly what a real chip would hold), locked against a
/// second run.
pub struct SimFile {
    map: MmapMut,
    /// Holds the lock; unmapped first (fields drop in order).
    _file: File,
}

impl SimFile {
    /// Opens `path`, creating it erased (0xFF) if it does not exist.
    pub fn open(path: &Path) -> Result<Self> {
        if !path.exists() {
            if let Some(dir) = path.parent() {
                fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            }
            write_atomically(path, &vec![0xFF; SIM_FLASH_SIZE])?;
            eprintln!("created an erased simulated flash: {}", path.display());
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .with_context(|| format!("opening simulated flash {}", path.display()))?;
        file.try_lock().map_err(|_| {
            anyhow!(
                "{} is in use by another `cargo xtask flash`",
                path.display()
            )
        })?;
        let len = file.metadata()?.len();
        if len != SIM_FLASH_SIZE as u64 {
            bail!(
                "{} is {len} bytes, not a {SIM_FLASH_SIZE}-byte flash image; \
                 delete it to start from an erased flash",
                path.display()
            );
        }
        // SAFETY: the file is exclusively locked, so no cooperating process
        // resizes or writes it while mapped; the map lives no longer than `file`.
        let map = unsafe { MmapMut::map_mut(&file) }
            .with_context(|| format!("mapping {}", path.display()))?;
        Ok(Self { map, _file: file })
    }
}

impl AsRef<[u8]> for SimFile {
    fn as_ref(&self) -> &[u8] {
        &self.map
    }
}

impl AsMut<[u8]> for SimFile {
    fn as_mut(&mut self) -> &mut [u8] {
        &mut self.map
    }
}

impl Drop for SimFile {
    fn drop(&mut self) {
        // The page cache already holds every write; this only asks the
        // kernel to put it on disk now. Nothing useful to do on failure.
        let _ = self.map.flush();
    }
}

/// The SPI device under the programmer: the model's NOR flash or spidev.
pub enum FlashBus {
    Sim(Box<NorFlash<SimFile, HostClock>>),
    Spidev(spidev::Device),
}

impl FlashBus {
    /// The flash behind the spidev node `path`, clocked at `hz`.
    pub fn spidev(path: &Path, hz: u32) -> Result<Self> {
        spidev::open(path, hz).map(Self::Spidev)
    }

    /// The last bus error's details (the driver keeps only its kind).
    pub fn take_last_error(&mut self) -> Option<String> {
        match self {
            Self::Sim(_) => None,
            Self::Spidev(device) => device.take_last_error(),
        }
    }
}

impl ErrorType for FlashBus {
    type Error = spi::ErrorKind;
}

impl SpiDevice for FlashBus {
    fn transaction(&mut self, operations: &mut [Operation<'_, u8>]) -> Result<(), spi::ErrorKind> {
        match self {
            Self::Sim(nor) => nor.transaction(operations).map_err(|never| match never {}),
            Self::Spidev(device) => device.transaction(operations),
        }
    }
}

/// linux-embedded-hal's `SpidevDevice`, keeping the last OS error.
#[cfg(target_os = "linux")]
mod spidev {
    use anyhow::{Context, Result, anyhow};
    use embedded_hal::spi::{Error as _, ErrorKind, Operation, SpiDevice};
    use linux_embedded_hal::SpidevDevice;
    use linux_embedded_hal::spidev::{SpiModeFlags, SpidevOptions};
    use std::path::Path;

    pub struct Device {
        spi: SpidevDevice,
        last_error: Option<String>,
    }

    /// Opens `path` in SPI mode 0, 8-bit words, at `hz`.
    pub fn open(path: &Path, hz: u32) -> Result<Device> {
        let mut spi = SpidevDevice::open(path).map_err(|e| {
            anyhow!(
                "opening {}: {} (is the spidev driver bound to the flash's chip select?)",
                path.display(),
                e.inner()
            )
        })?;
        let options = SpidevOptions::new()
            .bits_per_word(8)
            .max_speed_hz(hz)
            .mode(SpiModeFlags::SPI_MODE_0)
            .build();
        spi.configure(&options)
            .with_context(|| format!("configuring {} (mode 0, {hz} Hz)", path.display()))?;
        Ok(Device {
            spi,
            last_error: None,
        })
    }

    impl Device {
        pub fn take_last_error(&mut self) -> Option<String> {
            self.last_error.take()
        }

        pub fn transaction(
            &mut self,
            operations: &mut [Operation<'_, u8>],
        ) -> Result<(), ErrorKind> {
            self.spi.transaction(operations).map_err(|e| {
                let kind = e.kind();
                self.last_error = Some(format!("spidev: {}", e.inner()));
                kind
            })
        }
    }
}

/// Elsewhere spidev does not exist; `--device spidev:` says so.
#[cfg(not(target_os = "linux"))]
mod spidev {
    use anyhow::{Result, bail};
    use embedded_hal::spi::{ErrorKind, Operation};
    use std::path::Path;

    pub enum Device {}

    pub fn open(path: &Path, _hz: u32) -> Result<Device> {
        bail!(
            "--device spidev:{} needs Linux spidev (linux-embedded-hal); this host is not Linux",
            path.display()
        )
    }

    impl Device {
        pub fn take_last_error(&mut self) -> Option<String> {
            match *self {}
        }
        pub fn transaction(&mut self, _: &mut [Operation<'_, u8>]) -> Result<(), ErrorKind> {
            match *self {}
        }
    }
}
