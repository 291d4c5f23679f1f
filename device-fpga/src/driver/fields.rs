//! Descriptor field values shared by the lowerings (`lower`,
//! `lower_window`, `transpose`), so that none of them imports another.

use super::error::Error;

/// Bytes of an f32 element.
pub(super) const F32: u64 = 4;

/// A dimension as the descriptor's `u32`.
pub(super) fn dim(value: u64) -> Result<u32, Error> {
    u32::try_from(value).map_err(|_| Error::InvalidArgument)
}
