//! `cargo xtask bench`: runs the criterion benches and prints every figure
//! beside its baseline, measured in the same run.
//!
//! Two sources of rows (format also in `docs/benchmarks.md`):
//!
//! 1. **Criterion pairs**, declared in [`TIMING_PAIRS`]: the median point
//!    estimate (ns per iteration, divided by the records an iteration moves)
//!    of two benches, read from
//!    `<target>/criterion/<group>/<bench>/new/estimates.json`. For
//!    [`Better::Lower`] (times) ratio = measured / baseline; for
//!    [`Better::Higher`] (throughput) ratio = baseline time / measured time =
//!    measured / baseline throughput.
//! 2. **Figure files** a bench computes and writes itself:
//!    `<target>/tensorplug-bench/<figure-id>.json`, shaped
//!    `{"figure": "...", "value": 0.98, "baseline": 0.97, "unit": "...", "goal": "value >= 0.97"}`.
//!    `baseline` may be `null`; ratio = value / baseline. The first
//!    `<op> <number>` in `goal` (op: `<=`, `>=`, `<`, `>`, `≤`, `≥`) is the
//!    checked bound: on the ratio if the word `ratio` comes before it or an
//!    `x` follows the number (`"<= 2x encoded size"`), else on the value.
//!
//! Only files written during this run count: older ones (a filtered run, a
//! bench that failed) are reported as "not measured", never reused.

mod guard;

use crate::util::{cargo, root, run, target_dir};
use anyhow::{Context, Result};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Print the table from the result files already on disk, without
    /// running anything (rows may then come from different runs).
    #[arg(long)]
    pub no_run: bool,
    /// Write this run's figures to the baseline file (`xtask/bench-baseline.json`)
    /// instead of failing on regressions against it.
    #[arg(long)]
    pub update_baseline: bool,
    /// Passed to every bench binary: a filter and/or criterion options,
    /// e.g. `-- ring --measurement-time 3`.
    #[arg(last = true)]
    pub bench_args: Vec<String>,
}

/// Features the benches need (`required-features` skips a bench silently).
const BENCH_FEATURES: &str = "tensorplug-core/std";

/// Which direction is better for a criterion pair.
#[derive(Clone, Copy)]
enum Better {
    /// Times: ratio = measured / baseline.
    Lower,
    /// Throughput: ratio = baseline time / measured time.
    Higher,
}

/// A criterion pair: `measured` and `baseline` are `group/bench` ids.
struct TimingPair {
    figure: &'static str,
    measured: &'static str,
    baseline: &'static str,
    better: Better,
    /// Records one criterion iteration moves (the ns column is per record).
    records_per_iter: f64,
    /// Bound on the ratio (upper for `Lower`, lower for `Higher`).
    ratio_goal: Option<f64>,
    /// Upper bound on the measured time, ns per record.
    max_ns: Option<f64>,
}

