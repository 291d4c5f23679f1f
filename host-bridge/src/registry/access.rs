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
    pub reads: Ranges,
    pub writes: Ranges,
}

/// How many ranges [`Ranges`] keeps without a heap allocation: a kernel's
/// inputs, or its output (one per enqueue, on the dispatch path).
const INLINE: usize = 3;

/// A few ranges: inline up to [`INLINE`], on the heap beyond.
#[derive(Clone, Debug)]
pub enum Ranges {
    Inline(u8, [Range; INLINE]),
    Heap(Vec<Range>),
}

impl Default for Ranges {
    fn default() -> Self {
        Self::Inline(0, [Range { start: 0, end: 0 }; INLINE])
    }
}

impl std::ops::Deref for Ranges {
    type Target = [Range];

    fn deref(&self) -> &[Range] {
        match self {
            Self::Inline(n, items) => &items[..usize::from(*n)],
            Self::Heap(items) => items,
        }
    }
}

impl FromIterator<Range> for Ranges {
    fn from_iter<I: IntoIterator<Item = Range>>(iter: I) -> Self {
        let mut out = Self::default();
        for range in iter {
            match &mut out {
                Self::Inline(n, items) if usize::from(*n) < INLINE => {
                    items[usize::from(*n)] = range;
                    *n += 1;
                }
                Self::Inline(_, items) => {
                    let mut all = items.to_vec();
                    all.push(range);
                    out = Self::Heap(all);
                }
                Self::Heap(items) => items.push(range),
            }
        }
        out
    }
}

impl<const N: usize> From<[Range; N]> for Ranges {
    fn from(ranges: [Range; N]) -> Self {
        ranges.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_keep_their_order_inline_and_beyond() {
        let r = |i: u64| Range {
            start: i,
            end: i + 1,
        };
        let few: Ranges = [r(1), r(2)].into();
        assert!(matches!(few, Ranges::Inline(2, _)));
        assert_eq!(&*few, &[r(1), r(2)]);
        let many: Ranges = (0..5).map(r).collect();
        assert!(matches!(many, Ranges::Heap(_)));
        assert_eq!(
            many.iter().map(|x| x.start).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4]
        );
        assert!(Ranges::default().is_empty());
    }
}
