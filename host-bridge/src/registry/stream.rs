//! [`Stream`]: TF's `SP_Stream`, an ordered slice of one device queue.
//!
//! - Every enqueue returns at once; the stream remembers its newest fence.
//! - Host work ([`Stream::then_host`]) runs on the device's completion thread
//!   after everything enqueued before it on this stream has completed.
//! - A failure seen while waiting makes the stream fail for good
//!   (`get_stream_status`), as TF expects of a broken stream.

use super::access::Access;
use super::device::Device;
use super::inflight::OpLabel;
use super::worker::Completion;
use crate::devices::{DeviceError, DynAccelerator};
use crate::error::{Error, Result};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;
use tensorplug_core::accelerator::{ErrorKind, Fence, QueueId};

/// Marks one host callback finished when dropped (also on unwinding).
struct FinishOnDrop(Arc<HostWork>);

impl Drop for FinishOnDrop {
    fn drop(&mut self) {
        lock(&self.0.counts).1 += 1;
        self.0.finished.notify_all();
    }
}

/// Host work submitted vs finished, for `block_host_until_done`.
#[derive(Default)]
struct HostWork {
    counts: Mutex<(u64, u64)>,
    finished: Condvar,
}

/// One TF stream.
pub struct Stream {
    device: Arc<Device>,
    queue: QueueId,
    last_fence: Mutex<Option<Fence>>,
    failure: Arc<Mutex<Option<String>>>,
    host_work: Arc<HostWork>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Stream {
    /// A stream on the device's next queue (round-robin).
    pub fn new(device: Arc<Device>) -> Self {
        let queue = device.next_stream_queue();
        Self {
            device,
            queue,
            last_fence: Mutex::new(None),
            failure: Arc::default(),
            host_work: Arc::default(),
        }
    }

    /// The device this stream belongs to.
    pub fn device(&self) -> &Arc<Device> {
        &self.device
    }

    /// The device queue the stream's work goes to.
    pub fn queue(&self) -> QueueId {
        self.queue
    }

    /// The newest fence of this stream (`None` before any work).
    pub fn last_fence(&self) -> Option<Fence> {
        *lock(&self.last_fence)
    }

    /// `Ok` unless work on this stream has failed.
    pub fn status(&self) -> Result<()> {
        match &*lock(&self.failure) {
            Some(message) => Err(Error::StreamFailed(message.clone())),
            None => Ok(()),
        }
    }

    /// Enqueues device work on this stream's queue; returns without waiting.
    pub fn enqueue(
        &self,
        access: Access,
        submit: impl FnOnce(&mut DynAccelerator) -> Result<Fence, DeviceError>,
    ) -> Result<Fence> {
        self.enqueue_op(None, access, submit)
    }

    /// Enqueues the work of the op `label` (`None`: not an op, e.g. a
    /// copy); returns without waiting. A failure of the op is reported by a
    /// later wait, naming the op.
    ///
    /// When the driver cannot take the work because earlier work broke the
    /// device (a halt seen while waiting for a free queue slot), the error
    /// is that earlier failure, found and recovered by polling (it names
    /// the op that caused it).
    pub fn enqueue_op(
        &self,
        label: Option<OpLabel>,
        access: Access,
        submit: impl FnOnce(&mut DynAccelerator) -> Result<Fence, DeviceError>,
    ) -> Result<Fence> {
        self.status()?;
        let core = self.device.core();
        let mut state = core.lock();
        match state.enqueue_op(self.queue, label, access, submit) {
            Ok(fence) => {
                // Still under the device lock: the stream's fences stay in order.
                *lock(&self.last_fence) = Some(fence);
                Ok(fence)
            }
            Err(error) if matches!(error.kind, ErrorKind::DeviceFault | ErrorKind::Timeout) => {
                let newest = state.newest_fence();
                drop(state);
                let drained = core.poll(newest)?;
                if error.kind == ErrorKind::Timeout && !drained {
                    // The driver waited out its budget for the queued work
                    // (a bulk copy drains the queue first): the device is
                    // stuck, as a wait that timed out would find it.
                    return Err(core.timed_out(newest, "the work queued before a copy"));
                }
                Err(core.error(error))
            }
            Err(error) => Err(core.error(error)),
        }
    }

    /// Runs `run` on the completion thread after all work enqueued so far.
    pub fn then_host(&self, run: impl FnOnce(Result<()>) + Send + 'static) {
        let host_work = self.host_work.clone();
        let failure = self.failure.clone();
        lock(&host_work.counts).0 += 1;
        let wrapped = move |outcome: Result<()>| {
            // Counted as finished even if `run` panics, so that
            // `block_until_done` does not wait out its timeout.
            let _finished = FinishOnDrop(host_work);
            if let Err(error) = &outcome {
                lock(&failure).get_or_insert_with(|| error.to_string());
            }
            run(outcome);
        };
        self.device.submit(Completion {
            fence: self.last_fence(),
            run: Box::new(wrapped),
        });
    }

    /// Blocks until all device work and host work enqueued so far is done.
    pub fn block_until_done(&self) -> Result<()> {
        let submitted = lock(&self.host_work.counts).0;
        if let Some(fence) = self.last_fence() {
            self.record(self.device.core().wait(fence, "stream work"))?;
        }
        let deadline = Instant::now() + self.device.core().timeout();
        let mut counts = lock(&self.host_work.counts);
        while counts.1 < submitted {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return self.record(Err(Error::Timeout {
                    device: self.device.core().label().to_owned(),
                    what: "host callbacks of the stream",
                    timeout_ms: self.device.core().timeout().as_millis() as u64,
                    then: "; the stream failed",
                }));
            }
            counts = self
                .host_work
                .finished
                .wait_timeout(counts, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        drop(counts);
        self.status()
    }

    /// Waits for the work queued so far on this stream's device queue and
    /// returns a failure of it, naming the op; the stream stays usable (the
    /// wait resets a faulted device).
    pub fn wait_queued(&self, what: &'static str) -> Result<()> {
        let core = self.device.core();
        let tail = core.lock().queue_tail(self.queue);
        match tail {
            Some(fence) => core.wait(fence, what),
            None => Ok(()),
        }
    }

    /// Makes later work on this stream wait for `fence` of `queue`. Work on
    /// the same queue is already ordered; across queues the host waits.
    pub fn wait_for(&self, queue: QueueId, fence: Fence) -> Result<()> {
        if queue == self.queue {
            return Ok(());
        }
        self.record(
            self.device
                .core()
                .wait(fence, "work this stream depends on"),
        )
    }

    /// Marks the stream failed when `outcome` is an error; passes it on.
    pub fn record(&self, outcome: Result<()>) -> Result<()> {
        if let Err(error) = &outcome {
            lock(&self.failure).get_or_insert_with(|| error.to_string());
        }
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::gated_device;
    use std::time::Duration;

    #[test]
    fn a_panicking_host_callback_still_counts_as_finished() {
        // Without the drop guard the count never catches up and
        // `block_until_done` fails after its 20 s budget.
        let (device, _released) = gated_device(Duration::from_secs(20));
        let stream = Stream::new(device);
        stream.then_host(|_| panic!("a bug in a host callback"));
        let done = Arc::new(Mutex::new(false));
        let flag = done.clone();
        stream.then_host(move |outcome| *lock(&flag) = outcome.is_ok());
        assert!(stream.block_until_done().is_ok());
        assert!(*lock(&done), "the callback after the panicking one ran");
    }

    /// A driver that waits out its own budget for the queued work (a PCIe
    /// bulk copy drains the queue first) times out as a wait would: the
    /// device is reset once, and a wait already on that work fails at once
    /// instead of waiting out a budget of its own.
    #[test]
    fn a_copy_timing_out_on_queued_work_resets_and_fails_the_other_waits_at_once() {
        use tensorplug_core::accelerator::DeviceAddr;
        let budget = Duration::from_secs(5);
        let (accel, resets) = crate::testing::dead_accelerator();
        let device = Device::new(3, "dead", accel, budget).expect("a device");
        let stream = Stream::new(device.clone());
        let q = stream.queue();
        let fill = |a: &mut DynAccelerator| a.fill(q, DeviceAddr(0), 64, 1);
        let queued = stream
            .enqueue_op(None, Access::default(), fill)
            .expect("queued");
        let bulk = |_: &mut DynAccelerator| -> std::result::Result<Fence, DeviceError> {
            Err(DeviceError::new(ErrorKind::Timeout, "waiting for Idle"))
        };
        let error = stream
            .enqueue_op(None, Access::default(), bulk)
            .expect_err("the driver timed out");
        assert!(matches!(error, Error::Timeout { .. }), "{error}");
        assert_eq!(resets.load(std::sync::atomic::Ordering::Relaxed), 1);
        let start = Instant::now();
        let error = device.core().wait(queued, "a fill").expect_err("dead");
        assert!(
            start.elapsed() < budget / 2,
            "waited {:?}: {error}",
            start.elapsed()
        );
    }
}
