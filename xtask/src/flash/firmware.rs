//! `cargo xtask flash --firmware` (or `flash firmware`): builds the MCU
//! firmware for one board (`firmware/boards/<name>.toml`, `docs/boards.md`)
//! and puts it on a device: `qemu` boots an emulated board's image and shows
//! its decoded log; `probe-rs:<chip>` hands a real board's ELF to
//! `probe-rs`, and only if the chip is that board's: an image is never
//! flashed into a chip it was not built for.

use crate::util::{cargo, root, run};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use tensorplug_boards::{BOARDS_DIR, Board};

/// The board built when none is named: QEMU's mps2-an386, the emulated
/// FPGA board of the HIL tests.
pub const DEFAULT_BOARD: &str = "mps2-an386";

#[derive(clap::Args)]
pub struct FirmwareArgs {
    /// The board (`firmware/boards/<name>.toml`); the default is
    /// `mps2-an386`, or with `--device probe-rs:<chip>` the one board of
    /// that chip.
    #[arg(long)]
    pub board: Option<String>,
    /// `qemu` (boot an emulated board, show the log) or `probe-rs:<chip>`
    /// (program a real board through a debug probe, e.g.
    /// `probe-rs:STM32F405RGTx`); the default is the board's own.
    #[arg(long)]
    pub device: Option<String>,
    /// With `qemu`: how long to show the log before stopping QEMU.
    #[arg(long, default_value_t = 3)]
    pub seconds: u64,
}

/// Where an image goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Destination {
    /// Boot it on QEMU (`-machine`, `-cpu`, the link UART's `-serial` index).
    Qemu {
        machine: String,
        cpu: String,
        serial: u32,
    },
    /// Program it with `probe-rs download --chip <chip>`.
    ProbeRs { chip: String },
}

/// What `flash --firmware` will do: which board's image, and where.
#[derive(Clone, Debug)]
pub struct Plan {
    pub board: Board,
    pub destination: Destination,
}

/// The board files' folder.
pub fn boards_dir() -> PathBuf {
    root().join(BOARDS_DIR)
}

/// Decides the board and the destination, refusing every mismatch before
/// anything is built: an unknown board, `qemu` for a real board,
/// `probe-rs:` for an emulated one, a chip that is not the board's, or
/// (without `--board`) a chip no board file has.
pub fn plan(dir: &Path, board: Option<&str>, device: Option<&str>) -> Result<Plan> {
    enum Asked<'a> {
        Default,
        Qemu,
        Probe(&'a str),
    }
    let asked = match device {
        None => Asked::Default,
        Some("qemu") => Asked::Qemu,
        Some(device) => match device.split_once(':') {
            Some(("probe-rs", chip)) if !chip.is_empty() => Asked::Probe(chip),
            _ => bail!("--device {device:?}: expected `qemu` or `probe-rs:<chip>`"),
        },
    };
    let board = match (board, &asked) {
        (Some(name), _) => tensorplug_boards::load(dir, name)?,
        (None, Asked::Probe(chip)) => {
            let boards = tensorplug_boards::all(dir)?;
            let board = tensorplug_boards::for_probe_chip(&boards, chip)?.clone();
            eprintln!("--device probe-rs:{chip}: board `{}`", board.name);
            board
        }
        (None, _) => tensorplug_boards::load(dir, DEFAULT_BOARD)?,
    };
    let destination = match asked {
        Asked::Probe(chip) => {
            board.check_probe_chip(chip)?;
            Destination::ProbeRs { chip: chip.into() }
        }
        Asked::Qemu => qemu(&board)?,
        Asked::Default => match &board.probe_rs_chip {
            Some(chip) => Destination::ProbeRs { chip: chip.clone() },
            None => qemu(&board)?,
        },
    };
    Ok(Plan { board, destination })
}

fn qemu(board: &Board) -> Result<Destination> {
    let emulator = board.emulator()?;
    Ok(Destination::Qemu {
        machine: emulator.qemu_machine.clone(),
        cpu: emulator.qemu_cpu.clone(),
        serial: emulator.serial,
    })
}

/// Builds the default board's image (mps2-an386: what the HIL tests and
/// `cargo xtask size` use); the ELF's path.
pub fn build() -> Result<PathBuf> {
    let board = tensorplug_boards::load(&boards_dir(), DEFAULT_BOARD)?;
    build_board(&board)
}

/// `cargo build --release --locked` in `firmware/` for `board`; the ELF's
/// path. The default board builds with the crate's default features into
/// `firmware/target` (where the HIL tests build it too); every other board
/// with its feature into `firmware/target/variants`, the target dir of the
/// HIL tests' feature variants, whose dependencies it shares, its ELF
/// copied out to `firmware/target/variants/tensorplug-firmware-<name>`
/// (`tensorplug_tests::qemu::build_in_variants`).
pub fn build_board(board: &Board) -> Result<PathBuf> {
    if board.name != DEFAULT_BOARD {
        let feature = board.feature();
        let args = ["--no-default-features", "--features", &feature];
        eprintln!(
            "    building the firmware for board `{}` ({})",
            board.name,
            args.join(" ")
        );
        return tensorplug_tests::qemu::build_in_variants(&args, &board.target, &board.name)
            .map_err(|e| anyhow::anyhow!("board `{}`: {e}", board.name));
    }
    let dir = root().join("firmware");
    let mut cmd = cargo();
    cmd.current_dir(&dir)
        .args(["build", "--release", "--locked", "--config"])
        .arg(tensorplug_tests::qemu::path_independent_build(
            &board.target,
        ))
        .env_remove("CARGO_TARGET_DIR");
    select_board(&mut cmd, board);
    run(&mut cmd).with_context(|| format!("building the firmware for board `{}`", board.name))?;
    let elf = dir
        .join("target")
        .join(&board.target)
        .join("release/tensorplug-firmware");
    if !elf.is_file() {
        bail!("cargo built no {}", elf.display());
    }
    Ok(elf)
}

