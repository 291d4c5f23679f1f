//! [`DeviceCore`]: the driver behind its lock, the last fence of every
//! queue, the op of every outstanding fence, and bounded waits that never
//! hold the lock while sleeping.
//!
//! Kernels do not wait for their ops: a failure is seen later, by whichever
//! wait (copy, sync, event, callback) first polls past it. Fences are polled
//! oldest first, so the failure is caught at the fence of the op that
//! caused it and reported as `FPGA <op> '<node>': <device>: <cause>`; after
//! the recovery reset every wait on a fence of that incident reports the
//! same error (a sticky, attributed error, like CUDA's). The memory the
//! failure left invalid is poisoned (`poison.rs`): a copy that reads it
//! reports the failure; copies of other results do not.

use super::access::{Access, Range};
use super::inflight::{Cause, InFlight, Incident, OpLabel};
use super::poison::Poison;
use crate::devices::{DeviceError, DynAccelerator};
use crate::error::{Error, RESET, RESET_FAILED, Result};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};
use tensorplug_core::accelerator::{ErrorKind, Fence, QueueId};

/// The driver and the fences it has handed out.
pub struct DeviceState {
    accel: Box<DynAccelerator>,
    /// The newest fence of each queue (`None`: nothing enqueued yet).
    last_fence: Vec<Option<Fence>>,
    /// The newest fence handed out (fences grow across all queues).
    newest_fence: Fence,
    /// The newest fence at the last recovery reset: errors of fences up to
    /// it (e.g. "aborted by a reset") need no further reset.
    recovered_through: Fence,
    /// Outstanding fences and their ops, oldest first.
    in_flight: InFlight,
    /// The last failure that reset the device, reported to every wait on
    /// one of its fences.
    incident: Option<Incident>,
    /// The last op the device refused without a reset (bad input), with
    /// the work queued up to then: waits on them pass (the failure is
    /// in `poison`, reported where the results are read).
    refused: Option<Incident>,
    /// Device memory failed work left invalid, reported when read.
    poison: Poison,
    /// Until when waits fail at once and failures reset nothing: a reset
    /// failed (a dead or frozen device process).
    unresponsive_until: Option<Instant>,
    /// A link failure an event's poll found, which that poll cannot report
    /// (TF aborts on a failed event): the next wait reports it, once.
    unreported: Option<DeviceError>,
}

impl DeviceState {
    /// The driver, for calls that enqueue nothing (allocate, info, events).
    pub fn accel(&mut self) -> &mut DynAccelerator {
        &mut *self.accel
    }

    /// Runs one enqueue on `queue` and remembers its fence.
    pub fn enqueue(
        &mut self,
        queue: QueueId,
        access: Access,
        submit: impl FnOnce(&mut DynAccelerator) -> Result<Fence, DeviceError>,
    ) -> Result<Fence, DeviceError> {
        self.enqueue_op(queue, None, access, submit)
    }

    /// Runs one enqueue on `queue` for the op `label` (`None`: not an op)
    /// that touches `access`, and remembers its fence and op.
    pub fn enqueue_op(
        &mut self,
        queue: QueueId,
        label: Option<OpLabel>,
        access: Access,
        submit: impl FnOnce(&mut DynAccelerator) -> Result<Fence, DeviceError>,
    ) -> Result<Fence, DeviceError> {
        let fence = submit(&mut *self.accel)?;
        if let Some(slot) = self.last_fence.get_mut(usize::from(queue.0)) {
            *slot = Some(fence);
        }
        self.newest_fence = self.newest_fence.max(fence);
        self.poison.follow(&access);
        self.in_flight.push(fence, label, access);
        Ok(fence)
    }

    /// The reset incident whose waits `fence` is among, if any.
    fn covering(&self, fence: Fence) -> Option<&Incident> {
        self.incident
            .as_ref()
            .filter(|incident| incident.covers(fence))
    }

    /// Whether `fence` is work of (or queued before the finding of) an op
    /// the device refused: done, its failure is in the poison.
    fn refused_covers(&self, fence: Fence) -> bool {
        self.refused.as_ref().is_some_and(|r| r.covers(fence))
    }

