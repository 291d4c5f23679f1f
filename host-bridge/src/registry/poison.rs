//! [`Poison`]: device memory that failed work left without a valid result,
//! and the failure to report when it is read. So the error of an op reaches
//! the copy of its result (or of a result computed from it), not the copy
//! of an unrelated one that happens to follow it on the queue.

use super::access::{Access, Range};
use super::inflight::Incident;
use crate::error::Error;

/// At most this many poisoned ranges are kept; the oldest go first.
const MAX_RANGES: usize = 1024;

/// The poisoned ranges, each with the failure that left it so.
#[derive(Default)]
pub struct Poison {
    ranges: Vec<(Range, Incident)>,
}

impl Poison {
    /// Marks `writes` as left invalid by `incident`.
    pub fn mark(&mut self, writes: &[Range], incident: &Incident) {
        for range in writes.iter().filter(|r| r.start < r.end) {
            self.clear(*range);
            if self.ranges.len() == MAX_RANGES {
                self.ranges.remove(0);
            }
            self.ranges.push((*range, incident.clone()));
        }
    }

    /// Forgets poison that `range` overlaps (it is written anew, or freed).
    pub fn clear(&mut self, range: Range) {
        self.ranges.retain(|(r, _)| !r.overlaps(&range));
    }

    /// The failure behind `range`, if any of it is poisoned.
    pub fn find(&self, range: Range) -> Option<&Incident> {
        self.ranges
            .iter()
            .rev()
            .find(|(r, _)| r.overlaps(&range))
            .map(|(_, incident)| incident)
    }

    /// Work enqueued now: what it reads carries poison into what it writes;
    /// otherwise its writes are valid again.
    pub fn follow(&mut self, access: &Access) {
        let inherited = access.reads.iter().find_map(|r| self.find(*r)).cloned();
        match inherited {
            Some(incident) => self.mark(&access.writes, &incident),
            None => access.writes.iter().for_each(|w| self.clear(*w)),
        }
    }

    /// The error a read of `range` reports, if it is poisoned.
    pub fn error(&self, range: Range) -> Option<Error> {
        self.find(range).map(Incident::error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::inflight::Cause;
    use tensorplug_core::accelerator::{ErrorKind, Fence};

    fn incident() -> Incident {
        Incident {
            first: Fence(1),
            last: Fence(1),
            at: "FPGA GatherV2 'g': FPGA:0 (sim)".into(),
            names_op: true,
            cause: Cause::Device(crate::devices::DeviceError::new(
                ErrorKind::InvalidArgument,
                "an index out of range",
            )),
        }
    }

    fn range(start: u64, end: u64) -> Range {
        Range { start, end }
    }

    #[test]
    fn poison_follows_reads_into_writes_and_a_clean_write_ends_it() {
        let mut poison = Poison::default();
        poison.mark(&[range(0, 64)], &incident());
        assert!(poison.error(range(32, 40)).is_some());
        assert!(poison.error(range(64, 128)).is_none(), "after it");
        // A consumer of the failed output: its output is poisoned too.
        poison.follow(&Access {
            reads: [range(0, 64)].into(),
            writes: [range(256, 320)].into(),
        });
        let error = poison.error(range(256, 320)).expect("inherited");
        assert!(error.to_string().contains("GatherV2 'g'"), "{error}");
        // Unrelated work writes the first range anew: valid again.
        poison.follow(&Access {
            reads: [range(512, 576)].into(),
            writes: [range(0, 64)].into(),
        });
        assert!(poison.error(range(0, 64)).is_none());
        assert!(poison.error(range(256, 320)).is_some());
        poison.clear(range(256, 320));
        assert!(poison.error(range(256, 320)).is_none(), "freed");
    }
}
