//! The 64-bit timestamp read stays consistent when the low word carries
//! between the driver's register reads (a memory-backed BAR cannot latch
//! the high word the way a device does).
#![cfg(feature = "std")]

use std::collections::VecDeque;
use tensorplug_abi::device::Register;
use tensorplug_core::accelerator::prelude::*;
use tensorplug_device_fpga::driver::{Driver, DriverConfig, StdClock};
use tensorplug_device_fpga::transport::spi::slave::SpiSlave;
use tensorplug_device_fpga::transport::spi::{SpiConfig, SpiTransport};
use tensorplug_device_fpga::transport::{self, DmaRegion, Transport};
use tensorplug_model_fpga::model::{HostModel, ModelConfig};

type Spi = SpiTransport<SpiSlave<HostModel>>;

/// The model over SPI; timestamp reads answer from a script while it lasts.
struct Scripted {
    inner: Spi,
    script: VecDeque<(Register, u32)>,
    timestamp_reads: usize,
}

impl Transport for Scripted {
    fn read_reg(&mut self, offset: u32) -> Result<u32, transport::Error> {
        let is_timestamp = offset == Register::TIMESTAMP_LO.0 || offset == Register::TIMESTAMP_HI.0;
        if is_timestamp {
            self.timestamp_reads += 1;
        }
        match self.script.front() {
            Some(&(reg, value)) if is_timestamp => {
                assert_eq!(
                    reg.0, offset,
                    "the driver read the timestamp words in another order"
                );
                self.script.pop_front();
                Ok(value)
            }
            _ => self.inner.read_reg(offset),
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

fn driver() -> Driver<Scripted, StdClock> {
    let model = HostModel::on_host(1 << 20, ModelConfig::default()).expect("model");
    let transport = Scripted {
        inner: SpiTransport::new(SpiSlave::new(model), SpiConfig::default()),
        script: VecDeque::new(),
        timestamp_reads: 0,
    };
    Driver::new(transport, StdClock::default(), DriverConfig::default()).expect("bring-up")
}

fn read_with(dev: &mut Driver<Scripted, StdClock>, script: &[(Register, u32)]) -> u64 {
    dev.transport_mut().script = script.iter().copied().collect();
    let value = dev.timestamp().expect("timestamp");
    assert!(dev.transport_mut().script.is_empty(), "script not consumed");
    value
}

#[test]
fn a_carry_between_the_reads_pairs_the_new_high_word_with_a_fresh_low_word() {
    let mut dev = driver();
    let (hi, lo) = (Register::TIMESTAMP_HI, Register::TIMESTAMP_LO);
    // HI before = 6, LO old (just below the carry), HI after = 7, LO again.
    let value = read_with(&mut dev, &[(hi, 6), (lo, 0xFFFF_FFF0), (hi, 7), (lo, 0x10)]);
    assert_eq!(value, 7 << 32 | 0x10);
}

#[test]
fn without_a_carry_three_reads_suffice() {
    let mut dev = driver();
    let (hi, lo) = (Register::TIMESTAMP_HI, Register::TIMESTAMP_LO);
    let before = dev.transport_mut().timestamp_reads;
    let value = read_with(&mut dev, &[(hi, 7), (lo, 0x1234), (hi, 7)]);
    assert_eq!(value, 7 << 32 | 0x1234);
    assert_eq!(dev.transport_mut().timestamp_reads - before, 3);
}

#[test]
fn the_model_clock_read_through_the_driver_is_monotonic() {
    let mut dev = driver();
    let mut last = dev.timestamp().expect("timestamp");
    for _ in 0..100 {
        let now = dev.timestamp().expect("timestamp");
        assert!(now >= last, "{now} < {last}");
        last = now;
    }
}
