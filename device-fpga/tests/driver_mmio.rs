//! The driver suite over in-process MMIO: the model on its own thread
//! serving a heap BAR (the `sim` device).
#![cfg(all(feature = "model", feature = "std"))]

#[macro_use]
mod driver_suite;

use std::sync::Arc;

use driver_suite::Fixture;
use tensorplug_device_fpga::driver::{Driver, StdClock};
use tensorplug_device_fpga::model::Faults;
use tensorplug_device_fpga::model::host::{InProcessDevice, ServeOptions};
use tensorplug_device_fpga::transport::mmio::{HeapBar, MmioTransport};

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