    /// The newest fence of `queue` (`None`: nothing enqueued yet).
    pub fn queue_tail(&self, queue: QueueId) -> Option<Fence> {
        self.last_fence.get(usize::from(queue.0)).copied().flatten()
    }

    /// The newest fence handed out on any queue.
    pub fn newest_fence(&self) -> Fence {
        self.newest_fence
    }

    /// How many outstanding fences are remembered (for tests).
    #[cfg(feature = "internals")]
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// The newest fence at the last recovery reset (for tests).
    #[cfg(feature = "internals")]
    pub fn recovered_through(&self) -> Fence {
        self.recovered_through
    }

    /// Resets the device unless a reset since `fence` was handed out has
    /// already dealt with it. Returns whether it reset.
    fn reset_for(&mut self, fence: Fence) -> Result<bool, DeviceError> {
        if fence <= self.recovered_through {
            return Ok(false);
        }
        self.recovered_through = self.newest_fence.max(fence);
        self.accel.reset().map(|()| true)
    }
}

/// Everything about one device that the completion thread shares.
pub struct DeviceCore {
    label: String,
    timeout: Duration,
    state: Mutex<DeviceState>,
}

impl DeviceCore {
    /// Wraps an opened driver with `queues` queues. `label` names it in errors.
    pub fn new(label: String, accel: Box<DynAccelerator>, queues: u8, timeout: Duration) -> Self {
        Self {
            label,
            timeout,
            state: Mutex::new(DeviceState {
                accel,
                last_fence: vec![None; usize::from(queues)],
                newest_fence: Fence(0),
                recovered_through: Fence(0),
                in_flight: InFlight::default(),
                incident: None,
                refused: None,
                poison: Poison::default(),
                unresponsive_until: None,
                unreported: None,
            }),
        }
    }

    /// `FPGA:<ordinal> (<spec>)`.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The wait budget (`TENSORPLUG_TIMEOUT_MS`).
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Locks the driver. A panic under the lock does not wedge the device.
    pub fn lock(&self) -> MutexGuard<'_, DeviceState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A driver error, labelled with this device.
    pub fn error(&self, source: DeviceError) -> Error {
        Error::Device {
            device: self.label.clone(),
            source,
        }
    }

    /// Non-blocking: has `fence` completed?
    ///
    /// Polls the outstanding fences up to `fence` oldest first, so a
    /// failure is caught at the op that caused it. The one place of fault
    /// recovery: a device fault (the driver reports a halted or
    /// spontaneously reset device within a few polls) resets the device
    /// here, once per fault, so kernels, copies, events and syncs all leave
    /// it usable; its pending work fails with the same error.
    pub fn poll(&self, fence: Fence) -> Result<bool> {
        let mut state = self.lock();
        if let Some(incident) = state.covering(fence) {
            return Err(incident.error());
        }
        while let Some(oldest) = state.in_flight.oldest_up_to(fence) {
            match state.accel().poll(oldest) {
                Ok(true) => {
                    state.in_flight.pop();
                }
                Ok(false) => return Ok(false),
                Err(error) => {
                    let (label, access) = state.in_flight.pop();
                    let cause = Cause::Device(error);
                    return Err(self.fail(&mut state, oldest, (label, access), cause));
                }
            }
        }
        let refused = state.refused_covers(fence);
        match state.accel().poll(fence) {
            Ok(done) => Ok(done),
            // Work of a refused op's finding, polled again: its failure is
            // recorded (poisoned), not this wait's.
            Err(error) if refused && error.kind == ErrorKind::InvalidArgument => Ok(true),
            Err(error) => Err(self.fail(
                &mut state,
                fence,
                (None, Access::default()),
                Cause::Device(error),
            )),
        }
    }

