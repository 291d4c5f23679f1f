//! The driver's queue bookkeeping: sequence numbers, failed commands and
//! aborted fence ranges ([`QueueState`]). A leaf: `Driver` holds one, and
//! `queue.rs` drives it.

use heapless::Deque;

use super::error::Error;

/// Failed commands remembered until a wait reports them.
const FAILURES: usize = 8;
/// Resets whose aborted fences are remembered.
const ABORTS: usize = 4;

#[derive(Debug, Default)]
pub(super) struct QueueState {
    /// Commands submitted (the next command's `seq`).
    pub(super) submitted: u64,
    /// Commands completed or aborted.
    pub(super) completed: u64,
    /// `seq` of hardware index 0 since the last reset.
    hw_base: u64,
    /// Last `CMDQ_HEAD` read.
    pub(super) cmd_head: u32,
    /// Commands written but not yet announced by the doorbell.
    pub(super) unrung: u32,
    /// Failed commands not yet reported: `(seq, error)`.
    failures: Deque<(u64, Error), FAILURES>,
    /// Polls of unreached fences since `STATUS` was last checked.
    pub(super) polls_since_status: u32,
    /// A failure was forgotten because `failures` was full.
    failures_lost: bool,
    /// Fence ranges `(lo, hi]` aborted by resets.
    aborted: Deque<(u64, u64), ABORTS>,
}

impl QueueState {
    /// Hardware index of `seq`.
    pub(super) fn hw(&self, seq: u64) -> u32 {
        seq.wrapping_sub(self.hw_base) as u32
    }

    /// Marks every outstanding command aborted; hardware indices restart.
    /// Failures not yet reported stay queued (their work did complete).
    pub(super) fn abort_outstanding(&mut self) {
        if self.submitted > self.completed {
            if self.aborted.is_full() {
                self.aborted.pop_front();
            }
            // Cannot fail: made room above.
            let _ = self.aborted.push_back((self.completed, self.submitted));
        }
        // The reset takes a fence number of its own, so fences handed out
        // afterwards (e.g. by a bulk copy) are never in an aborted range.
        self.submitted += 1;
        self.completed = self.submitted;
        self.hw_base = self.submitted;
        self.cmd_head = 0;
        self.unrung = 0;
    }

    pub(super) fn record_failure(&mut self, seq: u64, error: Error) {
        if self.failures.push_back((seq, error)).is_err() {
            self.failures_lost = true;
        }
    }

    /// The first unreported failure among the first `fence` commands. A
    /// fence from after the last reset drops the failures from before it
    /// (they belong to fences of that time, not to later work).
    pub(super) fn take_failure(&mut self, fence: u64) -> Option<Error> {
        if fence > self.hw_base {
            while self
                .failures
                .front()
                .is_some_and(|&(seq, _)| seq < self.hw_base)
            {
                self.failures.pop_front();
            }
        }
        if let Some(&(seq, error)) = self.failures.front()
            && seq < fence
        {
            self.failures.pop_front();
            return Some(error);
        }
        if self.failures_lost {
            self.failures_lost = false;
            return Some(Error::Protocol);
        }
        None
    }

    /// Whether a command among the first `fence` failed and is unreported.
    pub(super) fn failed_before(&self, fence: u64) -> bool {
        self.failures.front().is_some_and(|&(seq, _)| seq < fence) || self.failures_lost
    }

    pub(super) fn was_aborted(&self, fence: u64) -> bool {
        self.aborted
            .iter()
            .any(|&(lo, hi)| lo < fence && fence <= hi)
    }
}
