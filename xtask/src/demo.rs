//! `cargo xtask demo`: the main job on a fresh machine. Sets up a Python venv
//! with `tensorflow-cpu`, builds the plugin wheel and installs it there like a
//! user would (no `TF_PLUGGABLE_DEVICE_LIBRARY_PATH`), then runs
//! `xtask/demo/mlp_demo.py`: a Keras MLP on `/device:FPGA:0` (the simulated
//! FPGA unless `TENSORPLUG_DEVICE` says otherwise) under TF's profiler.
//!
//! The demo has its own venv (`target/demo-venv`): a plugin installed into
//! `site-packages/tensorflow-plugins/` is loaded by every TF process of that
//! venv, and the test venv (`target/venv`) must stay plugin-free.

use crate::dist;
use crate::setup::{self, VenvStep};
use crate::util::{root, run};
use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Lines of a failed command's output shown with the error.
const FAILURE_TAIL: usize = 40;

pub fn run_task() -> Result<()> {
    let venv = root().join("target/demo-venv");
    let requirements = root().join("xtask/demo/requirements.txt");
    let python = setup::ensure_venv_at(&venv, &requirements, &|step, cmd| match step {
        VenvStep::Create => with_progress("[1/4] creating the demo venv (target/demo-venv)", cmd),
        VenvStep::PipInstall => with_progress(
            "[1/4] pip install tensorflow-cpu==2.21.0 (~274 MB download the first time)",
            cmd,
        ),
    })?;
    with_progress(
        "[2/4] building the plugin (cargo build --release -p tensorplug-plugin-fpga)",
        &mut dist::plugin_build_command(&dist::FPGA),
    )?;
    let wheel = dist::write_wheel(
        &dist::FPGA,
        &dist::plugin_built_path(&dist::FPGA),
        &dist::wheel_dir(),
    )?;
    with_progress(
        &format!(
            "[3/4] pip install {}",
            wheel.strip_prefix(root()).unwrap_or(&wheel).display()
        ),
        Command::new(&python)
            .args(["-m", "pip", "install", "--disable-pip-version-check"])
            // The same version is rebuilt in place: reinstall it, and only it
            // (tensorflow-cpu came from the requirements above).
            .args(["--force-reinstall", "--no-deps"])
            .arg(&wheel),
    )?;

    let stamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let logdir = root().join(format!("target/tensorplug-demo/{stamp}"));
    eprintln!("==> [4/4] Keras MLP on /device:FPGA:0 under tf.profiler");
    run(Command::new(&python)
        .arg(root().join("xtask/demo/mlp_demo.py"))
        .arg(&logdir)
        // The installed wheel is the plugin; loading a second copy would
        // register the FPGA platform twice.
        .env_remove("TF_PLUGGABLE_DEVICE_LIBRARY_PATH"))
    .context("the demo script failed (its output is above)")
}

/// Runs `cmd` with a spinner showing its newest output line; prints the
/// step's name and time, and on failure the tail of the output.
fn with_progress(label: &str, cmd: &mut Command) -> Result<()> {
    eprintln!("==> {label}");
    let start = Instant::now();
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("could not start {:?}", cmd.get_program()))?;
    let (lines_tx, lines) = mpsc::channel();
    let readers = [
        child
            .stdout
            .take()
            .map(|out| spawn_reader(out, lines_tx.clone())),
        child.stderr.take().map(|err| spawn_reader(err, lines_tx)),
    ];

    let spinner = ProgressBar::new_spinner();
    spinner.set_style(
        ProgressStyle::with_template("    {spinner} [{elapsed}] {wide_msg}")
            .context("spinner template")?,
    );
    spinner.enable_steady_tick(Duration::from_millis(120));
    let mut output = Vec::new();
    // Ends when both pipes are closed (the readers dropped their senders).
    for line in lines {
        let shown = line.trim();
        if !shown.is_empty() {
            spinner.set_message(shown.to_string());
        }
        output.push(line);
    }
    spinner.finish_and_clear();
    for reader in readers.into_iter().flatten() {
        // A reader only ends early on a read error; the status tells.
        let _ = reader.join();
    }
    let status = child.wait().context("waiting for the command")?;
    if !status.success() {
        let skip = output.len().saturating_sub(FAILURE_TAIL);
        for line in &output[skip..] {
            eprintln!("    | {line}");
        }
        bail!("{label}: failed ({status})");
    }
    eprintln!("    ok ({:.1}s)", start.elapsed().as_secs_f64());
    Ok(())
}

/// Sends each line of `pipe` (progress bars' `\r` updates count as lines).
fn spawn_reader(
    pipe: impl Read + Send + 'static,
    lines: mpsc::Sender<String>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut reader = BufReader::new(pipe);
        let mut buf = Vec::new();
        while reader.read_until(b'\n', &mut buf).is_ok_and(|n| n > 0) {
            for part in String::from_utf8_lossy(&buf).split('\r') {
                if lines.send(part.trim_end().to_string()).is_err() {
                    return;
                }
            }
            buf.clear();
        }
    })
}
