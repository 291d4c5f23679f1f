//! `tensorplug-delegate`: a LiteRT/TFLite external delegate over a vendor's
//! [`Backend`](tensorplug_host_bridge::prelude::Backend): the same driver and
//! device list as the TensorFlow plugin, loaded by
//! `tf.lite.experimental.load_delegate(path, options)` or
//! `ai_edge_litert.interpreter.load_delegate`.
//!
//! A vendor's `cdylib` calls [`export_delegate!`] once, beside
//! `export_plugin!`. The TFLite structs are `tensorplug_abi::tflite`'s
//! mirrors; no TFLite symbol is linked. Options, report, what runs on the
//! device and what is missing: `docs/delegate.md`.

mod constants;
mod cost;
mod delegate;
mod export;
mod graph;
mod kernel;
mod ops;
mod options;
mod report;
mod runtime;
mod shared;
mod trace;

#[doc(hidden)]
pub use export::__private;
pub use ops::OP_SET;
pub use options::Options;
