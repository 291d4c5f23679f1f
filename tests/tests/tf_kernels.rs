//! The FPGA kernels end to end, against the real `tensorflow-cpu` wheel:
//! every kernel vs TF's CPU kernel, a Keras MLP (placement proof, predict
//! and fit vs the CPU), and device faults surfacing as TF errors. Each
//! scenario is its own Python process.

use std::process::{Command, Output};
use tensorplug_tests::{plugin_path, python, workspace_root};

/// Runs `tests/python/<script>` with the plugin (one `sim` device) and `env`.
fn run(script: &str, env: &[(&str, &str)]) -> Output {
    run_with_args(script, &[], env)
}

/// [`run`] with command-line arguments.
fn run_with_args(script: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let path = workspace_root().join("tests/python").join(script);
    Command::new(python())
        .arg(&path)
        .args(args)
        .current_dir(workspace_root().join("tests/python"))
        .env("TF_CPP_MIN_LOG_LEVEL", "2")
        .env("TF_PLUGGABLE_DEVICE_LIBRARY_PATH", plugin_path())
        .env_remove("TENSORPLUG_DEVICE")
        .env_remove("TENSORPLUG_SIM_FAULTS")
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("cannot start python for {}: {e}", path.display()))
}

#[track_caller]
fn assert_ok(output: &Output, markers: &[&str]) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let tail = &stderr[stderr.len().saturating_sub(6000)..];
    assert!(
        output.status.success(),
        "scenario failed ({}):\nstdout:\n{stdout}\nstderr (tail):\n{tail}",
        output.status
    );
    for marker in markers {
        assert!(stdout.contains(marker), "no `{marker}` in:\n{stdout}");
    }
    print!("{stdout}");
    stdout
}

#[test]
fn every_kernel_matches_the_cpu() {
    let out = run("tf_kernels_vs_cpu.py", &[]);
    assert_ok(
        &out,
        &[
            "137 kernel cases match the CPU",
            "4 error cases named the op",
        ],
    );
}

/// A batch of matrix products is one `BatchMatMul` record on the device's
/// profile plane (issue 43: attention's products as one command), equal to
/// the CPU; a broadcast `a` still runs one `MatMul` per matrix; `Einsum`s
/// whose output interleaves the product's groups equal the CPU, eagerly
/// and in a program.
#[test]
fn a_batched_matmul_is_one_device_command() {
    let out = run("tf_batched_matmul.py", &[]);
    assert_ok(
        &out,
        &[
            "equal batch: BatchMatMulV2 1 device command(s)",
            "a broadcast: BatchMatMulV2 3 device command(s)",
            "5 interleaving Einsums equal the CPU, eagerly and in a program",
            "batched products: OK",
        ],
    );
}

#[test]
fn keras_mlp_runs_on_the_fpga_and_matches_the_cpu() {
    // INFO level: the placement log is what the scenario checks.
    let out = run("tf_kernels_keras.py", &[("TF_CPP_MIN_LOG_LEVEL", "0")]);
    assert_ok(
        &out,
        &[
            "model op types on FPGA:0: ['BiasAdd', 'MatMul', 'Relu', 'Softmax']",
            "predict: (256, 4)",
            "keras MLP on FPGA matches the CPU",
        ],
    );
}

/// Each one-shot fault of the model (a faulted command, a lost completion,
/// a reset mid-command) fails the op's result with its error naming the
/// op, eagerly and in a `tf.function`; unrelated ops after it succeed, a
/// lost completion never read included (`tests/python/tf_kernels_faults.py`).
#[test]
fn device_faults_name_the_op_and_the_process_keeps_working() {
    let out = run(
        "tf_kernels_faults.py",
        &[
            (
                "TENSORPLUG_SIM_FAULTS",
                "fault_next_command@softmax,lose_next_completion@relu,fault_next_command@add,\
                 fault_next_command@mul,lose_next_completion@maximum,reset_mid_command@sub,\
                 reset_mid_command@bias_add,lose_next_completion@reduce_sum",
            ),
            ("TENSORPLUG_TIMEOUT_MS", "2000"),
        ],
    );
    assert_ok(
        &out,
        &[
            "InternalError: ",
            "FPGA Softmax 'Softmax': FPGA:0 (sim): command (tag 0) failed: DEVICE_FAULT",
            "DeadlineExceededError: ",
            "FPGA Relu 'Relu': FPGA:0 (sim): the op did not complete within 2000 ms",
            "after both faults the device keeps working",
            "FPGA AddV2 'AddV2': FPGA:0 (sim): command (tag 0) failed: DEVICE_FAULT",
            "a fault in a multi-command op surfaced in",
            "graph fault: named FPGA Mul 'mul', then unrelated ops ran",
            "graph reset: named FPGA Sub 'sub', then unrelated ops ran",
            "graph timeout: named FPGA Sum 'Sum', then unrelated ops ran",
            "eager reset: named FPGA BiasAdd 'BiasAdd', then unrelated ops ran",
            "graph timeout never read: unrelated ops ran",
        ],
    );
}

/// Input the device refuses (an index out of range: `GATHER` and
/// `SEGMENT_SUM` complete `INVALID_ARGUMENT`) fails at the op's result with
/// `InvalidArgumentError` naming the op and node, in eager mode and in a
/// `tf.function`, not with TF's "SyncAll failed"; the next ops succeed.
/// The failure is the result's, not the queue's: an unrelated op after a
/// failed one that is never read succeeds (it failed with the stale error),
/// an op that reads the failed result fails naming the first op (it read
/// stale memory), and a later copy with no device work before it is clean
/// (`tests/python/tf_op_errors.py`).
#[test]
fn input_errors_the_device_finds_name_the_op_and_the_next_ops_succeed() {
    let out = run("tf_op_errors.py", &[]);
    assert_ok(
        &out,
        &[
            "eager_gather: ",
            "graph_gather: ",
            "eager_segment_sum: ",
            "graph_segment_sum: ",
            "after eager_unread ok",
            "after eager_consumer ok",
            "after eager_folded ok",
            "after graph_unread ok",
            "after graph_consumer ok",
            "after graph_folded ok",
            "done",
        ],
    );
}

/// A Keras convnet, a ResNet-style block and MobileNetV2-0.35 `predict` on
/// the FPGA: every convolution, pool, batch-norm op and activation placed
/// there (placement log), outputs equal to the CPU's within 1e-4 of their
/// largest magnitude.
#[test]
fn keras_cnns_and_mobilenet_v2_predict_on_the_fpga() {
    let out = run_with_args(
        "keras_cnn.py",
        &["predict"],
        &[("TF_CPP_MIN_LOG_LEVEL", "0")],
    );
    assert_ok(
        &out,
        &[
            "convnet predict (16, 28, 28, 1)",
            "resnet_block predict (4, 16, 16, 8)",
            "MobileNetV2-0.35 predict (2, 96, 96, 3)",
        ],
    );
}

/// The small convnet trains with its forward and backward passes on the
/// FPGA (convolution, depthwise, pooling, ReLU and bias gradients; no
/// gradient node but constants on the CPU) and losses equal to the CPU's.
#[test]
fn keras_convnet_fit_matches_the_cpu() {
    let out = run_with_args("keras_cnn.py", &["fit"], &[("TF_CPP_MIN_LOG_LEVEL", "0")]);
    assert_ok(&out, &["convnet fit: losses fpga", "backward on FPGA:0: ["]);
}
