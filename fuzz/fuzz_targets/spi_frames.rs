//! Fuzzes both ends of the SPI frame protocol (`docs/transports.md`).
//!
//! The first input byte picks the end:
//! - even: the device end, `SpiSlave` in front of the FPGA model, takes
//!   arbitrary chip-select windows (`[op, len, bytes…]` chunks: write,
//!   read, transfer or transfer-in-place; bit 7 of `op` keeps the window
//!   open for the next chunk). Oracle: afterwards the host's
//!   `SpiTransport` writes and reads back device memory through the same
//!   slave: garbage never leaves it wedged.
//! - odd: the host end, `SpiTransport`, over a device whose MISO bytes
//!   are the input (then filler). Oracle: every call returns, within a
//!   bounded number of chip-select windows (the busy-poll limit).

#![no_main]

use core::convert::Infallible;

use embedded_hal::spi::{ErrorType, Operation, SpiDevice};
use libfuzzer_sys::fuzz_target;
use tensorplug_device_fpga::transport::Transport;
use tensorplug_device_fpga::transport::spi::slave::SpiSlave;
use tensorplug_device_fpga::transport::spi::{SpiConfig, SpiTransport};
use tensorplug_model_fpga::model::{HostModel, ModelConfig};

const BUSY_POLLS: u32 = 64;

/// A device that answers with the fuzzer's bytes and counts its windows.
struct Scripted<'a> {
    miso: &'a [u8],
    windows: u64,
}

impl ErrorType for Scripted<'_> {
    type Error = Infallible;
}

impl SpiDevice for Scripted<'_> {
    fn transaction(&mut self, operations: &mut [Operation<'_, u8>]) -> Result<(), Infallible> {
        self.windows += 1;
        let mut next = || match self.miso.split_first() {
            Some((&b, rest)) => {
                self.miso = rest;
                b
            }
            None => 0xFF,
        };
        for op in operations.iter_mut() {
            match op {
                Operation::Read(buf) | Operation::TransferInPlace(buf) => {
                    buf.iter_mut().for_each(|b| *b = next());
                }
                Operation::Transfer(read, _) => read.iter_mut().for_each(|b| *b = next()),
                Operation::Write(_) | Operation::DelayNs(_) => {}
            }
        }
        Ok(())
    }
}

fn device_end(mut input: &[u8]) {
    let model =
        HostModel::on_host(1 << 16, ModelConfig::default()).expect("the model takes 64 KiB");
    let mut slave = SpiSlave::new(model);
    let mut window: Vec<(u8, Vec<u8>)> = Vec::new();
    while let [op, len, rest @ ..] = input {
        let (data, after) = rest.split_at(usize::from(*len).min(rest.len()));
        input = after;
        window.push((*op, data.to_vec()));
        if op & 0x80 != 0 && !input.is_empty() {
            continue;
        }
        let mut reads: Vec<Vec<u8>> = window.iter().map(|(_, d)| vec![0; d.len()]).collect();
        let mut writes: Vec<Vec<u8>> = window.iter().map(|(_, d)| d.clone()).collect();
        let mut ops: Vec<Operation<'_, u8>> = Vec::new();
        for (((op, _), read), write) in window.iter().zip(&mut reads).zip(&mut writes) {
            ops.push(match op % 4 {
                0 => Operation::Write(write),
                1 => Operation::Read(read),
                2 => Operation::Transfer(read, write),
                _ => Operation::TransferInPlace(write),
            });
        }
        slave.transaction(&mut ops).expect("infallible");
        window.clear();
    }
    let mut host = SpiTransport::new(slave, SpiConfig::default());
    let data: Vec<u8> = (1..=64).collect();
    host.write_mem(0x100, &data)
        .expect("after any garbage, a clean write goes through");
    let mut back = [0u8; 64];
    host.read_mem(0x100, &mut back).expect("and reads back");
    assert_eq!(&back[..], &data[..]);
}

fn host_end(miso: &[u8]) {
    let config = SpiConfig {
        max_busy_polls: BUSY_POLLS,
        ..SpiConfig::default()
    };
    let mut host = SpiTransport::new(Scripted { miso, windows: 0 }, config);
    // Generous: a call's request, its polls and a retried fetch.
    let bound = u64::from(BUSY_POLLS) * 4 + 64;
    let mut last = 0;
    let mut check = |host: &mut SpiTransport<Scripted<'_>>, what: &str| {
        let windows = host.device_mut().windows;
        assert!(
            windows - last <= bound,
            "{what}: {} windows",
            windows - last
        );
        last = windows;
    };
    let _ = host.read_reg(0x10);
    check(&mut host, "read_reg");
    let _ = host.write_reg(0x14, 7);
    check(&mut host, "write_reg");
    let mut buf = [0u8; 2100];
    let _ = host.read_mem(0x40, &mut buf);
    check(&mut host, "read_mem");
    let _ = host.write_mem(0x40, &[0x5A; 1500]);
    check(&mut host, "write_mem");
}

fuzz_target!(|input: &[u8]| {
    match input.split_first() {
        Some((&end, rest)) if end % 2 == 0 => device_end(rest),
        Some((_, rest)) => host_end(rest),
        None => {}
    }
});
