//! What a vendor declares with an op of their own: its rules as functions,
//! its conformance cases and their tolerance.

use super::op_id::Attrs;
use super::shape_error::ShapeError;
use super::types::{Shape, TensorDesc};

/// A vendor op's rules, as functions: what `core` has built in for its own
/// ops. `docs/vendor-guide.md`, "Your own ops and element types".
#[derive(Clone, Copy)]
pub struct VendorRules {
    /// The output's shape from the attributes and the inputs (their count
    /// and element types are already checked), or why there is none.
    pub shape: fn(&Attrs, &[TensorDesc]) -> Result<Shape, ShapeError>,
    /// Floating-point operations of one launch (for the profiler).
    pub flops: fn(&Attrs, &[TensorDesc], &TensorDesc) -> u64,
    /// The reference kernel on f32 data: `inputs[i]` has the shape of
    /// `shapes[i]`, `out` the output shape's element count (all checked).
    pub reference: ReferenceKernel,
    /// The conformance cases: a device that declares the op must match
    /// `reference` on each ([`Tolerance`] bounds the difference).
    pub cases: &'static [VendorCase],
    /// How far a device's result may be from the reference's.
    pub tolerance: Tolerance,
}

/// A vendor op's reference kernel (see [`VendorRules::reference`]).
pub type ReferenceKernel = fn(&Attrs, &[&[f32]], &[Shape], &mut [f32]);

/// One conformance case of a vendor op.
#[derive(Clone, Copy, Debug)]
pub struct VendorCase {
    /// The attributes.
    pub attrs: Attrs,
    /// Each input's dimensions and data (row-major).
    pub inputs: &'static [(&'static [u64], &'static [f32])],
    /// The output's dimensions.
    pub out: &'static [u64],
}

/// How close a device's f32 result must be to the reference's, per element:
/// `|got − want| ≤ abs + rel·|want|`; NaN must match NaN, ±∞ the same ∞.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// Absolute part.
    pub abs: f32,
    /// Relative part.
    pub rel: f32,
}

impl Tolerance {
    /// Bit-exact (±0 equal).
    pub const EXACT: Self = Self { abs: 0.0, rel: 0.0 };
}
