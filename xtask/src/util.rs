//! Small helpers for running commands with clear output and errors.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

/// The `cargo` that invoked us.
pub fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(root());
    cmd
}

/// [`cargo`] whose workspace crates compile through `clippy-driver` with
/// `-D warnings`, as `cargo clippy` runs it, but with code generation:
/// one compile both lints the crates and builds what the tests run
/// (`docs/ci.md`). The dependencies build with plain `rustc`. Every debug
/// build of a `cargo xtask test` run goes through this, so that none of
/// them sees the others' crates as stale.
pub fn cargo_linted() -> Result<Command> {
    let sysroot = output(cargo_rustc().args(["--print", "sysroot"]))?;
    let driver = Path::new(sysroot.trim()).join("bin/clippy-driver");
    if !driver.is_file() {
        bail!(
            "no {}: the toolchain needs its clippy component (rust-toolchain.toml lists it)",
            driver.display()
        );
    }
    let mut cmd = cargo();
    cmd.env("RUSTC_WORKSPACE_WRAPPER", driver)
        // `cargo clippy -- -D warnings` passes its arguments this way.
        .env(
            "CLIPPY_ARGS",
            "-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__",
        );
    Ok(cmd)
}

/// The `rustc` cargo runs here (rustup's proxy resolves the toolchain of
/// `rust-toolchain.toml` from the workspace root).
fn cargo_rustc() -> Command {
    let mut cmd = Command::new(std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()));
    cmd.current_dir(root());
    cmd
}

/// The SDK's crates the root `Cargo.toml` optimizes in the dev profile:
/// the simulated device's compute, which the tests run through TF.
pub const OPTIMIZED_IN_DEV: &[&str] = &["tensorplug-model-fpga"];

/// `cargo --config` arguments that build [`OPTIMIZED_IN_DEV`] at opt-level
/// 0 again, for builds that run none of that compute (the `no_std`
/// builds).
pub fn unoptimized_sdk(cmd: &mut Command) -> &mut Command {
    for package in OPTIMIZED_IN_DEV {
        cmd.args([
            "--config",
            &format!("profile.dev.package.{package}.opt-level=0"),
        ]);
    }
    cmd
}

thread_local! {
    /// Where [`run`] sends the commands of this thread, if not to ours.
    static COMMAND_LOG: std::cell::RefCell<Option<PathBuf>> = const { std::cell::RefCell::new(None) };
}

/// From now on, [`run`] on this thread appends each command line and its
/// output to `log` instead of printing them (for work in the background).
pub fn log_commands_to(log: &Path) {
    COMMAND_LOG.with(|l| *l.borrow_mut() = Some(log.to_path_buf()));
}

/// The log [`log_commands_to`] set on this thread.
pub fn command_log() -> Option<PathBuf> {
    COMMAND_LOG.with(|l| l.borrow().clone())
}

/// Runs `cmd`, echoing it first; fails with the command line and exit status.
pub fn run(cmd: &mut Command) -> Result<()> {
    let line = describe(cmd);
    if let Some(log) = command_log() {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .with_context(|| format!("opening {}", log.display()))?;
        writeln!(file, "$ {line}")?;
        cmd.stdout(file.try_clone()?).stderr(file);
    } else {
        eprintln!("    $ {line}");
    }
    let status = cmd
        .status()
        .with_context(|| format!("could not start `{line}`"))?;
    if !status.success() {
        bail!("`{line}` failed ({status})");
    }
    Ok(())
}

/// Runs `cmd` and returns its stdout; fails with stderr on a non-zero exit.
pub fn output(cmd: &mut Command) -> Result<String> {
    let line = describe(cmd);
    let out = cmd
        .output()
        .with_context(|| format!("could not start `{line}`"))?;
    if !out.status.success() {
        bail!(
            "`{line}` failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    String::from_utf8(out.stdout).with_context(|| format!("`{line}` printed non-UTF-8"))
}

/// Runs one named step of a task, timing it and naming it in any error.
pub fn step(name: &str, f: impl FnOnce() -> Result<()>) -> Result<()> {
    eprintln!("==> {name}");
    let start = Instant::now();
    f().with_context(|| format!("step failed: {name}"))?;
    eprintln!("    ok: {name} ({:.1}s)", start.elapsed().as_secs_f64());
    Ok(())
}

fn describe(cmd: &Command) -> String {
    let mut line = cmd.get_program().to_string_lossy().into_owned();
    for arg in cmd.get_args() {
        line.push(' ');
        line.push_str(&arg.to_string_lossy());
    }
    line
}

/// Cargo's target dir: `$CARGO_TARGET_DIR` (relative to the workspace root)
/// or `<root>/target`.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => root().join(dir),
        None => root().join("target"),
    }
}

/// The nice value of the checks that run beside the older TFs' suite.
pub const CHECKS_NICE: i32 = 10;

/// Lowers the calling thread's priority to [`CHECKS_NICE`], so the commands
/// it starts from now on yield the CPU to those of threads started before
/// (the real-TF suite in the background). Linux keeps a nice value per
/// thread and children inherit their parent thread's. Best effort: a
/// failure only warns.
pub fn yield_to_background() {
    let renice = std::fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|link| link.file_name().map(|tid| tid.to_owned()))
        .map(|tid| {
            Command::new("renice")
                .args(["-n", &CHECKS_NICE.to_string(), "-p"])
                .arg(tid)
                .stdout(std::process::Stdio::null())
                .status()
        });
    if !matches!(renice, Some(Ok(status)) if status.success()) {
        eprintln!(
            "    warning: cannot lower this thread's priority; the checks run at full priority"
        );
    }
}

/// The last `lines` lines of `text`.
pub fn tail(text: &str, lines: usize) -> String {
    let last: Vec<&str> = text.lines().rev().take(lines).collect();
    last.into_iter().rev().collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_sdk_crates_optimized_in_dev_are_the_manifests() {
        let manifest = std::fs::read_to_string(super::root().join("Cargo.toml")).unwrap();
        let optimized: Vec<&str> = manifest
            .lines()
            .filter_map(|l| l.strip_prefix("[profile.dev.package.")?.strip_suffix(']'))
            .filter(|package| package.starts_with("tensorplug-"))
            .collect();
        assert_eq!(optimized, super::OPTIMIZED_IN_DEV);
    }
}