const TIMING_PAIRS: &[TimingPair] = &[
    TimingPair {
        figure: "ring push, single thread (vs heapless spsc)",
        measured: "ring_push/tensorplug",
        baseline: "ring_push/heapless",
        better: Better::Lower,
        records_per_iter: 1.0,
        ratio_goal: Some(1.0),
        max_ns: Some(2.0),
    },
    TimingPair {
        figure: "ring, producer + consumer threads (vs rtrb)",
        measured: "ring_two_threads/tensorplug",
        baseline: "ring_two_threads/rtrb",
        better: Better::Higher,
        // `BURST` in core/benches/ring.rs.
        records_per_iter: (1u64 << 20) as f64,
        ratio_goal: Some(1.0),
        max_ns: None,
    },
    TimingPair {
        figure: "disabled recording (vs an enabled push)",
        measured: "record/disabled",
        baseline: "ring_push/tensorplug",
        better: Better::Lower,
        records_per_iter: 1.0,
        ratio_goal: None,
        max_ns: Some(1.0),
    },
    TimingPair {
        figure: "model f32 GEMM 512x512x512 throughput (vs matrixmultiply)",
        measured: "gemm_512/model",
        baseline: "gemm_512/matrixmultiply",
        better: Better::Higher,
        records_per_iter: 1.0,
        ratio_goal: Some(0.5),
        max_ns: None,
    },
    TimingPair {
        figure: "model Conv2D 3x3, 48x48x16 -> 16 (vs im2col + matrixmultiply)",
        measured: "conv_3x3/model",
        baseline: "conv_3x3/matrixmultiply",
        better: Better::Higher,
        records_per_iter: 1.0,
        ratio_goal: Some(1.0),
        max_ns: None,
    },
    TimingPair {
        figure: "int8 Conv2D vs f32 Conv2D on the model (3x3, 48x48x16 -> 16)",
        measured: "conv_3x3/model_int8",
        baseline: "conv_3x3/model",
        better: Better::Higher,
        records_per_iter: 1.0,
        // int8 must pay off: f32 time / int8 time >= 2.
        ratio_goal: Some(2.0),
        max_ns: None,
    },
    TimingPair {
        figure: "model Conv2D 1x1, 24x24x32 -> 64 (vs im2col + matrixmultiply)",
        measured: "conv_1x1/model",
        baseline: "conv_1x1/matrixmultiply",
        better: Better::Higher,
        records_per_iter: 1.0,
        ratio_goal: Some(1.0),
        max_ns: None,
    },
];

