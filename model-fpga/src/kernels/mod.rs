//! Compute kernels of the behavioural model: what each command does to f32
//! tensors in device memory. Pure functions over slices plus dims; they never
//! allocate, and they check every length before writing anything.
//!
//! Semantics match `tensorplug_core::accelerator::OpKind` (dense row-major
//! f32). Numerics and tolerances: `docs/device-numerics.md`.

mod binary;
#[cfg(feature = "std")]
mod conv_host;
mod elementwise;
mod error;
mod exp;
mod gemm;
pub(crate) mod int8;
mod layout;
pub mod records;
#[doc(hidden)]
pub mod reference;
mod rows;
mod window;
mod window_grad;
mod window_spec;

pub use binary::{BinaryOp, binary, binary_with};
pub use elementwise::{
    UnaryOp, bias_add, bias_add_in_place, fill, relu, relu_in_place, unary, unary_in_place,
};
pub use error::{ErrorKind, KernelError, Operand};
pub use gemm::{GemmSpec, gemm, gemm_portable};
pub use int8::int8;
pub use layout::transpose4;
pub use rows::{
    RowReduce, log_softmax_last_axis, log_softmax_last_axis_in_place, reduce_last_axis,
    reduce_sum_last_axis, softmax_last_axis, softmax_last_axis_in_place,
};
pub use window::{bias_activation, window};
pub use window_spec::{WindowOp, WindowSpec};

/// The largest rank [`binary`] broadcasts over (the op descriptors' limit).
pub const MAX_RANK: usize = tensorplug_core::accelerator::MAX_RANK;

#[cfg(test)]
mod tests;
