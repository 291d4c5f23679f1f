//! [`DeviceCore`]: the driver behind its lock, the last fence of every
//! queue, and bounded waits that never hold the lock while sleeping.

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
        let fence = submit(&mut *self.accel)?;
        if let Some(slot) = self.last_fence.get_mut(usize::from(queue.0)) {
            *slot = Some(fence);
        }
        self.newest_fence = self.newest_fence.max(fence);
        Ok(fence)
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
    /// The one place of fault recovery: a device fault (the driver reports
    /// a halted or spontaneously reset device within a few polls) resets
    /// the device here, once per fault, so kernels, copies, events and
    /// syncs all leave it usable; its pending work fails ("aborted").
    pub fn poll(&self, fence: Fence) -> Result<bool> {
        let mut state = self.lock();
        match state.accel().poll(fence) {
            Ok(done) => Ok(done),
            Err(error) => {
                if error.kind == ErrorKind::DeviceFault {
                    self.recover(&mut state, fence, "a device fault");
                }
                Err(self.error(error))
            }
        }
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
                self.recover(&mut self.lock(), fence, "a timeout");
                return Err(Error::Timeout {
                    device: self.label.clone(),
                    what,
                    timeout_ms: self.timeout.as_millis().try_into().unwrap_or(u64::MAX),
                });
            }
            backoff.pause();
        }
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
    use crate::devices::{open_sim_with, parse_sim_faults};
    use tensorplug_core::accelerator::{DType, DeviceAddr, OpDesc, OpKind, Shape, TensorDesc};

    const Q: QueueId = QueueId(0);

    /// A `sim` core whose first `Add` launch faults on its first command,
    /// with a 20 s budget: a halt noticed only at the timeout would fail
    /// the elapsed-time check below by far.
    fn faulting_sim() -> DeviceCore {
        let rules = parse_sim_faults("fault_next_command@add").unwrap();
        let accel = open_sim_with(rules).expect("sim");
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
        assert!(took < Duration::from_secs(1), "took {took:?}");
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
}
