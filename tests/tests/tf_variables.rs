//! Variables on `/device:FPGA:0` against the real `tensorflow-cpu` wheel:
//! Keras `fit` trains them with every common optimizer (the graph pass
//! splits variable updates, `docs/ops.md`), equal to the CPU; eager updates
//! outside a `tf.function` raise `tf.errors.UnimplementedError` from our
//! refusing kernels (before them, TF's `DEVICE_DEFAULT` kernels segfaulted
//! on device memory), and the process keeps working.

use tensorplug_tests::{expect_success, run_tf_with_plugin};

#[test]
fn keras_trains_fpga_variables_and_eager_updates_are_clear_errors() {
    let output = run_tf_with_plugin("tf_variables_on_fpga.py", &[], None);
    let stdout = expect_success(&output, "tf_variables_on_fpga.py");
    for marker in [
        "registered: FPGA AssignAddVariableOp and AssignSubVariableOp for every dtype",
        "no device scope: a new variable lives on device:FPGA:0",
        "eager float32 assign_sub: UnimplementedError from FPGA AssignSubVariableOp",
        "eager int64 assign_add: UnimplementedError from FPGA AssignAddVariableOp",
        "keras fit, SGD, variables and training math (",
        "keras fit, SGD with momentum, variables and training math (",
        "keras fit, Adam, variables and training math (",
        "keras fit, AdamW, variables and training math (",
        "keras fit, RMSprop, variables and training math (",
        "supported pattern: fit on the FPGA with CPU variables",
        "variables on the FPGA: training works, eager updates are clear errors",
    ] {
        assert!(stdout.contains(marker), "no `{marker}` in:\n{stdout}");
    }
    print!("{stdout}");
}

/// Every op TF runs beside a variable (gathers, scatters, fused optimizer
/// updates, stateful random ops), with the variable on the FPGA: the
/// registry's list has our kernels, an eager call is a clear error, and
/// inside `fit` the graph pass runs them on host copies: an Embedding +
/// Dense model trains under every Keras optimizer, equal to the CPU, and so
/// do a transformer block and `RandomFlip` (Keras 3 on 2.16+, Keras 2 on
/// 2.15).
#[test]
fn every_op_beside_an_fpga_variable_trains_equal_to_the_cpu() {
    let output = run_tf_with_plugin("tf_variable_ops.py", &[], None);
    let stdout = expect_success(&output, "tf_variable_ops.py");
    let keras3 = tensorplug_tests::tf_minor_version() >= (2, 16);
    let mut markers = vec![
        "variable ops without a DEVICE_DEFAULT kernel have an FPGA kernel".to_string(),
        "eager ResourceGather: UnimplementedError from the FPGA kernel".into(),
        "ResourceGather inside a tf.function: the rows, from the FPGA table".into(),
        "transformer block with an Embedding, SGD: fit equals the CPU".into(),
        "RandomFlip in fit: trains, equal to the CPU".into(),
    ];
    let mut optimizers = vec![
        "SGD",
        "SGD with momentum",
        "RMSprop",
        "Adagrad",
        "Adadelta",
        "Adafactor",
        "Adam",
        "AdamW",
        "Adamax",
        "Nadam",
        "Ftrl",
        "Lion",
    ];
    let equal = "predict and fit on FPGA:0 equal the CPU";
    if keras3 {
        optimizers.extend(["Lamb", "Muon", "ScheduleFreeAdamW"]);
    } else {
        markers.extend(legacy_markers());
    }
    markers.extend(
        optimizers
            .iter()
            .map(|name| format!("embedding + dense, {name}: {equal}")),
    );
    for marker in &markers {
        assert!(
            stdout.contains(marker.as_str()),
            "no `{marker}` in:\n{stdout}"
        );
    }
    print!("{stdout}");
}

