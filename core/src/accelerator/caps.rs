//! What a device can do: the ops and element types it runs, and whether it
//! records profiling events. The host bridge registers TF kernels only for
//! what a device declares; everything else falls back to TF's CPU kernels.

use super::catalogue::BUILTIN;
use super::op::OpDecl;
use super::op::OpKind;
use super::op_id::OpId;
use super::types::{DType, DTypeSet};

/// Words in an [`OpSet`]: room for 256 built-in ops.
pub const OP_SET_WORDS: usize = 4;

/// A set of built-in ops ([`BUILTIN`] indices; attributes do not count).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct OpSet([u64; OP_SET_WORDS]);

impl OpSet {
    /// No op.
    pub const EMPTY: Self = Self([0; OP_SET_WORDS]);
    /// Every op tensorplug knows.
    pub const ALL: Self = {
        let mut set = Self::EMPTY;
        let mut i = 0;
        while i < BUILTIN.len() {
            set.0[i / 64] |= 1 << (i % 64);
            i += 1;
        }
        set
    };

    /// The set of `kinds`' ops.
    pub const fn of(kinds: &[OpKind]) -> Self {
        let mut set = Self::EMPTY;
        let mut i = 0;
        while i < kinds.len() {
            set = set.with(kinds[i]);
            i += 1;
        }
        set
    }

    /// `self` plus `kind`'s op (unchanged for a vendor op: those are
    /// [`Capabilities::vendor_ops`]).
    pub const fn with(mut self, kind: OpKind) -> Self {
        if let Some(i) = kind.index() {
            self.0[i / 64] |= 1 << (i % 64);
        }
        self
    }

    /// Whether `kind`'s op is in the set (never a vendor op).
    pub const fn contains(self, kind: OpKind) -> bool {
        match kind.index() {
            Some(i) => self.0[i / 64] & (1 << (i % 64)) != 0,
            None => false,
        }
    }

    /// The ops in both sets.
    pub const fn intersection(mut self, other: Self) -> Self {
        let mut w = 0;
        while w < OP_SET_WORDS {
            self.0[w] &= other.0[w];
            w += 1;
        }
        self
    }

    /// Whether every op of `self` is in `other`.
    pub const fn is_subset(self, other: Self) -> bool {
        let mut w = 0;
        while w < OP_SET_WORDS {
            if self.0[w] & !other.0[w] != 0 {
                return false;
            }
            w += 1;
        }
        true
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.is_subset(Self::EMPTY)
    }

    /// The set as bits, bit `i` of word `i / 64` for op code `i + 1` (the link's form).
    pub const fn words(self) -> [u64; OP_SET_WORDS] {
        self.0
    }

    /// The set from [`words`](Self::words); bits of codes not in
    /// [`BUILTIN`] (a newer peer's ops) are dropped.
    pub const fn from_words(words: [u64; OP_SET_WORDS]) -> Self {
        Self::ALL.intersection(Self(words))
    }

    /// The declarations of the ops in the set, in code order.
    pub fn decls(self) -> impl Iterator<Item = &'static OpDecl> {
        BUILTIN
            .iter()
            .enumerate()
            .filter(move |(i, _)| self.0[i / 64] & (1 << (i % 64)) != 0)
            .map(|(_, d)| d)
    }

    /// One representative [`OpKind`] per op in the set (default attributes).
    pub fn iter(self) -> impl Iterator<Item = OpKind> {
        self.decls().map(OpDecl::default_kind)
    }
}

impl core::fmt::Debug for OpSet {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_set().entries(self.decls().map(|d| d.name)).finish()
    }
}

/// The vendor ops a device declares: declarations in the vendor's crate
/// ([`OpDecl::vendor`]). Compared by identity.
#[derive(Clone, Copy, Default)]
pub struct VendorOps(pub &'static [&'static OpDecl]);

impl VendorOps {
    /// None.
    pub const NONE: Self = Self(&[]);

    /// The declaration of `id`, if declared.
    pub fn find(&self, id: OpId) -> Option<&'static OpDecl> {
        self.0.iter().copied().find(|d| d.id == id)
    }

    /// Whether every op of `self` is in `other`.
    pub fn is_subset(&self, other: &Self) -> bool {
        self.0.iter().all(|d| other.find(d.id).is_some())
    }

    /// The declarations.
    pub fn iter(&self) -> impl Iterator<Item = &'static OpDecl> {
        self.0.iter().copied()
    }
}

impl PartialEq for VendorOps {
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len() && self.0.iter().zip(other.0).all(|(a, b)| a.id == b.id)
    }
}

impl Eq for VendorOps {}

impl core::hash::Hash for VendorOps {
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        for d in self.0 {
            d.id.hash(state);
        }
    }
}

