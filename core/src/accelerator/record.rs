//! A built-in op declared as one record: what a device needs of it
//! ([`OpRecord`]: shape rule, cost, device arguments) and, kept apart so
//! that a device build links none of it, its reference side
//! ([`RecordReference`]: reference kernel, conformance cases, tolerance).
//! Both are written in `catalogue/records.rs`. `docs/ops.md`, "Adding a
//! device op".

use super::op_id::Attrs;
use super::shape_error::ShapeError;
use super::types::{Shape, TensorDesc};
use super::vendor::{ReferenceKernel, Tolerance, VendorCase};

/// A built-in op's record: its rules as functions, as a vendor's op has
/// them, and [`args`](Self::args), what a device command carries of it.
#[derive(Clone, Copy)]
pub struct OpRecord {
    /// The output's shape from the attributes and the inputs (their count
    /// and element types are already checked), or why there is none
    /// (`ShapeError::Attrs` for an attribute block it does not take).
    pub shape: fn(&Attrs, &[TensorDesc]) -> Result<Shape, ShapeError>,
    /// Floating-point operations of one launch (for the profiler).
    pub flops: fn(&Attrs, &[TensorDesc], &TensorDesc) -> u64,
    /// The op's [`DeviceArgs`] from its attributes and its (checked)
    /// inputs; `None` when an extent does not fit a `u32`.
    pub args: fn(&Attrs, &[TensorDesc]) -> Option<DeviceArgs>,
    /// Its attribute block as `docs/ops.md`'s table lists it (names,
    /// types, bytes).
    pub attrs: &'static str,
}

/// A record's reference side, by its code: what a host checks a device
/// against, and nothing a device runs (`OpDecl::reference` gives a vendor
/// op's in the same form, from its rules).
#[derive(Clone, Copy, Debug)]
pub struct RecordReference {
    /// The record's catalogue code.
    pub code: u16,
    /// The reference kernel on f32 data (as [`VendorRules::reference`](super::VendorRules::reference)).
    pub reference: ReferenceKernel,
    /// The conformance cases: a device that declares the op must match
    /// `reference` on each.
    pub cases: &'static [VendorCase],
    /// How far a device's result may be from the reference's.
    pub tolerance: Tolerance,
}

/// A record op's arguments as a device command carries them: four
/// extents and 16 bits of attributes, whose meaning the record documents
/// (the reference FPGA's `RECORD` command: `m`, `n`, `k`, `len` and
/// `imm`'s high half; `docs/device-abi.md`). A record with fewer extents
/// leaves the last ones 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DeviceArgs {
    /// The extents, outermost first.
    pub dims: [u32; 4],
    /// The attribute bits.
    pub bits: u16,
}