/// Figure files other benches are expected to write: (id, what it is).
/// Listed so a missing one shows as "not measured".
const EXPECTED_FIGURES: &[(&str, &str)] = &[
    (
        "xspace_events_per_second",
        "XSpace build + encode, 1M events",
    ),
    ("xspace_peak_heap_ratio", "XSpace peak heap vs encoded size"),
    (
        "link_payload_efficiency",
        "link: 4 KiB bulk write efficiency",
    ),
    ("spi_payload_efficiency", "SPI: 4 KiB write efficiency"),
    (
        "tf_eager_dispatch_ratio",
        "TF eager relu dispatch, FPGA vs CPU",
    ),
    (
        "tf_mobilenet_v2_predict_ratio",
        "MobileNetV2-0.35 predict, batch 8, FPGA(sim) vs TF CPU",
    ),
    (
        "tf_int8_mobilenet_v2_predict_ratio",
        "int8 MobileNetV2-0.35 predict, batch 8, FPGA(sim) vs TFLite CPU",
    ),
    (
        "tflite_delegate_mobilenet_vs_cpu",
        "LiteRT delegate, int8 MobileNetV2-0.35 batch 8, FPGA(sim) vs TFLite CPU",
    ),
    (
        "tflite_delegate_mobilenet_vs_int8model",
        "LiteRT delegate vs the Int8Model route, int8 MobileNetV2-0.35 batch 8",
    ),
    (
        "tflite_delegate_transformer_vs_cpu",
        "LiteRT delegate, float32 transformer block batch 8, FPGA(sim) vs TFLite CPU",
    ),
    (
        "tf_int8_qat_mobilenet_v2_predict_ratio",
        "QAT MobileNetV2-0.35 in int8 in the graph, batch 8, FPGA(sim) vs TFLite CPU",
    ),
    (
        "tf_int8_qat_vs_int8model_ratio",
        "QAT MobileNetV2-0.35 in int8, batch 8, FPGA(sim): in the graph vs Int8Model",
    ),
    (
        "tf_int8_qat_frozen_vs_int8model_ratio",
        "the same, the function frozen (no CPU parameter work) vs Int8Model",
    ),
    (
        "tf_transformer_block_forward_ratio",
        "transformer block forward, batch 32x64x32, FPGA(sim) vs TF CPU",
    ),
    (
        "tf_lstm_step_ratio",
        "BiLSTM(32) training step, batch 32x40, FPGA(sim) vs TF CPU",
    ),
    (
        "tf_programs_mlp_predict_ratio",
        "MLP forward: device programs vs op by op, FPGA(sim)",
    ),
    (
        "tf_programs_mlp_predict_vs_cpu",
        "MLP forward: device programs on FPGA(sim) vs TF CPU",
    ),
    (
        "tf_programs_convnet_predict_ratio",
        "small convnet forward: device programs vs op by op, FPGA(sim)",
    ),
    (
        "tf_programs_convnet_predict_vs_cpu",
        "small convnet forward: device programs on FPGA(sim) vs TF CPU",
    ),
    (
        "tf_programs_transformer_forward_ratio",
        "transformer block forward: device programs vs op by op, FPGA(sim)",
    ),
    (
        "tf_programs_transformer_forward_vs_cpu",
        "transformer block forward: device programs on FPGA(sim) vs TF CPU",
    ),
    (
        "tf_programs_mlp_fit_step_ratio",
        "MLP SGD step: device programs vs op by op, FPGA(sim)",
    ),
    (
        "tf_programs_mlp_fit_step_vs_cpu",
        "MLP SGD step: device programs on FPGA(sim) vs TF CPU",
    ),
    (
        "tf_programs_convnet_fit_step_ratio",
        "small convnet SGD step: device programs vs op by op, FPGA(sim)",
    ),
    (
        "tf_programs_convnet_fit_step_vs_cpu",
        "small convnet SGD step: device programs on FPGA(sim) vs TF CPU",
    ),
    (
        "tf_programs_transformer_forward_fused_ratio",
        "transformer block forward: programs fused vs unfused (layer norms), FPGA(sim)",
    ),
    (
        "tf_programs_gelu_mlp_fused_ratio",
        "three Dense(512, gelu): programs fused vs unfused, FPGA(sim)",
    ),
    (
        "tf_profiler_overhead",
        "MNIST MLP predict, profiler on / off",
    ),
    (
        "tf_clock_sync_under_load_2_21_0",
        "TF 2.21, both cores busy: device op begin - launch begin, min",
    ),
    (
        "tf_clock_sync_under_load_2_15_1",
        "TF 2.15, both cores busy: device op begin - launch begin, min",
    ),
    (
        "tf_profiler_plugin_share",
        "MNIST MLP predict, our planes / TF tracers alone",
    ),
    (
        "tf_profiler_tf_tracers",
        "MNIST MLP predict, TF tracers alone / off",
    ),
    (
        "tf_profiler_aa_control",
        "MNIST MLP predict, A/A control of the method",
    ),
    (
        "tf_profiler_device_only",
        "MNIST MLP predict, ours with TF host tracer off / off",
    ),
    (
        "tf_profiler_overhead_tiny",
        "tiny MLP predict, profiler on / off",
    ),
    (
        "driver-profiling-mlp-step",
        "MLP step on sim, device events on / off",
    ),
    ("tf_copy_bandwidth", "64 MiB TF round trip vs memcpy"),
    (
        "tf_copy_vs_tf_host",
        "64 MiB TF round trip vs TF's own host copies",
    ),
    (
        "int8_conv_weight_memory",
        "Conv2D 3x3 filter bytes, f32 / int8 (computed)",
    ),
    (
        "firmware_link_round_trip",
        "link round trip to the firmware under QEMU",
    ),
    (
        "firmware_bulk_copy_throughput",
        "4 KiB copy to the firmware under QEMU",
    ),
    (
        "firmware_bulk_copy_wire_efficiency",
        "4 KiB copy to the firmware, payload / wire",
    ),
    (
        "firmware_batch_of_fills",
        "32 fills to the firmware, window vs stop-and-wait",
    ),
    (
        "link_batch_of_fills_tcp",
        "32 fills over loopback TCP, window vs stop-and-wait",
    ),
    (
        "firmware_program_step",
        "a 16-command program on the firmware: RunProgram vs one SubmitBatch",
    ),
    (
        "link_program_step",
        "a 16-command program over loopback TCP: RunProgram vs one SubmitBatch",
    ),
    (
        "firmware_delegate_invoke_bytes",
        "LiteRT delegate invoke on the firmware: bytes / input",
    ),
    (
        "firmware_delegate_invoke_round_trips",
        "LiteRT delegate invoke on the firmware: round trips",
    ),
    (
        "firmware_ring_push_instructions",
        "Cortex-M4 instructions per ring push",
    ),
    (
        "firmware_int8_conv_instructions_per_mac",
        "Cortex-M4 instructions per int8 MAC (Conv2DInt8)",
    ),
];

