//! `cargo xtask flash --firmware` (or `flash firmware`): builds the MCU firmware and puts it on a
//! device: `qemu` boots it on QEMU's `mps2-an386` and shows its decoded
//! log; `probe-rs:<chip>` hands the ELF to `probe-rs` for a real board.

use crate::util::{cargo, root, run};
use anyhow::{Context, Result, bail};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

#[derive(clap::Args)]
pub struct FirmwareArgs {
    /// `qemu` (boot on QEMU mps2-an386, show the log) or `probe-rs:<chip>`
    /// (program a real board through a debug probe, e.g. `probe-rs:STM32F407VGTx`).
    #[arg(long, default_value = "qemu")]
    pub device: String,
    /// With `qemu`: how long to show the log before stopping QEMU.
    #[arg(long, default_value_t = 3)]
    pub seconds: u64,
}

/// `cargo build --release --locked` in `firmware/`; the ELF's path.
pub fn build() -> Result<PathBuf> {
    let dir = root().join("firmware");
    run(cargo()
        .current_dir(&dir)
        .args(["build", "--release", "--locked"])
        .env_remove("CARGO_TARGET_DIR"))?;
    Ok(dir.join("target/thumbv7em-none-eabihf/release/tensorplug-firmware"))
}

pub fn run_task(args: &FirmwareArgs) -> Result<()> {
    let elf = build()?;
    eprintln!("built {}", elf.display());
    match args.device.split_once(':') {
        None if args.device == "qemu" => boot_on_qemu(&elf, args.seconds),
        Some(("probe-rs", chip)) if !chip.is_empty() => with_probe_rs(&elf, chip),
        _ => bail!(
            "--device {:?}: expected `qemu` or `probe-rs:<chip>`",
            args.device
        ),
    }
}

fn boot_on_qemu(elf: &std::path::Path, seconds: u64) -> Result<()> {
    let qemu = tensorplug_tests::qemu::Qemu::boot(elf).context("booting the firmware on QEMU")?;
    let booted = qemu.wait_for_log("tensorplug firmware", Duration::from_secs(seconds.max(1)));
    std::thread::sleep(Duration::from_secs(seconds));
    for line in qemu.logs() {
        println!("{line}");
    }
    if !booted {
        bail!("the firmware logged no boot line within {seconds} s");
    }
    eprintln!(
        "booted on QEMU mps2-an386; its UART was on {}",
        qemu.uart.peer_addr()?
    );
    Ok(())
}

fn with_probe_rs(elf: &std::path::Path, chip: &str) -> Result<()> {
    let found = Command::new("probe-rs").arg("--version").output();
    if !found.is_ok_and(|out| out.status.success()) {
        bail!(
            "probe-rs is not installed; install it with `cargo install probe-rs-tools --locked`, \
             connect the board's debug probe, and run this again (the ELF is {})",
            elf.display()
        );
    }
    run(Command::new("probe-rs")
        .args(["download", "--chip", chip])
        .arg(elf))
}
