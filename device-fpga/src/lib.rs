//! `tensorplug-device-fpga`: the reference FPGA driver and its behavioural
//! model. Not yet implemented: see issue 4.
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
