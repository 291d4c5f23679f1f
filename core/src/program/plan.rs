//! The scratch arena plan: buffers whose lifetimes do not overlap share
//! bytes, so a program needs its peak, not its total (TFLite's
//! greedy-by-size arena planner).

use super::format::ARENA_ALIGN;
use alloc::vec::Vec;

/// One scratch buffer to place: its size and the first and last command
/// that touch it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lifetime {
    /// Bytes.
    pub bytes: u64,
    /// The first command that writes it.
    pub first: u16,
    /// The last command that reads or writes it.
    pub last: u16,
}

/// A plan: each buffer's offset, and the arena's size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Offsets, in the order of the lifetimes given.
    pub offsets: Vec<u64>,
    /// Bytes of arena the plan needs.
    pub arena: u64,
    /// Bytes the buffers would take side by side (what the plan saves on).
    pub total: u64,
}

fn aligned(bytes: u64) -> u64 {
    bytes.next_multiple_of(u64::from(ARENA_ALIGN))
}

/// Places the largest buffer first, each at the lowest aligned offset where
/// it overlaps no placed buffer alive at the same time.
pub fn plan(buffers: &[Lifetime]) -> Plan {
    let mut order: Vec<usize> = (0..buffers.len()).collect();
    order.sort_by_key(|&i| (core::cmp::Reverse(buffers[i].bytes), buffers[i].first, i));
    let mut offsets = alloc::vec![0u64; buffers.len()];
    let mut placed: Vec<usize> = Vec::with_capacity(buffers.len());
    let mut arena = 0;
    for &i in &order {
        let b = buffers[i];
        let mut busy: Vec<(u64, u64)> = placed
            .iter()
            .filter(|&&j| buffers[j].first <= b.last && b.first <= buffers[j].last)
            .map(|&j| (offsets[j], offsets[j] + aligned(buffers[j].bytes)))
            .collect();
        busy.sort_unstable();
        let mut at = 0;
        for (start, end) in busy {
            if at + aligned(b.bytes) <= start {
                break;
            }
            at = at.max(end);
        }
        offsets[i] = at;
        arena = arena.max(at + aligned(b.bytes));
        placed.push(i);
    }
    let total = buffers.iter().map(|b| aligned(b.bytes)).sum();
    Plan {
        offsets,
        arena,
        total,
    }
}
