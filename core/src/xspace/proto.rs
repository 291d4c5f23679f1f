//! Prost types generated from `proto/xplane.proto` (package
//! `tensorflow.profiler`) by `cargo xtask protos`.
#![allow(missing_docs, clippy::all, clippy::pedantic)]

include!("tensorflow.profiler.rs");
