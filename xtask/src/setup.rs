//! Fresh-machine set-up: rustup targets, Miri, apt packages and the TF venvs.

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

/// Every `tensorflow-cpu` the one plugin build is tested with, oldest
/// first (the newest patch of each minor on PyPI). The newest is
/// `target/venv`'s (`xtask/requirements.txt`, with xprof); each other gets
/// `target/tf-venvs/<version>`. The wheel requires this range, and
/// `host-bridge/src/tf_versions.rs` serves it (a test keeps the three equal).
pub const TF_VERSIONS: &[&str] = &[
    "2.15.1", "2.16.2", "2.17.1", "2.18.1", "2.19.1", "2.20.0", "2.21.0",
];

/// A TF outside the range, on which the plugin must decline (not abort).
pub const TF_UNSUPPORTED: &str = "2.14.1";

/// The LiteRT runtime the delegate is tested on (`docs/delegate.md`):
/// `target/litert-venv`, without TF.
pub const LITERT_VERSION: &str = "2.3.0";

/// What set-up produced for the later steps.
pub struct Env {
    /// The newest TF's venv Python (`target/venv`, with xprof).
    pub python: PathBuf,
    /// `(version, python)` of the other TFs the suite runs on: the oldest,
    /// or with `--tf-matrix` every one between.
    pub older: Vec<(String, PathBuf)>,
    /// The venv of [`TF_UNSUPPORTED`].
    pub unsupported: PathBuf,
    /// The `ai-edge-litert` venv's Python ([`LITERT_VERSION`]).
    pub litert: PathBuf,
}

/// What the builds need, now: the embedded targets and the apt packages
/// (`gcc` links). The rest is [`start_in_background`]'s.
pub fn ensure_builds() -> Result<()> {
    ensure_rust_targets()?;
    ensure_apt()
}

/// The set-up only the tests need, running; see [`start_in_background`].
pub struct Background(std::thread::JoinHandle<Result<Env>>);

/// Starts the set-up only the tests need (Miri, the TF venvs) on a thread
/// of its own, so the caller builds meanwhile; cheap when they are there.
/// Its commands' output goes to `target/setup.log`. `matrix`: as in
/// [`ensure_tests`].
pub fn start_in_background(matrix: bool) -> Result<Background> {
    let log = root().join("target/setup.log");
    std::fs::create_dir_all(root().join("target"))?;
    std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
    Ok(Background(std::thread::spawn(move || {
        crate::util::log_commands_to(&log);
        ensure_miri()?;
        ensure_tests(matrix)
    })))
}

impl Background {
    /// Waits for it; on failure, the error says where the output is.
    pub fn finish(self) -> Result<Env> {
        let log = root().join("target/setup.log");
        self.0
            .join()
            .map_err(|_| anyhow::anyhow!("the set-up thread panicked"))?
            .with_context(|| format!("set-up failed; its output is in {}", log.display()))
    }
}

