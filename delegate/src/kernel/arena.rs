//! One device arena for a partition's intermediate tensors and
//! temporaries, planned by liveness: two that are alive at the same step
//! never share bytes, others may, so a partition needs its peak, not its
//! total.

/// A buffer alive from the step that writes it to the last that reads
/// it, both included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Item {
    pub bytes: usize,
    pub first: usize,
    pub last: usize,
}

impl Item {
    fn alive_with(&self, other: &Item) -> bool {
        self.first <= other.last && other.first <= self.last
    }
}

/// Each item's offset in one arena, `align`-aligned, and the arena's
/// size: the largest first, each at the lowest offset clear of the items
/// placed already that are alive with it.
pub fn plan(items: &[Item], align: usize) -> (Vec<usize>, usize) {
    let align = align.max(1);
    let up = |v: usize| v.div_ceil(align) * align;
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(items[i].bytes), items[i].first));
    let mut offsets = vec![0; items.len()];
    let mut placed: Vec<usize> = Vec::with_capacity(items.len());
    let mut size = 0;
    for i in order {
        let mut clashes: Vec<(usize, usize)> = placed
            .iter()
            .filter(|&&j| items[j].alive_with(&items[i]))
            .map(|&j| (offsets[j], offsets[j] + items[j].bytes))
            .collect();
        clashes.sort_unstable();
        let mut at = 0;
        for (start, end) in clashes {
            if at + items[i].bytes <= start {
                break;
            }
            at = at.max(up(end));
        }
        offsets[i] = at;
        size = size.max(at + items[i].bytes);
        placed.push(i);
    }
    (offsets, up(size))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(bytes: usize, first: usize, last: usize) -> Item {
        Item { bytes, first, last }
    }

    #[test]
    fn buffers_alive_together_never_share_bytes_and_the_rest_reuse_them() {
        // A chain a -> b -> c -> d: each alive for two steps.
        let chain = [
            item(1000, 0, 1),
            item(600, 1, 2),
            item(1000, 2, 3),
            item(100, 3, 4),
        ];
        let (offsets, size) = plan(&chain, 64);
        for (i, a) in chain.iter().enumerate() {
            for (j, b) in chain.iter().enumerate().skip(i + 1) {
                if a.alive_with(b) {
                    let (x, y) = (offsets[i], offsets[j]);
                    assert!(x + a.bytes <= y || y + b.bytes <= x, "{i} and {j} overlap");
                }
            }
            assert_eq!(offsets[i] % 64, 0);
        }
        // Peak: two buffers at a time, 1000 + 640 (aligned), not the 2700 total.
        assert_eq!(size, 1664);
        // One step: everything apart.
        let together = [item(10, 0, 0), item(20, 0, 0), item(30, 0, 0)];
        assert_eq!(plan(&together, 1).1, 60);
        assert_eq!(plan(&[], 64), (vec![], 0));
    }
}
