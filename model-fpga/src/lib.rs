//! `tensorplug-model-fpga`: the behavioural model of the reference FPGA
//! (`model`: its registers, command rings, events and config flash) and the
//! compute kernels its commands run (`kernels`). `no_std`: the MCU firmware
//! runs it in RAM behind the SPI slave, and the host's `sim` on a thread
//! behind a heap BAR (feature `std`). The driver it answers is
//! `tensorplug-device-fpga`'s, which does not depend on it. `docs/driver.md`.
#![no_std]

#[cfg(any(test, feature = "std"))]
extern crate std;

pub mod kernels;
pub mod model;
