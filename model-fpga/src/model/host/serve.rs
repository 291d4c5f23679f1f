//! Serving a BAR from a host thread: [`serve`] and its options and control.

use std::io;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tensorplug_abi::device::Features;

use super::mirror::Mirror;
use crate::model::{Faults, LiveClock, Model, ModelConfig, SharedWindow};
use tensorplug_device_fpga::transport::mmio::Bar;

/// How the model thread waits when there is nothing to do: spin, then
/// yield, then sleep in growing steps (an in-process doorbell may wake it
/// early, see [`DeviceWaker`](super::DeviceWaker)). The worst-case added
/// latency after a long idle period is `max_sleep` plus the OS wake-up time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdlePolicy {
    /// Busy-poll this long after the last activity.
    pub spin: Duration,
    /// Then poll with `yield_now` until this long after the last activity.
    pub yield_until: Duration,
    /// Then sleep, starting at `min_sleep` and doubling up to `max_sleep`.
    pub min_sleep: Duration,
    /// Longest sleep between polls.
    pub max_sleep: Duration,
}

impl Default for IdlePolicy {
    fn default() -> Self {
        Self {
            spin: Duration::from_micros(50),
            yield_until: Duration::from_millis(2),
            min_sleep: Duration::from_micros(20),
            max_sleep: Duration::from_micros(500),
        }
    }
}

/// What the serving loop runs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ServeOptions {
    /// Device configuration. `IRQ` is removed from the features: a
    /// memory-backed BAR has no interrupt line.
    pub config: ModelConfig,
    /// The idle policy.
    pub idle: IdlePolicy,
}

/// Shared with a serving loop: stop it, or change its faults.
#[derive(Debug, Default)]
pub struct ServeControl {
    pub(super) stop: AtomicBool,
    faults_pending: AtomicBool,
    faults: Mutex<Faults>,
    /// How many `set_faults` calls the loop has taken.
    faults_taken: AtomicU64,
    faults_given: AtomicU64,
    /// The device counter, live.
    counter: std::sync::Arc<crate::model::LiveCounter>,
}

impl ServeControl {
    /// Asks the loop to return (within one idle sleep).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
    }

    /// The device's timestamp counter now, read live (not the snapshot the
    /// loop publishes in the registers); `None` before the loop started.
    pub fn timestamp(&self) -> Option<u64> {
        self.counter.now()
    }

    /// Whether [`ServeControl::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// Replaces the model's fault switches at its next poll; returns a
    /// ticket for [`ServeControl::wait_faults_taken`].
    pub fn set_faults(&self, faults: Faults) -> u64 {
        let mut slot = self.faults.lock().unwrap_or_else(|p| p.into_inner());
        *slot = faults;
        let ticket = self.faults_given.fetch_add(1, Ordering::AcqRel) + 1;
        self.faults_pending.store(true, Ordering::Release);
        ticket
    }

    /// Waits until the loop has taken the faults of `ticket` (true), or
    /// `timeout` passed or the loop stopped (false).
    pub fn wait_faults_taken(&self, ticket: u64, timeout: Duration) -> bool {
        let start = Instant::now();
        while self.faults_taken.load(Ordering::Acquire) < ticket {
            if start.elapsed() > timeout || self.stop.load(Ordering::Acquire) {
                return false;
            }
            std::thread::sleep(Duration::from_micros(50));
        }
        true
    }

    pub(super) fn take_faults(&self) -> Option<Faults> {
        if !self.faults_pending.swap(false, Ordering::AcqRel) {
            return None;
        }
        let slot = self.faults.lock().unwrap_or_else(|p| p.into_inner());
        self.faults_taken
            .store(self.faults_given.load(Ordering::Acquire), Ordering::Release);
        Some(*slot)
    }
}

/// Serves `bar` with a model until `control.stop()`.
///
/// Device memory is the BAR's memory aperture; DMA reaches its DMA window.
/// `on_ready` runs once every register is published (the device is after
/// reset, `READY`); the host must not touch the BAR before.
///
/// # Safety
/// For the duration of the call the memory aperture must satisfy
/// [`SharedWindow::new`]'s contract: the host reaches it only through raw
/// pointers and touches only bytes the device does not own (the model
/// borrows one command's operands at a time, never the whole aperture). The
/// host must access the register window only with aligned 32-bit atomic
/// accesses (an [`MmioRegion`](tensorplug_device_fpga::transport::mmio::MmioRegion) made by
/// `new_memory_backed`, as `HeapBar` and `ShmBar` do) or, from another
/// process, aligned 32-bit volatile ones.
pub unsafe fn serve<B: Bar>(
    bar: &B,
    options: &ServeOptions,
    control: &ServeControl,
    on_ready: impl FnOnce(),
) -> io::Result<()> {
    let memory = bar.memory();
    let dma = bar.dma();
    let base = core::ptr::NonNull::new(memory.as_ptr())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "null memory aperture"))?;
    // SAFETY: the caller's contract; the aperture lives as long as `bar`.
    let mem = unsafe { SharedWindow::new(base, memory.len()) };
    let mut config = options.config;
    config.features = Features(config.features.0 & !Features::IRQ.0);
    let clock = LiveClock::new(config.timing.freq_hz, control.counter.clone());
    let registers = bar.registers();
    // SAFETY: the caller's contract on the register window.
    let mut mirror = unsafe { Mirror::new(&registers) }.map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "register window smaller than REGISTER_SPACE_SIZE",
        )
    })?;
    let bad = |e: crate::model::ModelError| io::Error::new(io::ErrorKind::InvalidInput, e);
    match dma {
        Some(dma) => {
            let mut model = Model::new(mem, dma, clock, config, true).map_err(bad)?;
            mirror.publish_all(&mut model);
            on_ready();
            run(&mut model, &mut mirror, &options.idle, control);
        }
        None => {
            let mut model =
                Model::new(mem, crate::model::NoHostBus, clock, config, false).map_err(bad)?;
            mirror.publish_all(&mut model);
            on_ready();
            run(&mut model, &mut mirror, &options.idle, control);
        }
    }
    Ok(())
}

fn run<B: crate::model::HostBus>(
    model: &mut Model<SharedWindow<'_>, B, LiveClock>,
    mirror: &mut Mirror<'_>,
    idle: &IdlePolicy,
    control: &ServeControl,
) {
    let mut last_activity = Instant::now();
    let mut sleep = idle.min_sleep;
    while !control.stop.load(Ordering::Acquire) {
        if let Some(faults) = control.take_faults() {
            *model.faults_mut() = faults;
        }
        let wrote = mirror.pull(model);
        let done = model.service();
        mirror.push(model);
        if wrote || done.commands > 0 {
            last_activity = Instant::now();
            sleep = idle.min_sleep;
            continue;
        }
        let quiet = last_activity.elapsed();
        if quiet < idle.spin {
            core::hint::spin_loop();
        } else if quiet < idle.yield_until {
            std::thread::yield_now();
        } else {
            std::thread::park_timeout(sleep);
            sleep = (sleep * 2).min(idle.max_sleep);
        }
    }
}
