//! `cargo xtask soak`: the time-boxed soaks of `docs/reliability.md`, with the release
//! plugin, each sampling RSS, file descriptors and threads (and device
//! memory for `fit`) into `target/tensorplug-soak/*.csv`:
//!
//! - device open/close cycles (`plugin-fpga/tests/soak_open_close.rs`);
//! - profiler start/stop cycles (`tf_profiler_scenarios.py cycles`);
//! - a Keras `fit` loop on `sim` and on a `tcp:` device served by
//!   `tensorplug-model-server` (`tests/python/soak_fit.py`), and the same
//!   on the CPU: TF's and Keras' own growth, the control; the three side
//!   by side, under the same load.
//!
//! Then `tests/python/soak_plot.py` draws `soak.png` and fails if anything
//! grew after the warm-up (`docs/reliability.md`, "Soaks").

use crate::util::{cargo, root, run};
use anyhow::{Context, Result, bail};
use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};

/// The plot's library, pinned; installed into the TF venv when missing.
const MATPLOTLIB: &str = "matplotlib==3.9.2";

/// `cargo xtask soak`.
#[derive(clap::Args)]
pub struct SoakArgs {
    /// Minutes of Keras `fit` on each device.
    #[arg(long, default_value_t = 60)]
    minutes: u32,
    /// Profiler start/stop cycles.
    #[arg(long, default_value_t = 10_000)]
    profiler_cycles: u32,
    /// Device open/close cycles.
    #[arg(long, default_value_t = 1_000)]
    open_close_cycles: u32,
    /// A short run: 1 minute of `fit` each, 300 profiler and 200
    /// open/close cycles.
    #[arg(long)]
    short: bool,
}

pub fn run_task(args: &SoakArgs) -> Result<()> {
    let (minutes, profiler, open_close) = if args.short {
        (1, 300, 200)
    } else {
        (args.minutes, args.profiler_cycles, args.open_close_cycles)
    };
    let dir = root().join("target/tensorplug-soak");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let python = root().join("target/venv/bin/python");
    if !python.exists() {
        bail!(
            "no TF venv at {}: run `cargo xtask test` once",
            python.display()
        );
    }
    let has_matplotlib = Command::new(&python)
        .args(["-c", "import matplotlib"])
        .status()
        .is_ok_and(|s| s.success());
    if !has_matplotlib {
        run(Command::new(&python).args(["-m", "pip", "install", "--quiet", MATPLOTLIB]))?;
    }
    run(&mut crate::dist::plugin_build_command(&crate::dist::FPGA))?;
    let plugin = crate::dist::plugin_built_path(&crate::dist::FPGA);

    eprintln!("==> soak 1/3: {open_close} sim device open/close cycles");
    run(cargo()
        .args(["test", "--release", "-p", "tensorplug-plugin-fpga"])
        .args(["--test", "soak_open_close", "--", "--nocapture"])
        .env("TENSORPLUG_SOAK_CYCLES", open_close.to_string())
        .env("TENSORPLUG_SOAK_DIR", &dir))?;

    eprintln!("==> soak 2/3: {profiler} profiler start/stop cycles");
    run(tf(&python, &plugin, "tf_profiler_scenarios.py")
        .args(["cycles", &profiler.to_string(), "2"])
        .env("TENSORPLUG_SOAK_CSV", dir.join("profiler.csv")))?;

    eprintln!(
        "==> soak 3/3: {minutes} min of Keras fit side by side: on sim, on a tcp: device \
         (the model server), and on the CPU (TF's own growth, the control)"
    );
    run(cargo()
        .args(["build", "--release", "-p", "tensorplug-model-fpga"])
        .args(["--features", "std", "--bin", "tensorplug-model-server"])
        .env("CARGO_TARGET_DIR", crate::util::target_dir()))?;
    let server = crate::util::target_dir().join("release/tensorplug-model-server");
    let mut child = Command::new(&server)
        .args(["--link", "tcp:127.0.0.1:0"])
        .args(["--memory", &(256u64 << 20).to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {}", server.display()))?;
    let fits = side_by_side(&python, &plugin, &dir, minutes, &mut child);
    let _ = child.kill();
    let _ = child.wait();
    fits?;

    eprintln!("==> the samples, plotted and checked");
    run(Command::new(&python)
        .arg(root().join("tests/python/soak_plot.py"))
        .arg(&dir))
}

/// The three `fit` soaks at once, so that the control runs beside the
/// devices under the same load: `fit_sim`, `fit_tcp` on `server`'s item,
/// and `fit_cpu`.
fn side_by_side(
    python: &Path,
    plugin: &Path,
    dir: &Path,
    minutes: u32,
    server: &mut std::process::Child,
) -> Result<()> {
    let mut ready = String::new();
    let stdout = server.stdout.take().context("the server's stdout")?;
    std::io::BufReader::new(stdout).read_line(&mut ready)?;
    let Some(item) = ready.trim().strip_prefix("ready ") else {
        bail!("the model server said {ready:?}");
    };
    let fit = |name: &str| {
        let mut command = tf(python, plugin, "soak_fit.py");
        command
            .arg(minutes.to_string())
            .arg(dir.join(format!("{name}.csv")))
            .arg(sample_every(minutes));
        command
    };
    let mut tcp = fit("fit_tcp");
    tcp.env("TENSORPLUG_DEVICE", item);
    let mut cpu = fit("fit_cpu");
    cpu.env("TENSORPLUG_SOAK_ON", "/CPU:0");
    let mut running = Vec::new();
    for (name, mut command) in [
        ("fit_sim", fit("fit_sim")),
        ("fit_tcp", tcp),
        ("fit_cpu", cpu),
    ] {
        eprintln!("    $ {name}: {command:?}");
        match command.spawn() {
            Ok(child) => running.push((name, child)),
            Err(error) => {
                for (_, mut child) in running {
                    let _ = child.kill();
                    let _ = child.wait();
                }
                bail!("starting {name}: {error}");
            }
        }
    }
    let mut failed = Vec::new();
    for (name, mut child) in running {
        if !child.wait().is_ok_and(|s| s.success()) {
            failed.push(name);
        }
    }
    if !failed.is_empty() {
        bail!("the fit soaks {failed:?} failed");
    }
    Ok(())
}

/// Seconds between samples: about 100 a run.
fn sample_every(minutes: u32) -> String {
    (f64::from(minutes) * 60.0 / 100.0).max(2.0).to_string()
}

fn tf(python: &Path, plugin: &Path, script: &str) -> Command {
    let mut command = Command::new(python);
    command
        .arg(root().join("tests/python").join(script))
        .env("TF_PLUGGABLE_DEVICE_LIBRARY_PATH", plugin)
        .env("TF_CPP_MIN_LOG_LEVEL", "2")
        .env_remove("TENSORPLUG_DEVICE");
    command
}
