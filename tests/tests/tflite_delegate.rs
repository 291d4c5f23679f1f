//! The LiteRT external delegate of the reference FPGA's plugin
//! (`export_delegate!`, `docs/delegate.md`) under the real
//! `tf.lite.Interpreter` (`tests/python/tflite_delegate.py`): a small Keras
//! model converted by TF's TFLite converter runs with and without
//! `load_delegate(libtensorplug_fpga.so, {"device": "sim"})`; the outputs
//! agree within the float tolerance, and the delegate's report shows that
//! the FULLY_CONNECTED, ADD, RELU and SOFTMAX nodes ran on the device (once
//! per invoke) in the two partitions TFLite formed around the SIN the
//! device lacks, while SIN stayed on the CPU with its reason. The
//! report's tensors and ops, read through `abi::tflite`'s mirrors, equal the
//! runtime's own (`get_tensor_details`, `_get_ops_details`): the layout
//! check against the runtime binary. Then `min_nodes`, a resized input, and
//! bad options (a `ValueError` naming the reason), injected faults (a
//! failed kernel init fails the delegation with the reason in the report,
//! a failed invoke fails that invoke; nothing crashes), and the
//! interpreter without the delegate still works. Last, the example NPU's delegate
//! (`export_delegate!(NpuBackend)`, nothing else) on the same model: the
//! split follows what that device declares (no float Add: the ADD node
//! stays on the CPU, with that reason). The float models (a convnet,
//! MobileNetV2 and V3, the Keras transformer block, the element-wise ops) run
//! every node on the device within the float tolerance; the int8 ones bit
//! for bit (`docs/delegate.md`, "Tests and their cost").
//!
//! Then the same checks on the model that TF converted, under
//! `ai_edge_litert.interpreter` (ai-edge-litert 2.3.0, a venv without TF:
//! [`litert_python`]). `cargo xtask test` runs it on TF 2.21 and again on
//! TF 2.15 (`TENSORPLUG_PYTHON`), there without the four MobileNets
//! (`TENSORPLUG_SHORT_GRID`; `--tf-matrix` runs them on every TF). The
//! plugin is loaded by `load_delegate`
//! only, not as a TF pluggable device.

use std::path::Path;
use std::process::{Command, Output};
use tensorplug_tests::{
    expect_success, litert_python, npu_plugin_path, plugin_path, python, scratch_dir,
    workspace_root,
};

/// Every check the script prints for the float model.
const CHECKS: &[&str] = &[
    "outputs",
    "report",
    "layout",
    "min_nodes",
    "cost_model",
    "max_partitions",
    "profile_file",
    "resize",
    "errors",
    "faults",
    "after_errors",
    "npu",
    "float_cnn",
    "float_mobilenet",
    "float_mobilenet_v3",
    "float_transformer",
    "float_elementwise",
    "float_cumsum",
    "shared_constants",
    "int8_per_tensor",
    "int8_default",
    "int8_conv",
    "int8_float_io",
    "int8_mobilenet_v3",
    "int8_dynamic",
    "dense3d",
];

/// The checks of the four MobileNets, which the older TFs' runs leave
/// out (`TENSORPLUG_SHORT_GRID`).
const MOBILENET_CHECKS: &[&str] = &[
    "float_mobilenet",
    "float_mobilenet_v3",
    "int8_mobilenet",
    "int8_mobilenet_v3",
];

/// `TENSORPLUG_SHORT_GRID=1` (`cargo xtask test`'s runs on the older TFs;
/// not with `--tf-matrix`): the MobileNets, about 95 s of TF 2.15's
/// converter, are left to the newest TF's run.
fn short_grid() -> bool {
    std::env::var_os("TENSORPLUG_SHORT_GRID").is_some_and(|v| v == "1")
}

fn assert_checks(stdout: &str) {
    let skipped: &[&str] = if short_grid() { MOBILENET_CHECKS } else { &[] };
    for check in CHECKS.iter().filter(|c| !skipped.contains(c)) {
        let line = format!("check {check} ok");
        assert!(
            stdout.lines().any(|l| l.starts_with(&line)),
            "no `{line}` line:\n{stdout}"
        );
    }
}

/// `tflite_delegate.py <args>` in `python`'s venv, with no device setting
/// inherited (the delegate reads `TENSORPLUG_<TYPE>_DEVICE` and
/// `TENSORPLUG_DEVICE` when the `device` option is absent).
fn script(python: &Path, args: &[&str]) -> Output {
    Command::new(python)
        .arg(workspace_root().join("tests/python/tflite_delegate.py"))
        .args(args)
        .env("TF_CPP_MIN_LOG_LEVEL", "2")
        .env_remove("TENSORPLUG_DEVICE")
        .env_remove("TENSORPLUG_FPGA_DEVICE")
        .env_remove("TENSORPLUG_NPU_DEVICE")
        .output()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", python.display()))
}

#[test]
fn delegate_runs_its_partitions_on_the_device_and_matches_the_interpreter() {
    let dir = scratch_dir("tflite-delegate");
    let (plugin, npu) = (plugin_path(), npu_plugin_path());
    let common = [
        "--plugin",
        plugin.to_str().expect("utf-8 plugin path"),
        "--npu-plugin",
        npu.to_str().expect("utf-8 plugin path"),
        "--out",
        dir.to_str().expect("utf-8 scratch dir"),
    ];
    let mut common = common.to_vec();
    if short_grid() {
        common.push("--no-mobilenets");
    }
    let output = script(&python(), &common);
    assert_checks(&expect_success(&output, "tflite_delegate.py (tf.lite)"));

    // The same models, converted by that TF, under ai-edge-litert's
    // interpreter (no TF in its process).
    let mut args = common.clone();
    args.extend(["--runtime", "litert"]);
    let output = script(&litert_python(), &args);
    assert_checks(&expect_success(
        &output,
        "tflite_delegate.py (ai-edge-litert)",
    ));
    let _ = std::fs::remove_dir_all(&dir);
}