/// One line of the table.
pub(crate) struct Row {
    /// The key in the baseline file: the measured bench id or the file id.
    pub(crate) id: String,
    figure: String,
    measured: String,
    baseline: String,
    ratio: String,
    goal: String,
    verdict: Verdict,
    /// What the guard compares: the ratio where there is a same-run
    /// baseline, else the value (`is_ratio` says which).
    pub(crate) compared: Option<f64>,
    pub(crate) is_ratio: bool,
    /// The better direction of `compared`, where the goal or the file says.
    pub(crate) lower_is_better: Option<bool>,
    /// The guard's verdict against the committed baseline.
    pub(crate) vs_last: String,
}

#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Verdict {
    Pass,
    Miss,
    /// Measured, but the goal could not be checked.
    Unchecked,
    /// Measured, no goal (the goal text starts with "informational").
    Info,
    NotMeasured,
}

impl Verdict {
    fn label(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Miss => "MISS",
            Self::Unchecked => "?",
            Self::Info => "info",
            Self::NotMeasured => "not measured",
        }
    }
}

pub fn run_task(args: &BenchArgs) -> Result<()> {
    let target = target_dir();
    let since = if args.no_run {
        eprintln!("--no-run: figures from earlier runs, not re-measured");
        None
    } else {
        // The firmware bench boots QEMU; the TF rows need the venv.
        let venv = crate::setup::ensure_firmware_and_tf()?;
        let start = SystemTime::now();
        let mut cmd = cargo();
        // Every bench target of the workspace (not the libtest lib targets,
        // which reject criterion options); the same target dir for cargo,
        // criterion and the figure files.
        cmd.args(["bench", "--workspace", "--bench", "*"])
            .args(["--features", BENCH_FEATURES])
            .env("CARGO_TARGET_DIR", &target);
        if !args.bench_args.is_empty() {
            cmd.arg("--").args(&args.bench_args);
        }
        // The firmware bench has no criterion to parse its arguments.
        if let Some(filter) = filter_of(&args.bench_args) {
            cmd.env("TENSORPLUG_BENCH_FILTER", filter);
        }
        run(&mut cmd)?;
        run_tf_benches(&target, &args.bench_args, venv)?;
        Some(start)
    };
    let mut rows: Vec<Row> = TIMING_PAIRS
        .iter()
        .map(|pair| pair_row(&target.join("criterion"), pair, since))
        .collect();
    rows.extend(figure_rows(&target.join("tensorplug-bench"), since)?);
    let file = baseline_file();
    let flagged = guard::check(&mut rows, &file)?;
    print_table(&rows);
    let missed = rows.iter().filter(|r| r.verdict == Verdict::Miss).count();
    if missed > 0 {
        eprintln!("{missed} figure(s) missed their goal");
    }
    if args.update_baseline {
        let commit = crate::util::output(
            Command::new("git")
                .args(["rev-parse", "--short", "HEAD"])
                .current_dir(root()),
        )
        .unwrap_or_default();
        let written = guard::update(&rows, &file, commit.trim())?;
        eprintln!("wrote {written} figure(s) to {}", file.display());
        return Ok(());
    }
    anyhow::ensure!(
        flagged.is_empty(),
        "{} figure(s) are more than {:.0}% worse than {}: {} (re-run to rule out noise; \
         `--update-baseline` accepts them)",
        flagged.len(),
        guard::TOLERANCE * 100.0,
        file.display(),
        flagged.join(", ")
    );
    Ok(())
}

/// The committed baseline the guard compares with.
fn baseline_file() -> PathBuf {
    std::env::var_os("TENSORPLUG_BENCH_BASELINE")
        .map_or_else(|| root().join("xtask/bench-baseline.json"), PathBuf::from)
}

