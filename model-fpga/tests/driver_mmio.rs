//! The driver suite over in-process MMIO: the model on its own thread
//! serving a heap BAR (the `sim` device).
#![cfg(feature = "std")]

#[macro_use]
mod driver_suite;

use std::sync::Arc;
use tensorplug_core::accelerator::prelude::*;

use driver_suite::Fixture;
use tensorplug_device_fpga::driver::{Driver, StdClock};
use tensorplug_device_fpga::transport::mmio::{HeapBar, MmioTransport};
use tensorplug_model_fpga::model::Faults;
use tensorplug_model_fpga::model::host::{InProcessDevice, ServeOptions};

type Mmio = MmioTransport<Arc<HeapBar>>;

struct MmioFixture {
    // Dropped first: the driver, then the model thread.
    dev: Driver<Mmio, StdClock>,
    device: InProcessDevice,
}

impl MmioFixture {
    fn new() -> Self {
        let device = InProcessDevice::spawn(4 << 20, 64 << 10, ServeOptions::default())
            .expect("model thread");
        let dev = Driver::new(
            device.transport(),
            StdClock::default(),
            driver_suite::config(),
        )
        .expect("bring-up over MMIO");
        Self { dev, device }
    }
}

impl Fixture for MmioFixture {
    type T = Mmio;
    fn dev(&mut self) -> &mut Driver<Mmio, StdClock> {
        &mut self.dev
    }
    fn set_faults(&mut self, faults: Faults) {
        // Returns once the model thread has taken them.
        assert!(
            self.device.set_faults(faults),
            "the model did not take the faults"
        );
    }
}

driver_suite!(MmioFixture::new());

#[test]
fn dma_copies_go_through_the_window_and_stamp_copy_events() {
    use tensorplug_core::accelerator::Accelerator;
    use tensorplug_core::event::{Event, EventKind};
    use tensorplug_device_fpga::driver::DriverConfig;

    // A 64 KiB window: a 200 000-byte copy takes 4 chunks each way.
    let device = InProcessDevice::spawn(4 << 20, 64 << 10, ServeOptions::default()).unwrap();
    let config = DriverConfig {
        dma_copies: true,
        ..driver_suite::config()
    };
    let mut dev: Driver<Mmio, StdClock> =
        Driver::new(device.transport(), StdClock::default(), config).unwrap();
    let q = driver_suite::Q;
    let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let buf = dev.allocate(data.len() as u64, 64).unwrap();
    dev.set_profiling(true).unwrap();
    dev.write_blocking(q, buf, &data, driver_suite::TIMEOUT)
        .unwrap();
    let mut back = vec![0u8; data.len()];
    dev.read_blocking(q, &mut back, buf, driver_suite::TIMEOUT)
        .unwrap();
    assert!(back == data, "DMA round trip corrupted data");

    let mut events = [Event::default(); 64];
    let drained = dev.drain_events(&mut events).unwrap();
    let kinds: Vec<u8> = events[..drained.events].iter().map(|e| e.kind).collect();
    let count = |k: EventKind| kinds.iter().filter(|&&x| x == k as u8).count();
    assert_eq!(count(EventKind::CopyH2DBegin), 4);
    assert_eq!(count(EventKind::CopyH2DEnd), 4);
    assert_eq!(count(EventKind::CopyD2HEnd), 4);
    let bytes: u64 = events[..drained.events]
        .iter()
        .filter(|e| e.kind == EventKind::CopyD2HEnd as u8)
        .map(|e| u64::from(e.arg))
        .sum();
    assert_eq!(bytes, data.len() as u64);
}