    /// The error of the work of `fence` (the op `label`, touching
    /// `access`) failing with `cause`. A device fault or a timeout resets
    /// the device (once per incident) and records the incident for the
    /// other waits. Where a failed copy does not abort TF, the memory the
    /// failed work (and work that read it) left invalid is poisoned.
    fn fail(
        &self,
        state: &mut DeviceState,
        fence: Fence,
        (label, access): (Option<OpLabel>, Access),
        cause: Cause,
    ) -> Error {
        let at = match &label {
            Some(label) => format!("{}: {}", label.describe(), self.label),
            None => self.label.clone(),
        };
        let after = match &cause {
            Cause::Device(error) if error.kind == ErrorKind::DeviceFault => "a device fault",
            Cause::Device(_) => "",
            Cause::Timeout { .. } => "a timeout",
            Cause::Unresponsive { .. } => "",
        };
        // Not again within a budget of a reset that failed: one per budget.
        let unresponsive = state
            .unresponsive_until
            .is_some_and(|until| Instant::now() < until);
        let reset_needed = !after.is_empty() && fence > state.recovered_through && !unresponsive;
        let recovered = reset_needed.then(|| self.recover(state, fence, after));
        let cause = match (cause, recovered) {
            (Cause::Device(mut error), Some(recovered)) => {
                error.message.push_str(if recovered {
                    "; the device was reset and the work queued after it aborted"
                } else {
                    "; resetting the device failed too (see the log), and the work queued \
                     after it failed"
                });
                Cause::Device(error)
            }
            (
                Cause::Timeout {
                    what, timeout_ms, ..
                },
                Some(recovered),
            ) => Cause::Timeout {
                what,
                timeout_ms,
                then: if recovered { RESET } else { RESET_FAILED },
            },
            (cause, _) => cause,
        };
        let incident = Incident {
            first: fence,
            last: fence,
            names_op: label.is_some(),
            at,
            cause,
        };
        let error = incident.error();
        let poisons = !crate::tf_versions::copy_failure_aborts();
        if let Some(recovered) = recovered {
            state.unresponsive_until = (!recovered).then(|| Instant::now() + self.timeout);
            let incident = Incident {
                last: state.recovered_through,
                ..incident
            };
            if poisons {
                // The reset aborted all work in flight: none wrote its result.
                let DeviceState {
                    poison, in_flight, ..
                } = &mut *state;
                poison.mark(&access.writes, &incident);
                in_flight
                    .accesses()
                    .for_each(|a| poison.mark(&a.writes, &incident));
            }
            state.in_flight.clear();
            state.incident = Some(incident);
        } else if incident.names_op && poisons {
            // An op the device refused (bad input, no reset needed): the
            // work queued after it may read its output, so every wait on it
            // reports the op again, the device-to-host copy after a SyncAll
            // (which TF reports without our message) among them. Work
            // enqueued from now on is not covered. (Where a failed copy
            // aborts TF, every kernel waits: the op itself reports it.)
            let incident = Incident {
                last: state.newest_fence(),
                ..incident
            };
            // The work after it ran: what read its output is invalid too.
            let DeviceState {
                poison, in_flight, ..
            } = &mut *state;
            poison.mark(&access.writes, &incident);
            for later in in_flight.accesses() {
                if later.reads.iter().any(|r| poison.find(*r).is_some()) {
                    poison.mark(&later.writes, &incident);
                }
            }
            state.refused = Some(incident);
        }
        error
    }

    /// The failure that left `len` bytes at `addr` invalid, if any: a read
    /// of them (the copy of a result) reports it, naming the op.
    pub fn poisoned(
        &self,
        addr: tensorplug_core::accelerator::DeviceAddr,
        len: u64,
    ) -> Option<Error> {
        self.lock().poison.error(Range::new(addr, len))
    }

    /// Forgets poison in freed memory.
    pub fn unpoison(&self, addr: tensorplug_core::accelerator::DeviceAddr, len: u64) {
        self.lock().poison.clear(Range::new(addr, len));
    }

    /// Resets the device after a fault or timeout seen by a wait on
    /// `fence` (at most once per incident; see [`DeviceState::reset_for`]).
    /// False if the reset failed.
    fn recover(&self, state: &mut DeviceState, fence: Fence, after: &str) -> bool {
        match state.reset_for(fence) {
            Ok(true) => {
                crate::log::warn(format_args!(
                    "{}: reset after {after}; pending work failed",
                    self.label
                ));
                true
            }
            Ok(false) => true,
            Err(reset) => {
                crate::log::error(format_args!(
                    "{}: reset after {after} failed: {reset}",
                    self.label
                ));
                false
            }
        }
    }