impl core::fmt::Debug for VendorOps {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_set()
            .entries(self.0.iter().map(|d| d.name))
            .finish()
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for VendorOps {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "{=usize} vendor ops", self.0.len())
    }
}

/// What a device declares it can do.
///
/// Declare only what the device really runs: the conformance suite checks
/// every declared op against the reference kernels, and the host bridge
/// places exactly these ops on the device. Optional features are
/// capabilities, not stubs: a device without profiling sets
/// `profiling: false` instead of recording nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Capabilities {
    /// Op families [`Launch::launch`](super::Launch::launch) runs.
    pub ops: OpSet,
    /// Element types those ops take.
    pub dtypes: DTypeSet,
    /// The vendor's own ops it runs (`docs/vendor-guide.md`, "Your own ops
    /// and element types").
    pub vendor_ops: VendorOps,
    /// Whether [`set_profiling`](super::Profiling::set_profiling) and
    /// [`drain_events`](super::Profiling::drain_events) record device events.
    pub profiling: bool,
}

impl Capabilities {
    /// Nothing: no op, no type, no profiling.
    pub const NONE: Self = Self {
        ops: OpSet::EMPTY,
        dtypes: DTypeSet::EMPTY,
        vendor_ops: VendorOps::NONE,
        profiling: false,
    };

    /// `ops` on f32 tensors, with or without profiling.
    pub const fn f32(ops: OpSet, profiling: bool) -> Self {
        Self {
            ops,
            dtypes: DTypeSet::EMPTY.with(DType::F32),
            vendor_ops: VendorOps::NONE,
            profiling,
        }
    }

    /// `self` taking `dtype` too (e.g. [`DType::I8`] for the int8 ops).
    pub const fn with_dtype(mut self, dtype: DType) -> Self {
        self.dtypes = self.dtypes.with(dtype);
        self
    }

    /// `self` running the vendor ops `ops` too.
    pub const fn with_vendor_ops(mut self, ops: &'static [&'static OpDecl]) -> Self {
        self.vendor_ops = VendorOps(ops);
        self
    }

    /// What two devices both can do (TF kernels apply to every device of a
    /// type). Vendor ops: the smaller list when the other holds all of it,
    /// else none (devices of one plugin declare the same list).
    pub fn intersection(self, other: Self) -> Self {
        let vendor_ops = if self.vendor_ops.is_subset(&other.vendor_ops) {
            self.vendor_ops
        } else if other.vendor_ops.is_subset(&self.vendor_ops) {
            other.vendor_ops
        } else {
            VendorOps::NONE
        };
        Self {
            ops: self.ops.intersection(other.ops),
            dtypes: self.dtypes.intersection(other.dtypes),
            vendor_ops,
            profiling: self.profiling && other.profiling,
        }
    }

    /// Whether `kind` on `dtype` is declared: the op (a built-in in
    /// [`ops`](Self::ops), a vendor op in [`vendor_ops`](Self::vendor_ops)),
    /// and `dtype` both among the device's types and the op's.
    pub fn supports(&self, kind: OpKind, dtype: DType) -> bool {
        let declared = match kind {
            OpKind::Vendor(op) => self.vendor_ops.find(op.decl.id).is_some(),
            builtin => self.ops.contains(builtin),
        };
        declared && self.dtypes.contains(dtype) && kind.decl().dtypes.contains(dtype)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accelerator::{Binary, Unary};

    #[test]
    fn ops_are_distinct_bits_and_attributes_do_not_matter() {
        let set = OpSet::EMPTY.with(OpKind::MatMul {
            transpose_a: true,
            transpose_b: true,
        });
        assert!(set.contains(BUILTIN[0].default_kind()));
        assert!(!set.contains(OpKind::Unary(Unary::RELU)));
        assert_eq!(OpSet::ALL.iter().count(), BUILTIN.len());
        let last = BUILTIN[BUILTIN.len() - 1].default_kind();
        assert_eq!(
            OpSet::of(&[last]).iter().collect::<heapless::Vec<_, 2>>(),
            [last]
        );
    }

    #[test]
    fn intersections_keep_what_both_declare() {
        let a = Capabilities::f32(
            OpSet::of(&[OpKind::Unary(Unary::RELU), OpKind::Binary(Binary::ADD)]),
            true,
        );
        let b = Capabilities::f32(OpSet::of(&[OpKind::Unary(Unary::RELU)]), false);
        let both = a.intersection(b);
        assert!(both.supports(OpKind::Unary(Unary::RELU), DType::F32));
        assert!(!both.supports(OpKind::Binary(Binary::ADD), DType::F32));
        assert!(!both.profiling);
        assert!(!Capabilities::NONE.supports(OpKind::Unary(Unary::RELU), DType::F32));
        assert!(both.ops.is_subset(a.ops) && !a.ops.is_subset(both.ops));
    }
}
