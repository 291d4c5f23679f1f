//! Keeps the producer's and the consumer's indices on separate cache lines.

use core::ops::Deref;

/// `T` aligned (and so padded) to a cache line on hosts; plain `T` on
/// bare-metal targets, where there is no cache to share and RAM is scarce.
///
/// 128 bytes on x86-64 and AArch64, where the adjacent-line prefetcher pulls
/// lines in pairs (the value crossbeam uses).
#[cfg_attr(
    any(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "powerpc64"
    ),
    repr(align(128))
)]
#[cfg_attr(
    not(any(
        target_os = "none",
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "powerpc64"
    )),
    repr(align(64))
)]
pub(crate) struct CachePadded<T>(T);

impl<T> CachePadded<T> {
    pub(crate) const fn new(value: T) -> Self {
        Self(value)
    }
}

impl<T> Deref for CachePadded<T> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        &self.0
    }
}
