//! The link's op-level mode beyond the conformance suite: event drops
//! reach the host, and a firmware without the mode, or of another major
//! version, is refused naming both versions.
#![cfg(all(feature = "model", feature = "std"))]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use tensorplug_core::accelerator::{Accelerator, Error as _, ErrorKind};
use tensorplug_core::event::{Event, EventKind};
use tensorplug_core::link::server::{RingEvents, serve_stream};
use tensorplug_core::link::{
    Decoder, Encoder, FeedResult, Hello, MAX_ENCODED_FRAME_LEN, Message, ProtocolVersion,
    RemoteAccelerator,
};
use tensorplug_core::ring::Ring;
use tensorplug_device_fpga::driver::{Driver, DriverConfig, StdClock};
use tensorplug_device_fpga::model::{AlignedMemory, HostClock, Model, ModelConfig, NoHostBus};
use tensorplug_device_fpga::transport::spi::slave::SpiSlave;
use tensorplug_device_fpga::transport::spi::{SpiConfig, SpiTransport};

fn listen() -> (TcpListener, std::net::SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    (listener, addr)
}

#[test]
fn events_a_full_ring_dropped_reach_the_host_as_a_count() {
    let (listener, addr) = listen();
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let config = ModelConfig::default();
        let model = Model::new(
            AlignedMemory::zeroed(1 << 20),
            NoHostBus,
            HostClock::new(config.timing.freq_hz),
            config,
            false,
        )
        .unwrap();
        let transport = SpiTransport::new(SpiSlave::new(model), SpiConfig::default());
        let mut driver =
            Driver::<_, _>::new(transport, StdClock::default(), DriverConfig::default()).unwrap();
        // An interrupt handler pushed 20 events into a ring of 8.
        let mut ring = Ring::<Event, 8>::new();
        let (mut producer, consumer) = ring.split();
        for i in 0..20 {
            let _ = producer.push(Event::new(EventKind::OpBegin, i, 0, i as u16, 0));
        }
        let mut events = RingEvents::new(consumer);
        serve_stream(&mut stream, &mut driver, &mut events).unwrap();
    });
    let stream = TcpStream::connect(addr).unwrap();
    let mut dev = RemoteAccelerator::connect(stream, Duration::from_secs(5)).unwrap();
    let mut out = [Event::new(EventKind::OpEnd, 0, 0, 0, 0); 32];
    let drained = dev.drain_events(&mut out).unwrap();
    assert_eq!((drained.events, drained.dropped), (8, 12));
    let ids: Vec<u16> = out[..8].iter().map(|e| e.op_id).collect();
    assert_eq!(
        ids,
        (0..8).collect::<Vec<u16>>(),
        "the oldest events are kept"
    );
    let again = dev.drain_events(&mut out).unwrap();
    assert_eq!(
        (again.events, again.dropped),
        (0, 0),
        "a drop is reported once"
    );
    drop(dev);
    server.join().unwrap();
}

/// A peer that answers the first `Hello` with `version` and then hangs up.
fn peer_speaking(version: ProtocolVersion) -> std::net::SocketAddr {
    let (listener, addr) = listen();
    std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut decoder = Decoder::new();
        let mut chunk = [0u8; 256];
        loop {
            let n = stream.read(&mut chunk).unwrap();
            if let FeedResult::Frame { frame, .. } = decoder.feed(&chunk[..n]) {
                let ack = Message::HelloAck(Hello {
                    version,
                    max_frame_len: 2075,
                });
                let mut out = [0u8; MAX_ENCODED_FRAME_LEN];
                let len = Encoder::new()
                    .response(frame.header.request_id, &ack, &mut out)
                    .unwrap();
                stream.write_all(&out[..len]).unwrap();
                return;
            }
        }
    });
    addr
}

#[test]
fn a_firmware_without_the_op_level_mode_is_refused_naming_both_versions() {
    for (peer, needles) in [
        (
            ProtocolVersion { major: 1, minor: 0 },
            ["speaks link protocol 1.0", "needs 1.1"],
        ),
        (
            ProtocolVersion { major: 2, minor: 0 },
            ["we speak 1.1", "the peer speaks 2.0"],
        ),
    ] {
        let stream = TcpStream::connect(peer_speaking(peer)).unwrap();
        let error = RemoteAccelerator::connect(stream, Duration::from_secs(5)).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Incompatible);
        for needle in needles {
            assert!(error.to_string().contains(needle), "{error}");
        }
    }
}
