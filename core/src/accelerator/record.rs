//! A built-in op declared as one record ([`OpRecord`]): its rules as
//! functions, as a vendor's op has them, and its device arguments.
//! `docs/ops.md`, "Adding a device op".

use super::op_id::Attrs;
use super::types::TensorDesc;
use super::vendor::VendorRules;

/// A built-in op's record: everything `core` knows about it in one place.
/// The catalogue declares it with `record(…)`; shapes, cost, the reference,
/// the conformance cases and the tolerance are its [`rules`](Self::rules),
/// and [`args`](Self::args) is what a device command carries of it.
#[derive(Clone, Copy)]
pub struct OpRecord {
    /// Shape rule, flops, reference kernel, cases and tolerance.
    pub rules: VendorRules,
    /// The op's [`DeviceArgs`] from its attributes and its (checked)
    /// inputs; `None` when an extent does not fit a `u32`.
    pub args: fn(&Attrs, &[TensorDesc]) -> Option<DeviceArgs>,
    /// Its attribute block as `docs/ops.md`'s table lists it (names,
    /// types, bytes).
    pub attrs: &'static str,
}

/// A record op's arguments as a device command carries them: three
/// extents and 16 bits of attributes, whose meaning the record documents
/// (the reference FPGA's `RECORD` command: `m`, `n`, `k` and `imm`'s high
/// half; `docs/device-abi.md`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DeviceArgs {
    /// The extents, outermost first.
    pub dims: [u32; 3],
    /// The attribute bits.
    pub bits: u16,
}