    /// The error of a wait on `fence` that fails at once, if a reset of
    /// the device failed within the budget: a dead device then costs one
    /// budget and one reset, not one per wait.
    pub fn fail_fast(&self, fence: Fence, what: &'static str) -> Option<Error> {
        let mut state = self.lock();
        let until = state.unresponsive_until?;
        if Instant::now() >= until {
            state.unresponsive_until = None;
            return None;
        }
        let (stuck, label) = state.in_flight.stuck_up_to(fence).unwrap_or((fence, None));
        let what = if label.is_some() { "the op" } else { what };
        let timeout_ms = self.timeout.as_millis().try_into().unwrap_or(u64::MAX);
        let cause = Cause::Unresponsive { what, timeout_ms };
        Some(self.fail(&mut state, stuck, (label, Access::default()), cause))
    }

    /// Waits for `fence` within the timeout, polling with back-off and
    /// releasing the lock between polls (other streams keep enqueueing). A
    /// device fault ends the wait at once (see [`poll`](Self::poll)); on
    /// timeout the device is reset, so no host buffer is touched afterwards.
    /// If a reset fails, the waits of the next budget fail at once.
    pub fn wait(&self, fence: Fence, what: &'static str) -> Result<()> {
        // Where a failed copy aborts TF, only kernels report it (`report_unreported`).
        if !crate::tf_versions::copy_failure_aborts() {
            self.report_unreported()?;
        }
        if self.poll(fence)? {
            return Ok(());
        }
        if let Some(error) = self.fail_fast(fence, what) {
            return Err(error);
        }
        let deadline = Instant::now() + self.timeout;
        let mut backoff = Backoff::default();
        loop {
            if self.poll(fence)? {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(self.timed_out(fence, what));
            }
            backoff.pause();
        }
    }

    /// The device did not reach `fence` within the timeout (a wait's, or
    /// the driver's own, as a bulk copy's wait for the queue to drain): it
    /// is reset and the incident recorded, so that the other waits fail at
    /// once instead of each waiting out its own budget.
    pub fn timed_out(&self, fence: Fence, what: &'static str) -> Error {
        let mut state = self.lock();
        // The wait is stuck at the oldest outstanding fence.
        let (stuck, label) = state.in_flight.stuck_up_to(fence).unwrap_or((fence, None));
        let what = if label.is_some() { "the op" } else { what };
        let timeout_ms = self.timeout.as_millis().try_into().unwrap_or(u64::MAX);
        let cause = Cause::Timeout {
            what,
            timeout_ms,
            then: "",
        };
        self.fail(&mut state, stuck, (label, Access::default()), cause)
    }

    /// Waits, without holding the lock between polls, until the device has
    /// nothing outstanding: everything submitted so far on every queue has
    /// completed, or failed in an incident already handled (the device was
    /// reset; that failure was reported to the waits on its own work). An
    /// op's failure this wait finds is not the caller's (a host copy waits
    /// only for the device to be idle): it is recorded, and reported where
    /// that op's results are read; other failures are returned.
    pub fn wait_until_idle(&self, what: &'static str) -> Result<()> {
        loop {
            let newest = {
                let state = self.lock();
                let newest = state.newest_fence();
                let handled = state.covering(newest).is_some();
                if newest == Fence(0) || handled {
                    return Ok(());
                }
                newest
            };
            match self.wait(newest, what) {
                Err(error) if self.is_incident(&error) => {
                    crate::log::warn(format_args!(
                        "{error} (found by a wait for {what}; reported where its results are read)"
                    ));
                }
                outcome => return outcome,
            }
        }
    }

    /// Waits up to `budget` for everything enqueued so far to complete,
    /// without reporting a failure (a wait on the work reports it): the
    /// profiler's stop lets the ops launched in its session finish, so that
    /// their events are in it. False if the device did not settle.
    pub fn settle(&self, budget: Duration) -> bool {
        let newest = self.lock().newest_fence();
        if newest == Fence(0) {
            return true;
        }
        let deadline = Instant::now() + budget;
        let mut backoff = Backoff::default();
        loop {
            match self.poll(newest) {
                Ok(true) => return true,
                Err(_) => return false,
                Ok(false) if Instant::now() >= deadline => return false,
                Ok(false) => backoff.pause(),
            }
        }
    }

