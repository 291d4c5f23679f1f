//! The driver suite over a shared-memory BAR file served by
//! `tensorplug-model-server` in a second process (the `pcie:<file>` path).
//! Faults are set with the server's `faults ...` stdin line, which it
//! answers `ok` once the model has taken them.
#![cfg(feature = "std")]

#[macro_use]
mod driver_suite;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use driver_suite::Fixture;
use tensorplug_device_fpga::driver::{Driver, StdClock};
use tensorplug_device_fpga::transport::mmio::{MmioTransport, ShmBar};
use tensorplug_model_fpga::model::Faults;
use tensorplug_model_fpga::model::host::faults_line;

type Shm = MmioTransport<ShmBar>;

/// The server process; killed and reaped on drop, its file removed.
struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
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
        let mut child = Command::new(env!("CARGO_BIN_EXE_tensorplug-model-server"))
            .arg(&path)
            .args(["--create", "--memory", "4194304", "--dma", "65536"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn tensorplug-model-server");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut server = Self {
            child,
            stdin,
            stdout,
            path,
        };
        assert!(server.line().starts_with("ready "), "server did not start");
        server
    }

    fn line(&mut self) -> String {
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("server output");
        line
    }

    /// Sets the model's faults; returns once the server says it took them.
    fn set_faults(&mut self, faults: &Faults) {
        writeln!(self.stdin, "{}", faults_line(faults)).expect("server stdin");
        self.stdin.flush().expect("server stdin");
        let reply = self.line();
        assert_eq!(reply.trim(), "ok", "server refused the faults");
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
    server: Server,
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
        Self { dev, server }
    }
}

impl Fixture for ShmFixture {
    type T = Shm;
    fn dev(&mut self) -> &mut Driver<Shm, StdClock> {
        &mut self.dev
    }
    fn set_faults(&mut self, faults: Faults) {
        self.server.set_faults(&faults);
    }
}

driver_suite!(ShmFixture::new());

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
