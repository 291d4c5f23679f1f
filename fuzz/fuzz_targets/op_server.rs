//! Fuzzes the device end of the link as the firmware runs it: requests
//! decoded from the wire, answered by `OpServer` on the reference driver
//! over SPI to the FPGA model (op-level mode), and by `LinkServer` on the
//! model's SPI port (remote-bus mode).
//!
//! Input: chunks of `[id, len u16 LE, payload…]`. A chunk whose payload decodes
//! as request `id` is sent as a proper frame (so the fuzzer reaches the
//! servers, not just the CRC check); any other chunk goes on the wire raw,
//! as noise, with a delimiter after it. A `Hello` opens every session
//! first.
//!
//! Oracles: no panic; everything the device sends decodes as frames; each
//! request sent as a frame gets an answer with its request id before the
//! next one is read; every answer names a request that was sent, or none.

#![no_main]

use libfuzzer_sys::fuzz_target;
use tensorplug_core::accelerator::Memory;
use tensorplug_core::link::server::DriverEvents;
use tensorplug_core::link::{
    Decoder, Encoder, FeedResult, Hello, MAX_ENCODED_FRAME_LEN, Message, NO_REQUEST, OpServer,
    Session,
};
use tensorplug_device_fpga::driver::{Driver, DriverConfig, StdClock};
use tensorplug_device_fpga::transport::link::LinkServer;
use tensorplug_device_fpga::transport::spi::slave::SpiSlave;
use tensorplug_device_fpga::transport::spi::{SpiConfig, SpiTransport};
use tensorplug_model_fpga::model::{HostModel, ModelConfig};

fn model() -> HostModel {
    HostModel::on_host(1 << 16, ModelConfig::default()).expect("the model takes 64 KiB")
}

/// The device's bytes so far, decoded by a host: every answer's request id.
fn answers(device: &mut Decoder, bytes: &[u8], sent: &[u16]) -> Vec<u16> {
    let mut ids = Vec::new();
    let mut rest = bytes;
    loop {
        match device.feed(rest) {
            FeedResult::Consumed => return ids,
            FeedResult::Frame { frame, remaining } => {
                let id = frame.header.request_id;
                assert!(
                    id == NO_REQUEST || sent.contains(&id),
                    "an answer to request {id}, never sent ({:?})",
                    frame.message.id()
                );
                ids.push(id);
                rest = remaining;
            }
            FeedResult::Error { error, .. } => panic!("the device sent a bad frame: {error}"),
        }
    }
}

fuzz_target!(|input: &[u8]| {
    let transport = SpiTransport::new(SpiSlave::new(model()), SpiConfig::default());
    let Ok(mut driver) =
        Driver::<_, _>::new(transport, StdClock::default(), DriverConfig::default())
    else {
        panic!("the driver brings the model up");
    };
    let mut port = model();
    let mut session = Session::new();
    let mut ops = Box::new(OpServer::<16, 8192>::new().with_window(8));
    let mut bus = LinkServer::new();
    let mut from_host = Box::new(Decoder::requests());
    let mut to_host = Box::new(Decoder::new());
    let mut host = Encoder::new();
    let mut wire = vec![0u8; MAX_ENCODED_FRAME_LEN];
    let mut out = vec![0u8; MAX_ENCODED_FRAME_LEN];
    let mut sent = Vec::new();

    let hello = Message::Hello(Hello::ours());
    let mut chunks: Vec<(Option<u16>, Vec<u8>)> = Vec::new();
    let (len, id) = host.request(&hello, &mut wire).expect("a hello encodes");
    chunks.push((Some(id), wire[..len].to_vec()));
    let mut rest = input;
    while let [id, lo, hi, tail @ ..] = rest {
        let len = usize::from(u16::from_le_bytes([*lo, *hi]));
        let (payload, after) = tail.split_at(len.min(tail.len()));
        rest = after;
        match Message::decode_request(*id, payload) {
            Ok(message) => {
                if let Ok((len, request)) = host.request(&message, &mut wire) {
                    chunks.push((Some(request), wire[..len].to_vec()));
                }
            }
            // Noise, then a delimiter: the next frame starts clean.
            Err(_) => chunks.push((None, [payload, &[0]].concat())),
        }
    }

    for (request, bytes) in chunks {
        if let Some(id) = request {
            sent.push(id);
        }
        let mut tx = Vec::new();
        let mut send = |b: &[u8]| tx.extend_from_slice(b);
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            match from_host.feed(rest) {
                FeedResult::Consumed => rest = &[],
                FeedResult::Frame { frame, remaining } => {
                    rest = remaining;
                    // Routed as the firmware routes them (firmware/src/main.rs).
                    let to_bus = frame.message.is_remote_bus()
                        || matches!(frame.message, Message::Hello(_) | Message::Ping(_));
                    if to_bus {
                        let len = bus
                            .answer_in(&mut session, &mut port, &frame, &mut out)
                            .expect("an answer encodes");
                        send(&out[..len]);
                    } else {
                        ops.answer(
                            &mut session,
                            &mut driver,
                            &mut DriverEvents,
                            &frame,
                            &mut send,
                        )
                        .expect("an answer encodes");
                    }
                }
                FeedResult::Error { error, remaining } => {
                    rest = remaining;
                    let len = session.answer_bad_frame(&error, &mut out).expect("encodes");
                    send(&out[..len]);
                }
            }
        }
        ops.poll(&mut session, &mut driver, &mut DriverEvents, &mut send)
            .expect("a completion encodes");
        let ids = answers(&mut to_host, &tx, &sent);
        if let Some(id) = request {
            assert!(ids.contains(&id), "request {id} was not answered: {ids:?}");
        }
        assert!(driver.memory_usage().used <= driver.memory_usage().total);
    }
});
