//! `cargo xtask fuzz`: every cargo-fuzz target, each for a number of runs
//! (CI's smoke run, or `--runs N`) or minutes (`--minutes N`), with what libFuzzer says
//! at the end: executions, peak RSS, and whether it found a crash
//! (`docs/reliability.md`). Installs cargo-fuzz when missing.

use crate::idle::IdleBuild;
use crate::util::{root, run};
use anyhow::{Context, Result, bail};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use std::io::{BufRead as _, BufReader, IsTerminal as _};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The cargo-fuzz crate that holds every target (relative to the root).
const FUZZ_DIR: &str = "fuzz";

/// One fuzz target of [`FUZZ_DIR`].
struct Target {
    name: &'static str,
    /// libFuzzer's `-max_len`.
    max_len: u32,
    /// Real inputs to start from: every file of this directory (relative
    /// to the root), once behind each of these prefixes.
    seeds: Option<(&'static str, &'static [&'static [u8]])>,
}

/// Every fuzz target.
const TARGETS: &[Target] = &[
    Target {
        name: "link_decoder",
        max_len: 8192,
        // Frames TF's traffic carried (tests/tests/fuzz_seeds.rs), fed in
        // pieces of 255 and of 5 bytes.
        seeds: Some(("fuzz/seeds/link_decoder", &[&[255], &[5]])),
    },
    Target {
        name: "op_server",
        max_len: 8192,
        // The requests TF sent, in both link modes (tests/tests/fuzz_seeds.rs).
        seeds: Some(("fuzz/seeds/op_server", &[&[]])),
    },
    Target {
        name: "spi_frames",
        max_len: 8192,
        // Both ends' traffic in a TF session (tests/tests/fuzz_seeds.rs).
        seeds: Some(("fuzz/seeds/spi_frames", &[&[]])),
    },
    Target {
        name: "bitstream_image",
        max_len: 20_000,
        seeds: None,
    },
    Target {
        name: "graph_pass",
        max_len: 8192,
        // The GraphDefs TF handed the pass; 1: as they are, 3: preserving
        // the last node.
        seeds: Some(("host-bridge/src/graph/testdata", &[&[1], &[3]])),
    },
    Target {
        name: "kernel_attrs",
        max_len: 1024,
        seeds: None,
    },
    Target {
        name: "program",
        max_len: 8192,
        // A program of the unit tests (a matmul, bias, relu, square, exp).
        seeds: Some(("fuzz/seeds/program", &[&[]])),
    },
];

/// Runs per target in CI's smoke run: that every target builds and runs
/// from its corpus and seeds (10 000 since stop 52, for CI's 30 minutes;
/// the long runs are `--runs` and `--minutes`).
const SMOKE_RUNS: u32 = 10_000;

/// `cargo xtask fuzz`.
#[derive(clap::Args)]
pub struct FuzzArgs {
    /// Fuzz each target for this many minutes (default: a 10k-run smoke run).
    #[arg(long, conflicts_with = "runs")]
    minutes: Option<u32>,
    /// Fuzz each target for this many executions (the long run: 10000000).
    #[arg(long)]
    runs: Option<u64>,
    /// Only the targets whose name contains this.
    filter: Option<String>,
}

pub fn run_task(args: &FuzzArgs) -> Result<()> {
    let budget = match (args.minutes, args.runs) {
        (Some(m), _) => format!("-max_total_time={}", u64::from(m) * 60),
        (None, Some(n)) => format!("-runs={n}"),
        (None, None) => format!("-runs={SMOKE_RUNS}"),
    };
    fuzz(&budget, args.filter.as_deref())
}

/// CI's smoke run of every target.
pub fn run_all() -> Result<()> {
    fuzz(&format!("-runs={SMOKE_RUNS}"), None)
}

fn fuzz(budget: &str, filter: Option<&str>) -> Result<()> {
    ensure_cargo_fuzz()?;
    let targets: Vec<&Target> = TARGETS
        .iter()
        .filter(|t| filter.is_none_or(|f| t.name.contains(f)))
        .collect();
    if targets.is_empty() {
        let names: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
        bail!(
            "no fuzz target matches {filter:?}; the targets: {}",
            names.join(", ")
        );
    }
    let dir = root().join(FUZZ_DIR);
    // One build for every target (their dependencies build once), so each
    // run's output is libFuzzer's alone.
    let mut build = build_command();
    if let [only] = targets[..] {
        build.arg(only.name);
    }
    run(&mut build)?;
    for target in &targets {
        if let Some((from, prefixes)) = target.seeds {
            seed(
                &root().join(from),
                &dir.join("corpus").join(target.name),
                prefixes,
            )?;
        }
    }
    // Two targets at once: each libFuzzer run is one thread, and the
    // machine has two cores. Their rows come in the targets' order.
    let queue = std::sync::Mutex::new(targets.iter().enumerate());
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..LANES {
            scope.spawn(|| {
                loop {
                    let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
                    let Some((i, target)) = next else { break };
                    let result = fuzz_one(target, &dir, budget);
                    results
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((i, result));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_by_key(|(i, _)| *i);
    let mut report = Vec::new();
    let mut crashed = Vec::new();
    for (i, result) in results {
        let run = result?;
        if run.crashed {
            eprintln!("{}", run.log);
            crashed.push(targets[i].name);
        }
        report.push(run.row);
    }
    print_report(&report);
    if !crashed.is_empty() {
        bail!("fuzz targets failed: {}", crashed.join(", "));
    }
    Ok(())
}

/// `cargo +nightly fuzz build`: every target.
fn build_command() -> Command {
    let mut build = Command::new("cargo");
    build
        .current_dir(root().join(FUZZ_DIR))
        .args(["+nightly", "fuzz", "build"]);
    build
}

/// Starts the smoke run's build of every target, paused, to run on idle
/// CPU time ([`IdleBuild`]); the smoke run's own build then finds it done.
pub fn start_idle_build() -> Result<IdleBuild> {
    ensure_cargo_fuzz()?;
    let log = crate::util::target_dir().join("fuzz-build.log");
    IdleBuild::start_paused("the fuzz targets' build", &build_command(), &log)
}

/// Fuzz runs at once.
const LANES: usize = 2;

/// One target's run: its report row, libFuzzer's output, whether it found
/// a crash.
struct Run {
    row: String,
    log: String,
    crashed: bool,
}

fn fuzz_one(target: &Target, dir: &std::path::Path, budget: &str) -> Result<Run> {
    eprintln!("==> fuzzing {} ({budget})", target.name);
    let started = Instant::now();
    let (status, log) = run_followed(
        target.name,
        Command::new("cargo")
            .current_dir(dir)
            .args(["+nightly", "fuzz", "run", target.name, "--"])
            .arg(format!("-max_len={}", target.max_len))
            .args([budget, "-print_final_stats=1", "-timeout=20"]),
    )
    .with_context(|| format!("cannot run cargo fuzz for {}", target.name))?;
    let stat = |key: &str| {
        log.lines()
            .find_map(|l| l.strip_prefix(&format!("stat::{key}:")))
            .map_or("?".to_string(), |v| v.trim().to_string())
    };
    let outcome = outcome(status.success(), &log);
    let row = format!(
        "| {} | {} | {} | {} | {} | {} s | {} |",
        target.name,
        stat("number_of_executed_units"),
        stat("average_exec_per_sec"),
        stat("new_units_added"),
        stat("peak_rss_mb"),
        started.elapsed().as_secs(),
        outcome.text(),
    );
    eprintln!(
        "    done: {} ({} s)",
        target.name,
        started.elapsed().as_secs()
    );
    Ok(Run {
        row,
        log,
        crashed: outcome == Outcome::Crash,
    })
}

/// Copies every file of `from` into `corpus`, once behind each prefix.
fn seed(from: &std::path::Path, corpus: &std::path::Path, prefixes: &[&[u8]]) -> Result<()> {
    std::fs::create_dir_all(corpus)?;
    for entry in std::fs::read_dir(from).with_context(|| format!("seeds in {}", from.display()))? {
        let path = entry?.path();
        let bytes = std::fs::read(&path)?;
        let stem = path
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        for prefix in prefixes {
            let seed = [prefix, &bytes[..]].concat();
            let tag: String = prefix.iter().map(|b| format!("-{b}")).collect();
            std::fs::write(corpus.join(format!("seed-{stem}{tag}")), seed)?;
        }
    }
    Ok(())
}

fn print_report(rows: &[String]) {
    println!(
        "| target | executions | exec/s | new inputs | peak RSS (MB) | time | crash |\n\
         |---|---|---|---|---|---|---|"
    );
    for row in rows {
        println!("{row}");
    }
}

/// `cargo install cargo-fuzz --locked` unless `cargo fuzz` already works.
fn ensure_cargo_fuzz() -> Result<()> {
    let installed = Command::new("cargo")
        .args(["fuzz", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if installed {
        return Ok(());
    }
    run(Command::new("cargo").args(["install", "cargo-fuzz", "--locked"]))
}

/// How a fuzz run ended.
#[derive(PartialEq, Eq, Debug)]
enum Outcome {
    /// It ran its budget.
    Done,
    /// Someone sent libFuzzer SIGINT: it stopped early, with its stats,
    /// and found nothing.
    Interrupted,
    /// libFuzzer found a crash, a leak or a timeout (or could not run).
    Crash,
}

impl Outcome {
    fn text(&self) -> &'static str {
        match self {
            Self::Done => "none",
            Self::Interrupted => "none (interrupted)",
            Self::Crash => "FOUND (see above)",
        }
    }
}

fn outcome(success: bool, log: &str) -> Outcome {
    if success {
        Outcome::Done
    } else if log.contains("libFuzzer: run interrupted") {
        Outcome::Interrupted
    } else {
        Outcome::Crash
    }
}

/// Runs `cmd` with its stderr (libFuzzer's log) kept and followed: on a
/// terminal, a spinner shows libFuzzer's latest status line; elsewhere
/// (CI, a log file), its `INITED`, `pulse` and `DONE` lines are passed on.
fn run_followed(name: &str, cmd: &mut Command) -> Result<(ExitStatus, String)> {
    let mut child = cmd.stderr(Stdio::piped()).spawn()?;
    let stderr = child.stderr.take().context("libFuzzer's stderr")?;
    let spinner = std::io::stderr().is_terminal().then(|| {
        // One line per run in flight.
        static BARS: std::sync::OnceLock<MultiProgress> = std::sync::OnceLock::new();
        let s = BARS
            .get_or_init(MultiProgress::new)
            .add(ProgressBar::new_spinner().with_prefix(name.to_owned()));
        if let Ok(style) =
            ProgressStyle::with_template("    {spinner} {prefix} [{elapsed}] {wide_msg}")
        {
            s.set_style(style);
        }
        s.enable_steady_tick(Duration::from_millis(250));
        s
    });
    let mut log = String::new();
    for line in BufReader::new(stderr).lines() {
        let line = line?;
        if let Some(status) = status_line(&line) {
            match &spinner {
                Some(s) => s.set_message(status.to_string()),
                None if is_milestone(status) => eprintln!("    {name}: {status}"),
                None => {}
            }
        }
        log.push_str(&line);
        log.push('\n');
    }
    if let Some(s) = spinner {
        s.finish_and_clear();
    }
    Ok((child.wait()?, log))
}

/// libFuzzer's status lines start with `#` and the execution count.
fn status_line(line: &str) -> Option<&str> {
    let rest = line.strip_prefix('#')?;
    rest.starts_with(|c: char| c.is_ascii_digit())
        .then(|| line.trim_end())
}

/// libFuzzer's start, its power-of-two pulses and its end.
fn is_milestone(status: &str) -> bool {
    matches!(
        status.split_whitespace().nth(1),
        Some("INITED" | "pulse" | "DONE")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interrupted_run_is_not_a_crash() {
        let log = "==12== libFuzzer: run interrupted; exiting\nstat::number_of_executed_units: 5\n";
        assert_eq!(outcome(false, log), Outcome::Interrupted);
        assert_eq!(
            outcome(
                false,
                "==12== ERROR: AddressSanitizer: heap-buffer-overflow"
            ),
            Outcome::Crash
        );
        assert_eq!(outcome(true, ""), Outcome::Done);
    }

    #[test]
    fn status_lines_are_the_numbered_ones() {
        let pulse = "#1048576\tpulse  cov: 812 ft: 3120 corp: 2870/1Mb exec/s: 1100 rss: 450Mb";
        assert_eq!(status_line(pulse), Some(pulse));
        assert!(is_milestone(pulse));
        assert!(!is_milestone(
            "#1049001\tNEW    cov: 813 ft: 3121 corp: 2871/1Mb"
        ));
        assert_eq!(status_line("#define"), None);
        assert_eq!(status_line("INFO: Seed: 42"), None);
    }
}
