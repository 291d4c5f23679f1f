//! Heap device memory with the 4-byte (here 8-byte) alignment the model needs.

use std::boxed::Box;
use std::vec;

/// Zeroed, 8-byte-aligned heap storage for [`Model`](super::Model) memory
/// (a `Vec<u8>` has no alignment guarantee).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AlignedMemory {
    words: Box<[u64]>,
    len: usize,
}

impl AlignedMemory {
    /// `len` zero bytes.
    pub fn zeroed(len: usize) -> Self {
        Self {
            words: vec![0u64; len.div_ceil(8)].into_boxed_slice(),
            len,
        }
    }
}

impl AsRef<[u8]> for AlignedMemory {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: `words` holds at least `len` initialised bytes; u8 has no
        // alignment or validity requirements.
        unsafe { core::slice::from_raw_parts(self.words.as_ptr().cast::<u8>(), self.len) }
    }
}

impl AsMut<[u8]> for AlignedMemory {
    fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_ref`; any byte written is a valid part of a u64.
        unsafe { core::slice::from_raw_parts_mut(self.words.as_mut_ptr().cast::<u8>(), self.len) }
    }
}
