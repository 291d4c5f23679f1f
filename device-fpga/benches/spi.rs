//! SPI transport: a 4 KiB memory write over the model's slave, and the
//! payload-efficiency figure for `cargo xtask bench`.
//!
//! Writes `<target>/tensorplug-bench/spi_payload_efficiency.json`.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tensorplug_device_fpga::transport::Transport;
use tensorplug_device_fpga::transport::spi::slave::{SpiSlave, SpiTarget, TargetError};
use tensorplug_device_fpga::transport::spi::{CountingSpi, SpiConfig, SpiTransport};

const WRITE_LEN: usize = 4096;

/// 64 KiB of device memory, no registers.
struct Memory(Vec<u8>);

impl SpiTarget for Memory {
    fn read_reg(&mut self, _offset: u32) -> Result<u32, TargetError> {
        Err(TargetError::OutOfRange)
    }
    fn write_reg(&mut self, _offset: u32, _value: u32) -> Result<(), TargetError> {
        Err(TargetError::OutOfRange)
    }
    fn read_mem(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), TargetError> {
        let at = usize::try_from(addr).map_err(|_| TargetError::OutOfRange)?;
        let src = self
            .0
            .get(at..at + buf.len())
            .ok_or(TargetError::OutOfRange)?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn write_mem(&mut self, addr: u64, data: &[u8]) -> Result<(), TargetError> {
        let at = usize::try_from(addr).map_err(|_| TargetError::OutOfRange)?;
        let dst = self
            .0
            .get_mut(at..at + data.len())
            .ok_or(TargetError::OutOfRange)?;
        dst.copy_from_slice(data);
        Ok(())
    }
}

fn bench_write(c: &mut Criterion) {
    let data: Vec<u8> = (0..WRITE_LEN).map(|i| (i * 13) as u8).collect();
    let slave = SpiSlave::new(Memory(vec![0; 64 * 1024]));
    let mut spi = SpiTransport::new(CountingSpi::new(slave), SpiConfig::default());

    // The figure: bytes clocked for one write, device ready at first poll.
    spi.write_mem(0x1000, &data).expect("write over the model");
    let clocked = spi.device().bytes_clocked();
    assert_eq!(
        &spi.device().inner().target().0[0x1000..0x1000 + WRITE_LEN],
        &data[..]
    );
    write_figure(WRITE_LEN as f64 / clocked as f64, clocked);

    let mut group = c.benchmark_group("spi");
    group.throughput(Throughput::Bytes(WRITE_LEN as u64));
    group.bench_function("write_4k_over_model_slave", |b| {
        b.iter(|| spi.write_mem(0x1000, black_box(&data)).expect("write"));
    });
    group.finish();
}

fn write_figure(efficiency: f64, clocked: u64) {
    let dir = target_dir().join("tensorplug-bench");
    std::fs::create_dir_all(&dir).expect("create the bench figure directory");
    let json = format!(
        "{{\"figure\": \"SPI: payload efficiency of a 4 KiB write\", \"value\": {efficiency}, \"baseline\": 0.97, \"unit\": \"fraction\", \"goal\": \"value >= 0.97\"}}\n"
    );
    let path = dir.join("spi_payload_efficiency.json");
    std::fs::write(&path, json).expect("write the bench figure");
    eprintln!(
        "SPI payload efficiency: {WRITE_LEN} / {clocked} = {efficiency:.4} -> {}",
        path.display()
    );
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"))
}

criterion_group!(benches, bench_write);
criterion_main!(benches);
