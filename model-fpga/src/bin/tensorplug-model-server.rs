//! `tensorplug-model-server`: the behavioural model of the reference FPGA in
//! its own process, serving a shared-memory BAR file (`pcie:<file>` devices).
//!
//! ```text
//! tensorplug-model-server <file> [--create] [--memory BYTES] [--dma BYTES] [--ignore-stdin]
//! tensorplug-model-server --link tcp:<host:port> [--memory BYTES] [--ignore-stdin]
//! ```
//!
//! With `--link` it serves the link protocol instead (`tcp:<host:port>`
//! devices; what the MCU firmware does): it listens on the address (port 0
//! picks one), prints `ready tcp:<address>`, and serves one connection at a
//! time with a fresh device each (default 64 MiB memory, no DMA).
//!
//! Without `--create` the file must exist (made by `ShmBar::create`);
//! with it the server creates it (default 64 MiB memory, 64 MiB DMA window).
//! It prints `ready <file>` on stdout once serving, and stops when killed,
//! on a `stop` line, or when its stdin reaches end of file (so a parent
//! holding the pipe can stop it by closing it), unless `--ignore-stdin`
//! (for `nohup`/`&` use). A line `faults <switches>` (see
//! `model::host::faults_line`) sets the model's fault switches; the server
//! answers `ok` on stdout once the model has taken them.

use std::io::{self, BufRead, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use tensorplug_abi::device::REGISTER_SPACE_SIZE;
use tensorplug_device_fpga::transport::mmio::{BarLayout, ShmBar};
use tensorplug_model_fpga::model::host::{ServeControl, ServeOptions, parse_faults_line, serve};

struct Args {
    path: String,
    link: Option<String>,
    create: bool,
    memory: usize,
    dma: usize,
    ignore_stdin: bool,
}

const USAGE: &str = "usage: tensorplug-model-server <file> [--create] [--memory BYTES] [--dma BYTES] [--ignore-stdin]\n       tensorplug-model-server --link tcp:<host:port> [--memory BYTES] [--ignore-stdin]";

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args {
        path: String::new(),
        link: None,
        create: false,
        memory: 64 << 20,
        dma: 64 << 20,
        ignore_stdin: false,
    };
    let number = |v: Option<String>, what: &str| -> Result<usize, String> {
        v.and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("{what} needs a byte count\n{USAGE}"))
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--create" => parsed.create = true,
            "--ignore-stdin" => parsed.ignore_stdin = true,
            "--memory" => parsed.memory = number(args.next(), "--memory")?,
            "--dma" => parsed.dma = number(args.next(), "--dma")?,
            "--link" => match args.next().as_deref().and_then(|a| a.strip_prefix("tcp:")) {
                Some(addr) if !addr.is_empty() => parsed.link = Some(addr.to_string()),
                _ => return Err(format!("--link needs tcp:<host:port>\n{USAGE}")),
            },
            "-h" | "--help" => return Err(USAGE.into()),
            _ if parsed.path.is_empty() && !arg.starts_with('-') => parsed.path = arg,
            _ => return Err(format!("unexpected argument {arg:?}\n{USAGE}")),
        }
    }
    if parsed.path.is_empty() == parsed.link.is_none() {
        return Err(USAGE.into());
    }
    Ok(parsed)
}

fn run(args: &Args) -> io::Result<()> {
    if let Some(addr) = &args.link {
        return run_link(addr, args);
    }
    let bar = if args.create {
        ShmBar::create(
            &args.path,
            BarLayout::new(REGISTER_SPACE_SIZE as usize, args.memory, args.dma)?,
        )?
    } else {
        ShmBar::open(&args.path)?
    };
    let control = Arc::new(ServeControl::default());
    spawn_stdin_watcher(&control, args.ignore_stdin);
    let announce = || {
        println!("ready {}", args.path);
        let _ = io::stdout().flush();
    };
    // SAFETY: the BAR file is shared with a driver process that reaches it
    // only through its own mapping (atomic 32-bit registers, raw copies);
    // nothing in this process holds references into it.
    unsafe { serve(&bar, &ServeOptions::default(), &control, announce) }
}

/// `--link`: one connection at a time, each with a fresh device, until
/// stdin says stop (checked between reads; see `serve_link`).
fn run_link(addr: &str, args: &Args) -> io::Result<()> {
    use std::net::TcpListener;
    use tensorplug_model_fpga::model::host::serve_link;
    use tensorplug_model_fpga::model::{HostModel, ModelConfig};

    let listener = TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    let control = Arc::new(ServeControl::default());
    spawn_stdin_watcher(&control, args.ignore_stdin);
    println!("ready tcp:{}", listener.local_addr()?);
    io::stdout().flush()?;
    while !control.is_stopped() {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            Err(e) => return Err(e),
        };
        stream.set_nonblocking(false)?;
        stream.set_read_timeout(Some(Duration::from_millis(50)))?;
        stream.set_nodelay(true)?;
        let mut model = HostModel::on_host(args.memory, ModelConfig::default())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        if let Err(e) = serve_link(stream, &mut model, &control) {
            eprintln!("tensorplug-model-server: connection ended: {e}");
        }
    }
    Ok(())
}

fn spawn_stdin_watcher(control: &Arc<ServeControl>, ignore_stdin: bool) {
    let watcher = Arc::clone(control);
    std::thread::spawn(move || {
        if ignore_stdin {
            return;
        }
        commands(&watcher);
        watcher.stop();
    });
}

/// Serves stdin commands until `stop` or end of file: `faults ...` sets the
/// fault switches and answers `ok` once the model has taken them (`error
/// ...` otherwise).
fn commands(control: &ServeControl) {
    /// Longer lines are refused, not buffered.
    const MAX_LINE: u64 = 4096;
    let mut out = io::stdout();
    let mut stdin = io::stdin().lock();
    loop {
        let mut line = String::new();
        let reply = match io::Read::take(&mut stdin, MAX_LINE).read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(n) if n as u64 == MAX_LINE && !line.ends_with('\n') => {
                if stdin.skip_until(b'\n').is_err() {
                    return;
                }
                format!("error a line longer than {MAX_LINE} bytes")
            }
            Ok(_) => match line.trim() {
                "" => continue,
                "stop" => return,
                command => reply(control, command),
            },
        };
        if writeln!(out, "{reply}").and_then(|()| out.flush()).is_err() {
            return;
        }
    }
}

/// The answer to one `faults ...` line.
fn reply(control: &ServeControl, line: &str) -> String {
    match parse_faults_line(line) {
        Ok(faults) => {
            let ticket = control.set_faults(faults);
            if control.wait_faults_taken(ticket, Duration::from_secs(5)) {
                "ok".to_string()
            } else {
                "error the model did not take the faults".to_string()
            }
        }
        Err(e) => format!("error {e}"),
    }
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(msg) => {
            eprintln!("{msg}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let what = args.link.as_deref().map_or(args.path.as_str(), |a| a);
            eprintln!("tensorplug-model-server: {what}: {e}");
            ExitCode::FAILURE
        }
    }
}
