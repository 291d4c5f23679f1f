//! What the link tests share: the model's driver over SPI behind the
//! op-level server on a TCP socket, and a stream that counts its traffic.
#![allow(dead_code, reason = "each test file uses its part")]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use tensorplug_core::accelerator::Accelerator;
use tensorplug_core::link::server::serve_stream;
use tensorplug_device_fpga::driver::{Driver, DriverConfig, StdClock};
use tensorplug_device_fpga::transport::spi::slave::SpiSlave;
use tensorplug_device_fpga::transport::spi::{SpiConfig, SpiTransport};
use tensorplug_model_fpga::model::{HostModel, ModelConfig};

pub fn listen() -> (TcpListener, std::net::SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    (listener, addr)
}

/// The driver over SPI to the model, as the firmware runs it.
pub fn spi_model_driver() -> impl Accelerator {
    let model = HostModel::on_host(1 << 20, ModelConfig::default()).unwrap();
    let transport = SpiTransport::new(SpiSlave::new(model), SpiConfig::default());
    Driver::<_, _>::new(transport, StdClock::default(), DriverConfig::default()).unwrap()
}

/// A TCP stream that counts its reads (a read is the host waiting for the
/// MCU) and the frames it sends (their `0x00` delimiters).
pub struct Counting {
    pub inner: TcpStream,
    pub reads: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    pub frames: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Counting {
    pub fn new(inner: TcpStream) -> Self {
        Self {
            inner,
            reads: Default::default(),
            frames: Default::default(),
        }
    }
}

impl Read for Counting {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.read(buf)
    }
}

impl Write for Counting {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        let frames = buf[..n].iter().filter(|&&b| b == 0).count();
        self.frames
            .fetch_add(frames, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl tensorplug_core::link::LinkStream for Counting {
    fn set_read_timeout(&mut self, timeout: Duration) -> std::io::Result<()> {
        self.inner.set_read_timeout(Some(timeout))
    }
}

/// The op-level server over TCP, on the model behind SPI.
pub fn serve_model() -> std::net::SocketAddr {
    let (listener, addr) = listen();
    std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut driver = spi_model_driver();
        let _ = serve_stream(
            &mut stream,
            &mut driver,
            &mut tensorplug_core::link::server::DriverEvents,
        );
    });
    addr
}
