//! The workspace's test binaries, two at a time.
//!
//! `cargo test` runs one test binary after another, and on two cores most
//! of them leave one idle while they wait for TF, QEMU or a device timeout
//! (measured: 1.55 cores busy on average over the suite). `cargo xtask
//! test` builds them with `cargo test --no-run` and runs them here instead:
//! `LANES` at once, the longest first, each binary's output printed whole
//! when it ends (nothing interleaves, nothing is lost). The binaries whose
//! bounds do not hold on a loaded machine run afterwards, alone.

use crate::idle::IdleBuild;
use crate::util::{cargo_linted, output};
use anyhow::{Context, Result, bail};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Instant;

/// Binaries at once.
const LANES: usize = 2;

/// The longest binaries (measured on a 2-core machine), started first so
/// that the short ones fill the gaps at the end.
const LONGEST_FIRST: &[&str] = &[
    "tf_fault_matrix",
    "hil_ops",
    "wheel",
    "hil",
    "tf_graph",
    "tf_variables",
    "int8_vs_tflite",
    "tf_two_plugins",
    "tf_device",
    "tf_multi_worker",
    "tf_kernels",
    "tf_tools",
    "op_sweep",
];

/// Binaries run after the others, alone: the profiler tests' 10 µs
/// launch bound (the sim device's clock sync, `docs/tf-abi.md`) does not
/// hold beside another binary, and the fault matrix's healthy first epoch
/// over QEMU's UART missed its 6000 ms waits beside `hil_ops` (three CI
/// runs of stop 60 out of four).
pub const ALONE: &[&str] = &["tf_profiler", "tf_fault_matrix"];

/// Of [`ALONE`], those beside which a paused [`IdleBuild`] runs: the
/// fault matrix's cases keep about one core busy, and the idle build takes
/// the other. Beside the lanes it would take little (they keep both cores
/// busy) and slowed them anyway: `wheel` took 234 s, not 189, and
/// `hil_ops` 314 s, not 246, in stop 78's run (QEMU's UART wakes for each
/// byte). The profiler's bound is about microseconds.
const IDLE_WORK_BESIDE: &[&str] = &["tf_fault_matrix"];

/// Of [`ALONE`], those `cargo xtask test` runs beside the checks that
/// follow the tests instead (`tf_suite::Beside`), which run at nice 10.
/// None since stop 73: the fault matrix ran there in stop 72 (its cases
/// keep about one core busy, the other idled while they ran alone), but
/// nice 10 did not keep its bounds: `tcp_bytes_corrupted_mid_fit` failed
/// beside the fuzz smoke in one clean-clone run of three.
pub const BESIDE_CHECKS: &[&str] = &[];

/// One test executable.
#[derive(Clone)]
pub struct Binary {
    /// `<package>/<target>`, for the report.
    name: String,
    /// Its target's name (`wheel`, `tf_device`, …).
    pub target: String,
    /// Where cargo would run it: its package's root.
    dir: PathBuf,
    pub exe: PathBuf,
}

/// Builds every target of the workspace, linted (`cargo test --workspace
/// --all-targets --no-run` through `util::cargo_linted`: clippy's
/// targets, benches and examples included); returns the test binaries
/// `cargo test` would run (benches and examples are only built).
pub fn build() -> Result<Vec<Binary>> {
    let mut cmd = cargo_linted()?;
    cmd.args([
        "test",
        "--workspace",
        "--all-targets",
        "--no-run",
        "--message-format=json",
    ])
    .stderr(Stdio::inherit());
    let mut found = Vec::new();
    for line in output(&mut cmd)?.lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        // Test harnesses only: the artifacts of plain binaries the tests
        // need (`tensorplug-model-server`) have an executable too.
        let Some(exe) = message["executable"]
            .as_str()
            .filter(|_| message["profile"]["test"].as_bool() == Some(true))
        else {
            continue;
        };
        let kinds = message["target"]["kind"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if kinds.iter().any(|k| k == "bench" || k == "example") {
            continue;
        }
        let manifest = PathBuf::from(message["manifest_path"].as_str().unwrap_or_default());
        let target = message["target"]["name"].as_str().unwrap_or_default();
        let package = message["package_id"].as_str().unwrap_or_default();
        // `path+file:///…/core#tensorplug-core@0.1.0` or `…#0.1.0`.
        let package = package.rsplit_once('#').map_or(package, |(path, rest)| {
            rest.split_once('@')
                .map_or_else(|| path.rsplit('/').next().unwrap_or(path), |(name, _)| name)
        });
        found.push(Binary {
            name: format!("{package}/{target}"),
            target: target.to_owned(),
            dir: manifest
                .parent()
                .context("a manifest's directory")?
                .to_owned(),
            exe: PathBuf::from(exe),
        });
    }
    if found.is_empty() {
        bail!("cargo test --no-run listed no test binary");
    }
    Ok(found)
}

