//! Slow correctness checks of the unsafe and lock-free code: Miri on the
//! ring's unit tests and on the abi's raw-pointer tests, and the loom model
//! of the ring. Run by `cargo xtask test`.

use crate::util::{root, run, target_dir};
use anyhow::Result;
use std::process::Command;

/// A `cargo` for an explicit toolchain, free of the variables the pinned
/// toolchain's cargo put in our environment.
fn cargo_on(toolchain: &str) -> Command {
    let mut cmd = Command::new("cargo");
    cmd.current_dir(root())
        .arg(format!("+{toolchain}"))
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("CARGO")
        .env_remove("RUSTC")
        .env_remove("RUSTDOC");
    cmd
}

/// `cargo +nightly miri test` on the ring's unit tests (the registry's too,
/// hence `std`). Miri keeps its own `miri/` subdirectory of the target dir.
pub fn miri_ring() -> Result<()> {
    run(cargo_on("nightly").args([
        "miri",
        "test",
        "--package",
        "tensorplug-core",
        "--features",
        "std",
        "--lib",
        "ring::",
    ]))
}

/// `cargo +nightly miri test` on the abi tests that read and write TF's
/// structs through raw pointers (version negotiation, validators).
pub fn miri_abi() -> Result<()> {
    run(cargo_on("nightly").args([
        "miri",
        "test",
        "--package",
        "tensorplug-abi",
        "--test",
        "versioned",
        "--test",
        "validate_stream_executor",
        "--test",
        "validate_grappler_profiler",
    ]))
}

/// `cargo +nightly miri test` on the `sim` device: the driver and the model
/// thread sharing one heap BAR (aliasing of device memory, races on the
/// register words), under `seeds` thread schedules.
pub fn miri_sim(seeds: u32) -> Result<()> {
    run(cargo_on("nightly")
        .env("MIRIFLAGS", format!("-Zmiri-many-seeds=0..{seeds}"))
        .args([
            "miri",
            "test",
            "--package",
            "tensorplug-model-fpga",
            "--features",
            "std",
            "--test",
            "sim_miri",
        ]))
}

/// The loom model (`core/tests/loom_ring.rs`), exhaustive (no preemption
/// bound: the models are small enough). `--cfg loom` changes every crate's
/// flags, so it builds in `<target>/loom` to keep the main build valid.
/// Unoptimized: its models explore in 2 s, and a release build of it took
/// 80 s more CPU than the explorations save.
pub fn loom_ring() -> Result<()> {
    run(crate::util::cargo()
        .args([
            "test",
            "--package",
            "tensorplug-core",
            "--test",
            "loom_ring",
        ])
        .env("RUSTFLAGS", "--cfg loom")
        .env("CARGO_TARGET_DIR", target_dir().join("loom")))
}
