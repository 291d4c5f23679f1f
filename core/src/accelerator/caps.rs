//! What a device can do: the ops and element types it runs, and whether it
//! records profiling events. The host bridge registers TF kernels only for
//! what a device declares; everything else falls back to TF's CPU kernels.

use super::op::OpKind;
use super::types::DType;
use super::types::MAX_RANK;
use super::window::{Activation, Window};

/// A set of op families ([`OpKind`] variants, attributes aside).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct OpSet(u32);

/// Every op family, in bit order.
const FAMILIES: [OpKind; 30] = [
    OpKind::MatMul {
        transpose_a: false,
        transpose_b: false,
    },
    OpKind::FusedMatMul {
        transpose_a: false,
        transpose_b: false,
        relu: false,
    },
    OpKind::BiasAdd,
    OpKind::Add,
    OpKind::Sub,
    OpKind::Mul,
    OpKind::Maximum,
    OpKind::Relu,
    OpKind::Softmax,
    OpKind::ReduceSum,
    OpKind::Div,
    OpKind::DivNoNan,
    OpKind::Pow,
    OpKind::ReluGrad,
    OpKind::Sqrt,
    OpKind::Rsqrt,
    OpKind::LogSoftmax,
    OpKind::Relu6,
    OpKind::Sigmoid,
    OpKind::Tanh,
    OpKind::Conv2D(Window::new([1, 1])),
    OpKind::DepthwiseConv2D(Window::new([1, 1])),
    OpKind::MaxPool(Window::new([1, 1])),
    OpKind::AvgPool(Window::new([1, 1])),
    OpKind::Conv2DBackpropInput(Window::new([1, 1])),
    OpKind::Conv2DBackpropFilter(Window::new([1, 1])),
    OpKind::MaxPoolGrad(Window::new([1, 1])),
    OpKind::AvgPoolGrad(Window::new([1, 1])),
    OpKind::FusedConv2D(Window::new([1, 1]), Activation::None),
    OpKind::Transpose([0; MAX_RANK]),
];

impl OpSet {
    /// No op.
    pub const EMPTY: Self = Self(0);
    /// Every op family tensorplug knows.
    pub const ALL: Self = Self::of(&FAMILIES);

    /// The set of `kinds`' families.
    pub const fn of(kinds: &[OpKind]) -> Self {
        let mut set = Self::EMPTY;
        let mut i = 0;
        while i < kinds.len() {
            set = set.with(kinds[i]);
            i += 1;
        }
        set
    }

    /// `self` plus `kind`'s family.
    pub const fn with(self, kind: OpKind) -> Self {
        Self(self.0 | 1 << kind.family_index())
    }

    /// Whether `kind`'s family is in the set.
    pub const fn contains(self, kind: OpKind) -> bool {
        self.0 & (1 << kind.family_index()) != 0
    }

    /// The families in both sets.
    pub const fn intersection(self, other: Self) -> Self {
        Self(self.0 & other.0)
    }

    /// Whether every family of `self` is in `other`.
    pub const fn is_subset(self, other: Self) -> bool {
        self.0 & !other.0 == 0
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// One representative [`OpKind`] per family in the set (attributes false).
    pub fn iter(self) -> impl Iterator<Item = OpKind> {
        FAMILIES.into_iter().filter(move |&k| self.contains(k))
    }
}

impl core::fmt::Debug for OpSet {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_set()
            .entries(self.iter().map(OpKind::name))
            .finish()
    }
}

/// A set of element types.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DTypeSet(u8);

impl DTypeSet {
    /// No type.
    pub const EMPTY: Self = Self(0);

    /// `self` plus `dtype`.
    pub const fn with(self, dtype: DType) -> Self {
        Self(self.0 | 1 << (dtype as u8))
    }

    /// Whether `dtype` is in the set.
    pub const fn contains(self, dtype: DType) -> bool {
        self.0 & (1 << (dtype as u8)) != 0
    }

    /// The types in both sets.
    pub const fn intersection(self, other: Self) -> Self {
        Self(self.0 & other.0)
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
    /// Op families [`Accelerator::launch`](super::Accelerator::launch) runs.
    pub ops: OpSet,
    /// Element types those ops take.
    pub dtypes: DTypeSet,
    /// Whether [`set_profiling`](super::Accelerator::set_profiling) and
    /// [`drain_events`](super::Accelerator::drain_events) record device events.
    pub profiling: bool,
}

impl Capabilities {
    /// Nothing: no op, no type, no profiling.
    pub const NONE: Self = Self {
        ops: OpSet::EMPTY,
        dtypes: DTypeSet::EMPTY,
        profiling: false,
    };

    /// `ops` on f32 tensors, with or without profiling.
    pub const fn f32(ops: OpSet, profiling: bool) -> Self {
        Self {
            ops,
            dtypes: DTypeSet::EMPTY.with(DType::F32),
            profiling,
        }
    }

    /// What two devices both can do (TF kernels apply to every device of a type).
    pub const fn intersection(self, other: Self) -> Self {
        Self {
            ops: self.ops.intersection(other.ops),
            dtypes: self.dtypes.intersection(other.dtypes),
            profiling: self.profiling && other.profiling,
        }
    }

    /// Whether `kind` on `dtype` is declared.
    pub const fn supports(&self, kind: OpKind, dtype: DType) -> bool {
        self.ops.contains(kind) && self.dtypes.contains(dtype)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_distinct_bits_and_attributes_do_not_matter() {
        for (i, kind) in FAMILIES.iter().enumerate() {
            assert_eq!(kind.family_index() as usize, i, "{kind:?}");
        }
        let set = OpSet::EMPTY.with(OpKind::MatMul {
            transpose_a: true,
            transpose_b: true,
        });
        assert!(set.contains(FAMILIES[0]));
        assert!(!set.contains(OpKind::Relu));
        assert_eq!(OpSet::ALL.iter().count(), FAMILIES.len());
    }

    #[test]
    fn intersections_keep_what_both_declare() {
        let a = Capabilities::f32(OpSet::of(&[OpKind::Relu, OpKind::Add]), true);
        let b = Capabilities::f32(OpSet::of(&[OpKind::Relu]), false);
        let both = a.intersection(b);
        assert!(both.supports(OpKind::Relu, DType::F32));
        assert!(!both.supports(OpKind::Add, DType::F32));
        assert!(!both.profiling);
        assert!(!Capabilities::NONE.supports(OpKind::Relu, DType::F32));
        assert!(both.ops.is_subset(a.ops) && !a.ops.is_subset(both.ops));
    }
}
