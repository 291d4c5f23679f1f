//! Link protocol: encode + decode of a 4 KiB bulk write, and the payload
//! efficiency figure for `cargo xtask bench`.
//!
//! Writes `<target>/tensorplug-bench/link_payload_efficiency.json`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::path::PathBuf;
use tensorplug_core::link::{
    Decoder, Encoder, FeedResult, MAX_ENCODED_FRAME_LEN, Message, WriteMemory,
};

const BULK_LEN: usize = 4096;
const ADDRESS: u64 = 0x1000_0000;

/// Encodes a bulk write as frames into `wire`; returns the wire length.
fn encode_bulk_write(encoder: &mut Encoder, data: &[u8], wire: &mut [u8]) -> usize {
    let mut used = 0;
    for chunk in WriteMemory::chunks(ADDRESS, data) {
        let (len, _) = encoder
            .request(&Message::WriteMemory(chunk), &mut wire[used..])
            .expect("wire buffer holds every chunk");
        used += len;
    }
    used
}

/// Decodes every frame in `wire`; returns the payload bytes received.
fn decode_bulk_write(decoder: &mut Decoder, wire: &[u8]) -> usize {
    let mut received = 0;
    let mut rest = wire;
    loop {
        match decoder.feed(rest) {
            FeedResult::Consumed => return received,
            FeedResult::Frame { frame, remaining } => {
                if let Message::WriteMemory(write) = frame.message {
                    received += write.data.len();
                }
                rest = remaining;
            }
            FeedResult::Error { error, .. } => panic!("bench frames are valid: {error}"),
        }
    }
}

fn wire_buffer() -> Vec<u8> {
    vec![0; BULK_LEN.div_ceil(tensorplug_core::link::MAX_BULK_CHUNK) * MAX_ENCODED_FRAME_LEN]
}

fn bench_bulk_write(c: &mut Criterion) {
    let data = vec![0xA5u8; BULK_LEN];
    let mut wire = wire_buffer();
    let mut group = c.benchmark_group("link");
    group.throughput(Throughput::Bytes(BULK_LEN as u64));
    group.bench_function("encode 4 KiB bulk write", |b| {
        let mut encoder = Encoder::new();
        b.iter(|| encode_bulk_write(&mut encoder, black_box(&data), &mut wire));
    });
    let mut encoder = Encoder::new();
    let wire_len = encode_bulk_write(&mut encoder, &data, &mut wire);
    let mut decoder = Decoder::new();
    group.bench_function("decode 4 KiB bulk write", |b| {
        b.iter(|| decode_bulk_write(&mut decoder, black_box(&wire[..wire_len])));
    });
    group.bench_function("encode + decode 4 KiB bulk write", |b| {
        let mut encoder = Encoder::new();
        b.iter(|| {
            let len = encode_bulk_write(&mut encoder, black_box(&data), &mut wire);
            decode_bulk_write(&mut decoder, &wire[..len])
        });
    });
    group.finish();
    write_efficiency_figure();
}

/// Bytes of payload / bytes on the wire (all frames: COBS, header, CRC,
/// delimiter) for a 4 KiB write of data with no zero bytes (COBS's worst case).
fn write_efficiency_figure() {
    let data = vec![0xA5u8; BULK_LEN];
    let mut wire = wire_buffer();
    let mut encoder = Encoder::new();
    let wire_len = encode_bulk_write(&mut encoder, &data, &mut wire);
    let mut decoder = Decoder::new();
    assert_eq!(decode_bulk_write(&mut decoder, &wire[..wire_len]), BULK_LEN);
    let efficiency = BULK_LEN as f64 / wire_len as f64;
    let dir = target_dir().join("tensorplug-bench");
    std::fs::create_dir_all(&dir).expect("create the bench figure directory");
    let json = format!(
        "{{\"figure\": \"link: payload efficiency of a 4 KiB bulk write\", \"value\": {efficiency}, \"baseline\": 0.97, \"unit\": \"fraction\", \"goal\": \"value >= 0.97\"}}\n"
    );
    let path = dir.join("link_payload_efficiency.json");
    std::fs::write(&path, json).expect("write the bench figure");
    eprintln!(
        "link payload efficiency: {BULK_LEN} / {wire_len} = {efficiency:.4} -> {}",
        path.display()
    );
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"))
}

criterion_group!(benches, bench_bulk_write);
criterion_main!(benches);
