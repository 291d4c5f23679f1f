//! [`DeviceCore`]: the driver behind its lock, the last fence of every
//! queue, and bounded waits that never hold the lock while sleeping.

use crate::devices::{DeviceError, DynAccelerator};
use crate::error::{Error, Result};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};
use tensorplug_core::accelerator::{Fence, QueueId};

/// The driver and the fences it has handed out.
pub struct DeviceState {
    accel: Box<DynAccelerator>,
    /// The newest fence of each queue (`None`: nothing enqueued yet).
    last_fence: Vec<Option<Fence>>,
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
        Ok(fence)
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
    pub fn poll(&self, fence: Fence) -> Result<bool> {
        self.lock().accel().poll(fence).map_err(|e| self.error(e))
    }

    /// Waits for `fence` within the timeout, polling with back-off and
    /// releasing the lock between polls (other streams keep enqueueing). On
    /// timeout the device is reset, so no host buffer is touched afterwards.
    pub fn wait(&self, fence: Fence, what: &'static str) -> Result<()> {
        let deadline = Instant::now() + self.timeout;
        let mut backoff = Backoff::default();
        loop {
            if self.poll(fence)? {
                return Ok(());
            }
            if Instant::now() >= deadline {
                if let Err(reset) = self.lock().accel().reset() {
                    crate::log::error(format_args!(
                        "{}: reset after timeout failed: {reset}",
                        self.label
                    ));
                }
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
