//! Fresh-machine set-up: rustup targets, Miri, apt packages and the TF venv.

use crate::util::{output, root, run};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Targets the `no_std` crates are built for.
pub const EMBEDDED_TARGETS: &[&str] = &[
    "thumbv7em-none-eabihf",
    "thumbv6m-none-eabi",
    "riscv32imc-unknown-none-elf",
];

/// Debian packages the suite needs, as (command that proves it, package).
const APT_PACKAGES: &[(&str, &str)] = &[
    ("gcc", "gcc"),
    // The HIL tests run the firmware on an emulated Cortex-M4.
    ("qemu-system-arm", "qemu-system-arm"),
];

/// What set-up produced for the later steps.
pub struct Env {
    /// The venv's Python, with tensorflow-cpu installed.
    pub python: PathBuf,
}

/// Installs everything the suite needs; cheap when it is already there.
pub fn ensure_all() -> Result<Env> {
    ensure_rust_targets()?;
    ensure_miri()?;
    ensure_apt()?;
    let python = ensure_venv()?;
    Ok(Env { python })
}

fn ensure_rust_targets() -> Result<()> {
    run(Command::new("rustup")
        .current_dir(root())
        .args(["target", "add"])
        .args(EMBEDDED_TARGETS))
}

/// Miri runs on the machine's nightly; install it there if it is missing.
fn ensure_miri() -> Result<()> {
    let have_nightly = Command::new("rustup")
        .args(["run", "nightly", "rustc", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_nightly {
        run(Command::new("rustup").args([
            "toolchain",
            "install",
            "nightly",
            "--profile",
            "minimal",
        ]))?;
    }
    run(Command::new("rustup").args([
        "component",
        "add",
        "--toolchain",
        "nightly",
        "miri",
        "rust-src",
    ]))
}

fn ensure_apt() -> Result<()> {
    let missing: Vec<&str> = APT_PACKAGES
        .iter()
        .filter(|(cmd, _)| !on_path(cmd))
        .map(|(_, pkg)| *pkg)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    if !is_root() {
        bail!(
            "missing packages {missing:?}; run `sudo apt-get install -y {}`",
            missing.join(" ")
        );
    }
    run(Command::new("apt-get").arg("update"))?;
    run(Command::new("apt-get")
        .args(["install", "-y", "--no-install-recommends"])
        .args(&missing))
}

/// Creates `target/venv` with `xtask/requirements.txt`, skipping pip when the
/// stamp shows the same requirements were installed before.
/// The TF venv `target/venv` (created or updated from `xtask/requirements.txt`).
pub fn ensure_venv() -> Result<PathBuf> {
    ensure_venv_at(
        &root().join("target/venv"),
        &root().join("xtask/requirements.txt"),
        &|_, cmd| run(cmd),
    )
}

/// What [`ensure_venv_at`] asks its runner to do.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum VenvStep {
    /// `python3 -m venv <venv>`.
    Create,
    /// `<venv>/bin/python -m pip install ... -r <requirements>`.
    PipInstall,
}

/// Creates `venv` with `requirements`, skipping pip when the stamp shows the
/// same requirements were installed before; `runner` runs each command (the
/// demo shows progress).
pub fn ensure_venv_at(
    venv: &Path,
    requirements: &Path,
    runner: &dyn Fn(VenvStep, &mut Command) -> Result<()>,
) -> Result<PathBuf> {
    let python = venv.join("bin/python");
    let wanted = std::fs::read_to_string(requirements)
        .with_context(|| format!("reading {}", requirements.display()))?;
    let stamp = venv.join(".tensorplug-requirements");
    if python.exists() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(&wanted) {
        return Ok(python);
    }
    if !python.exists() {
        eprintln!(
            "    creating {} (tensorflow-cpu is ~274 MB to download)",
            venv.display()
        );
        runner(
            VenvStep::Create,
            Command::new("python3").arg("-m").arg("venv").arg(venv),
        )?;
    }
    runner(
        VenvStep::PipInstall,
        Command::new(&python)
            .args(["-m", "pip", "install", "--disable-pip-version-check", "-r"])
            .arg(requirements),
    )?;
    std::fs::write(&stamp, wanted).with_context(|| format!("writing {}", stamp.display()))?;
    Ok(python)
}

/// The include directory of the installed TensorFlow (its C headers).
pub fn tf_include_dir(python: &PathBuf) -> Result<PathBuf> {
    let out = output(Command::new(python).args([
        "-c",
        "import importlib.util, os; \
         print(os.path.join(os.path.dirname(importlib.util.find_spec('tensorflow').origin), 'include'))",
    ]))?;
    let dir = PathBuf::from(out.trim());
    if !dir.join("tensorflow/c/tf_status.h").exists() {
        bail!("TensorFlow headers not found under {}", dir.display());
    }
    Ok(dir)
}

fn on_path(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {cmd}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}
