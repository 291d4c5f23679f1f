//! The NPU behind the link's op-level mode, as if its driver ran on an MCU:
//! `serve_stream` on one end of a loopback TCP connection, the host's
//! `RemoteAccelerator` on the other, told the NPU's own ops. The whole
//! conformance suite passes through the link, the NPU's own `LeakyRelu`
//! included (it crosses by its identity and attribute block).

use std::net::{TcpListener, TcpStream};
use std::thread::JoinHandle;
use tensorplug_core::accelerator::prelude::*;

use tensorplug_core::conformance::{Config, Outcome, run_all};
use tensorplug_core::link::server::{DriverEvents, serve_stream};
use tensorplug_device_npu::{LEAKY_RELU, Npu, StdClock, VENDOR_OPS};
use tensorplug_link_host::RemoteAccelerator;

/// A server thread running the NPU, and the host's end of its link.
fn serve() -> (TcpStream, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("address");
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("accept");
        stream.set_nodelay(true).expect("nodelay");
        let mut npu = Npu::new(vec![0u8; 16 << 20], StdClock::default());
        // Ends when the host closes the link.
        let _ = serve_stream(&mut stream, &mut npu, &mut DriverEvents);
    });
    let stream = TcpStream::connect(addr).expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    (stream, server)
}

#[test]
fn the_whole_suite_passes_over_the_link_with_the_npus_own_op() {
    let (stream, server) = serve();
    let mut dev = RemoteAccelerator::connect_with_vendor_ops(
        stream,
        std::time::Duration::from_secs(5),
        &VENDOR_OPS,
    )
    .expect("connect");
    let caps = dev.info().capabilities;
    assert_eq!(
        caps.vendor_ops.iter().map(|d| d.id).collect::<Vec<_>>(),
        [LEAKY_RELU.id]
    );
    let report = run_all(&mut dev, &Config::default());
    println!("{report}");
    report.assert_passed();
    match &report.case("vendor_ops").expect("vendor_ops").outcome {
        Outcome::Passed(m) => assert!(m.contains("launches of 1 vendor ops"), "{m}"),
        other => panic!("vendor_ops over the link: {other}"),
    }
    drop(dev);
    server.join().expect("server thread");
}

#[test]
fn a_host_that_does_not_know_the_npus_op_does_not_declare_it() {
    let (stream, server) = serve();
    let dev =
        RemoteAccelerator::connect(stream, std::time::Duration::from_secs(5)).expect("connect");
    assert!(dev.info().capabilities.vendor_ops.0.is_empty());
    drop(dev);
    server.join().expect("server thread");
}
