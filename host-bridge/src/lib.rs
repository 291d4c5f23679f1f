//! `tensorplug-host-bridge`: the TensorFlow plugin machinery, generic over
//! a vendor's [`Backend`].
//!
//! A vendor's `cdylib` implements [`Backend`] (device type, device list,
//! opening drivers) and calls [`export_plugin!`]; TensorFlow then loads it
//! as a PluggableDevice. This library depends on no device. Layout:
//!
//! - [`backend`]: the vendor seam and the entry-point macro;
//! - [`settings`]: every environment setting, one vocabulary;
//! - [`ffi`]: the C boundary (TF's functions resolved at run time, the
//!   `catch_unwind` guards every entry point runs under);
//! - [`se`]: `SE_InitPlugin` and the StreamExecutor callbacks;
//! - [`graph`]: `TF_InitGraph` and its pass (variables, folding, fusion,
//!   making what TF's passes leave runnable);
//! - [`kernels`]: `TF_InitKernel` and the kernels, per capability;
//! - [`registry`]: the open devices, their streams, fences, handle scheme
//!   and completion threads, shared by every plugin interface;
//! - [`devices`]: the device list and the type-erased driver;
//! - [`profiler`]: `TF_InitProfiler` and the op-tag interner;
//! - [`host_spans`]: the host-side event hook;
//! - [`tf_versions`]: the TF versions served, and declining on others;
//! - [`variable_ops`]: the ops TF runs beside a resource variable;
//! - [`error`], [`log`]: the bridge's error type and its stderr lines.
//!
//! A vendor's plugin crate needs only [`prelude`]; the modules above are
//! the machinery behind it. Design and rules: `docs/host-bridge.md`.

pub mod backend;
mod claim;
pub mod devices;
pub mod error;
mod export;
pub mod ffi;
pub mod graph;
pub mod host_spans;
mod identity;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod internals;
pub mod kernels;
pub mod log;
pub mod profiler;
pub mod registry;
pub mod se;
pub mod settings;
#[cfg(test)]
mod testing;
pub mod tf_versions;
pub mod variable_ops;

pub use backend::{Backend, OpenError};
pub use error::{Error, Result};
#[doc(hidden)]
pub use export::__private;

/// What a vendor's plugin crate uses (`use tensorplug_host_bridge::prelude::*;`):
/// its [`Backend`] and the driver it opens, the TF kernels of its own ops,
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