/// The TF venvs: the newest's, the older ones the suite runs on, the
/// unsupported one. Cheap when they are there. `matrix`: a venv for every
/// version of [`TF_VERSIONS`], not only the oldest and newest.
fn ensure_tests(matrix: bool) -> Result<Env> {
    let python = ensure_venv()?;
    let older_versions = &TF_VERSIONS[..TF_VERSIONS.len() - 1];
    let older = if matrix {
        older_versions
    } else {
        &older_versions[..1]
    };
    // pip unpacks each TF (~1 GB installed) in its own venv: two at a time.
    let wanted: Vec<&str> = older.iter().copied().chain([TF_UNSUPPORTED]).collect();
    let mut venvs = Vec::new();
    for pair in wanted.chunks(2) {
        let made: Vec<Result<PathBuf>> = std::thread::scope(|scope| {
            let handles: Vec<_> = pair
                .iter()
                .map(|v| {
                    let log = crate::util::command_log();
                    scope.spawn(move || {
                        if let Some(log) = log {
                            crate::util::log_commands_to(&log);
                        }
                        ensure_tf_venv(v)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(anyhow::anyhow!("venv thread panicked")))
                })
                .collect()
        });
        venvs.extend(made);
    }
    let mut venvs = venvs.into_iter().collect::<Result<Vec<_>>>()?;
    let unsupported = venvs.pop().context("the unsupported TF's venv")?;
    let older = older.iter().map(|v| (*v).to_owned()).zip(venvs).collect();
    let litert = ensure_litert_venv()?;
    Ok(Env {
        python,
        older,
        unsupported,
        litert,
    })
}

/// What `cargo xtask hil` and `bench` need on a fresh machine: the
/// embedded targets, QEMU and the newest TF's venv (whose Python it
/// returns); cheap when they are there.
pub fn ensure_firmware_and_tf() -> Result<PathBuf> {
    ensure_rust_targets()?;
    ensure_apt()?;
    ensure_venv()
}

/// `target/tf-venvs/<version>` with `tensorflow-cpu==<version>` (not the
/// newest: that is `target/venv`, with xprof); cached: pip runs only when
/// the venv is new or its requirements changed.
pub fn ensure_tf_venv(version: &str) -> Result<PathBuf> {
    let dir = root().join(format!("target/tf-venvs/{version}"));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let requirements = root().join(format!("target/tf-venvs/{version}.txt"));
    std::fs::write(
        &requirements,
        format!("# written by cargo xtask\ntensorflow-cpu=={version}\n"),
    )
    .with_context(|| format!("writing {}", requirements.display()))?;
    ensure_venv_at(&dir, &requirements, &|_, cmd| run(cmd))
}

/// `target/litert-venv` with `ai-edge-litert==<LITERT_VERSION>` (about
/// 12 s of pip on a new machine; cached like the TF venvs); its Python.
pub fn ensure_litert_venv() -> Result<PathBuf> {
    let dir = root().join("target/litert-venv");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let requirements = root().join("target/litert-venv.txt");
    std::fs::write(
        &requirements,
        format!("# written by cargo xtask\nai-edge-litert=={LITERT_VERSION}\n"),
    )
    .with_context(|| format!("writing {}", requirements.display()))?;
    ensure_venv_at(&dir, &requirements, &|_, cmd| run(cmd))
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
    let venv = root().join("target/venv");
    let no_deps = root().join("xtask/requirements-nodeps.txt");
    let pinned = std::fs::read_to_string(&no_deps)
        .with_context(|| format!("reading {}", no_deps.display()))?;
    let stamp = venv.join(".tensorplug-requirements-nodeps");
    let python = ensure_venv_at(&venv, &root().join("xtask/requirements.txt"), &|_, cmd| {
        run(cmd)
    })?;
    if std::fs::read_to_string(&stamp).ok().as_deref() != Some(&pinned) {
        // Packages whose declared dependencies would replace tensorflow-cpu
        // or its numpy (the file says which and why).
        run(Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--no-deps",
                "-r",
            ])
            .arg(&no_deps))?;
        std::fs::write(&stamp, pinned).with_context(|| format!("writing {}", stamp.display()))?;
    }
    Ok(python)
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
            "    creating {} (tensorflow-cpu is 200-270 MB to download)",
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

/// The `tensorflow-cpu` (or `tensorflow`) version installed for `python`.
pub fn tf_version(python: &Path) -> Result<String> {
    let out = output(Command::new(python).args([
        "-c",
        "import importlib.metadata as m\n\
         for d in ('tensorflow-cpu', 'tensorflow'):\n\
         \ttry:\n\t\tprint(m.version(d)); break\n\
         \texcept m.PackageNotFoundError:\n\t\tpass",
    ]))?;
    let version = out.trim();
    if version.is_empty() {
        bail!("no tensorflow-cpu in {}", python.display());
    }
    Ok(version.to_owned())
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
