//! Prost types generated from `proto/xplane.proto` (package
//! `tensorflow.profiler`) by `build.rs`.
#![allow(missing_docs, clippy::all, clippy::pedantic)]

include!(concat!(env!("OUT_DIR"), "/tensorflow.profiler.rs"));
