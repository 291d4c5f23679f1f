//! The real-TF tests again on the older TFs of the range, and first the
//! newest TF's binaries that must not share the machine with another test
//! binary ([`crate::lanes::BESIDE_CHECKS`]; none since stop 73).
//!
//! `cargo test --workspace` has built the test binaries; they are run again
//! directly (no cargo build, no lock on the target directory) with
//! `TENSORPLUG_PYTHON` pointing at each TF's venv, one run after another
//! on a thread of their own, beside the checks that follow (which run at a
//! lower priority: `util::yield_to_background`). Each run's output goes to
//! `target/tf-suite/<version>.log`; [`Background::finish`] reports them.

// Real-TF tests whose bounds do not hold on a loaded machine, as in the
// workspace run: [`start`] runs them before it returns, alone.
use crate::lanes::ALONE as LOAD_SENSITIVE;
use crate::setup::Env;
use crate::util::root;
use anyhow::{Context, Result, bail};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The test targets that run real TensorFlow (`tests/tests/`).
pub const REAL_TF_TESTS: &[&str] = &[
    "tf_device",
    "tf_kernels",
    "tf_graph",
    "tf_variables",
    "tf_multi_worker",
    "tf_tools",
    "tf_profiler",
    "tf_two_plugins",
    "kernels_vs_tf",
    "op_sweep",
    "xspace_tf",
    "wheel",
    "tflite_delegate",
];

/// Real-TF tests the default run leaves to the newest TF (`--tf-matrix`
/// runs them on every TF): `tf_multi_worker`, two TF workers training on
/// their devices (36 s of the 2.15 run's 359 s), checks TF's distributed
/// runtime over our device, through the same C API calls on every TF.
/// What depends on the TF version stays: the C API and its structs,
/// Keras 2's graphs, the kernels against that TF's CPU, the profiler's
/// protos, the wheel, TF's own tools, TFLite.
pub const NEWEST_ONLY: &[&str] = &["tf_multi_worker"];

/// One run: a TF's suite, or the newest TF's binaries beside the checks.
pub struct Outcome {
    /// What ran, for the report.
    what: String,
    /// Print its whole log when it passed, not only its summary.
    whole: bool,
    log: PathBuf,
    elapsed: Duration,
    /// The binaries that failed (or could not start), with why.
    failed: Vec<String>,
}

/// The runs, on a thread of their own.
pub struct Background(JoinHandle<Vec<Outcome>>);

