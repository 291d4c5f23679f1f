//! The `sim` device: the model on its own thread behind an in-process BAR.

use std::io;
use std::sync::Arc;
use std::thread::{JoinHandle, Thread};

use tensorplug_abi::device::REGISTER_SPACE_SIZE;

use super::serve::{ServeControl, ServeOptions, serve};
use crate::model::Faults;
use tensorplug_device_fpga::transport::mmio::{BarLayout, HeapBar, MmioTransport};

/// Wakes a sleeping model thread at once (an in-process "doorbell
/// interrupt"); optional: without it the thread notices host writes within
/// its idle policy's `max_sleep`.
#[derive(Clone, Debug)]
pub struct DeviceWaker(Thread);

impl DeviceWaker {
    /// Unparks the model thread.
    pub fn wake(&self) {
        self.0.unpark();
    }
}

/// The model serving a [`HeapBar`] from its own thread. Dropping it stops
/// and joins the thread.
#[derive(Debug)]
pub struct InProcessDevice {
    bar: Arc<HeapBar>,
    control: Arc<ServeControl>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl InProcessDevice {
    /// Allocates a BAR with `memory` bytes of device memory and `dma` bytes
    /// of DMA window and starts the model thread.
    pub fn spawn(memory: usize, dma: usize, options: ServeOptions) -> io::Result<Self> {
        let layout = BarLayout::new(REGISTER_SPACE_SIZE as usize, memory, dma)?;
        let bar = Arc::new(HeapBar::new(layout)?);
        let control = Arc::new(ServeControl::default());
        let (thread_bar, thread_control) = (Arc::clone(&bar), Arc::clone(&control));
        let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("tensorplug-model".into())
            // SAFETY: the heap block is only reached through raw pointers by
            // `MmioTransport` (volatile 32-bit register accesses, raw copies)
            // and by this loop; it outlives the thread (Arc).
            .spawn(move || unsafe {
                serve(&*thread_bar, &options, &thread_control, || {
                    let _ = ready_tx.send(());
                })
            })?;
        let mut device = Self {
            bar,
            control,
            thread: Some(thread),
        };
        // The sender is dropped without a message if `serve` fails early.
        if ready_rx.recv().is_err() {
            return Err(device
                .shutdown()
                .err()
                .unwrap_or_else(|| io::Error::other("model thread ended before it was ready")));
        }
        Ok(device)
    }

    /// The BAR, to build more transports over it.
    pub fn bar(&self) -> Arc<HeapBar> {
        Arc::clone(&self.bar)
    }

    /// An MMIO transport to the device.
    pub fn transport(&self) -> MmioTransport<Arc<HeapBar>> {
        MmioTransport::new(self.bar())
    }

    /// The device's timestamp counter now, read live from the model's clock
    /// rather than from the snapshot in the BAR (which is as old as the
    /// model thread's last turn); `None` before the thread started.
    pub fn timestamp(&self) -> Option<u64> {
        self.control.timestamp()
    }

    /// A handle that wakes the model thread.
    pub fn waker(&self) -> Option<DeviceWaker> {
        self.thread
            .as_ref()
            .map(|t| DeviceWaker(t.thread().clone()))
    }

    /// Replaces the model's fault switches and waits (up to one second)
    /// until the model thread has taken them; false if it did not.
    pub fn set_faults(&self, faults: Faults) -> bool {
        let ticket = self.control.set_faults(faults);
        if let Some(w) = self.waker() {
            w.wake();
        }
        self.control
            .wait_faults_taken(ticket, std::time::Duration::from_secs(1))
    }

    /// Stops the thread and reports how it ended.
    pub fn stop(mut self) -> io::Result<()> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> io::Result<()> {
        self.control.stop();
        match self.thread.take() {
            Some(t) => {
                t.thread().unpark();
                t.join()
                    .map_err(|_| io::Error::other("model thread panicked"))?
            }
            None => Ok(()),
        }
    }
}

impl Drop for InProcessDevice {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}