/// The criterion options that take a value as the next argument.
const VALUE_OPTIONS: &[&str] = &[
    "--warm-up-time",
    "--measurement-time",
    "--sample-size",
    "--nresamples",
    "--noise-threshold",
    "--confidence-level",
    "--significance-level",
    "--save-baseline",
    "--baseline",
    "--load-baseline",
    "--profile-time",
    "--plotting-backend",
    "--output-format",
    "--color",
    "--format",
    "--logfile",
];

/// The filter among criterion's arguments: the first that is neither an
/// option nor an option's value (`--warm-up-time 1` is no filter).
fn filter_of(args: &[String]) -> Option<&str> {
    let mut skip_value = false;
    for arg in args {
        if std::mem::take(&mut skip_value) {
            continue;
        }
        if arg.starts_with('-') {
            skip_value = VALUE_OPTIONS.contains(&arg.as_str());
            continue;
        }
        return Some(arg);
    }
    None
}

/// The Python benches against real TF (`tests/python/bench_*.py`, one process
/// each) with the release plugin; each writes a figure file. Skipped when a
/// filter is given that none of their names contain.
/// They run on `venv`'s Python unless `TENSORPLUG_PYTHON` names another.
fn run_tf_benches(target: &Path, bench_args: &[String], venv: PathBuf) -> Result<()> {
    const SCRIPTS: &[&str] = &[
        "bench_dispatch",
        "bench_profiler_overhead",
        "bench_copy",
        "bench_mobilenet",
        "bench_int8_mobilenet",
        "bench_int8_qat",
        "bench_delegate",
        "bench_sequence",
        "bench_programs",
        "bench_clock_sync",
    ];
    let filter = filter_of(bench_args);
    let scripts: Vec<&str> = SCRIPTS
        .iter()
        .copied()
        .filter(|name| filter.is_none_or(|f| name.contains(f)))
        .collect();
    if scripts.is_empty() {
        return Ok(());
    }
    let python = std::env::var_os("TENSORPLUG_PYTHON").map_or(venv, PathBuf::from);
    run(&mut crate::dist::plugin_build_command(&crate::dist::FPGA))?;
    for script in &scripts {
        run_tf_bench(&python, script, target)?;
    }
    // The clock under load on the oldest TF too, where it showed (2.15).
    if scripts.contains(&"bench_clock_sync") {
        let oldest = crate::setup::ensure_tf_venv(crate::setup::TF_VERSIONS[0])?;
        run_tf_bench(&oldest, "bench_clock_sync", target)?;
    }
    Ok(())
}

fn run_tf_bench(python: &Path, script: &str, target: &Path) -> Result<()> {
    run(Command::new(python)
        .arg(root().join(format!("tests/python/{script}.py")))
        .env("TENSORPLUG_BENCH_TARGET", target)
        .env(
            "TF_PLUGGABLE_DEVICE_LIBRARY_PATH",
            crate::dist::plugin_built_path(&crate::dist::FPGA),
        )
        .env_remove("TENSORPLUG_DEVICE"))
}

/// The median ns per iteration of criterion bench `id` (`group/bench`), if
/// it was measured since `since`.
fn criterion_median(dir: &Path, id: &str, since: Option<SystemTime>) -> Option<f64> {
    let path = dir.join(id).join("new/estimates.json");
    let json = fresh_json(&path, since)?;
    json.pointer("/median/point_estimate")?.as_f64()
}

