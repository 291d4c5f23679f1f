//! The driver suite over the link protocol on a real TCP connection:
//! `LinkTransport` → loopback socket → `serve_link` → the model on its own
//! thread (what `tensorplug-model-server --link` and the MCU firmware do).
#![cfg(feature = "std")]

#[macro_use]
mod driver_suite;

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use driver_suite::Fixture;
use tensorplug_core::link::{Encoder, LinkErrorKind, Message, Ping};
use tensorplug_device_fpga::driver::{Driver, StdClock};
use tensorplug_device_fpga::transport::link::LinkTransport;
use tensorplug_device_fpga::transport::{Error, ErrorKind, Transport};
use tensorplug_model_fpga::model::host::{ServeControl, serve_link};
use tensorplug_model_fpga::model::{Faults, HostModel, ModelConfig};

type Link = LinkTransport<TcpStream>;

/// 1 MiB of device memory behind the link.
const MEMORY: usize = 1 << 20;
/// The client's read timeout.
const TIMEOUT_MS: u32 = 10_000;

/// The model serving one connection on its own thread.
struct Server {
    control: Arc<ServeControl>,
    thread: Option<JoinHandle<std::io::Result<()>>>,
}

impl Server {
    /// Listens on a loopback port; returns it with the connected stream.
    fn start() -> (Self, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let control = Arc::new(ServeControl::default());
        let serving = Arc::clone(&control);
        let thread = std::thread::spawn(move || {
            let (stream, _) = listener.accept()?;
            stream.set_read_timeout(Some(Duration::from_millis(50)))?;
            stream.set_nodelay(true)?;
            let mut model = HostModel::on_host(MEMORY, ModelConfig::default())
                .map_err(std::io::Error::other)?;
            serve_link(stream, &mut model, &serving)
        });
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_millis(u64::from(TIMEOUT_MS))))
            .unwrap();
        stream.set_nodelay(true).unwrap();
        let server = Self {
            control,
            thread: Some(thread),
        };
        (server, stream)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.control.stop();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct LinkFixture {
    // Dropped first: the driver (closing the socket), then the server.
    dev: Driver<Link, StdClock>,
    server: Server,
}

impl LinkFixture {
    fn new() -> Self {
        let (server, stream) = Server::start();
        let transport = LinkTransport::connect(stream, TIMEOUT_MS).expect("link handshake");
        let dev = Driver::new(transport, StdClock::default(), driver_suite::config())
            .expect("bring-up over the link");
        Self { dev, server }
    }
}

impl Fixture for LinkFixture {
    type T = Link;
    fn dev(&mut self) -> &mut Driver<Link, StdClock> {
        &mut self.dev
    }
    fn set_faults(&mut self, faults: Faults) {
        // Taken by the server before it handles the next request, so they
        // apply to everything the driver does from here on.
        self.server.control.set_faults(faults);
    }
}

driver_suite!(LinkFixture::new());

#[test]
fn requests_before_the_handshake_are_refused_by_the_device() {
    let (_server, mut stream) = Server::start();
    let mut encoder = Encoder::new();
    let mut frame = vec![0u8; tensorplug_core::link::MAX_ENCODED_FRAME_LEN];
    let (len, _) = encoder
        .request(&Message::Ping(Ping { nonce: 7 }), &mut frame)
        .unwrap();
    stream.write_all(&frame[..len]).unwrap();
    let mut decoder = tensorplug_core::link::Decoder::new();
    let mut buf = [0u8; 256];
    let n = std::io::Read::read(&mut stream, &mut buf).unwrap();
    let tensorplug_core::link::FeedResult::Frame { frame, .. } = decoder.feed(&buf[..n]) else {
        panic!("no frame in the answer");
    };
    let Message::Error(error) = frame.message else {
        panic!("expected an error, got {:?}", frame.message);
    };
    assert_eq!(
        error.code(),
        Some(tensorplug_core::link::RemoteErrorCode::HandshakeRequired)
    );
}

#[test]
fn device_errors_and_a_dead_peer_are_transport_errors_not_hangs() {
    let mut f = LinkFixture::new();
    let transport = f.dev.transport_mut();
    // Past the end of device memory: the device's OutOfRange answer.
    let mut buf = [0u8; 16];
    let err = transport.read_mem(MEMORY as u64, &mut buf).unwrap_err();
    assert!(matches!(err, Error::OutOfRange { .. }), "{err:?}");
    // The server goes away: the next request fails at once.
    let LinkFixture { mut dev, server } = f;
    drop(server);
    let err = dev.transport_mut().read_reg(0).unwrap_err();
    assert!(
        matches!(err, Error::Disconnected | Error::NoResponse { .. }),
        "{err:?}"
    );
}

