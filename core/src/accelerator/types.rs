//! Plain value types of the [`Accelerator`](super::Accelerator) API.

use core::fmt;

/// The largest tensor rank an op descriptor carries.
pub const MAX_RANK: usize = 6;

/// A device memory address. Plain integer, so `base + offset` stays valid.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DeviceAddr(pub u64);

impl DeviceAddr {
    /// `self + bytes`, or `None` on overflow.
    pub const fn checked_add(self, bytes: u64) -> Option<Self> {
        match self.0.checked_add(bytes) {
            Some(a) => Some(Self(a)),
            None => None,
        }
    }
}

/// One of the device's ordered queues.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct QueueId(pub u8);

/// A point in a queue's work; completes when that work has completed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Fence(pub u64);

/// A semantic version (device ABI, firmware).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Version {
    /// Incompatible changes.
    pub major: u16,
    /// Backward-compatible additions.
    pub minor: u16,
    /// Fixes.
    pub patch: u16,
}

impl Version {
    /// `major.minor.patch`.
    pub const fn new(major: u16, minor: u16, patch: u16) -> Self {
        Self {
            major,
            minor,
            patch,
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// Device memory accounting, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryUsage {
    /// All device memory available for allocation.
    pub total: u64,
    /// Currently allocated.
    pub used: u64,
}

/// What one [`drain_events`](super::Profiling::drain_events) call moved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Drained {
    /// Events written to the front of the output slice.
    pub events: usize,
    /// Events the device dropped (ring full) since the previous drain.
    pub dropped: u64,
}

/// Element type of a tensor. The discriminant is its code on the link, in
/// the device ABI and in a [`DTypeSet`]; append only.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum DType {
    /// IEEE-754 binary32.
    F32 = 1,
    /// IEEE-754 binary16.
    F16 = 2,
    /// bfloat16: binary32's exponent, 7 mantissa bits.
    BF16 = 3,
    /// Signed 8-bit integer (quantized values).
    I8 = 4,
    /// Unsigned 8-bit integer.
    U8 = 5,
    /// Signed 32-bit integer (indices, int8 accumulators).
    I32 = 6,
    /// Signed 64-bit integer (TF's step counters, `int64` indices).
    I64 = 7,
    /// A boolean, one byte: 0 false, 1 true (TF's `bool`).
    Bool = 8,
}

impl DType {
    /// Every element type, in code order.
    pub const ALL: [Self; 8] = [
        Self::F32,
        Self::F16,
        Self::BF16,
        Self::I8,
        Self::U8,
        Self::I32,
        Self::I64,
        Self::Bool,
    ];

    /// Bytes per element.
    pub const fn size(self) -> usize {
        match self {
            Self::I64 => 8,
            Self::F32 | Self::I32 => 4,
            Self::F16 | Self::BF16 => 2,
            Self::I8 | Self::U8 | Self::Bool => 1,
        }
    }

    /// The type with code `code`.
    pub const fn from_code(code: u8) -> Option<Self> {
        let mut i = 0;
        while i < Self::ALL.len() {
            if Self::ALL[i] as u8 == code {
                return Some(Self::ALL[i]);
            }
            i += 1;
        }
        None
    }

    /// The type's lower-case name (`f32`, `bf16`, `i8`, …).
    pub const fn name(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::F16 => "f16",
            Self::BF16 => "bf16",
            Self::I8 => "i8",
            Self::U8 => "u8",
            Self::I32 => "i32",
            Self::I64 => "i64",
            Self::Bool => "bool",
        }
    }
}

/// A set of element types: bit `code` for each [`DType`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DTypeSet(u32);

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

    /// The set as bits (the link's form).
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// The set from [`bits`](Self::bits); unknown codes are dropped.
    pub const fn from_bits(bits: u32) -> Self {
        let mut set = Self::EMPTY;
        let mut i = 0;
        while i < DType::ALL.len() {
            if bits & (1 << (DType::ALL[i] as u8)) != 0 {
                set = set.with(DType::ALL[i]);
            }
            i += 1;
        }
        set
    }

    /// The types in the set, in code order.
    pub fn iter(self) -> impl Iterator<Item = DType> {
        DType::ALL.into_iter().filter(move |&d| self.contains(d))
    }
}

/// A tensor shape of rank ≤ [`MAX_RANK`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shape {
    dims: [u64; MAX_RANK],
    rank: u8,
}

impl Shape {
    /// The rank-0 shape of a scalar.
    pub const SCALAR: Self = Self {
        dims: [0; MAX_RANK],
        rank: 0,
    };

    /// A shape from its dimensions, or `None` when the rank exceeds [`MAX_RANK`].
    pub fn new(dims: &[u64]) -> Option<Self> {
        if dims.len() > MAX_RANK {
            return None;
        }
        let mut all = [0; MAX_RANK];
        all[..dims.len()].copy_from_slice(dims);
        Some(Self {
            dims: all,
            rank: dims.len() as u8,
        })
    }

    /// The dimensions, outermost first.
    pub fn dims(&self) -> &[u64] {
        &self.dims[..usize::from(self.rank)]
    }

    /// Number of elements (1 for a scalar), or `None` on overflow.
    pub fn elements(&self) -> Option<u64> {
        self.dims().iter().try_fold(1u64, |n, &d| n.checked_mul(d))
    }

    /// The innermost dimension (1 for a scalar).
    pub fn last(&self) -> u64 {
        self.dims().last().copied().unwrap_or(1)
    }
}

/// A tensor in device memory: where it is, its element type and shape
/// (dense, row-major).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TensorDesc {
    /// First byte of the tensor.
    pub addr: DeviceAddr,
    /// Element type.
    pub dtype: DType,
    /// Shape.
    pub shape: Shape,
}

impl TensorDesc {
    /// Describes a dense row-major tensor.
    pub const fn new(addr: DeviceAddr, dtype: DType, shape: Shape) -> Self {
        Self { addr, dtype, shape }
    }

    /// Size in bytes, or `None` on overflow (or if it exceeds `usize`).
    pub fn byte_len(&self) -> Option<usize> {
        let bytes = self
            .shape
            .elements()?
            .checked_mul(self.dtype.size() as u64)?;
        usize::try_from(bytes).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_counts_elements_and_rejects_overflow_and_rank() {
        assert_eq!(Shape::new(&[]).unwrap().elements(), Some(1));
        assert_eq!(Shape::new(&[2, 3, 0]).unwrap().elements(), Some(0));
        assert_eq!(Shape::new(&[u64::MAX, 2]).unwrap().elements(), None);
        assert!(Shape::new(&[1; MAX_RANK + 1]).is_none());
        assert_eq!(Shape::new(&[4, 5]).unwrap().last(), 5);
    }
}