/// The newest TF's binaries the background thread runs first, alone
/// among the tests, and their arguments.
pub struct Beside {
    /// The binaries of [`crate::lanes::BESIDE_CHECKS`], from `lanes::build`.
    pub binaries: Vec<crate::lanes::Binary>,
    /// Their test harness's arguments (`--include-ignored` for the whole
    /// fault matrix).
    pub args: Vec<String>,
    /// Every variable the workspace's tests run with.
    pub envs: Vec<(&'static str, PathBuf)>,
}

/// Runs the load-sensitive real-TF tests on each of `env.older` now, then
/// starts, on a thread of their own, `beside` (on the newest TF) and then
/// the older TFs' other tests, one run after another, so the caller's
/// checks run beside them. `prebuilt`: the variables that name what the
/// tests load (`test::prebuild`).
/// `built`: the workspace's test binaries (`lanes::build`).
/// `every_test`: [`NEWEST_ONLY`]'s too (`--tf-matrix`).
pub fn start(
    env: &Env,
    prebuilt: &[(&'static str, PathBuf)],
    built: &[crate::lanes::Binary],
    every_test: bool,
    beside: Beside,
) -> Result<Background> {
    let (sensitive, rest): (Vec<_>, Vec<_>) = binaries(built)?
        .into_iter()
        .filter(|(name, _)| every_test || !NEWEST_ONLY.contains(&name.as_str()))
        .partition(|(name, _)| LOAD_SENSITIVE.contains(&name.as_str()));
    let prebuilt = prebuilt.to_vec();
    let runs = env.older.clone();
    let (xprof, unsupported) = (env.python.clone(), env.unsupported.clone());
    let short_grid = if every_test { "0" } else { "1" };
    let dir = root().join("target/tf-suite");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let run = move |binaries: &[(String, PathBuf)], python: &PathBuf, log: &PathBuf| {
        let envs = [
            ("TENSORPLUG_PYTHON", python.clone()),
            // xprof does not install beside TF 2.15-2.18 (protobuf pins):
            // the profiler tests run its converters here.
            ("TENSORPLUG_XPROF_PYTHON", xprof.clone()),
            ("TENSORPLUG_PYTHON_UNSUPPORTED_TF", unsupported.clone()),
            // The tests' largest models are left to the newest TF's run
            // (the lanes); `--tf-matrix` runs them here too.
            ("TENSORPLUG_SHORT_GRID", short_grid.into()),
        ];
        let envs: Vec<_> = envs.into_iter().chain(prebuilt.iter().cloned()).collect();
        run_all(binaries, &[], &envs, log)
    };
    let newest = crate::setup::TF_VERSIONS[crate::setup::TF_VERSIONS.len() - 1];
    let beside_log = dir.join(format!("{newest}-beside-the-checks.log"));
    let _ = std::fs::remove_file(&beside_log);
    let mut outcomes = Vec::new();
    for (version, python) in &runs {
        let log = dir.join(format!("{version}.log"));
        // Each run's log starts empty: the summary counts its lines.
        let _ = std::fs::remove_file(&log);
        let alone: Vec<&str> = sensitive.iter().map(|(name, _)| name.as_str()).collect();
        eprintln!(
            "==> the real-TF suite on TF {version}: {} alone, the rest beside the next checks",
            alone.join(", ")
        );
        let start = Instant::now();
        let failed = run(&sensitive, python, &log);
        outcomes.push(Outcome {
            what: format!("the real-TF suite on TF {version}"),
            whole: false,
            log,
            elapsed: start.elapsed(),
            failed,
        });
    }
    Ok(Background(std::thread::spawn(move || {
        let mut first = Vec::new();
        if !beside.binaries.is_empty() {
            let names: Vec<&str> = beside.binaries.iter().map(|b| b.target.as_str()).collect();
            let what = format!("{} (TF {newest}), beside the checks", names.join(", "));
            eprintln!("==> {what}: started (log: {})", beside_log.display());
            let binaries: Vec<(String, PathBuf)> = beside
                .binaries
                .iter()
                .map(|b| (b.target.clone(), b.exe.clone()))
                .collect();
            let start = Instant::now();
            let failed = run_all(&binaries, &beside.args, &beside.envs, &beside_log);
            first.push(Outcome {
                what,
                whole: true,
                log: beside_log,
                elapsed: start.elapsed(),
                failed,
            });
        }
        for (outcome, (_, python)) in outcomes.iter_mut().zip(&runs) {
            let start = Instant::now();
            outcome.failed.extend(run(&rest, python, &outcome.log));
            outcome.elapsed += start.elapsed();
        }
        first.extend(outcomes);
        first
    })))
}

impl Background {
    /// Waits for every run and reports each as a step; fails on any failure
    /// with the end of its log.
    pub fn finish(self) -> Result<()> {
        let outcomes = self
            .0
            .join()
            .map_err(|_| anyhow::anyhow!("the real-TF suite thread panicked"))?;
        let mut bad = Vec::new();
        for outcome in outcomes {
            let what = &outcome.what;
            let text = std::fs::read_to_string(&outcome.log).unwrap_or_default();
            eprintln!("==> {what} (the workspace run's test binaries)");
            if outcome.failed.is_empty() {
                if outcome.whole {
                    eprint!("{text}");
                }
                eprintln!("    {}", summary(&text));
                eprintln!("    ok: {what} ({:.1}s)", outcome.elapsed.as_secs_f64());
                continue;
            }
            eprintln!("{}", crate::util::tail(&text, 80));
            bad.push(format!(
                "{what}: {} failed (log: {})",
                outcome.failed.join(", "),
                outcome.log.display()
            ));
        }
        if !bad.is_empty() {
            bail!("{}", bad.join("\n"));
        }
        Ok(())
    }
}

/// The real-TF test executables among those built.
fn binaries(built: &[crate::lanes::Binary]) -> Result<Vec<(String, PathBuf)>> {
    let found: Vec<(String, PathBuf)> = built
        .iter()
        .filter(|b| REAL_TF_TESTS.contains(&b.target.as_str()))
        .map(|b| (b.target.clone(), b.exe.clone()))
        .collect();
    if found.len() != REAL_TF_TESTS.len() {
        bail!(
            "cargo built {} of the {} real-TF test binaries",
            found.len(),
            REAL_TF_TESTS.len()
        );
    }
    Ok(found)
}

/// Runs every binary with `args` and `envs` (`TENSORPLUG_PYTHON` names its
/// TF); returns the failures.
fn run_all(
    binaries: &[(String, PathBuf)],
    args: &[String],
    envs: &[(&'static str, PathBuf)],
    log: &PathBuf,
) -> Vec<String> {
    let mut failed = Vec::new();
    let open = || {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
    };
    for (name, exe) in binaries {
        let started = Instant::now();
        let status = open().and_then(|file| {
            let err = file.try_clone()?;
            Command::new(exe)
                .args(args)
                .current_dir(root().join("tests"))
                .env("CARGO_MANIFEST_DIR", root().join("tests"))
                .envs(envs.iter().cloned())
                .stdin(Stdio::null())
                .stdout(file)
                .stderr(err)
                .status()
        });
        // Each binary's time, for `docs/ci.md`'s accounting.
        if let Ok(mut file) = open() {
            use std::io::Write;
            let secs = started.elapsed().as_secs_f64();
            let _ = writeln!(file, "tf-suite: {name} took {secs:.1}s");
        }
        match status {
            Ok(status) if status.success() => {}
            Ok(status) => failed.push(format!("{name} ({status})")),
            Err(e) => failed.push(format!("{name} (cannot run: {e})")),
        }
    }
    failed
}

/// `N passed, M ignored` over every `test result:` line of a log.
fn summary(text: &str) -> String {
    let (mut passed, mut ignored) = (0, 0);
    for line in text.lines().filter(|l| l.starts_with("test result:")) {
        let number = |word: &str| -> u64 {
            let words: Vec<&str> = line.split_whitespace().collect();
            words
                .iter()
                .position(|w| w.trim_end_matches([',', ';']) == word)
                .and_then(|i| i.checked_sub(1))
                .and_then(|i| words[i].parse().ok())
                .unwrap_or(0)
        };
        passed += number("passed");
        ignored += number("ignored");
    }
    format!("{passed} passed, {ignored} ignored")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_summary_adds_every_test_result_line() {
        let log = "running 2 tests\n\
            test result: ok. 2 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out\n\
            test result: ok. 11 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n";
        assert_eq!(super::summary(log), "13 passed, 1 ignored");
    }
}
