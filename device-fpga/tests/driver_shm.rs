//! The driver suite over a shared-memory BAR file served by
//! `tensorplug-model-server` in a second process (the `pcie:<file>` path).
//! The model's fault switches are out of reach from here, so the fault
//! cases are `#[ignore]`d on this transport.
#![cfg(all(feature = "model", feature = "std"))]

#[macro_use]
mod driver_suite;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use driver_suite::Fixture;
use tensorplug_device_fpga::driver::{Driver, StdClock};
use tensorplug_device_fpga::model::Faults;
use tensorplug_device_fpga::transport::mmio::{MmioTransport, ShmBar};

type Shm = MmioTransport<ShmBar>;

/// The server process; killed and reaped on drop, its file removed.
struct Server {
    child: Child,
    path: PathBuf,
}

impl Server {
    fn spawn() -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!(
            "tensorplug-driver-shm-{}-{}.bar",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let child = Command::new(env!("CARGO_BIN_EXE_tensorplug-model-server"))
            .arg(&path)
            .args(["--create", "--memory", "4194304", "--dma", "65536"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn tensorplug-model-server");
        let mut server = Self { child, path };
        let stdout = server.child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("server output");
        assert!(line.starts_with("ready "), "server said {line:?}");
        server
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.path);
    }
}

struct ShmFixture {
    // Dropped first: the driver (and its mapping), then the server.
    dev: Driver<Shm, StdClock>,
    _server: Server,
}

impl ShmFixture {
    fn new() -> Self {
        let server = Server::spawn();
        let bar = ShmBar::open(&server.path).expect("map the BAR file");
        let dev = Driver::new(
            MmioTransport::new(bar),
            StdClock::default(),
            driver_suite::config(),
        )
        .expect("bring-up over shm");
        Self {
            dev,
            _server: server,
        }
    }
}

impl Fixture for ShmFixture {
    type T = Shm;
    fn dev(&mut self) -> &mut Driver<Shm, StdClock> {
        &mut self.dev
    }
    fn set_faults(&mut self, _: Faults) -> bool {
        false
    }
}

driver_suite!(
    ShmFixture::new(),
    ignore_faults = "the model's fault switches are in the server process, out of reach"
);

#[test]
fn server_process_is_reaped() {
    let server = Server::spawn();
    let pid = server.child.id();
    drop(server);
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "server {pid} still running"
    );
}
