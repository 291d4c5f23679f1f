//! The behavioural model of the reference FPGA (`no_std`, no allocation): the register file, rings and command set of
//! `docs/device-abi.md`, executed with [`crate::kernels`], with a modelled
//! clock, fault injection and the SPI NOR configuration flash. Its behaviour
//! is specified in `docs/device-spec.md`.
//!
//! - [`Model`]: the device over caller-provided memory, a [`HostBus`] and a
//!   [`TickSource`]; driven by [`Model::read_reg`]/[`Model::write_reg`] and
//!   [`Model::service`]. It is an [`SpiTarget`](tensorplug_device_fpga::transport::spi::slave::SpiTarget),
//!   so `SpiSlave<Model<..>>` is the device end of the SPI transport.
//! - [`nor_flash::NorFlash`]: a W25Q128JV behind `embedded_hal::spi::SpiDevice`.
//! - `host` (feature `std`): the model on its own thread serving a BAR
//!   (in-process or a shared-memory file for `tensorplug-model-server`).

#[cfg(feature = "std")]
mod aligned;
mod bus;
mod clock;
mod config;
mod device;
mod execute;
mod faults;
mod memory;
pub mod nor_flash;
#[cfg(feature = "std")]
mod on_host;
mod regs;
mod ring;
mod spi_target;
mod validate;

#[cfg(feature = "std")]
pub mod host;

#[cfg(feature = "std")]
pub use aligned::AlignedMemory;
pub use bus::{BusError, HostBus, NoHostBus, SliceBus};
#[cfg(feature = "std")]
pub use clock::{HostClock, LiveClock, LiveCounter};
pub use clock::{ManualClock, TickSource};
pub use config::{ModelConfig, Timing};
pub use device::{Model, OutOfRange, Serviced};
pub use faults::{DEVICE_FAULT_DETAIL, Faults};
pub use memory::{DeviceMemory, SharedWindow};
#[cfg(feature = "std")]
pub use on_host::HostModel;
pub use validate::{
    SRC0_BCAST_K, SRC0_BCAST_M, SRC0_BCAST_N, SRC1_BCAST_K, SRC1_BCAST_M, SRC1_BCAST_N,
};

use core::fmt;

/// The model could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ModelError {
    /// Device memory must start 4-byte aligned (f32 operands).
    MisalignedMemory,
    /// `max_ring_entries` is not a power of two.
    BadConfig,
}

/// Coarse classification of a [`ModelError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ErrorKind {
    /// The arguments to the constructor are unusable.
    InvalidInput,
}

impl ModelError {
    /// The coarse kind of this error.
    pub const fn kind(&self) -> ErrorKind {
        match self {
            Self::MisalignedMemory | Self::BadConfig => ErrorKind::InvalidInput,
        }
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::MisalignedMemory => "device memory is not 4-byte aligned",
            Self::BadConfig => "max_ring_entries is not a power of two",
        })
    }
}

impl core::error::Error for ModelError {}