    /// Whether `error` is the current incident of a failed op: the device
    /// was reset, and every wait on the op or on work after it (such as the
    /// device-to-host copy that reads its result) reports it again.
    pub fn is_op_incident(&self, error: &Error) -> bool {
        self.is_recorded(error, true)
    }

    /// Whether `error` is the current incident of failed work, an op's or
    /// not, after which the device works (it was reset, or the op refused):
    /// recorded, so a wait that only needed the device idle can go on. Not
    /// while a reset has failed: later work would fail too.
    pub fn is_incident(&self, error: &Error) -> bool {
        let unresponsive = self
            .lock()
            .unresponsive_until
            .is_some_and(|until| Instant::now() < until);
        !unresponsive && self.is_recorded(error, false)
    }

    fn is_recorded(&self, error: &Error, of_an_op: bool) -> bool {
        let at = match error {
            Error::Device { device, .. } | Error::Timeout { device, .. } => device,
            _ => return false,
        };
        let state = self.lock();
        [&state.incident, &state.refused]
            .into_iter()
            .flatten()
            .any(|incident| (incident.names_op || !of_an_op) && incident.at == *at)
    }

    /// Keeps `error`, which a poll found for a caller that cannot report
    /// it (an event's status: TF aborts the process on a failed event), for
    /// the next wait. Only a link's failure (`Transport`: a frame damaged
    /// or lost, or the link closed): what it lost may have been a
    /// completion's, and nothing else records it. A device fault or a
    /// refused op is recorded by [`poll`](Self::poll) and reported to the
    /// waits on its work.
    pub fn defer(&self, error: &Error) {
        if let Error::Device { source, .. } = error
            && source.kind == ErrorKind::Transport
        {
            let mut source = source.clone();
            source
                .message
                .push_str(" (found by a poll of an event, reported by the next wait)");
            self.lock().unreported.get_or_insert(source);
        }
    }

    /// Fails with the error [`defer`](Self::defer) kept, once.
    pub fn report_unreported(&self) -> Result<()> {
        let unreported = self.lock().unreported.take();
        unreported.map_or(Ok(()), |source| Err(self.error(source)))
    }

    /// Waits until everything enqueued so far, on every queue, has completed.
    pub fn synchronize(&self) -> Result<()> {
        let fences: Vec<Fence> = self.lock().last_fence.iter().flatten().copied().collect();
        fences
            .into_iter()
            .try_for_each(|fence| self.wait(fence, "all device work"))
    }
}

/// Spin briefly, then yield, then sleep up to 200 µs: low latency for the
/// fast model, little CPU for long operations.
#[derive(Default)]
struct Backoff {
    round: u32,
}

