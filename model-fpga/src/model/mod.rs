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
mod error;
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
pub use error::{ErrorKind, ModelError};
pub use faults::{DEVICE_FAULT_DETAIL, Faults};
pub use memory::{DeviceMemory, SharedWindow};
#[cfg(feature = "std")]
pub use on_host::HostModel;
pub use validate::{
    SRC0_BCAST_K, SRC0_BCAST_M, SRC0_BCAST_N, SRC1_BCAST_K, SRC1_BCAST_M, SRC1_BCAST_N,
};
