//! `cargo xtask hil`: the firmware under QEMU (`mps2-an386`), driven over its
//! UART by the HIL tests (`tests/tests/hil.rs`, remote-bus mode and the
//! firmware itself; `tests/tests/hil_ops.rs`, op-level mode), and on the
//! emulated STM32 board (`tests/tests/hil_stm32.rs`, `netduinoplus2-qemu`,
//! which the test builds); each test boots its own
//! QEMU, bounded by timeouts, and a failure shows the firmware's decoded
//! defmt log. It first installs what they need (the target, QEMU, the TF
//! venv of the TF-over-firmware test). `cargo xtask test` runs the same
//! tests inside `cargo test --workspace`.

use crate::util::{cargo, run, step};
use anyhow::Result;

pub fn run_task() -> Result<()> {
    let mut python = None;
    step(
        "set up this machine (rustup targets, QEMU, the TF venv)",
        || {
            python = Some(crate::setup::ensure_firmware_and_tf()?);
            Ok(())
        },
    )?;
    step(
        "build the firmware (firmware/, thumbv7em-none-eabihf)",
        || crate::flash::firmware::build().map(drop),
    )?;
    step(
        "HIL tests under QEMU (tests/tests/hil.rs, hil_ops.rs, hil_stm32.rs)",
        || {
            let mut cmd = cargo();
            if let Some(python) = &python {
                cmd.env("TENSORPLUG_PYTHON", python);
            }
            run(cmd.args([
                "test",
                "--package",
                "tensorplug-tests",
                "--test",
                "hil",
                "--test",
                "hil_ops",
                "--test",
                "hil_stm32",
                "--",
                "--nocapture",
            ]))
        },
    )
}
