//! The op sweep's CI subset (`cargo xtask op-sweep --ci`): every op the
//! plugin registers for the FPGA, over a fixed part of the grid, against
//! TF's CPU kernels with soft placement off. `cargo xtask op-sweep` runs the
//! whole grid; `docs/ops.md` shows its table.

use tensorplug_tests::run_tf_with_plugin;

#[test]
fn every_registered_op_matches_the_cpu_on_the_ci_grid() {
    let output = run_tf_with_plugin("op_sweep.py", &["ci"], None);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let mismatches: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("MISMATCH"))
        .collect();
    assert!(
        output.status.success(),
        "op sweep failed ({}):\n{}\nstdout:\n{stdout}\nstderr (tail):\n{}",
        output.status,
        mismatches.join("\n"),
        &stderr[stderr.len().saturating_sub(3000)..]
    );
    assert!(stdout.contains("| `MatMul` |"), "{stdout}");
    assert!(stdout.contains(", 0 mismatches"), "{stdout}");
    println!("{stdout}");
}

/// The example NPU's plugin through the same sweep: its ops (MatMul, Relu
/// and the kernels that come with them) and its own op `LeakyRelu`, a
/// vendor op in the NPU's namespace (not the catalogue's), on `/device:NPU:0`.
#[test]
fn the_npu_plugin_and_its_own_op_match_the_cpu_on_the_ci_grid() {
    let output = std::process::Command::new(tensorplug_tests::python())
        .arg(tensorplug_tests::workspace_root().join("tests/python/op_sweep.py"))
        .arg("ci")
        .env("TF_CPP_MIN_LOG_LEVEL", "2")
        .env(
            "TF_PLUGGABLE_DEVICE_LIBRARY_PATH",
            tensorplug_tests::npu_plugin_path(),
        )
        .env("TENSORPLUG_SWEEP_DEVICE_TYPE", "NPU")
        .env_remove("TENSORPLUG_DEVICE")
        .output()
        .expect("python");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "NPU op sweep failed ({}):\nstdout:\n{stdout}\nstderr (tail):\n{}",
        output.status,
        &stderr[stderr.len().saturating_sub(3000)..]
    );
    assert!(stdout.contains("| `LeakyRelu` |"), "{stdout}");
    assert!(stdout.contains(", 0 mismatches"), "{stdout}");
    println!("{stdout}");
}
