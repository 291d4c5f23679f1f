//! int8 reference kernels: TFLite's `reference_integer_ops`, bit for bit
//! (TFLite's quantization spec; `docs/device-numerics.md`, "int8
//! requantization").

mod kernels;
mod run;

pub use kernels::{
    AddQuant, Int8Layer, Layout, Nhwc, Ohwi, Pool, activation_range, add, conv2d, depthwise_conv2d,
    fully_connected, pool,
};
pub use run::{Data, DataMut, run};
