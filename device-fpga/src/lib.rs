//! `tensorplug-device-fpga`: the reference FPGA driver (`driver`, behind a
//! `transport`), its configuration-flash programming (`flash`) and, with the
//! `model` feature, its behavioural model. `docs/driver.md`.
#![no_std]

#[cfg(any(test, feature = "std"))]
extern crate std;

pub mod driver;
pub mod flash;
pub mod transport;

#[cfg(feature = "model")]
pub mod kernels;

#[cfg(feature = "model")]
pub mod model;
