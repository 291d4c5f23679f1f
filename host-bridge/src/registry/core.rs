//! [`DeviceCore`]: the driver behind its lock, the last fence of every
//! queue, the op of every outstanding fence, and bounded waits that never
//! hold the lock while sleeping.
//!
//! Kernels do not wait for their ops: a failure is seen later, by whichever
//! wait (copy, sync, event, callback) first polls past it. Fences are polled
//! oldest first, so the failure is caught at the fence of the op that
//! caused it and reported as `FPGA <op> '<node>': <device>: <cause>`; after
//! the recovery reset every wait on a fence of that incident reports the
//! same error (a sticky, attributed error, like CUDA's).

use super::inflight::{Cause, InFlight, Incident, OpLabel};
use crate::devices::{DeviceError, DynAccelerator};
use crate::error::{Error, Result};
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
        submit: impl FnOnce(&mut DynAccelerator) -> Result<Fence, DeviceError>,
    ) -> Result<Fence, DeviceError> {
        self.enqueue_op(queue, None, submit)
    }

    /// Runs one enqueue on `queue` for the op `label` (`None`: not an op)
    /// and remembers its fence and op.
    pub fn enqueue_op(
        &mut self,
        queue: QueueId,
        label: Option<OpLabel>,
        submit: impl FnOnce(&mut DynAccelerator) -> Result<Fence, DeviceError>,
    ) -> Result<Fence, DeviceError> {
        let fence = submit(&mut *self.accel)?;
        if let Some(slot) = self.last_fence.get_mut(usize::from(queue.0)) {
            *slot = Some(fence);
        }
        self.newest_fence = self.newest_fence.max(fence);
        self.in_flight.push(fence, label);
        Ok(fence)
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
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
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
        if let Some(incident) = state.incident.as_ref().filter(|i| i.covers(fence)) {
            return Err(incident.error());
        }
        while let Some(oldest) = state.in_flight.oldest_up_to(fence) {
            match state.accel().poll(oldest) {
                Ok(true) => {
                    state.in_flight.pop();
                }
                Ok(false) => return Ok(false),
                Err(error) => {
                    let label = state.in_flight.pop();
                    return Err(self.fail(&mut state, oldest, label, Cause::Device(error)));
                }
            }
        }
        match state.accel().poll(fence) {
            Ok(done) => Ok(done),
            Err(error) => Err(self.fail(&mut state, fence, None, Cause::Device(error))),
        }
    }

    /// The error of the work of `fence` (the op `label`) failing with
    /// `cause`. A device fault or a timeout resets the device (once per
    /// incident) and records the incident for the other waits.
    fn fail(
        &self,
        state: &mut DeviceState,
        fence: Fence,
        label: Option<OpLabel>,
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
        };
        let reset_needed = !after.is_empty() && fence > state.recovered_through;
        let cause = match cause {
            Cause::Device(mut error) if reset_needed => {
                error
                    .message
                    .push_str("; the device was reset and the work queued after it aborted");
                Cause::Device(error)
            }
            cause => cause,
        };
        let incident = Incident {
            first: fence,
            last: fence,
            names_op: label.is_some(),
            at,
            cause,
        };
        let error = incident.error();
        if reset_needed {
            self.recover(state, fence, after);
            state.in_flight.clear();
            state.incident = Some(Incident {
                last: state.recovered_through,
                ..incident
            });
        }
        error
    }

    /// Resets the device after a fault or timeout seen by a wait on
    /// `fence` (at most once per incident; see [`DeviceState::reset_for`]).
    fn recover(&self, state: &mut DeviceState, fence: Fence, after: &str) {
        match state.reset_for(fence) {
            Ok(true) => crate::log::warn(format_args!(
                "{}: reset after {after}; pending work failed",
                self.label
            )),
            Ok(false) => {}
            Err(reset) => crate::log::error(format_args!(
                "{}: reset after {after} failed: {reset}",
                self.label
            )),
        }
    }

    /// Waits for `fence` within the timeout, polling with back-off and
    /// releasing the lock between polls (other streams keep enqueueing). A
    /// device fault ends the wait at once (see [`poll`](Self::poll)); on
    /// timeout the device is reset, so no host buffer is touched afterwards.
    pub fn wait(&self, fence: Fence, what: &'static str) -> Result<()> {
        let deadline = Instant::now() + self.timeout;
        let mut backoff = Backoff::default();
        loop {
            if self.poll(fence)? {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let mut state = self.lock();
                // The wait is stuck at the oldest outstanding fence.
                let (stuck, label) = state.in_flight.stuck_up_to(fence).unwrap_or((fence, None));
                let what = if label.is_some() { "the op" } else { what };
                let timeout_ms = self.timeout.as_millis().try_into().unwrap_or(u64::MAX);
                let cause = Cause::Timeout { what, timeout_ms };
                return Err(self.fail(&mut state, stuck, label, cause));
            }
            backoff.pause();
        }
    }

    /// Waits, without holding the lock between polls, until the device has
    /// nothing outstanding: everything submitted so far on every queue has
    /// completed, or failed in an incident already handled (the device was
    /// reset; that failure was reported to the waits on its own work). A
    /// failure this wait finds is returned, naming the op.
    pub fn wait_until_idle(&self, what: &'static str) -> Result<()> {
        let newest = {
            let state = self.lock();
            let newest = state.newest_fence();
            let handled = state.incident.as_ref().is_some_and(|i| i.covers(newest));
            if newest == Fence(0) || handled {
                return Ok(());
            }
            newest
        };
        self.wait(newest, what)
    }

    /// Whether `error` is the current incident of a failed op: the device
    /// was reset, and every wait on the op or on work after it (such as the
    /// device-to-host copy that reads its result) reports it again.
    pub fn is_op_incident(&self, error: &Error) -> bool {
        let at = match error {
            Error::Device { device, .. } | Error::Timeout { device, .. } => device,
            _ => return false,
        };
        let state = self.lock();
        state
            .incident
            .as_ref()
            .is_some_and(|incident| incident.names_op && incident.at == *at)
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
    use crate::testing::sim;
    use tensorplug_core::accelerator::{DType, DeviceAddr, OpDesc, OpKind, Shape, TensorDesc};

    const Q: QueueId = QueueId(0);

    /// A `sim` core whose first `Add` launch faults on its first command,
    /// with a 20 s budget: a halt noticed only at the timeout would fail
    /// the elapsed-time check below by far.
    fn faulting_sim() -> DeviceCore {
        let accel = sim::open_with(sim::parse_faults("fault_next_command@add").unwrap());
        DeviceCore::new("FPGA:0 (sim)".into(), accel, 1, Duration::from_secs(20))
    }

    fn tensor(addr: DeviceAddr, dims: &[u64]) -> TensorDesc {
        TensorDesc::new(addr, DType::F32, Shape::new(dims).unwrap())
    }

    /// `[2,1,2,1,2] + [1,3,1,3,1]`: six device commands.
    fn broadcast_add(core: &DeviceCore) -> Fence {
        let mut state = core.lock();
        let mut alloc = |bytes| state.accel().allocate(bytes, 256).unwrap();
        let (a, b, out) = (alloc(32), alloc(36), alloc(288));
        let inputs = [tensor(a, &[2, 1, 2, 1, 2]), tensor(b, &[1, 3, 1, 3, 1])];
        let op = OpDesc {
            kind: OpKind::Add,
            inputs: &inputs,
            output: tensor(out, &[2, 3, 2, 3, 2]),
            op_id: 3,
        };
        state.enqueue(Q, |accel| accel.launch(Q, &op)).unwrap()
    }

    fn label(op_type: &'static str, node: &str) -> Option<OpLabel> {
        Some(OpLabel {
            op_type,
            node: node.into(),
        })
    }

    /// `out = kind(inputs)` for the op `op_type` '`node`', not waited for.
    fn queue_op(
        core: &DeviceCore,
        (op_type, node): (&'static str, &str),
        kind: OpKind,
        inputs: &[TensorDesc],
        output: TensorDesc,
    ) -> Fence {
        let op = OpDesc {
            kind,
            inputs,
            output,
            op_id: 0,
        };
        core.lock()
            .enqueue_op(Q, label(op_type, node), |accel| accel.launch(Q, &op))
            .unwrap()
    }

    fn write(core: &DeviceCore, addr: DeviceAddr, values: &[f32]) {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let timeout = Duration::from_secs(20);
        core.lock()
            .accel()
            .write_blocking(Q, addr, &bytes, timeout)
            .unwrap();
    }

    fn read(core: &DeviceCore, addr: DeviceAddr, len: usize) -> Vec<f32> {
        let mut bytes = vec![0u8; len * 4];
        let timeout = Duration::from_secs(20);
        core.lock()
            .accel()
            .read_blocking(Q, &mut bytes, addr, timeout)
            .unwrap();
        let words = bytes.chunks_exact(4).map(|c| [c[0], c[1], c[2], c[3]]);
        words.map(f32::from_le_bytes).collect()
    }

    #[test]
    fn a_fault_in_the_second_of_three_queued_ops_is_reported_naming_it() {
        let core = faulting_sim();
        let x = [-1.0f32, 2.0, -3.0, 4.0];
        let alloc = |bytes| core.lock().accel().allocate(bytes, 256).unwrap();
        let (a, first_out, second_out, third_out) = (alloc(16), alloc(16), alloc(16), alloc(16));
        write(&core, a, &x);
        let t = |addr| tensor(addr, &[4]);
        let first = queue_op(
            &core,
            ("Relu", "m/first"),
            OpKind::Relu,
            &[t(a)],
            t(first_out),
        );
        // The fault switch is set right before the Add is queued; let the
        // model finish the Relu first so that the switch hits the Add. The
        // driver is polled directly: the core has not seen the Relu complete.
        let start = Instant::now();
        while !core.lock().accel().poll(first).unwrap() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the Relu never ran"
            );
            std::thread::yield_now();
        }
        let add = OpKind::Add;
        let second = queue_op(
            &core,
            ("AddV2", "m/second"),
            add,
            &[t(a), t(a)],
            t(second_out),
        );
        let third = queue_op(
            &core,
            ("Relu", "m/third"),
            OpKind::Relu,
            &[t(a)],
            t(third_out),
        );
        assert!(first < second && second < third);
        assert_eq!(core.lock().in_flight(), 3, "all three are outstanding");

        // The wait on the third op reports the second, with the cause.
        let error = core.wait(third, "the op").unwrap_err().to_string();
        assert!(
            error.starts_with("FPGA AddV2 'm/second': FPGA:0 (sim): "),
            "{error}"
        );
        assert!(error.contains("DEVICE_FAULT"), "{error}");
        // Sticky: every wait on a fence of the incident says the same, and
        // the first op completed with its result intact.
        assert_eq!(core.wait(second, "the op").unwrap_err().to_string(), error);
        assert!(core.poll(first).unwrap());
        assert_eq!(read(&core, first_out, 4), [0.0, 2.0, 0.0, 4.0]);
        // The device was reset once and runs new work.
        let again = queue_op(
            &core,
            ("Relu", "m/again"),
            OpKind::Relu,
            &[t(a)],
            t(third_out),
        );
        core.wait(again, "the op")
            .expect("the device works after the reset");
        assert_eq!(read(&core, third_out, 4), [0.0, 2.0, 0.0, 4.0]);
        assert_eq!(core.lock().recovered_through, third);
    }

    #[test]
    fn a_burst_beyond_the_queue_depth_back_pressures_and_completes() {
        let accel = sim::open();
        let core = DeviceCore::new("FPGA:0 (sim)".into(), accel, 1, Duration::from_secs(20));
        // 64 command slots by default: 1000 launches must wait for slots.
        const LAUNCHES: usize = 1000;
        let alloc = |bytes| core.lock().accel().allocate(bytes, 256).unwrap();
        let (a, out) = (alloc(64), alloc(LAUNCHES as u64 * 64));
        let x: Vec<f32> = (0..16).map(|i| i as f32 - 8.0).collect();
        write(&core, a, &x);
        let mut fences = Vec::with_capacity(LAUNCHES);
        for i in 0..LAUNCHES {
            let dst = tensor(DeviceAddr(out.0 + 64 * i as u64), &[16]);
            let node = format!("burst/{i}");
            let kind = OpKind::Relu;
            fences.push(queue_op(
                &core,
                ("Relu", &node),
                kind,
                &[tensor(a, &[16])],
                dst,
            ));
        }
        assert!(fences.windows(2).all(|w| w[0] < w[1]), "fences in order");
        assert_eq!(core.lock().in_flight(), LAUNCHES);
        core.wait(fences[LAUNCHES - 1], "the burst").unwrap();
        assert_eq!(core.lock().in_flight(), 0, "completed fences are forgotten");
        let relu: Vec<f32> = x.iter().map(|v| v.max(0.0)).collect();
        let all = read(&core, out, LAUNCHES * 16);
        for (i, result) in all.chunks_exact(16).enumerate() {
            assert_eq!(result, relu.as_slice(), "launch {i}");
        }
    }

    #[test]
    fn a_fault_in_a_multi_command_op_fails_the_wait_at_once_and_resets_once() {
        let core = faulting_sim();
        let fence = broadcast_add(&core);
        let start = Instant::now();
        let error = core.wait(fence, "the op").unwrap_err();
        let took = start.elapsed();
        let Error::Device { source, .. } = &error else {
            panic!("not a device error: {error}");
        };
        assert_eq!(source.kind, ErrorKind::DeviceFault, "{error}");
        assert!(error.to_string().contains("DEVICE_FAULT"), "{error}");
        // Liveness (the budget is 20 s), with room for a loaded machine.
        assert!(took < Duration::from_secs(5), "took {took:?}");
        // The wait reset the device: the fence is aborted (and that resets
        // nothing more), and new work completes.
        assert_eq!(core.lock().recovered_through, fence);
        let again = core.poll(fence).unwrap_err().to_string();
        assert!(again.contains("aborted"), "{again}");
        assert_eq!(core.lock().recovered_through, fence);
        let next = broadcast_add(&core);
        core.wait(next, "the op")
            .expect("the device works after the reset");
        core.synchronize().expect("nothing left failing");
    }

    #[test]
    fn waiting_for_idle_reports_a_new_fault_once_not_a_handled_one() {
        let core = faulting_sim();
        broadcast_add(&core);
        let first = core.wait_until_idle("a copy").unwrap_err();
        assert!(first.to_string().contains("DEVICE_FAULT"), "{first}");
        // The incident is handled (device reset): the next host copy is not
        // failed again by it, while waits on the op's own fence still are.
        core.wait_until_idle("the next copy")
            .expect("an idle device after the reset");
        let newest = core.lock().newest_fence();
        assert!(core.poll(newest).is_err());
    }
}
