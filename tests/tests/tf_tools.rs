//! TF's tools with the plugin loaded, against the real `tensorflow-cpu`
//! wheel (`tests/python/tf_tools.py`): TFLite conversion (Keras model,
//! SavedModel, full-integer quantization), SavedModel export/load, the
//! `.keras` format, checkpoints, `tf.data` + `fit`, TensorBoard summaries and
//! profiling, `get_memory_info`/`reset_memory_stats`, and TF1-style graphs
//! (a `Session`, a V1 SavedModel and its readers). No device scope:
//! TF puts the models' variables on `FPGA:0` by itself.
//!
//! One test per case. Each case runs twice, with `TENSORPLUG_DEVICE=bogus`
//! (the plugin declines; the reference), then with `FPGA:0`, which compares
//! its results with the reference's. The first test to start runs every
//! case in one process per role (a TF import costs 3 to 4.5 s of CPU); each
//! test then reads its case's lines. A case whose batch crashed before it
//! reported runs again in processes of its own, so a crash fails only its
//! case.

use std::process::Output;
use std::sync::OnceLock;
use tensorplug_tests::{expect_success, run_tf_with_plugin, scratch_dir};

/// The cases in the order one process runs them (`tf_tools.py`'s `CASES`).
const CASES: [&str; 10] = [
    "tflite_keras",
    "tflite_saved_model",
    "tflite_int8",
    "saved_model",
    "keras_format",
    "checkpoint",
    "data_fit",
    "tensorboard",
    "memory_info",
    "tf1_graph",
];

/// Both roles' runs of every case.
struct Batch {
    reference: Output,
    plugin: Output,
}

fn batch() -> &'static Batch {
    static BATCH: OnceLock<Batch> = OnceLock::new();
    BATCH.get_or_init(|| {
        let dir = scratch_dir("tf-tools-batch");
        let out = dir.to_str().expect("utf-8 scratch dir");
        let cases = CASES.join(",");
        let run = |role, devices| {
            let args = ["--case", &cases, "--role", role, "--out", out];
            run_tf_with_plugin("tf_tools.py", &args, devices)
        };
        let batch = Batch {
            reference: run("reference", Some("bogus")),
            plugin: run("plugin", None),
        };
        let _ = std::fs::remove_dir_all(&dir);
        batch
    })
}

/// `case`'s lines in a batch's stdout: from its first line to the next
/// case's.
fn section(stdout: &str, case: &str) -> String {
    let mut current = None;
    let mut lines = Vec::new();
    for line in stdout.lines() {
        if let Some(name) = CASES.iter().find(|c| line.starts_with(&format!("{c} ["))) {
            current = Some(*name);
        }
        if current == Some(case) {
            lines.push(line);
        }
    }
    lines.join("\n") + "\n"
}

/// `case`'s part of one role's batch run, or `None` if the run ended
/// before the case said whether it passed (a crash).
fn from_batch(output: &Output, case: &str, role: &str) -> Option<String> {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let part = section(&stdout, case);
    let verdict = |v: &str| part.contains(&format!("{case} [{role}]: {v}"));
    if verdict("FAILED") {
        panic!("{case} [{role}] failed in the batch run:\n{part}");
    }
    verdict("PASS").then_some(part)
}

/// Runs `case` as `role` alone and asserts no signal, exit 0 and its `PASS`.
fn run_role(case: &str, role: &str, devices: Option<&str>, out: &str) -> String {
    let args = ["--case", case, "--role", role, "--out", out];
    let output = run_tf_with_plugin("tf_tools.py", &args, devices);
    let stdout = expect_success(&output, &format!("{case} [{role}]"));
    let marker = format!("{case} [{role}]: PASS");
    assert!(stdout.contains(&marker), "no `{marker}` in:\n{stdout}");
    stdout
}

/// Both runs of `case` in processes of their own.
fn run_alone(case: &str) -> (String, String) {
    let dir = scratch_dir(&format!("tf-tools-{case}"));
    let out = dir.to_str().expect("utf-8 scratch dir");
    let reference = run_role(case, "reference", Some("bogus"), out);
    let plugin = run_role(case, "plugin", None, out);
    let _ = std::fs::remove_dir_all(&dir);
    (reference, plugin)
}

/// Both runs of `case`; the plugin run's output must hold `plugin_markers`.
fn run_case(case: &str, plugin_markers: &[&str]) {
    let batch = batch();
    let (reference, plugin) = match (
        from_batch(&batch.reference, case, "reference"),
        from_batch(&batch.plugin, case, "plugin"),
    ) {
        (Some(reference), Some(plugin)) => (reference, plugin),
        _ => {
            eprintln!("{case}: its batch run ended before it did; running it alone");
            run_alone(case)
        }
    };
    for marker in plugin_markers {
        assert!(plugin.contains(marker), "no `{marker}` in:\n{plugin}");
    }
    // Parts a TF version cannot run for reasons outside the plugin are named.
    for line in reference.lines().chain(plugin.lines()) {
        if line.contains("NOT TESTED:") {
            eprintln!("{line}");
        }
    }
    print!("{reference}{plugin}");
}

const TFLITE: &str = "interpreter output bit-equal to the reference's";

#[test]
fn tflite_converter_from_keras_model() {
    run_case("tflite_keras", &[TFLITE]);
}

#[test]
fn tflite_converter_from_saved_model() {
    run_case("tflite_saved_model", &[TFLITE]);
}

#[test]
fn tflite_full_integer_quantization() {
    run_case("tflite_int8", &[TFLITE, "interpreter output int8"]);
}

#[test]
fn saved_model_export_load_and_serve() {
    run_case(
        "saved_model",
        &[
            "serving_default(x) equals model.predict within 1e-6 relative",
            "y equal to the reference's within 1e-06 relative",
        ],
    );
}

#[test]
fn keras_format_round_trip() {
    run_case(
        "keras_format",
        &[
            "load_model(.keras) predicts the same as the saved model",
            "y equal to the reference's",
        ],
    );
}

#[test]
fn checkpoint_and_checkpoint_manager() {
    run_case(
        "checkpoint",
        &[
            "(kept 2 of 3): restored values equal the saved ones, variables on FPGA:0",
            "restored equal to the reference's within 0",
        ],
    );
}

#[test]
fn tf_data_pipeline_feeds_fit() {
    run_case(
        "data_fit",
        &["loss, weights equal to the reference's within 1e-05"],
    );
}

#[test]
fn tensorboard_summaries_graphs_and_profile() {
    run_case(
        "tensorboard",
        &[
            "FPGA plane with events: True",
            "values, loss equal to the reference's within 1e-05",
        ],
    );
}

#[test]
fn memory_info_and_reset_memory_stats() {
    run_case("memory_info", &["after reset_memory_stats"]);
}

/// A TF1 `Session`'s variable stays on the host and its math on the FPGA;
/// its V1 SavedModel loads in TF2, converts to TFLite, and imports to MLIR
/// (which read a session's variables as host memory).
#[test]
fn tf1_session_and_v1_saved_model() {
    run_case(
        "tf1_graph",
        &[
            "session: variable w on device:CPU:0, MatMul on device:FPGA:0",
            "convert_saved_model_v1's module is identical to the reference's",
        ],
    );
}
