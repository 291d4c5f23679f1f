//! The buffers of a link session and the bytes an MCU restart left stale
//! (`restored.rs` puts the buffers back). A leaf: it imports nothing of
//! the client.

use std::collections::BTreeMap;

use rangemap::RangeSet;

/// The buffers of a session, and the bytes a restart left stale.
#[derive(Debug, Default)]
pub(super) struct Buffers {
    /// This session's allocations: address → bytes asked for.
    pub live: BTreeMap<u64, u64>,
    /// Allocations a restart took, still held by the caller.
    pub lost: BTreeMap<u64, u64>,
    /// Whether putting them back failed: then no session opens until the
    /// caller frees them (the MCU's allocator is not first fit, or others
    /// allocated meanwhile).
    pub unrestorable: bool,
    stale: RangeSet<u64>,
}

impl Buffers {
    /// The restart took this session's buffers.
    pub fn lose(&mut self) {
        let live = core::mem::take(&mut self.live);
        self.lost.extend(live);
    }

    /// `len` bytes at `addr` were written.
    pub fn written(&mut self, addr: u64, len: u64) {
        if !self.stale.is_empty() && len > 0 {
            self.stale.remove(addr..addr.saturating_add(len));
        }
    }

    /// `Err`, the message, if any of `len` bytes at `addr` are stale.
    pub fn check_read(&self, addr: u64, len: u64, what: &str) -> Result<(), String> {
        let range = addr..addr.saturating_add(len);
        if len == 0 || !self.stale.overlaps(&range) {
            return Ok(());
        }
        Err(format!(
            "{what} reads device memory at {addr:#x} ({len} bytes) that the MCU lost when it \
                 restarted: the tensor there was on the device before the restart and has not \
                 been written since (in TF: assign the variables again, e.g. load the weights, \
                 or restart the process)"
        ))
    }

    /// Marks `len` bytes at `addr` stale (a buffer a restart emptied).
    pub fn mark_stale(&mut self, addr: u64, len: u64) {
        self.stale.insert(addr..addr.saturating_add(len.max(1)));
    }

    /// A freed buffer's bytes are no longer anyone's.
    pub fn freed(&mut self, addr: u64, len: u64) {
        self.stale.remove(addr..addr.saturating_add(len.max(1)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_bytes_fail_reads_until_written_and_freeing_forgets_them() {
        let mut b = Buffers::default();
        b.live.insert(0x1000, 256);
        b.lose();
        assert!(b.live.is_empty());
        assert_eq!(b.lost.get(&0x1000), Some(&256));
        b.mark_stale(0x1000, 0x100);
        assert!(
            b.check_read(0x0f00, 0x100, "x").is_ok(),
            "ends where it starts"
        );
        let e = b.check_read(0x10f0, 0x40, "a launch").unwrap_err();
        assert!(e.contains("a launch reads device memory at 0x10f0"), "{e}");
        // Half written: the other half still fails.
        b.written(0x1000, 0x80);
        assert!(b.check_read(0x1000, 0x80, "x").is_ok());
        assert!(b.check_read(0x1000, 0x81, "x").is_err());
        assert!(b.check_read(0x1040, 0, "x").is_ok(), "an empty read");
        b.freed(0x1000, 256);
        assert!(b.check_read(0x1000, 256, "x").is_ok());
    }
}