impl Backoff {
    fn pause(&mut self) {
        self.round = self.round.saturating_add(1);
        match self.round {
            0..=32 => std::hint::spin_loop(),
            33..=64 => std::thread::yield_now(),
            n => std::thread::sleep(Duration::from_micros(u64::from((n - 64).min(200)))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;
    use tensorplug_core::accelerator::DeviceAddr;

    fn fill(core: &DeviceCore) -> Fence {
        let q = QueueId(0);
        core.lock()
            .enqueue(q, Access::default(), |a| a.fill(q, DeviceAddr(0), 64, 1))
            .expect("enqueue")
    }

    #[test]
    fn a_dead_device_costs_one_budget_and_one_reset_then_waits_fail_at_once() {
        let budget = Duration::from_millis(100);
        let (accel, resets) = crate::testing::dead_accelerator();
        let core = DeviceCore::new("FPGA:3 (dead)".into(), accel, 2, budget);
        let first = fill(&core);
        let error = core.wait(first, "a fill").expect_err("nothing completes");
        assert!(matches!(error, Error::Timeout { .. }), "{error}");
        assert!(
            error
                .to_string()
                .contains("resetting the device failed too"),
            "{error}"
        );
        assert_eq!(resets.load(Ordering::Relaxed), 1);
        // Work enqueued after, within the next budget: fails at once, and
        // no second reset.
        let second = fill(&core);
        let error = core.wait(second, "a fill").expect_err("still dead");
        assert!(matches!(error, Error::Unresponsive { .. }), "{error}");
        assert!(error.to_string().contains("FPGA:3 (dead)"), "{error}");
        assert_eq!(resets.load(Ordering::Relaxed), 1);
        // After it: one waits the budget and tries a reset again.
        std::thread::sleep(budget);
        let third = fill(&core);
        let error = core.wait(third, "a fill").expect_err("still dead");
        assert!(matches!(error, Error::Timeout { .. }), "{error}");
        assert_eq!(resets.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn a_refused_ops_failure_is_reported_where_its_results_are_read() {
        use crate::registry::inflight::OpLabel;
        let (device, released) = crate::testing::gated_device(Duration::from_secs(5));
        let core = device.core();
        let q = QueueId(0);
        let alloc = |n| core.lock().accel().allocate(n, 64).expect("memory");
        let (x, y, z, w) = (alloc(64), alloc(64), alloc(64), alloc(64));
        let range = |a| Range::new(a, 64);
        let op = |op_type, node: &str| {
            Some(OpLabel {
                op_type,
                node: node.into(),
            })
        };
        let writes = |a| Access {
            reads: Default::default(),
            writes: [range(a)].into(),
        };
        let copies = |from, to| Access {
            reads: [range(from)].into(),
            writes: [range(to)].into(),
        };
        let mut state = core.lock();
        let refused = crate::testing::REFUSED_FILL;
        let gather = state
            .enqueue_op(q, op("GatherV2", "g"), writes(x), |a| {
                a.fill(q, x, 64, refused)
            })
            .expect("enqueue");
        state
            .enqueue(q, writes(y), |a| a.fill(q, y, 64, 1))
            .expect("enqueue");
        state
            .enqueue_op(q, op("Mul", "m"), copies(x, z), |a| {
                a.copy_on_device(q, z, x, 64)
            })
            .expect("enqueue");
        drop(state);
        released.store(u64::MAX, Ordering::Release);
        // A host copy only needs the device idle: not its failure.
        core.wait_until_idle("a copy").expect("idle");
        let named = |a| core.poisoned(a, 64).map(|e| e.to_string());
        assert_eq!(named(y), None, "unrelated work is valid");
        for read in [x, z] {
            let error = named(read).expect("the failed op's result, or one computed from it");
            assert!(error.contains("GatherV2 'g'") && error.contains("a refused fill"));
        }
        // Found: later waits pass, on the op too, and work reading z
        // inherits the failure.
        core.wait(gather, "the op")
            .expect("recorded, not this wait's");
        let next = core
            .lock()
            .enqueue_op(q, op("Neg", "n"), copies(z, w), |a| {
                a.copy_on_device(q, w, z, 64)
            })
            .expect("enqueue");
        core.wait(next, "the op").expect("the device works");
        assert!(named(w).expect("inherited").contains("GatherV2 'g'"));
        // Written anew by valid work: valid again.
        let fill = core
            .lock()
            .enqueue(q, writes(x), |a| a.fill(q, x, 64, 2))
            .expect("enqueue");
        core.wait(fill, "a fill").expect("done");
        assert_eq!(named(x), None);
    }

    #[test]
    fn a_device_whose_reset_works_is_waited_for_again() {
        let budget = Duration::from_millis(50);
        let (device, released) = crate::testing::gated_device(budget);
        let core = device.core();
        let first = fill(core);
        let error = core.wait(first, "a fill").expect_err("held back");
        assert!(matches!(error, Error::Timeout { .. }), "{error}");
        assert!(
            error.to_string().contains("the device was reset"),
            "{error}"
        );
        // The reset ended the held-back work; new work is waited for.
        let second = fill(core);
        released.store(second.0, Ordering::Release);
        core.wait(second, "a fill").expect("completes");
    }
}
