//! `tensorplug-core`: the device-independent runtime.
//!
//! `no_std` by default. The `alloc` feature adds the XSpace export; `std`
//! adds host conveniences; `conformance` adds the conformance suite any
//! [`Accelerator`](accelerator::Accelerator) can run.
#![no_std]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(any(test, feature = "std"))]
extern crate std;

pub mod accelerator;
mod checksum;
pub mod clock;
#[cfg(feature = "conformance")]
pub mod conformance;
pub mod event;
pub mod link;
pub mod program;
pub mod quant;
pub mod reference;
pub mod ring;
pub mod session;
mod sync;
#[cfg(feature = "alloc")]
pub mod xspace;
