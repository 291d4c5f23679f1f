//! `cargo xtask hil`: the firmware under QEMU (`mps2-an386`), driven over its
//! UART by the HIL tests (`tests/tests/hil.rs`, remote-bus mode and the
//! firmware itself; `tests/tests/hil_ops.rs`, op-level mode); each test boots its own
//! QEMU, bounded by timeouts, and a failure shows the firmware's decoded
//! defmt log. `cargo xtask test` runs the same tests inside `cargo test
//! --workspace`, after set-up installed QEMU and the target.

use crate::util::{cargo, run, step};
use anyhow::Result;

pub fn run_task() -> Result<()> {
    step(
        "build the firmware (firmware/, thumbv7em-none-eabihf)",
        || crate::flash::firmware::build().map(drop),
    )?;
    step(
        "HIL tests under QEMU (tests/tests/hil.rs, hil_ops.rs)",
        || {
            run(cargo().args([
                "test",
                "--package",
                "tensorplug-tests",
                "--test",
                "hil",
                "--test",
                "hil_ops",
                "--",
                "--nocapture",
            ]))
        },
    )
}
