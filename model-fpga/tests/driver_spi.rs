//! The driver suite over SPI: `SpiTransport` → `SpiSlave` → the model,
//! all in this thread (the slave runs the model after every access).
#![cfg(feature = "std")]

#[macro_use]
mod driver_suite;

use driver_suite::Fixture;
use tensorplug_core::accelerator::prelude::*;
use tensorplug_device_fpga::driver::{Driver, StdClock};
use tensorplug_device_fpga::transport::spi::slave::SpiSlave;
use tensorplug_device_fpga::transport::spi::{SpiConfig, SpiTransport};
use tensorplug_model_fpga::model::{Faults, HostModel, ModelConfig};

type Device = HostModel;
type Spi = SpiTransport<SpiSlave<Device>>;

/// 1 MiB of device memory behind SPI.
const MEMORY: usize = 1 << 20;

struct SpiFixture {
    dev: Driver<Spi, StdClock>,
}

impl SpiFixture {
    fn new() -> Self {
        let model = HostModel::on_host(MEMORY, ModelConfig::default()).expect("model");
        let transport = SpiTransport::new(SpiSlave::new(model), SpiConfig::default());
        let dev = Driver::new(transport, StdClock::default(), driver_suite::config())
            .expect("bring-up over SPI");
        Self { dev }
    }

    fn model(&mut self) -> &mut Device {
        self.dev.transport_mut().device_mut().target_mut()
    }
}

impl Fixture for SpiFixture {
    type T = Spi;
    fn dev(&mut self) -> &mut Driver<Spi, StdClock> {
        &mut self.dev
    }
    fn set_faults(&mut self, faults: Faults) {
        *self.model().faults_mut() = faults;
    }
    fn corrupt_next_request(&mut self) -> bool {
        self.dev.transport_mut().device_mut().corrupt_next_request();
        true
    }
}

driver_suite!(SpiFixture::new());

#[test]
fn corrupted_frame_is_a_transport_error() {
    driver_suite::faults::corrupted_frame_is_a_transport_error(&mut SpiFixture::new());
}

#[test]
fn spi_has_no_dma_so_rings_and_copies_use_device_memory() {
    let mut f = SpiFixture::new();
    let facts = *f.dev.facts();
    assert!(
        !facts
            .features
            .contains(tensorplug_abi::device::Features::DMA)
    );
    // The command queue really is in the model's memory: the first
    // descriptor of the next command lands at its base.
    let base = f.dev.rings().commands.base as usize;

    let buf = f.dev.allocate(4, 64).unwrap();
    let fence = f.dev.fill(driver_suite::Q, buf, 4, 0).unwrap();
    f.dev.wait(fence, driver_suite::TIMEOUT).unwrap();
    let opcode = u16::from_le_bytes([f.model().memory()[base], f.model().memory()[base + 1]]);
    assert_eq!(opcode, tensorplug_abi::device::Opcode::FILL.0);
}

#[test]
fn corrupted_response_is_a_crc_error_and_retrying_works() {
    use tensorplug_core::accelerator::ErrorKind;
    use tensorplug_device_fpga::driver::Error;
    use tensorplug_device_fpga::transport::{CrcSide, Error as BusError};

    let mut f = SpiFixture::new();
    f.dev.transport_mut().device_mut().corrupt_next_response();
    let e = f.dev.timestamp().unwrap_err();
    assert_eq!(e, Error::Transport(BusError::Crc(CrcSide::Response)));
    assert_eq!(e.kind(), ErrorKind::Transport);
    f.dev.timestamp().unwrap();
}

#[test]
fn a_bus_that_stays_busy_times_out_then_recovers() {
    use tensorplug_core::accelerator::ErrorKind;
    use tensorplug_device_fpga::driver::Error;
    use tensorplug_device_fpga::transport::Error as BusError;

    let mut f = SpiFixture::new();
    let data = driver_suite::values(16, 60);
    let x = driver_suite::upload(&mut f.dev, &data);
    f.dev.transport_mut().device_mut().stay_busy_for(u32::MAX);
    let e = f.dev.timestamp().unwrap_err();
    assert!(
        matches!(e, Error::Transport(BusError::Timeout { .. })),
        "{e}"
    );
    assert_eq!(e.kind(), ErrorKind::Timeout);
    f.dev.transport_mut().device_mut().stay_busy_for(0);
    f.dev.reset().unwrap();
    assert_eq!(driver_suite::download(&mut f.dev, x, data.len()), data);
}
