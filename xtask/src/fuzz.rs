//! `cargo fuzz` for the link decoder: installs cargo-fuzz when missing,
//! builds `core/fuzz`'s `link_decoder` target and runs it briefly.

use crate::util::{root, run};
use anyhow::Result;
use std::process::Command;

/// Fuzz targets CI builds and runs: (target, libFuzzer runs).
const TARGETS: &[(&str, u32)] = &[("link_decoder", 50_000)];

/// Builds every fuzz target and runs each for a bounded number of inputs.
pub fn run_all() -> Result<()> {
    ensure_cargo_fuzz()?;
    let fuzz_dir = root().join("core/fuzz");
    for (target, runs) in TARGETS {
        run(Command::new("cargo")
            .current_dir(&fuzz_dir)
            .args(["+nightly", "fuzz", "run", target, "--", "-max_len=8192"])
            .arg(format!("-runs={runs}")))?;
    }
    Ok(())
}

/// `cargo install cargo-fuzz --locked` unless `cargo fuzz` already works.
fn ensure_cargo_fuzz() -> Result<()> {
    let installed = Command::new("cargo")
        .args(["fuzz", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if installed {
        return Ok(());
    }
    run(Command::new("cargo").args(["install", "cargo-fuzz", "--locked"]))
}
