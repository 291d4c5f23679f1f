//! `cargo xtask test`: the whole suite, as CI runs it.

use crate::setup::{self, EMBEDDED_TARGETS};
use crate::util::{cargo, run as run_cmd, step};
use anyhow::{Result, bail};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct TestArgs {
    /// Skip set-up (rustup, apt, venvs); for quick local re-runs.
    #[arg(long)]
    pub no_setup: bool,
    /// Run the real-TF suite on every TF of the tested range (2.15 to
    /// 2.21), not only the oldest and the newest, and every real-TF test
    /// on each (the default leaves `tf_suite::NEWEST_ONLY` to the newest).
    #[arg(long)]
    pub tf_matrix: bool,
    /// Also run the fault matrix's cases left out of the default run
    /// (`tests/tests/tf_fault_matrix.rs`, `docs/reliability.md`).
    #[arg(long)]
    pub fault_matrix: bool,
    /// Thread schedules Miri tries per `sim` test (seeds `0..N`); CI's
    /// default keeps its time, more explore more interleavings.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..))]
    pub miri_seeds: u32,
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
    // `model-fpga` with `defmt`, what the firmware logs with: the
    // firmware's own builds for thumbv7em (its clippy and `cargo xtask
    // size`, every board) build it, in release.
    ("tensorplug-model-fpga", "", EMBEDDED_TARGETS),
    // The example second device: a vendor driver on core alone.
    ("tensorplug-device-npu", "", EMBEDDED_TARGETS),
];

pub fn run(args: &TestArgs) -> Result<()> {
    // What the builds need now; Miri and the TF venvs beside the builds.
    let mut setup = None;
    if !args.no_setup {
        step("set up the builds (rustup targets, apt)", || {
            setup::ensure_builds()?;
            eprintln!("    Miri and the TF venvs: in the background (target/setup.log)");
            setup = Some(setup::start_in_background(args.tf_matrix)?);
            Ok(())
        })?;
    }
    step("cargo fmt --check", || {
        run_cmd(cargo().args(["fmt", "--all", "--", "--check"]))
    })?;
    step(
        "no import loops between a crate's modules",
        crate::import_loops::run,
    )?;
    step(
        "firmware: cargo fmt --check, clippy -D warnings for every board",
        || {
            let firmware = || {
                let mut cmd = cargo();
                cmd.current_dir(crate::util::root().join("firmware"))
                    .env_remove("CARGO_TARGET_DIR");
                cmd
            };
            run_cmd(firmware().args(["fmt", "--", "--check"]))?;
            let boards = tensorplug_boards::all(&crate::flash::firmware::boards_dir())?;
            for board in &boards {
                let mut cmd = firmware();
                cmd.args(["clippy", "--release", "--locked"]);
                crate::flash::firmware::select_board(&mut cmd, board);
                run_cmd(cmd.args(["--", "-D", "warnings"]))?;
            }
            Ok(())
        },
    )?;
    step(
        "firmware size of every board vs. firmware/size.json (fails on > 10 % growth)",
        || {
            crate::size::run_task(&crate::size::SizeArgs {
                update: false,
                board: None,
            })
        },
    )?;
    let mut prebuilt = Vec::new();
    // Clippy runs inside the two builds below (`util::cargo_linted`):
    // their compiles lint the workspace's crates with `-D warnings`, all
    // targets, as `cargo clippy --workspace --all-targets` would.
    step(
        "build what the tests load, linted: both TF plugins, the model server",
        || {
            prebuilt = prebuild()?;
            Ok(())
        },
    )?;
    let mut binaries = Vec::new();
    step(
        "build and lint every target of the workspace (clippy -D warnings)",
        || {
            binaries = crate::lanes::build()?;
            Ok(())
        },
    )?;
    let mut env = None;
    if let Some(setup) = setup {
        step("set-up in the background: Miri, the TF venvs", || {
            env = Some(setup.finish()?);
            Ok(())
        })?;
    }
    // Includes the HIL tests (`tests/tests/hil.rs`: the firmware under QEMU).
    let newest = setup::TF_VERSIONS[setup::TF_VERSIONS.len() - 1];
    let mut envs = prebuilt.clone();
    if let Some(env) = &env {
        envs.push(("TENSORPLUG_PYTHON", env.python.clone()));
        envs.push(("TENSORPLUG_PYTHON_UNSUPPORTED_TF", env.unsupported.clone()));
        envs.push(("TENSORPLUG_LITERT_PYTHON", env.litert.clone()));
    }
    // With older TFs to test, `BESIDE_CHECKS` run beside the checks (on the
    // suite's thread, before the older TFs), else with the lanes' alone.
    let background = env.as_ref().is_some_and(|env| !env.older.is_empty());
    let (beside, in_lanes): (Vec<_>, Vec<_>) = binaries
        .iter()
        .cloned()
        .partition(|b| background && crate::lanes::BESIDE_CHECKS.contains(&b.target.as_str()));
    let matrix_beside = beside.iter().any(|b| b.target == "tf_fault_matrix");
    // The fuzz smoke's build, paused: it runs on the core the fault
    // matrix leaves idle (`lanes::IDLE_WORK_BESIDE`); the checks raise it.
    let fuzz_build = crate::fuzz::start_idle_build()
        .map_err(|e| eprintln!("    the fuzz build waits for its step: {e:#}"))
        .ok();
    step(
        &format!("the workspace's tests (TF {newest}), two binaries at a time"),
        || crate::lanes::run(in_lanes.clone(), &envs, fuzz_build.as_ref()),
    )?;
    // The real-TF tests again on the older TFs, beside the checks below,
    // which yield the CPU to them.
    let suite = match env.as_ref().filter(|_| background) {
        Some(env) => {
            let beside = crate::tf_suite::Beside {
                binaries: beside,
                args: if args.fault_matrix {
                    vec!["--include-ignored".to_owned()]
                } else {
                    Vec::new()
                },
                envs: envs.clone(),
            };
            Some(crate::tf_suite::start(
                env,
                &prebuilt,
                &binaries,
                args.tf_matrix,
                beside,
            )?)
        }
        None => None,
    };
    if suite.is_some() {
        crate::util::yield_to_background();
    }
    let checks_nice = if suite.is_some() {
        crate::util::CHECKS_NICE
    } else {
        0
    };
    let checks = doc_tests(args, &prebuilt, env.as_ref(), matrix_beside).and_then(|()| {
        // From here on it shares the CPU as the checks do (not beside the
        // fault matrix's full grid, which `--fault-matrix` runs above).
        if let Some(build) = &fuzz_build {
            build.raise(checks_nice);
        }
        checks(env.as_ref(), args.miri_seeds, fuzz_build)
    });
    // Even when a check failed: report the suite rather than orphan it.
    let suite = suite.map_or(Ok(()), crate::tf_suite::Background::finish);
    checks.and(suite)?;
    eprintln!("==> all checks passed");
    Ok(())
}