/// The host's end of the wire: it flips one bit of the next frame written,
/// as a noisy UART would, cuts the next bytes read short (a delimiter
/// where a byte was), or goes silent (reads time out, writes are counted
/// and dropped), as a frozen device looks.
struct Wire {
    stream: TcpStream,
    corrupt_next: bool,
    cut_next_read: bool,
    muted: bool,
    writes_muted: usize,
}

impl Wire {
    fn new(stream: TcpStream) -> Self {
        Self {
            stream,
            corrupt_next: false,
            cut_next_read: false,
            muted: false,
            writes_muted: 0,
        }
    }
}

impl std::io::Read for Wire {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.muted {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        let n = self.stream.read(buf)?;
        if n > 4 && std::mem::take(&mut self.cut_next_read) {
            buf[3] = 0;
        }
        Ok(n)
    }
}

impl Write for Wire {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.muted {
            self.writes_muted += 1;
            return Ok(buf.len());
        }
        if std::mem::take(&mut self.corrupt_next) && buf.len() > 4 {
            let mut bad = buf.to_vec();
            bad[3] ^= 0x10;
            self.stream.write_all(&bad)?;
            return Ok(buf.len());
        }
        self.stream.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.stream.flush()
    }
}

#[test]
fn a_silent_device_fails_the_calls_after_the_first_at_once_then_is_tried_again() {
    const SHORT_MS: u32 = 400;
    let (_server, stream) = Server::start();
    let mut link = LinkTransport::connect(Wire::new(stream), SHORT_MS).expect("handshake");
    let id = link.read_reg(0).expect("ID register");
    link.stream_mut().muted = true;
    let silent = Error::NoResponse { after_ms: SHORT_MS };
    assert_eq!(link.read_reg(0), Err(silent));
    assert_eq!(link.stream_mut().writes_muted, 1);
    // Within the timeout of the silence: failed without a request.
    assert_eq!(link.read_mem(0, &mut [0u8; 8]), Err(silent));
    assert_eq!(link.write_reg(0, 0), Err(silent));
    assert_eq!(link.stream_mut().writes_muted, 1);
    // Later, the next call tries the device again.
    std::thread::sleep(Duration::from_millis(u64::from(SHORT_MS) + 100));
    link.stream_mut().muted = false;
    assert_eq!(link.read_reg(0), Ok(id));
}

#[test]
fn a_request_corrupted_on_the_wire_fails_at_once_and_the_link_goes_on() {
    let (_server, stream) = Server::start();
    let mut link = LinkTransport::connect(Wire::new(stream), TIMEOUT_MS).expect("handshake");
    let id = link.read_reg(0).expect("ID register");
    // The device drops the corrupted request and says so (BadFrame): an
    // error now, not a wait for the 10 s timeout.
    link_stream(&mut link).corrupt_next = true;
    let start = std::time::Instant::now();
    let err = link.read_reg(0).unwrap_err();
    assert!(
        matches!(err, Error::Remote { code: 7, .. }),
        "expected BadFrame, got {err:?}"
    );
    assert!(
        start.elapsed() < Duration::from_millis(u64::from(TIMEOUT_MS) / 2),
        "took {:?}",
        start.elapsed()
    );
    assert_eq!(link.read_reg(0).expect("the next request works"), id);
}

#[test]
fn an_answer_cut_short_on_the_wire_is_a_bad_frame_not_a_rejection() {
    let (_server, stream) = Server::start();
    let mut link = LinkTransport::connect(Wire::new(stream), TIMEOUT_MS).expect("handshake");
    let id = link.read_reg(0).expect("ID register");
    link_stream(&mut link).cut_next_read = true;
    let err = link.read_reg(0).unwrap_err();
    assert_eq!(err, Error::BadFrame(LinkErrorKind::Truncated));
    assert_eq!(err.kind(), ErrorKind::Crc);
    assert!(err.to_string().contains("damaged on the wire"), "{err}");
    // The rest of the damaged answer is not blamed on the next request.
    assert_eq!(
        link.read_reg(0),
        Ok(id),
        "the call after the damaged answer"
    );
}

fn link_stream(link: &mut LinkTransport<Wire>) -> &mut Wire {
    link.stream_mut()
}