/// Adds to a cargo command in `firmware/` what selects `board`: its target
/// and, for any board but the default, its feature instead of the
/// default ones (the target dir stays `firmware/target`: fine for checks,
/// which write no ELF).
pub fn select_board(cmd: &mut Command, board: &Board) {
    cmd.args(["--target", &board.target]);
    if board.name != DEFAULT_BOARD {
        cmd.args(["--no-default-features", "--features", &board.feature()]);
    }
}

pub fn run_task(args: &FirmwareArgs) -> Result<()> {
    let plan = plan(&boards_dir(), args.board.as_deref(), args.device.as_deref())?;
    let elf = build_board(&plan.board)?;
    eprintln!("built {} for board `{}`", elf.display(), plan.board.name);
    match &plan.destination {
        Destination::Qemu {
            machine,
            cpu,
            serial,
        } => boot_on_qemu(&elf, machine, cpu, *serial, args.seconds),
        Destination::ProbeRs { chip } => with_probe_rs(&elf, chip),
    }
}

fn boot_on_qemu(elf: &Path, machine: &str, cpu: &str, serial: u32, seconds: u64) -> Result<()> {
    let qemu = tensorplug_tests::qemu::Qemu::boot_machine(machine, cpu, serial, elf, &[])
        .context("booting the firmware on QEMU")?;
    let booted = qemu.wait_for_log("tensorplug firmware", Duration::from_secs(seconds.max(1)));
    std::thread::sleep(Duration::from_secs(seconds));
    for line in qemu.logs() {
        println!("{line}");
    }
    if !booted {
        bail!("the firmware logged no boot line within {seconds} s");
    }
    eprintln!(
        "booted on QEMU {machine}; its UART was on {}",
        qemu.uart.peer_addr()?
    );
    Ok(())
}

fn with_probe_rs(elf: &Path, chip: &str) -> Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_for(board: Option<&str>, device: Option<&str>) -> Result<Plan> {
        plan(&boards_dir(), board, device)
    }

    fn refusal(board: Option<&str>, device: Option<&str>) -> String {
        match plan_for(board, device) {
            Ok(plan) => panic!("{board:?} {device:?} was accepted: {plan:?}"),
            Err(error) => format!("{error:#}"),
        }
    }

    #[test]
    fn the_default_is_the_emulated_board_on_qemu() {
        let plan = plan_for(None, None).unwrap();
        assert_eq!(plan.board.name, DEFAULT_BOARD);
        assert_eq!(
            plan.destination,
            Destination::Qemu {
                machine: "mps2-an386".into(),
                cpu: "cortex-m4".into(),
                serial: 0,
            }
        );
        let qemu = plan_for(Some(DEFAULT_BOARD), Some("qemu")).unwrap();
        assert_eq!(qemu.destination, plan.destination);
    }

    #[test]
    fn a_real_board_goes_to_its_own_chip() {
        let plan = plan_for(Some("netduinoplus2"), None).unwrap();
        assert_eq!(
            plan.destination,
            Destination::ProbeRs {
                chip: "STM32F405RGTx".into()
            }
        );
        let chosen = plan_for(None, Some("probe-rs:stm32f405rgtx")).unwrap();
        assert_eq!(chosen.board.name, "netduinoplus2");
    }

    #[test]
    fn an_unknown_board_is_refused_with_the_known_ones() {
        let message = refusal(Some("nucleo-h743zi"), None);
        assert!(
            message.contains("no board `nucleo-h743zi`") && message.contains("mps2-an386"),
            "{message}"
        );
    }

    #[test]
    fn a_chip_that_is_not_the_boards_is_refused() {
        let message = refusal(Some("netduinoplus2"), Some("probe-rs:STM32F407VGTx"));
        assert!(
            message.contains("STM32F405RGTx")
                && message.contains("STM32F407VGTx")
                && message.contains("refusing"),
            "{message}"
        );
        let message = refusal(Some(DEFAULT_BOARD), Some("probe-rs:STM32F405RGTx"));
        assert!(message.contains("emulated"), "{message}");
    }

    #[test]
    fn a_chip_without_a_board_is_refused() {
        // The pre-boards behaviour: the mps2 image went to whatever chip.
        let message = refusal(None, Some("probe-rs:STM32F407VGTx"));
        assert!(
            message.contains("no board file has probe-rs chip `STM32F407VGTx`")
                && message.contains("netduinoplus2 (STM32F405RGTx)"),
            "{message}"
        );
    }

    #[test]
    fn qemu_for_a_real_board_and_bad_devices_are_refused() {
        let message = refusal(Some("netduinoplus2"), Some("qemu"));
        assert!(message.contains("not emulated"), "{message}");
        for device in ["probe-rs:", "jlink:STM32F405RGTx", "sim"] {
            let message = refusal(None, Some(device));
            assert!(message.contains("expected `qemu`"), "{device}: {message}");
        }
    }
}
