//! `tensorplug-host-bridge`: the TensorFlow plugin machinery, generic over
//! a vendor's [`Backend`](prelude::Backend).
//!
//! A vendor's `cdylib` implements [`Backend`](prelude::Backend) (device
//! type, device list, opening drivers), writes the TF kernels of its own ops
//! with [`Op`](prelude::Op), and calls [`export_plugin!`]; TensorFlow then
//! loads it as a PluggableDevice. This library depends on no device.
//!
//! A vendor's plugin crate needs only [`prelude`] (and [`settings`], which
//! the prelude re-exports). The machinery behind it (the C boundary,
//! StreamExecutor, the graph pass, the kernels, the device registry, the
//! profiler) is private; its layout and rules: `docs/host-bridge.md`.

mod backend;
mod claim;
mod devices;
mod error;
mod export;
mod ffi;
mod graph;
mod host_spans;
mod identity;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod internals;
mod kernels;
mod log;
mod profiler;
mod registry;
mod report;
mod se;
pub mod settings;
#[cfg(test)]
mod testing;
mod tf_versions;
mod variable_ops;

pub use error::{Error, Result};
#[doc(hidden)]
pub use export::__private;

/// What a vendor's plugin crate uses (`use tensorplug_host_bridge::prelude::*;`):
/// its [`Backend`](prelude::Backend) and the driver it opens, the TF kernels of its own ops,
/// the settings it reads, and [`export_plugin!`]. `docs/vendor-guide.md`.
pub mod prelude {
    pub use crate::backend::{Backend, OpenError};
    pub use crate::devices::{DynAccelerator, erase};
    pub use crate::export_plugin;
    pub use crate::kernels::ops::{Op, TfKernel, elementwise};
    pub use crate::kernels::{Construction, Context, KernelResult, Launcher};
    pub use crate::registry::timeout_from_env;
    pub use crate::settings;
}
/// The TF C API mirrors, for [`export_plugin!`]'s signatures.
pub use tensorplug_abi as abi;