/// The doc tests; with `--fault-matrix`, the fault matrix's ignored cases
/// too, unless they run beside the checks (`matrix_beside`).
fn doc_tests(
    args: &TestArgs,
    prebuilt: &[(&'static str, PathBuf)],
    env: Option<&setup::Env>,
    matrix_beside: bool,
) -> Result<()> {
    step("the workspace's doc tests", || {
        run_cmd(crate::util::cargo_linted()?.args(["test", "--workspace", "--doc"]))
    })?;
    if args.fault_matrix && !matrix_beside {
        step("the rest of the fault matrix (its ignored cases)", || {
            let mut cmd = crate::util::cargo_linted()?;
            cmd.args([
                "test",
                "-p",
                "tensorplug-tests",
                "--test",
                "tf_fault_matrix",
            ])
            .args(["--", "--ignored"])
            .envs(prebuilt.iter().cloned());
            if let Some(env) = env {
                cmd.env("TENSORPLUG_PYTHON", &env.python);
            }
            run_cmd(&mut cmd)
        })?;
    }
    Ok(())
}

/// The checks after the workspace tests: Miri, loom, the headers, the
/// `no_std` builds and the fuzz smoke run.
fn checks(
    env: Option<&setup::Env>,
    miri_seeds: u32,
    fuzz_build: Option<crate::idle::IdleBuild>,
) -> Result<()> {
    let newest = setup::TF_VERSIONS[setup::TF_VERSIONS.len() - 1];
    step("Miri: ring unit tests", crate::checks::miri_ring)?;
    step("Miri: abi raw-pointer tests", crate::checks::miri_abi)?;
    step(
        &format!("Miri: sim device, driver and model threads ({miri_seeds} schedules)"),
        || crate::checks::miri_sim(miri_seeds),
    )?;
    step("loom: ring model", crate::checks::loom_ring)?;
    step(
        "device ABI C header is up to date",
        crate::header::check_fresh,
    )?;
    step(
        "the checked-in prost types are up to date",
        crate::protos::check_fresh,
    )?;
    step(
        &format!("TF ABI layout check (abi vs. the TF {newest} headers)"),
        || crate::layout::run(env.map(|env| env.python.as_path()), true),
    )?;
    for (version, python) in env.iter().flat_map(|env| &env.older) {
        let what = format!("TF ABI layout check (abi vs. the TF {version} headers)");
        step(&what, || crate::layout::run(Some(python), false))?;
    }
    // One build per package and features, for all its targets at once.
    for (package, features, targets) in NO_STD_BUILDS {
        let what = format!(
            "no_std build: {package} [{features}] for {}",
            targets.join(", ")
        );
        step(&what, || {
            let mut cmd = cargo();
            crate::util::unoptimized_sdk(&mut cmd)
                .args(["build", "--package", package, "--no-default-features"])
                .args(["--features", features]);
            for target in *targets {
                cmd.args(["--target", target]);
            }
            run_cmd(&mut cmd)
        })?;
    }
    if let Some(build) = fuzz_build {
        step("the fuzz targets' build, begun on idle CPU time", || {
            build.finish()
        })?;
    }
    step(
        "cargo xtask fuzz: every target, 10k runs each",
        crate::fuzz::run_all,
    )?;
    Ok(())
}

/// Builds, into `target/debug`, the artifacts the tests would otherwise each
/// build into a target dir of their own (`tests/src/lib.rs`); returns the
/// variables that name them, and this xtask for the wheel tests' `dist`.
fn prebuild() -> Result<Vec<(&'static str, PathBuf)>> {
    run_cmd(crate::util::cargo_linted()?.args([
        "build",
        "--package",
        "tensorplug-plugin-fpga",
        "--package",
        "tensorplug-plugin-npu",
        "--package",
        "tensorplug-model-fpga",
        "--features",
        "tensorplug-model-fpga/std",
        "--lib",
        "--bin",
        "tensorplug-model-server",
    ]))?;
    let debug = crate::util::target_dir().join("debug");
    let built = [
        ("TENSORPLUG_PLUGIN", debug.join("libtensorplug_fpga.so")),
        ("TENSORPLUG_NPU_PLUGIN", debug.join("libtensorplug_npu.so")),
        (
            "TENSORPLUG_MODEL_SERVER",
            debug.join("tensorplug-model-server"),
        ),
        ("TENSORPLUG_XTASK", std::env::current_exe()?),
    ];
    for (name, path) in &built {
        if !path.is_file() {
            bail!("{name}: {} was not built", path.display());
        }
    }
    Ok(built.into())
}
