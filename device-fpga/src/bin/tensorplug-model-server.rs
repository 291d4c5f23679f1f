//! `tensorplug-model-server`: the behavioural model of the reference FPGA in
//! its own process, serving a shared-memory BAR file (`pcie:<file>` devices).
//!
//! ```text
//! tensorplug-model-server <file> [--create] [--memory BYTES] [--dma BYTES] [--ignore-stdin]
//! ```
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
use tensorplug_device_fpga::model::host::{ServeControl, ServeOptions, parse_faults_line, serve};
use tensorplug_device_fpga::transport::mmio::{BarLayout, ShmBar};

struct Args {
    path: String,
    create: bool,
    memory: usize,
    dma: usize,
    ignore_stdin: bool,
}

const USAGE: &str = "usage: tensorplug-model-server <file> [--create] [--memory BYTES] [--dma BYTES] [--ignore-stdin]";

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args {
        path: String::new(),
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
            "-h" | "--help" => return Err(USAGE.into()),
            _ if parsed.path.is_empty() && !arg.starts_with('-') => parsed.path = arg,
            _ => return Err(format!("unexpected argument {arg:?}\n{USAGE}")),
        }
    }
    if parsed.path.is_empty() {
        return Err(USAGE.into());
    }
    Ok(parsed)
}

fn run(args: &Args) -> io::Result<()> {
    let bar = if args.create {
        ShmBar::create(
            &args.path,
            BarLayout::new(REGISTER_SPACE_SIZE as usize, args.memory, args.dma)?,
        )?
    } else {
        ShmBar::open(&args.path)?
    };
    let control = Arc::new(ServeControl::default());
    let ignore_stdin = args.ignore_stdin;
    let watcher = Arc::clone(&control);
    std::thread::spawn(move || {
        if ignore_stdin {
            return;
        }
        commands(&watcher);
        watcher.stop();
    });
    let announce = || {
        println!("ready {}", args.path);
        let _ = io::stdout().flush();
    };
    // SAFETY: the BAR file is shared with a driver process that reaches it
    // only through its own mapping (volatile 32-bit registers, raw copies);
    // nothing in this process holds references into it.
    unsafe { serve(&bar, &ServeOptions::default(), &control, announce) }
}

/// Serves stdin commands until `stop` or end of file: `faults ...` sets the
/// fault switches and answers `ok` once the model has taken them (`error
/// ...` otherwise).
fn commands(control: &ServeControl) {
    let mut out = io::stdout();
    for line in io::stdin().lock().lines() {
        let Ok(line) = line else { return };
        let reply = match line.trim() {
            "" => continue,
            "stop" => return,
            cmd => match parse_faults_line(cmd) {
                Ok(faults) => {
                    let ticket = control.set_faults(faults);
                    if control.wait_faults_taken(ticket, Duration::from_secs(5)) {
                        "ok".to_string()
                    } else {
                        "error the model did not take the faults".to_string()
                    }
                }
                Err(e) => format!("error {e}"),
            },
        };
        if writeln!(out, "{reply}").and_then(|()| out.flush()).is_err() {
            return;
        }
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
            eprintln!("tensorplug-model-server: {}: {e}", args.path);
            ExitCode::FAILURE
        }
    }
}
