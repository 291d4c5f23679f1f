//! `cargo xtask test`: the whole suite, as CI runs it.

use crate::setup::{self, EMBEDDED_TARGETS};
use crate::util::{cargo, run as run_cmd, step};
use anyhow::Result;

#[derive(clap::Args)]
pub struct TestArgs {
    /// Skip set-up (rustup, apt, venvs); for quick local re-runs.
    #[arg(long)]
    pub no_setup: bool,
    /// Run the real-TF suite on every TF of the tested range (2.15 to
    /// 2.21), not only the oldest and the newest.
    #[arg(long)]
    pub tf_matrix: bool,
    /// Also run the fault matrix's cases left out of the default run
    /// (`tests/tests/tf_fault_matrix.rs`, `docs/reliability.md`).
    #[arg(long)]
    pub fault_matrix: bool,
}

/// `no_std` builds: (package, features, targets).
const NO_STD_BUILDS: &[(&str, &str, &[&str])] = &[
    ("tensorplug-abi", "", EMBEDDED_TARGETS),
    ("tensorplug-core", "", EMBEDDED_TARGETS),
    // The XSpace export needs `alloc` (prost); the firmware brings an allocator.
    ("tensorplug-core", "alloc", &["thumbv7em-none-eabihf"]),
    // The driver and its model on both Cortex-M profiles (thumbv6m has no
    // compare-and-swap: nothing of theirs needs it).
    ("tensorplug-device-fpga", "", EMBEDDED_TARGETS),
    ("tensorplug-model-fpga", "", EMBEDDED_TARGETS),
    // What the firmware logs with.
    ("tensorplug-model-fpga", "defmt", &["thumbv7em-none-eabihf"]),
    // The example second device: a vendor driver on core alone.
    ("tensorplug-device-npu", "", EMBEDDED_TARGETS),
];

pub fn run(args: &TestArgs) -> Result<()> {
    let env = if args.no_setup {
        None
    } else {
        let mut env = None;
        step(
            "set up this machine (rustup targets, Miri, apt, TF venvs)",
            || {
                env = Some(setup::ensure_all(args.tf_matrix)?);
                Ok(())
            },
        )?;
        env
    };
    step("cargo fmt --check", || {
        run_cmd(cargo().args(["fmt", "--all", "--", "--check"]))
    })?;
    step("cargo clippy (all targets, -D warnings)", || {
        run_cmd(cargo().args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ]))
    })?;
    step("firmware: cargo fmt --check, clippy -D warnings", || {
        let firmware = || {
            let mut cmd = cargo();
            cmd.current_dir(crate::util::root().join("firmware"))
                .env_remove("CARGO_TARGET_DIR");
            cmd
        };
        run_cmd(firmware().args(["fmt", "--", "--check"]))?;
        run_cmd(firmware().args(["clippy", "--release", "--locked", "--", "-D", "warnings"]))
    })?;
    step(
        "firmware size vs. firmware/size.json (fails on > 10 % growth)",
        || crate::size::run_task(&crate::size::SizeArgs { update: false }),
    )?;
    // Includes the HIL tests (`tests/tests/hil.rs`: the firmware under QEMU).
    let newest = setup::TF_VERSIONS[setup::TF_VERSIONS.len() - 1];
    let what = format!("cargo test --workspace (TF {newest})");
    step(&what, || {
        let mut cmd = cargo();
        cmd.args(["test", "--workspace"]);
        if let Some(env) = &env {
            cmd.env("TENSORPLUG_PYTHON", &env.python)
                .env("TENSORPLUG_PYTHON_UNSUPPORTED_TF", &env.unsupported);
        }
        run_cmd(&mut cmd)
    })?;
    if args.fault_matrix {
        step("the rest of the fault matrix (its ignored cases)", || {
            let mut cmd = cargo();
            cmd.args([
                "test",
                "-p",
                "tensorplug-tests",
                "--test",
                "tf_fault_matrix",
            ])
            .args(["--", "--ignored"]);
            if let Some(env) = &env {
                cmd.env("TENSORPLUG_PYTHON", &env.python);
            }
            run_cmd(&mut cmd)
        })?;
    }
    // The real-TF tests again on the older TFs. Not beside the checks below:
    // under that load the sim device's clock sync errs by more than the
    // profiler tests' 10 us bound once kernels wait for the device (TF 2.15).
    if let Some(env) = env.as_ref().filter(|env| !env.older.is_empty()) {
        crate::tf_suite::start(env)?.finish()?;
    }
    step("Miri: ring unit tests", crate::checks::miri_ring)?;
    step("Miri: abi raw-pointer tests", crate::checks::miri_abi)?;
    step(
        "Miri: sim device, driver and model threads",
        crate::checks::miri_sim,
    )?;
    step("loom: ring model", crate::checks::loom_ring)?;
    step(
        "device ABI C header is up to date",
        crate::header::check_fresh,
    )?;
    step(
        &format!("TF ABI layout check (abi vs. the TF {newest} headers)"),
        || crate::layout::run(env.as_ref().map(|env| env.python.as_path()), true),
    )?;
    for (version, python) in env.iter().flat_map(|env| &env.older) {
        let what = format!("TF ABI layout check (abi vs. the TF {version} headers)");
        step(&what, || crate::layout::run(Some(python), false))?;
    }
    for (package, features, targets) in NO_STD_BUILDS {
        for target in *targets {
            let what = format!("no_std build: {package} [{features}] for {target}");
            step(&what, || {
                run_cmd(cargo().args([
                    "build",
                    "--package",
                    package,
                    "--no-default-features",
                    "--features",
                    features,
                    "--target",
                    target,
                ]))
            })?;
        }
    }
    step(
        "cargo xtask fuzz: every target, 20k runs each",
        crate::fuzz::run_all,
    )?;
    eprintln!("==> all checks passed");
    Ok(())
}
