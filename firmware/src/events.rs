//! Profiling on the MCU: a 1 kHz tick interrupt moves the FPGA's device
//! events (stamped by the FPGA clock) from its event ring into core's
//! fixed-capacity ring in MCU RAM; the main loop streams that ring to the
//! host in `EventBatch`es. A full ring drops new events and counts them; the
//! count reaches the host in the next batch and the profile's warnings.

use core::cell::RefCell;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use cortex_m::peripheral::SYST;
use cortex_m::peripheral::syst::SystClkSource;
use cortex_m_rt::exception;
use critical_section::Mutex;
use tensorplug_core::accelerator::Drained;
use tensorplug_core::accelerator::{Accelerator, Profiling};
use tensorplug_core::event::{Event, EventKind};
use tensorplug_core::link::server::{EventSource, RingEvents};
use tensorplug_core::ring::{Producer, Ring};

use crate::board::CORE_HZ;
use crate::device;
use crate::glue::clock;

/// Events the MCU buffers between two batches (16 bytes each).
pub const RING_EVENTS: usize = 512;

static mut RING: Ring<Event, RING_EVENTS> = Ring::new();
static PRODUCER: Mutex<RefCell<Option<Producer<'static, Event, RING_EVENTS>>>> =
    Mutex::new(RefCell::new(None));
/// Whether the host turned profiling on (the interrupt drains only then).
pub static PROFILING: AtomicBool = AtomicBool::new(false);
/// Events the FPGA's own ring dropped, not yet reported to the host.
static DEVICE_DROPPED: AtomicU32 = AtomicU32::new(0);

/// The main loop's end: the ring, plus the FPGA's own drops.
pub struct McuEvents(RingEvents<'static, RING_EVENTS>);

impl McuEvents {
    /// Drops waiting events and uncounted drops (a new host session).
    pub fn clear(&mut self) {
        self.0.clear();
        DEVICE_DROPPED.store(0, Ordering::Relaxed);
    }
}

impl<A: Accelerator + ?Sized> EventSource<A> for McuEvents {
    fn drain(&mut self, accel: &mut A, out: &mut [Event]) -> Result<Drained, A::Error> {
        let mut drained = self.0.drain(accel, out)?;
        drained.dropped += u64::from(DEVICE_DROPPED.swap(0, Ordering::Relaxed));
        Ok(drained)
    }
    fn backlog(&mut self) -> usize {
        EventSource::<A>::backlog(&mut self.0)
    }
}

/// Splits the ring (once) and starts the 1 kHz tick; returns the main
/// loop's end of the ring.
pub fn start(mut syst: SYST) -> McuEvents {
    // SAFETY: `start` runs once, so this is the only split of the ring.
    let ring = unsafe { &mut *core::ptr::addr_of_mut!(RING) };
    let (producer, consumer) = ring.split();
    critical_section::with(|cs| PRODUCER.borrow_ref_mut(cs).replace(producer));
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload((CORE_HZ / 1000) as u32 - 1);
    syst.clear_current();
    syst.enable_counter();
    syst.enable_interrupt();
    McuEvents(RingEvents::new(consumer))
}

#[exception]
fn SysTick() {
    // Keeps the 64-bit clock seeing every wrap of the 32-bit timer.
    clock::now();
    if !PROFILING.load(Ordering::Relaxed) {
        return;
    }
    critical_section::with(|cs| {
        let mut producer = PRODUCER.borrow_ref_mut(cs);
        let Some(producer) = producer.as_mut() else {
            return;
        };
        device::if_driver(cs, |driver| {
            let mut batch = [Event::new(EventKind::OpBegin, 0, 0, 0, 0); 32];
            loop {
                let Ok(drained) = driver.drain_events(&mut batch) else {
                    return;
                };
                let lost = u32::try_from(drained.dropped).unwrap_or(u32::MAX);
                DEVICE_DROPPED.fetch_add(lost, Ordering::Relaxed);
                for event in &batch[..drained.events] {
                    // A full ring counts the drop itself.
                    tensorplug_ring_push(producer, event);
                }
                if drained.events < batch.len() {
                    return;
                }
            }
        });
    });
}

/// One push into the event ring. Out of line, under a fixed name, so that
/// `cargo xtask bench` counts its instructions in the ELF.
#[unsafe(no_mangle)]
#[inline(never)]
fn tensorplug_ring_push(
    producer: &mut Producer<'static, Event, RING_EVENTS>,
    event: &Event,
) -> bool {
    producer.push(*event).is_ok()
}
