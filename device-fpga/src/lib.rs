//! `tensorplug-device-fpga`: the reference FPGA driver (`driver`, behind a
//! `transport`) and its configuration-flash programming (`flash`): what a
//! vendor reads as the reference for their own driver. The behavioural
//! model it is tested against is `tensorplug-model-fpga`. `docs/driver.md`.
#![no_std]

#[cfg(any(test, feature = "std"))]
extern crate std;

pub mod driver;
pub mod flash;
pub mod transport;