/// Parses `path` if it exists and was written at or after `since`.
fn fresh_json(path: &Path, since: Option<SystemTime>) -> Option<Value> {
    let meta = std::fs::metadata(path).ok()?;
    if let (Some(since), Ok(modified)) = (since, meta.modified())
        && modified < since
    {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    match serde_json::from_str(&text) {
        Ok(json) => Some(json),
        Err(err) => {
            eprintln!("ignoring {}: {err}", path.display());
            None
        }
    }
}

fn pair_row(dir: &Path, pair: &TimingPair, since: Option<SystemTime>) -> Row {
    let per_record = |ns: f64| ns / pair.records_per_iter;
    let measured = criterion_median(dir, pair.measured, since).map(per_record);
    let baseline = criterion_median(dir, pair.baseline, since).map(per_record);
    let mut goals = Vec::new();
    if let Some(bound) = pair.ratio_goal {
        goals.push(match pair.better {
            Better::Lower => format!("ratio <= {bound}"),
            Better::Higher => format!("ratio >= {bound} (thrpt)"),
        });
    }
    if let Some(max) = pair.max_ns {
        goals.push(format!("<= {max} ns"));
    }
    let ratio = measured.zip(baseline).map(|(m, b)| match pair.better {
        Better::Lower => m / b,
        Better::Higher => b / m,
    });
    let verdict = match measured {
        None => Verdict::NotMeasured,
        Some(ns) => {
            let ns_ok = pair.max_ns.is_none_or(|max| ns <= max);
            let ratio_ok = match (pair.ratio_goal, ratio) {
                (None, _) => Some(true),
                (Some(_), None) => None,
                (Some(bound), Some(r)) => Some(match pair.better {
                    Better::Lower => r <= bound,
                    Better::Higher => r >= bound,
                }),
            };
            match ratio_ok {
                Some(ok) if ok && ns_ok => Verdict::Pass,
                Some(_) => Verdict::Miss,
                None if !ns_ok => Verdict::Miss,
                None => Verdict::Unchecked,
            }
        }
    };
    let show = |ns: Option<f64>, id: &str| match ns {
        Some(ns) => format!("{} ({id})", ns_per_record(ns, pair.better)),
        None => format!("not measured ({id})"),
    };
    Row {
        id: pair.measured.to_string(),
        figure: pair.figure.to_string(),
        measured: show(measured, pair.measured),
        baseline: show(baseline, pair.baseline),
        ratio: ratio.map_or_else(|| "-".into(), |r| format!("{r:.3}")),
        goal: goals.join(", "),
        verdict,
        // The ratio is oriented so that higher is better for throughput.
        compared: ratio.or(measured),
        is_ratio: ratio.is_some(),
        lower_is_better: Some(matches!(pair.better, Better::Lower) || ratio.is_none()),
        vs_last: String::new(),
    }
}

fn ns_per_record(ns: f64, better: Better) -> String {
    match better {
        Better::Lower => format!("{ns:.3} ns"),
        Better::Higher => format!("{ns:.3} ns = {:.0} M/s", 1e3 / ns),
    }
}

/// Rows from figure files: the expected ones first, then any others found.
fn figure_rows(dir: &Path, since: Option<SystemTime>) -> Result<Vec<Row>> {
    let mut ids: Vec<String> = EXPECTED_FIGURES
        .iter()
        .map(|(id, _)| id.to_string())
        .collect();
    if dir.is_dir() {
        let mut found: Vec<String> = std::fs::read_dir(dir)
            .with_context(|| format!("cannot list {}", dir.display()))?
            .filter_map(|entry| {
                let name = entry.ok()?.file_name().into_string().ok()?;
                Some(name.strip_suffix(".json")?.to_string())
            })
            .filter(|id| !ids.contains(id))
            .collect();
        found.sort();
        ids.extend(found);
    }
    Ok(ids
        .iter()
        .map(|id| {
            let json = fresh_json(&dir.join(format!("{id}.json")), since);
            let label = EXPECTED_FIGURES
                .iter()
                .find(|(known, _)| known == id)
                .map_or(id.as_str(), |(_, label)| label);
            figure_row(id, label, json)
        })
        .collect())
}

fn figure_row(id: &str, label: &str, json: Option<Value>) -> Row {
    let Some(json) = json else {
        return Row {
            id: id.to_string(),
            figure: label.to_string(),
            measured: format!("not measured ({id}.json)"),
            baseline: "-".into(),
            ratio: "-".into(),
            goal: "-".into(),
            verdict: Verdict::NotMeasured,
            compared: None,
            is_ratio: false,
            lower_is_better: None,
            vs_last: String::new(),
        };
    };
    let text = |key: &str| json.get(key).and_then(Value::as_str).unwrap_or("");
    let value = json.get("value").and_then(Value::as_f64);
    let baseline = json.get("baseline").and_then(Value::as_f64);
    let unit = text("unit");
    let goal = text("goal");
    let ratio = value.zip(baseline).map(|(v, b)| v / b);
    let bound = parse_goal(goal);
    // The file's `better` ("lower"/"higher") wins; else the goal's direction.
    let lower_is_better = match text("better") {
        "lower" => Some(true),
        "higher" => Some(false),
        _ => bound.as_ref().map(|b| b.at_most),
    };
    let compared_ratio = bound.as_ref().is_none_or(|b| b.on_ratio) && ratio.is_some();
    let verdict = match (value, bound) {
        (None, _) => Verdict::NotMeasured,
        (Some(_), _) if goal.starts_with("informational") => Verdict::Info,
        (Some(_), None) => Verdict::Unchecked,
        (Some(v), Some(bound)) => {
            let subject = if bound.on_ratio { ratio } else { Some(v) };
            match subject {
                Some(x) if bound.holds(x) => Verdict::Pass,
                Some(_) => Verdict::Miss,
                None => Verdict::Unchecked,
            }
        }
    };
    let figure = match text("figure") {
        "" => label.to_string(),
        name => name.to_string(),
    };
    Row {
        id: id.to_string(),
        figure,
        measured: value.map_or_else(|| "no value".into(), |v| with_unit(v, unit)),
        baseline: baseline.map_or_else(|| "-".into(), |b| with_unit(b, unit)),
        ratio: ratio.map_or_else(|| "-".into(), |r| format!("{r:.3}")),
        goal: goal.to_string(),
        verdict,
        compared: if compared_ratio { ratio } else { value },
        is_ratio: compared_ratio,
        lower_is_better,
        vs_last: String::new(),
    }
}

fn with_unit(x: f64, unit: &str) -> String {
    let scaled = match x.abs() {
        a if a >= 1e9 => format!("{:.2} G", x / 1e9),
        a if a >= 1e6 => format!("{:.2} M", x / 1e6),
        a if a >= 1e4 => format!("{:.1} k", x / 1e3),
        _ => format!("{x:.4}"),
    };
    match unit {
        "" => scaled,
        unit if scaled.ends_with(char::is_alphabetic) => format!("{scaled}{unit}"),
        unit => format!("{scaled} {unit}"),
    }
}

/// A checked bound from a figure file's `goal` text.
#[derive(Debug, PartialEq)]
struct Bound {
    on_ratio: bool,
    at_most: bool,
    inclusive: bool,
    limit: f64,
}

impl Bound {
    fn holds(&self, x: f64) -> bool {
        match (self.at_most, self.inclusive) {
            (true, true) => x <= self.limit,
            (true, false) => x < self.limit,
            (false, true) => x >= self.limit,
            (false, false) => x > self.limit,
        }
    }
}

/// The first `<op> <number>` of `goal` (see the module docs).
fn parse_goal(goal: &str) -> Option<Bound> {
    const OPS: &[(&str, bool, bool)] = &[
        ("<=", true, true),
        (">=", false, true),
        ("≤", true, true),
        ("≥", false, true),
        ("<", true, false),
        (">", false, false),
    ];
    let (at, op, at_most, inclusive) = OPS
        .iter()
        .filter_map(|&(op, at_most, inclusive)| {
            goal.find(op).map(|at| (at, op, at_most, inclusive))
        })
        .min_by_key(|&(at, op, ..)| (at, usize::MAX - op.len()))?;
    let rest = goal[at + op.len()..].trim_start();
    let number_len = rest
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '_' | '-' | '+')))
        .unwrap_or(rest.len());
    let limit: f64 = rest[..number_len].replace('_', "").parse().ok()?;
    let times = rest[number_len..].starts_with(['x', '×']);
    Some(Bound {
        on_ratio: times || goal[..at].contains("ratio"),
        at_most,
        inclusive,
        limit,
    })
}

