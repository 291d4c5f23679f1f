//! `cargo xtask fuzz`: every cargo-fuzz target, each for a number of runs
//! (CI's smoke run, or `--runs N`) or minutes (`--minutes N`), with what libFuzzer says
//! at the end: executions, peak RSS, and whether it found a crash
//! (`docs/reliability.md`). Installs cargo-fuzz when missing.

use crate::util::{root, run};
use anyhow::{Context, Result, bail};
use std::process::Command;

/// One fuzz target: its crate (relative to the root) and name.
struct Target {
    dir: &'static str,
    name: &'static str,
    /// libFuzzer's `-max_len`.
    max_len: u32,
    /// Real inputs to start from: every file of this directory (relative
    /// to the root), each behind every one of these first bytes.
    seeds: Option<(&'static str, &'static [u8])>,
}

/// Every fuzz target.
const TARGETS: &[Target] = &[
    Target {
        dir: "core/fuzz",
        name: "link_decoder",
        max_len: 8192,
        seeds: None,
    },
    Target {
        dir: "model-fpga/fuzz",
        name: "op_server",
        max_len: 8192,
        seeds: None,
    },
    Target {
        dir: "model-fpga/fuzz",
        name: "spi_frames",
        max_len: 8192,
        seeds: None,
    },
    Target {
        dir: "model-fpga/fuzz",
        name: "bitstream_image",
        max_len: 20_000,
        seeds: None,
    },
    Target {
        dir: "host-bridge/fuzz",
        name: "graph_pass",
        max_len: 8192,
        // The GraphDefs TF handed the pass; 1: as they are, 3: preserving
        // the last node.
        seeds: Some(("host-bridge/src/graph/testdata", &[1, 3])),
    },
    Target {
        dir: "host-bridge/fuzz",
        name: "kernel_attrs",
        max_len: 1024,
        seeds: None,
    },
];

/// Runs per target in CI's smoke run.
const SMOKE_RUNS: u32 = 20_000;

/// `cargo xtask fuzz`.
#[derive(clap::Args)]
pub struct FuzzArgs {
    /// Fuzz each target for this many minutes (default: a 20k-run smoke run).
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
    let mut report = Vec::new();
    for target in TARGETS
        .iter()
        .filter(|t| filter.is_none_or(|f| t.name.contains(f)))
    {
        let dir = root().join(target.dir);
        if let Some((from, prefixes)) = target.seeds {
            seed(
                &root().join(from),
                &dir.join("corpus").join(target.name),
                prefixes,
            )?;
        }
        // Build first, so the run's output is libFuzzer's alone.
        run(Command::new("cargo").current_dir(&dir).args([
            "+nightly",
            "fuzz",
            "build",
            target.name,
        ]))?;
        eprintln!("==> fuzzing {} ({budget})", target.name);
        let output = Command::new("cargo")
            .current_dir(&dir)
            .args(["+nightly", "fuzz", "run", target.name, "--"])
            .arg(format!("-max_len={}", target.max_len))
            .args([budget, "-print_final_stats=1", "-timeout=20"])
            .output()
            .with_context(|| format!("cannot run cargo fuzz for {}", target.name))?;
        let log = String::from_utf8_lossy(&output.stderr);
        let stat = |key: &str| {
            log.lines()
                .find_map(|l| l.strip_prefix(&format!("stat::{key}:")))
                .map_or("?".to_string(), |v| v.trim().to_string())
        };
        report.push(format!(
            "| {} | {} | {} | {} |",
            target.name,
            stat("number_of_executed_units"),
            stat("peak_rss_mb"),
            if output.status.success() {
                "none"
            } else {
                "FOUND (see above)"
            },
        ));
        if !output.status.success() {
            eprintln!("{log}");
            print_report(&report);
            bail!("fuzz target {} failed: {}", target.name, output.status);
        }
    }
    print_report(&report);
    Ok(())
}

/// Copies every file of `from` into `corpus`, once behind each prefix.
fn seed(from: &std::path::Path, corpus: &std::path::Path, prefixes: &[u8]) -> Result<()> {
    std::fs::create_dir_all(corpus)?;
    for entry in std::fs::read_dir(from).with_context(|| format!("seeds in {}", from.display()))? {
        let path = entry?.path();
        let bytes = std::fs::read(&path)?;
        let stem = path
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        for prefix in prefixes {
            let seed = [&[*prefix][..], &bytes].concat();
            std::fs::write(corpus.join(format!("seed-{stem}-{prefix}")), seed)?;
        }
    }
    Ok(())
}

fn print_report(rows: &[String]) {
    println!("| target | executions | peak RSS (MB) | crash |\n|---|---|---|---|");
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
