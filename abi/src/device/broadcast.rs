//! The shape block of a broadcasting element-wise command.

use super::le::{put, u32_at};

/// Largest rank a [`BroadcastShape`] describes (`tensorplug_core`'s `MAX_RANK`).
pub const BROADCAST_MAX_RANK: usize = 6;
/// Size of a [`BroadcastShape`] in bytes.
pub const BROADCAST_SHAPE_SIZE: usize = 64;

/// NumPy-style broadcasting for `ADD_F32`, `SUB_F32`, `MUL_F32` and `MAX_F32`
/// with `CommandFlags::BROADCAST`: the command's `src2` holds the device
/// address (8-byte aligned) of this 64-byte block, little-endian.
///
/// Both operands' dims are given at the output's rank (the host pads a
/// lower-rank operand with leading 1s). On each axis the dims are equal or
/// one of them is 1 (it stretches); the output dim is the larger. Dims past
/// `rank` and reserved words must be 0; the command's `len` must equal the
/// output's element count.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BroadcastShape {
    /// Number of axes, 1..=6.
    pub rank: u32,
    /// Must be 0.
    pub _reserved0: u32,
    /// `src0`'s dims, outermost first.
    pub a_dims: [u32; 6],
    /// `src1`'s dims, outermost first.
    pub b_dims: [u32; 6],
    /// Must be 0.
    pub _reserved1: [u32; 2],
}

impl BroadcastShape {
    /// The output dims (the larger of each pair), or `None` if the block is
    /// invalid: rank 0 or above 6, a zero dim, a pair that is neither equal
    /// nor has a 1, non-zero dims past `rank` or reserved words.
    pub const fn output_dims(&self) -> Option<[u32; 6]> {
        let rank = self.rank as usize;
        if rank == 0 || rank > BROADCAST_MAX_RANK || self._reserved0 != 0 {
            return None;
        }
        if self._reserved1[0] != 0 || self._reserved1[1] != 0 {
            return None;
        }
        let mut out = [0u32; 6];
        let mut axis = 0;
        while axis < BROADCAST_MAX_RANK {
            let (a, b) = (self.a_dims[axis], self.b_dims[axis]);
            if axis >= rank {
                if a != 0 || b != 0 {
                    return None;
                }
            } else if a == 0 || b == 0 || (a != b && a != 1 && b != 1) {
                return None;
            } else {
                out[axis] = if a > b { a } else { b };
            }
            axis += 1;
        }
        Some(out)
    }

    /// The output's element count, or `None` if invalid (see
    /// [`output_dims`](Self::output_dims)) or above `u64::MAX`.
    pub const fn output_len(&self) -> Option<u64> {
        let Some(dims) = self.output_dims() else {
            return None;
        };
        let mut len: u64 = 1;
        let mut axis = 0;
        while axis < self.rank as usize {
            len = match len.checked_mul(dims[axis] as u64) {
                Some(l) => l,
                None => return None,
            };
            axis += 1;
        }
        Some(len)
    }

    /// Encodes in the memory format.
    pub const fn to_le_bytes(&self) -> [u8; BROADCAST_SHAPE_SIZE] {
        let mut b = [0u8; BROADCAST_SHAPE_SIZE];
        put(&mut b, 0, &self.rank.to_le_bytes());
        put(&mut b, 4, &self._reserved0.to_le_bytes());
        let mut i = 0;
        while i < BROADCAST_MAX_RANK {
            put(&mut b, 8 + 4 * i, &self.a_dims[i].to_le_bytes());
            put(&mut b, 32 + 4 * i, &self.b_dims[i].to_le_bytes());
            i += 1;
        }
        put(&mut b, 56, &self._reserved1[0].to_le_bytes());
        put(&mut b, 60, &self._reserved1[1].to_le_bytes());
        b
    }

    /// Decodes the memory format. Every byte pattern decodes.
    pub const fn from_le_bytes(b: &[u8; BROADCAST_SHAPE_SIZE]) -> Self {
        let mut a_dims = [0u32; 6];
        let mut b_dims = [0u32; 6];
        let mut i = 0;
        while i < BROADCAST_MAX_RANK {
            a_dims[i] = u32_at(b, 8 + 4 * i);
            b_dims[i] = u32_at(b, 32 + 4 * i);
            i += 1;
        }
        Self {
            rank: u32_at(b, 0),
            _reserved0: u32_at(b, 4),
            a_dims,
            b_dims,
            _reserved1: [u32_at(b, 56), u32_at(b, 60)],
        }
    }
}
