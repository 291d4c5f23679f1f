//! Bring-up refusals and the MCU-style clock, over the SPI model with a
//! transport wrapper that can misreport identity registers.
#![cfg(feature = "std")]

use embedded_hal::delay::DelayNs;
use tensorplug_abi::device::{AbiVersion, ErrorKind as AbiErrorKind, IdentityError, Register};
use tensorplug_core::accelerator::prelude::*;
use tensorplug_core::accelerator::{ErrorKind, QueueId};
use tensorplug_device_fpga::driver::{DelayClock, Driver, DriverConfig, Error, StdClock, WaitFor};
use tensorplug_device_fpga::transport::spi::slave::SpiSlave;
use tensorplug_device_fpga::transport::spi::{SpiConfig, SpiTransport};
use tensorplug_device_fpga::transport::{self, DmaRegion, Transport};
use tensorplug_model_fpga::model::{HostModel, ModelConfig};

type Spi = SpiTransport<SpiSlave<HostModel>>;

/// The model over SPI, with registers that can be overridden.
#[derive(Debug)]
struct Lying {
    inner: Spi,
    overrides: Vec<(Register, u32)>,
}

impl Transport for Lying {
    fn read_reg(&mut self, offset: u32) -> Result<u32, transport::Error> {
        match self.overrides.iter().find(|(r, _)| r.0 == offset) {
            Some(&(_, value)) => Ok(value),
            None => self.inner.read_reg(offset),
        }
    }
    fn write_reg(&mut self, offset: u32, value: u32) -> Result<(), transport::Error> {
        self.inner.write_reg(offset, value)
    }
    fn read_mem(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), transport::Error> {
        self.inner.read_mem(addr, buf)
    }
    fn write_mem(&mut self, addr: u64, data: &[u8]) -> Result<(), transport::Error> {
        self.inner.write_mem(addr, data)
    }
    fn dma(&self) -> Option<DmaRegion<'_>> {
        None
    }
}

fn model_spi() -> Spi {
    let model = HostModel::on_host(1 << 20, ModelConfig::default()).unwrap();
    SpiTransport::new(SpiSlave::new(model), SpiConfig::default())
}

fn bring_up(overrides: &[(Register, u32)]) -> Result<Driver<Lying, StdClock>, Error> {
    let transport = Lying {
        inner: model_spi(),
        overrides: overrides.to_vec(),
    };
    let config = DriverConfig {
        ready_timeout_us: 20_000,
        ..DriverConfig::default()
    };
    Driver::new(transport, StdClock::default(), config)
}

#[test]
fn incompatible_abi_is_refused_with_both_versions() {
    let newer = AbiVersion::new(2, 0, 1).to_word();
    let e = bring_up(&[(Register::ABI_VERSION, newer)]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Incompatible);
    let Error::Identity(identity) = e else {
        panic!("{e}")
    };
    assert!(matches!(identity, IdentityError::IncompatibleAbi { .. }));
    assert_eq!(identity.kind(), AbiErrorKind::Incompatible);
    let message = e.to_string();
    assert!(
        message.contains("2.0.1") && message.contains("1.x"),
        "{message}"
    );
}

#[test]
fn a_newer_minor_is_accepted() {
    let newer_minor = AbiVersion::new(1, 11, 3).to_word();
    let dev = bring_up(&[(Register::ABI_VERSION, newer_minor)]).unwrap();
    assert_eq!(dev.facts().abi, AbiVersion::new(1, 11, 3));
}

#[test]
fn wrong_magic_is_not_a_tensorplug_device() {
    let e = bring_up(&[(Register::ID, 0xFFFF_FFFF)]).unwrap_err();
    assert_eq!(
        e,
        Error::Identity(IdentityError::WrongMagic { found: 0xFFFF_FFFF })
    );
    assert!(e.to_string().contains("0xffffffff"), "{e}");
}

#[test]
fn a_dead_bus_fails_the_scratch_check() {
    let e = bring_up(&[(Register::SCRATCH, 0)]).unwrap_err();
    assert_eq!(e, Error::BusCheck);
    assert_eq!(e.kind(), ErrorKind::Transport);
}

#[test]
fn a_device_that_never_gets_ready_times_out() {
    // SCRATCH reads back, but STATUS never shows READY.
    let e = bring_up(&[(Register::STATUS, 0)]).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Timeout {
                waiting_for: WaitFor::Ready,
                ..
            }
        ),
        "{e}"
    );
}

/// Counts the nanoseconds it was asked to wait, and does wait them.
struct SleepDelay(u64);
impl DelayNs for SleepDelay {
    fn delay_ns(&mut self, ns: u32) {
        self.0 += u64::from(ns);
        std::thread::sleep(std::time::Duration::from_nanos(ns.into()));
    }
}

#[test]
fn mcu_style_delay_clock_bounds_waits_too() {
    let mut dev: Driver<Spi, DelayClock<SleepDelay>> = Driver::new(
        model_spi(),
        DelayClock::new(SleepDelay(0), 10_000),
        DriverConfig::default(),
    )
    .unwrap();
    let buf = dev.allocate(64, 64).unwrap();
    let fence = dev.fill(QueueId(0), buf, 64, 7).unwrap();
    dev.wait(fence, core::time::Duration::from_millis(100))
        .unwrap();
    // A stuck device: the wait gives up after its budget of delays.
    dev.transport_mut()
        .device_mut()
        .target_mut()
        .faults_mut()
        .stuck_busy = true;
    let fence = dev.fill(QueueId(0), buf, 64, 8).unwrap();
    let e = dev
        .wait(fence, core::time::Duration::from_millis(5))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout);
}
