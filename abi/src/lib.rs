//! `tensorplug-abi`: the C structs tensorplug shares with TensorFlow and with
//! the reference FPGA.
//!
//! `no_std`, no alloc, no dependencies (except an optional `defmt`).
#![no_std]

pub mod device;
pub mod tf;
pub mod tflite;
pub mod validate;