/// What `tf_variable_ops.py` prints for Keras 2's legacy optimizers (TF's
/// fused `ResourceApply*` updates): a dense model and an Embedding one each.
fn legacy_markers() -> Vec<String> {
    let equal = "predict and fit on FPGA:0 equal the CPU";
    let mut markers = vec![format!("embedding + dense, legacy SGD: {equal}")];
    for name in [
        "SGD with momentum",
        "RMSprop",
        "Adagrad",
        "Adadelta",
        "Adam",
        "Adamax",
        "Nadam",
        "Ftrl",
    ] {
        markers.push(format!("dense, legacy {name}: {equal}"));
        markers.push(format!("embedding + dense, legacy {name}: {equal}"));
    }
    markers
}

/// On TF 2.16+, Keras 2 is `tf_keras` (`TF_USE_LEGACY_KERAS=1` programs):
/// its legacy optimizers train an FPGA Embedding model equal to the CPU, as
/// TF 2.15's own Keras 2 does in the test above.
#[test]
fn tf_keras_legacy_optimizers_train_an_fpga_embedding_equal_to_the_cpu() {
    if tensorplug_tests::tf_minor_version() < (2, 16) {
        eprintln!("skipped: TF 2.15's Keras is Keras 2 itself (the test above)");
        return;
    }
    let output = run_tf_with_plugin("tf_variable_ops.py", &["tf_keras"], None);
    let stdout = expect_success(&output, "tf_variable_ops.py tf_keras");
    for marker in legacy_markers()
        .iter()
        .map(String::as_str)
        .chain(["tf_keras 2.", "the legacy optimizers passed"])
    {
        assert!(stdout.contains(marker), "no `{marker}` in:\n{stdout}");
    }
    print!("{stdout}");
}

/// `tf.distribute.MirroredStrategy` over `FPGA:0` and `FPGA:1`: Keras `fit`
/// under `strategy.scope()` equals the single-device losses (TF's copies
/// between replicas cross devices: `memcpy_dtod` and stream dependencies).
#[test]
fn mirrored_strategy_over_two_fpgas_matches_one() {
    let output = run_tf_with_plugin("tf_mirrored.py", &[], Some("sim,sim"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let tail = &stderr[stderr.len().saturating_sub(6000)..];
    // TF 2.17 makes a stream wait for itself in its copy between two
    // pluggable devices (tensorflow-metal users meet the same error on
    // 2.17; 2.16 and 2.18 run this scenario): there the test pins TF's error.
    if tensorplug_tests::tf_minor_version() == (2, 17) {
        assert!(
            tail.contains("Failed copying input tensor from")
                && tail.contains("stream cannot wait for itself"),
            "TF 2.17 was expected to fail the cross-device copy:\n{tail}"
        );
        eprintln!("TF 2.17: MirroredStrategy over two FPGAs fails in TF's own copy");
        return;
    }
    assert_eq!(
        output.status.code(),
        Some(0),
        "scenario failed:\nstdout (tail):\n{}\nstderr:\n{tail}",
        &stdout[stdout.len().saturating_sub(3000)..]
    );
    let marker = "mirrored fit on FPGA:0 and FPGA:1";
    let line = stdout
        .lines()
        .find(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("no `{marker}` in the output"));
    println!("{line}");
}

/// A device fault in a rewritten variable update fails the step with the
/// attributed error and leaves the variable unchanged.
#[test]
fn a_faulted_variable_update_leaves_the_variable_unchanged() {
    let path = tensorplug_tests::workspace_root().join("tests/python/tf_variable_fault.py");
    let output = std::process::Command::new(tensorplug_tests::python())
        .arg(&path)
        .env("TF_CPP_MIN_LOG_LEVEL", "2")
        .env(
            "TF_PLUGGABLE_DEVICE_LIBRARY_PATH",
            tensorplug_tests::plugin_path(),
        )
        .env_remove("TENSORPLUG_DEVICE")
        .env("TENSORPLUG_SIM_FAULTS", "fault_next_command@sub")
        .env("TENSORPLUG_TIMEOUT_MS", "2000")
        .output()
        .expect("cannot start python");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(0),
        "scenario failed:\nstdout:\n{stdout}\nstderr:\n{}",
        &stderr[stderr.len().saturating_sub(6000)..]
    );
    for marker in [
        "faulted update: InternalError from FPGA Sub",
        "the variable kept its value through the fault",
    ] {
        assert!(stdout.contains(marker), "no `{marker}` in:\n{stdout}");
    }
}
