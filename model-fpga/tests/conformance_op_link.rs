//! The conformance suite over the link's op-level mode: the host's
//! `RemoteAccelerator` on a loopback TCP connection, and the reference
//! driver behind `OpServer` on the other end, driving the model over SPI,
//! as the MCU firmware does (`docs/link-protocol.md`, "Op-level mode").
#![cfg(feature = "std")]

use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use tensorplug_core::conformance::Fixture;
use tensorplug_core::link::server::{DriverEvents, serve_stream};
use tensorplug_device_fpga::driver::{Driver, DriverConfig, StdClock};
use tensorplug_device_fpga::transport::spi::slave::{SpiSlave, SpiTarget, TargetError};
use tensorplug_device_fpga::transport::spi::{SpiConfig, SpiTransport};
use tensorplug_link_host::RemoteAccelerator;
use tensorplug_model_fpga::model::{HostModel, ModelConfig};

type SpiModel = HostModel;

/// The model, with a switch the test flips to lose the next completion.
struct Switchable {
    model: SpiModel,
    stall: Arc<AtomicBool>,
}

impl Switchable {
    fn arm(&mut self) {
        if self.stall.swap(false, Ordering::SeqCst) {
            self.model.faults_mut().lose_next_completion = true;
        }
    }
}

impl SpiTarget for Switchable {
    fn read_reg(&mut self, offset: u32) -> Result<u32, TargetError> {
        self.arm();
        SpiTarget::read_reg(&mut self.model, offset)
    }
    fn write_reg(&mut self, offset: u32, value: u32) -> Result<(), TargetError> {
        self.arm();
        SpiTarget::write_reg(&mut self.model, offset, value)
    }
    fn read_mem(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), TargetError> {
        SpiTarget::read_mem(&mut self.model, addr, buf)
    }
    fn write_mem(&mut self, addr: u64, data: &[u8]) -> Result<(), TargetError> {
        SpiTarget::write_mem(&mut self.model, addr, data)
    }
}

/// A server thread (driver + model) and the host's end of its link.
struct OverOpLink {
    // Dropped first: closing the link ends the server thread.
    dev: RemoteAccelerator<TcpStream>,
    stall: Arc<AtomicBool>,
    _server: JoinHandle<()>,
}

impl OverOpLink {
    fn new() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("address");
        let stall = Arc::new(AtomicBool::new(false));
        let switch = stall.clone();
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().expect("accept");
            stream.set_nodelay(true).expect("nodelay");
            let model = HostModel::on_host(1 << 20, ModelConfig::default()).expect("model");
            let target = Switchable {
                model,
                stall: switch,
            };
            let transport = SpiTransport::new(SpiSlave::new(target), SpiConfig::default());
            let mut driver =
                Driver::<_, _>::new(transport, StdClock::default(), DriverConfig::default())
                    .expect("bring-up over SPI");
            serve_stream(&mut stream, &mut driver, &mut DriverEvents).expect("serve");
        });
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        let dev =
            RemoteAccelerator::connect(stream, Duration::from_secs(5)).expect("op-level link");
        Self {
            dev,
            stall,
            _server: server,
        }
    }
}

impl Fixture for OverOpLink {
    type Device = RemoteAccelerator<TcpStream>;
    fn device(&mut self) -> &mut Self::Device {
        &mut self.dev
    }
    fn stall_next_command(&mut self) -> bool {
        self.stall.store(true, Ordering::SeqCst);
        true
    }
    fn clear_stall(&mut self) {
        self.stall.store(false, Ordering::SeqCst);
    }
}

tensorplug_core::conformance_tests!(mod op_link = OverOpLink::new());