/// Runs `binaries` with `envs`, [`LANES`] at once, then the [`ALONE`] ones
/// (resuming the paused `idle` during [`IDLE_WORK_BESIDE`]); fails naming
/// every binary that failed.
pub fn run(
    binaries: Vec<Binary>,
    envs: &[(&'static str, PathBuf)],
    idle: Option<&IdleBuild>,
) -> Result<()> {
    let rank = |b: &Binary| {
        LONGEST_FIRST
            .iter()
            .position(|name| *name == b.target)
            .unwrap_or(LONGEST_FIRST.len())
    };
    let (alone, mut shared): (Vec<Binary>, Vec<Binary>) = binaries
        .into_iter()
        .partition(|b| ALONE.contains(&b.target.as_str()));
    shared.sort_by_key(rank);
    let failed = Mutex::new(Vec::new());
    let queue = Mutex::new(shared.into_iter());
    std::thread::scope(|scope| {
        for _ in 0..LANES {
            scope.spawn(|| {
                loop {
                    let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
                    let Some(binary) = next else { break };
                    if !run_one(&binary, envs) {
                        failed
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(binary.name);
                    }
                }
            });
        }
    });
    let mut failed = failed.into_inner().unwrap_or_else(|e| e.into_inner());
    for binary in alone {
        let beside = idle.filter(|_| IDLE_WORK_BESIDE.contains(&binary.target.as_str()));
        if let Some(idle) = beside {
            idle.resume();
        }
        if !run_one(&binary, envs) {
            failed.push(binary.name.clone());
        }
        if let Some(idle) = beside {
            idle.pause();
        }
    }
    if !failed.is_empty() {
        bail!(
            "{} test binar{} failed: {} (their output is above)",
            failed.len(),
            if failed.len() == 1 { "y" } else { "ies" },
            failed.join(", ")
        );
    }
    Ok(())
}

/// Runs one binary; prints its output whole when it ends; whether it passed.
fn run_one(binary: &Binary, envs: &[(&'static str, PathBuf)]) -> bool {
    static PRINT: Mutex<()> = Mutex::new(());
    let started = Instant::now();
    let result = Command::new(&binary.exe)
        .current_dir(&binary.dir)
        .env("CARGO_MANIFEST_DIR", &binary.dir)
        .envs(envs.iter().cloned())
        .stdin(Stdio::null())
        .output();
    let _print = PRINT.lock().unwrap_or_else(|e| e.into_inner());
    let seconds = started.elapsed().as_secs_f64();
    match result {
        Ok(out) => {
            eprintln!("     Running {} ({seconds:.1}s)", binary.name);
            eprint!("{}", String::from_utf8_lossy(&out.stdout));
            eprint!("{}", String::from_utf8_lossy(&out.stderr));
            if !out.status.success() {
                eprintln!("error: {} failed ({})", binary.name, out.status);
            }
            out.status.success()
        }
        Err(e) => {
            eprintln!(
                "error: cannot run {} ({}): {e}",
                binary.name,
                binary.exe.display()
            );
            false
        }
    }
}