fn print_table(rows: &[Row]) {
    let header = [
        "figure",
        "measured",
        "baseline",
        "ratio",
        "goal",
        "result",
        "vs baseline file",
    ];
    let cells: Vec<[&str; 7]> = rows
        .iter()
        .map(|r| {
            [
                r.figure.as_str(),
                r.measured.as_str(),
                r.baseline.as_str(),
                r.ratio.as_str(),
                r.goal.as_str(),
                r.verdict.label(),
                r.vs_last.as_str(),
            ]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &cells {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |row: &[&str; 7]| {
        let padded: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        println!("| {} |", padded.join(" | "));
    };
    line(&header);
    println!("|{}|", widths.map(|w| "-".repeat(w + 2)).join("|"));
    for row in &cells {
        line(row);
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn criterion_options_and_their_values_are_not_filters() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            filter_of(&args(&["--warm-up-time", "1", "firmware"])),
            Some("firmware")
        );
        assert_eq!(filter_of(&args(&["--warm-up-time", "1"])), None);
        assert_eq!(
            filter_of(&args(&["--sample-size=10", "--quick", "gemm"])),
            Some("gemm")
        );
        assert_eq!(filter_of(&args(&["sequence"])), Some("sequence"));
        assert_eq!(filter_of(&[]), None);
    }

    use super::*;

    #[test]
    fn goals_bound_the_value_unless_ratio_or_times_is_said() {
        let bound = parse_goal("value >= 0.97").unwrap();
        assert_eq!(
            bound,
            Bound {
                on_ratio: false,
                at_most: false,
                inclusive: true,
                limit: 0.97
            }
        );
        assert!(bound.holds(0.975) && !bound.holds(0.96));

        let rate = parse_goal(">= 20000000 events/s (baseline = goal)").unwrap();
        assert!(!rate.on_ratio && rate.limit == 2e7);

        let heap = parse_goal("peak heap <= 2x encoded size").unwrap();
        assert!(heap.on_ratio && heap.at_most && heap.limit == 2.0);

        let ratio = parse_goal("ratio < 1.5").unwrap();
        assert!(ratio.on_ratio && !ratio.inclusive && !ratio.holds(1.5));

        assert_eq!(parse_goal("as fast as possible"), None);
        assert_eq!(parse_goal(">= lots"), None);
    }

    #[test]
    fn figure_rows_check_their_goal_and_never_invent_values() {
        let json = |s: &str| Some(serde_json::from_str::<Value>(s).unwrap());
        let pass = figure_row(
            "eff",
            "eff",
            json(
                r#"{"figure": "eff", "value": 0.98, "baseline": 0.97, "unit": "fraction", "goal": "value >= 0.97"}"#,
            ),
        );
        assert!(pass.verdict == Verdict::Pass);
        assert_eq!(pass.ratio, "1.010");

        let miss = figure_row(
            "heap",
            "heap",
            json(
                r#"{"figure": "heap", "value": 300.0, "baseline": 100.0, "unit": "bytes", "goal": "<= 2x encoded"}"#,
            ),
        );
        assert!(miss.verdict == Verdict::Miss);

        let info = figure_row(
            "aa",
            "aa",
            json(
                r#"{"figure": "aa", "value": 1.3, "baseline": 1.0, "unit": "ratio", "goal": "informational (no goal)"}"#,
            ),
        );
        assert!(info.verdict == Verdict::Info);
        assert_eq!(info.ratio, "1.300");

        let missing = figure_row("gone", "gone", None);
        assert!(missing.verdict == Verdict::NotMeasured);
        assert!(missing.measured.starts_with("not measured"));
    }

    #[test]
    fn stale_or_absent_results_are_not_measured() {
        let dir = std::env::temp_dir().join(format!("xtask-bench-{}", std::process::id()));
        let bench = dir.join("g/b/new");
        std::fs::create_dir_all(&bench).unwrap();
        std::fs::write(
            bench.join("estimates.json"),
            r#"{"median": {"point_estimate": 1.5}}"#,
        )
        .unwrap();
        assert_eq!(criterion_median(&dir, "g/b", None), Some(1.5));
        let later = SystemTime::now() + std::time::Duration::from_secs(60);
        assert_eq!(criterion_median(&dir, "g/b", Some(later)), None);
        assert_eq!(criterion_median(&dir, "g/other", None), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
