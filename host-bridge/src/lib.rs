//! `tensorplug-host-bridge`: the TensorFlow plugin.
//!
//! Built as a `cdylib` (`libtensorplug_host_bridge.so`) that TensorFlow loads
//! as a PluggableDevice, and as an `rlib` for tests. Layout:
//!
//! - [`ffi`]: the C boundary (TF's functions resolved at run time, the
//!   `catch_unwind` guards every entry point runs under);
//! - [`se`]: `SE_InitPlugin` and the StreamExecutor callbacks;
//! - [`graph`]: `TF_InitGraph` and the `_FusedMatMul` fusion pass;
//! - [`kernels`]: `TF_InitKernel` and the f32 kernels of the device;
//! - [`registry`]: the open devices, their streams, fences, handle scheme
//!   and completion threads, shared by every plugin interface;
//! - [`devices`]: `TENSORPLUG_DEVICE` parsing and opening drivers;
//! - [`profiler`]: `TF_InitProfiler` and the op-tag interner;
//! - [`profiling`]: the host-side event hook.
//!
//! Design and rules: `docs/host-bridge.md`.

pub mod devices;
pub mod error;
pub mod ffi;
pub mod graph;
pub mod kernels;
pub mod log;
pub mod profiler;
pub mod profiling;
pub mod registry;
pub mod se;
#[cfg(test)]
mod testing;

pub use error::{Error, Result};
