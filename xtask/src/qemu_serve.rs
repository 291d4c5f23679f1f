//! `cargo xtask qemu --board <name> --serve tcp:<port>`: an emulated
//! board's firmware kept running under QEMU, its link UART served on a
//! loopback TCP port, so that any TF process reaches it with
//! `TENSORPLUG_DEVICE=mcu-tcp:127.0.0.1:<port>`, as it reaches a real
//! board on `mcu-serial:` (`docs/boards.md`, "A running board").

use crate::flash::firmware::{Destination, boards_dir, build_board, plan};
use anyhow::{Context, Result, bail};
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tensorplug_tests::qemu::Qemu;

#[derive(clap::Args)]
pub struct QemuArgs {
    /// The emulated board (`firmware/boards/<name>.toml` with an
    /// `[emulator]`); the default is `mps2-an386`.
    #[arg(long)]
    board: Option<String>,
    /// Where to serve the link UART: `tcp:<port>` or `tcp:<host>:<port>`
    /// (port 0 picks a free one; the host defaults to 127.0.0.1).
    #[arg(long, default_value = "tcp:0")]
    serve: String,
    /// Stop after this many seconds (default: run until Ctrl-C).
    #[arg(long)]
    seconds: Option<u64>,
    /// Also stop when standard input closes: for a script or a test that
    /// runs the board for as long as it holds the pipe.
    #[arg(long)]
    until_stdin_closes: bool,
}

/// `tcp:<port>` or `tcp:<host>:<port>` as `host:port`.
fn listen_addr(serve: &str) -> Result<String> {
    let Some(rest) = serve.strip_prefix("tcp:") else {
        bail!("--serve {serve:?}: expected tcp:<port> or tcp:<host>:<port>");
    };
    let (host, port) = rest.rsplit_once(':').unwrap_or(("127.0.0.1", rest));
    let port: u16 = port
        .parse()
        .with_context(|| format!("--serve {serve:?}: the port {port:?} is not a number"))?;
    Ok(format!("{host}:{port}"))
}

pub fn run_task(args: &QemuArgs) -> Result<()> {
    let addr = listen_addr(&args.serve)?;
    let plan = plan(&boards_dir(), args.board.as_deref(), Some("qemu"))?;
    let Destination::Qemu {
        machine,
        cpu,
        serial,
    } = &plan.destination
    else {
        bail!("board `{}` is not an emulated one", plan.board.name);
    };
    let elf = build_board(&plan.board)?;
    let mut qemu = Qemu::boot_machine(machine, cpu, *serial, &elf, &[])
        .context("booting the firmware on QEMU")?;
    let bound = qemu
        .serve_uart_on(&addr)
        .with_context(|| format!("serving the UART on {addr}"))?;
    println!(
        "board `{}` on QEMU {machine}: its link UART is served on tcp:{bound}\n\
         use it with TENSORPLUG_DEVICE=mcu-tcp:{bound}; {}",
        plan.board.name,
        match args.seconds {
            Some(s) => format!("stopping in {s} s"),
            None => "Ctrl-C stops it".into(),
        }
    );
    std::io::stdout().flush()?;
    let closed = Arc::new(AtomicBool::new(false));
    if args.until_stdin_closes {
        let closed = closed.clone();
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
            closed.store(true, Ordering::Relaxed);
        });
    }
    let start = Instant::now();
    let mut shown = 0;
    loop {
        let logs = qemu.logs();
        for line in &logs[shown.min(logs.len())..] {
            println!("{line}");
        }
        shown = logs.len();
        std::io::stdout().flush()?;
        if let Some(status) = qemu.try_exit() {
            bail!("QEMU exited ({status}); the firmware's log is above");
        }
        let timed_out = args
            .seconds
            .is_some_and(|s| start.elapsed() >= Duration::from_secs(s));
        if timed_out || closed.load(Ordering::Relaxed) {
            // QEMU stops with `qemu` (its drop).
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[cfg(test)]
mod tests {
    use super::listen_addr;

    #[test]
    fn serve_takes_a_port_or_a_host_and_port() {
        assert_eq!(listen_addr("tcp:7000").unwrap(), "127.0.0.1:7000");
        assert_eq!(listen_addr("tcp:0.0.0.0:7000").unwrap(), "0.0.0.0:7000");
        assert!(listen_addr("7000").is_err());
        assert!(listen_addr("tcp:seven").is_err());
    }
}
