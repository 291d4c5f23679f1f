//! Fuzzes device programs as a device receives them: the bytes (their
//! CRC resealed, so the fuzzer reaches the validator rather than the
//! checksum) are parsed and validated; a program that passes runs on the
//! reference driver over SPI to the FPGA model, its bindings and arena
//! allocated as its buffers say.
//!
//! Oracles: no panic, no hang (every run's wait is bounded); a program the
//! validator passes is one the device runs or refuses with an error.

#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use tensorplug_core::accelerator::{DeviceAddr, Memory, QueueId, Transfer, VendorOps};
use tensorplug_core::program::{
    Bindings, BufferSpec, CRC_LEN, Limits, Program, replay, validate,
};
use tensorplug_device_fpga::driver::{Driver, DriverConfig, StdClock};
use tensorplug_device_fpga::transport::spi::slave::SpiSlave;
use tensorplug_device_fpga::transport::spi::{SpiConfig, SpiTransport};
use tensorplug_model_fpga::model::{HostModel, ModelConfig};

/// Device memory of the model; a program that needs more is not run.
const MEMORY: u64 = 1 << 20;

fuzz_target!(|input: &[u8]| {
    let mut bytes = input.to_vec();
    if bytes.len() >= CRC_LEN {
        let n = bytes.len() - CRC_LEN;
        let crc = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC).checksum(&bytes[..n]);
        bytes[n..].copy_from_slice(&crc.to_le_bytes());
    }
    let Ok(program) = Program::parse(&bytes) else {
        return;
    };
    let Ok(valid) = validate(program, &VendorOps::NONE, &Limits::HOST) else {
        return;
    };
    // Every bound buffer's size, by slot.
    let mut sizes = vec![0u64; usize::from(program.header().bindings)];
    for i in 0..program.buffer_count() {
        let spec = BufferSpec::decode(&program.buffer(i).expect("validated"))
            .expect("validated buffers decode");
        if spec.kind.bound() {
            sizes[spec.place as usize] = spec.byte_len().expect("validated") as u64;
        }
    }
    let needed: u64 = sizes.iter().map(|s| s.next_multiple_of(64)).sum::<u64>()
        + u64::from(program.header().arena);
    if needed > MEMORY / 2 {
        return;
    }
    let model = HostModel::on_host(MEMORY as usize, ModelConfig::default()).expect("the model");
    let transport = SpiTransport::new(SpiSlave::new(model), SpiConfig::default());
    let Ok(mut driver) =
        Driver::<_, _>::new(transport, StdClock::default(), DriverConfig::default())
    else {
        panic!("the driver brings the model up");
    };
    let slots: Vec<DeviceAddr> = sizes
        .iter()
        .map(|&s| driver.allocate(s.max(1), 64).expect("room was checked"))
        .collect();
    let arena = driver
        .allocate(u64::from(program.header().arena).max(1), 64)
        .expect("room was checked");
    if let Ok(Some(fence)) = replay(&mut driver, QueueId(0), &valid, &Bindings::new(&slots, arena)) {
        let _ = driver.wait(fence, Duration::from_secs(5));
    }
});
