//! [`Access`]: the device memory one enqueue reads and writes, by byte
//! [`Range`]. A leaf that the in-flight list and the poison share.

use tensorplug_core::accelerator::DeviceAddr;

/// A byte range of device memory, `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub start: u64,
    pub end: u64,
}

impl Range {
    /// The `len` bytes at `addr` (empty ranges poison nothing).
    pub fn new(addr: DeviceAddr, len: u64) -> Self {
        Self {
            start: addr.0,
            end: addr.0.saturating_add(len),
        }
    }

    /// Whether the two share a byte.
    pub fn overlaps(&self, other: &Range) -> bool {
        self.start < other.end && other.start < self.end
    }
}

/// What one enqueue reads and writes of device memory.
#[derive(Clone, Debug, Default)]
pub struct Access {
    pub reads: Vec<Range>,
    pub writes: Vec<Range>,
}
