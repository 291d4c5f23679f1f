//! The graph optimizer against real TensorFlow (`TF_InitGraph`).
//! Each scenario runs in its own Python process.

use std::collections::HashSet;
use std::path::Path;
use tensorplug_host_bridge::internals::graph::rewrite;
use tensorplug_tests::{run_python, run_tf_with_plugin, workspace_root};

fn check(output: &std::process::Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{what} failed ({}):\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// A scratch directory, removed when dropped.
fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("tensorplug-tf-graph-{name}-"))
        .tempdir()
        .expect("scratch dir")
}

/// The checked-in descriptors are the pinned wheel's, and wire-compatible
/// with those of an older TF the suite runs on.
#[test]
fn descriptor_set_matches_the_pinned_wheel() {
    let stdout = check(
        &run_python("graph_fds.py", &["--check"]),
        "graph_fds.py --check",
    );
    assert!(
        stdout.contains("UP-TO-DATE 13 files") || stdout.contains("COMPATIBLE with the pinned"),
        "{stdout}"
    );
}

/// Our rewrite of TF-traced graphs computes what the originals compute, on
/// TF's own CPU `_FusedMatMul` kernel (grappler off, so nothing else changes).
#[test]
fn rewritten_graphs_compute_the_same_on_tf() {
    let testdata = workspace_root().join("host-bridge/src/graph/testdata");
    let dir = scratch("eval");
    // (fixture, fused nodes expected); Keras fixtures read variables and
    // cannot be fed, so these are the constant-weight ones.
    for (name, fused) in [
        ("chain_of_three", 3),
        ("transpose_control", 1),
        ("shared_bias", 1),
    ] {
        let original = testdata.join(format!("{name}.pb"));
        let bytes = std::fs::read(&original).expect("fixture");
        let (fusions, out) = rewrite(&bytes, &HashSet::new(), "FPGA").expect("rewrite");
        assert_eq!(fusions.with_relu + fusions.bias_only, fused, "{name}");
        let rewritten = dir.path().join(format!("{name}.fused.pb"));
        std::fs::write(&rewritten, out.expect("rewritten")).expect("write");
        let stdout = check(
            &run_python(
                "graph_fused_eval.py",
                &[path(&original), path(&rewritten), &fused.to_string()],
            ),
            name,
        );
        assert!(
            stdout.contains(&format!("{fused} fused nodes")),
            "{name}: {stdout}"
        );
    }
}

/// In a TF process with the plugin: `TF_InitGraph` registers, grappler calls
/// `optimize_func` on the function graph (nodes to preserve read through
/// TF's C API), and with `TENSORPLUG_GRAPH_FUSION=0` the graph comes back
/// byte-identical and still computes what the CPU computes.
#[test]
fn plugin_optimizer_runs_and_passes_through_when_fusion_is_off() {
    let dir = scratch("passthrough");
    let stdout = check(
        &run_tf_with_plugin("tf_graph_fusion.py", &[path(dir.path()), "off"], None),
        "tf_graph_fusion.py off",
    );
    assert!(stdout.contains("OK off"), "{stdout}");
}

/// The full path: Dense+ReLU on the FPGA is rewritten into `_FusedMatMul`,
/// computes what the CPU computes, and what the unfused FPGA graph computes.
#[test]
fn plugin_fuses_dense_relu_on_fpga() {
    let run = |mode: &str| {
        let dir = scratch(mode);
        let stdout = check(
            &run_tf_with_plugin("tf_graph_fusion.py", &[path(dir.path()), mode], None),
            mode,
        );
        assert!(stdout.contains(&format!("OK {mode}")), "{stdout}");
        result(&stdout)
    };
    let fused = run("fused");
    let unfused = run("off");
    assert_eq!(fused.len(), 32, "x is [4, 16], the layer has 8 units");
    for (i, (a, b)) in fused.iter().zip(&unfused).enumerate() {
        assert!(
            (a - b).abs() <= 1e-6 * b.abs().max(1.0),
            "element {i}: fused {a}, unfused {b}"
        );
    }
    assert!(
        fused.iter().any(|v| *v > 0.0) && fused.contains(&0.0),
        "ReLU output expected"
    );
}

/// The `RESULT v,v,…` line of a scenario.
fn result(stdout: &str) -> Vec<f64> {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .expect("RESULT line");
    line.split(',').map(|v| v.parse().expect("float")).collect()
}

fn path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// TF's own passes stay on with the plugin: a `tf.function` on
/// the CPU that reads FPGA-resident tensors gets the same CPU partition as
/// in a process without the plugin (the remapper's fused MatMul, the folded
/// `2.0 * 3.0`), so the comparison cannot pass with the passes off.
#[test]
fn cpu_nodes_get_tf_rewrites_as_without_the_plugin() {
    let cpu_ops = |stdout: &str| -> String {
        let line = stdout.lines().find_map(|l| l.strip_prefix("cpu ops: "));
        line.expect("a `cpu ops:` line").to_string()
    };
    let without = check(
        &run_python("tf_cpu_passes.py", &["cpu_partition"]),
        "cpu_partition without the plugin",
    );
    let with = check(
        &run_tf_with_plugin("tf_cpu_passes.py", &["cpu_partition"], None),
        "cpu_partition with the plugin",
    );
    assert!(without.contains("fpga registered: False"), "{without}");
    assert!(with.contains("fpga registered: True"), "{with}");
    assert_eq!(cpu_ops(&with), cpu_ops(&without));
    assert!(cpu_ops(&with).contains("FusedMatMul"), "{with}");
    assert!(!cpu_ops(&with).contains("\"Relu\""), "{with}");
}

/// On FPGA nodes TF's passes make `Mul` (from `x + x`), folded `Const`s,
/// `Square` (from `d * d`), `SquaredDifference` (from `(x - a)²`), `AddN`
/// and `Log1p` (from `log(q + 1)`), all with FPGA kernels:
/// nothing runs on the CPU, and the result equals the CPU's, with soft
/// placement off. (An op TF makes without an FPGA kernel is split back or
/// moved to the CPU by our pass: `host-bridge/src/graph/runnable.rs`.)
#[test]
fn tf_passes_on_fpga_nodes_leave_a_runnable_graph() {
    let output = run_tf_with_plugin("tf_cpu_passes.py", &["fpga_nodes"], None);
    let stdout = check(&output, "fpga_nodes");
    assert!(stdout.contains("fpga ops:"), "{stdout}");
    assert!(stdout.contains("cpu ops: []"), "{stdout}");
}

/// The fallback report: a Keras model built to fall back (a
/// `sin` activation: `Sin` has no FPGA kernel) is reported once, on stderr and by the wheel's
/// `<lib>_fallback.report`, naming the op, the node and why; a plain MLP
/// is not; `TENSORPLUG_FALLBACK=off` silences stderr but not the helper;
/// `=error` fails the predict naming the same.
#[test]
fn the_fallback_report_names_float_ops_on_the_cpu_and_nothing_else() {
    let output = run_tf_with_plugin("tf_fallback_report.py", &["warn"], None);
    let stdout = check(&output, "tf_fallback_report.py warn");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let entry = stdout
        .lines()
        .find_map(|l| l.strip_prefix("report sin "))
        .unwrap_or_else(|| panic!("{stdout}"));
    let (op, rest) = entry.split_once(" '").unwrap_or_else(|| panic!("{entry}"));
    let node = rest
        .strip_suffix("' (no kernel)")
        .unwrap_or_else(|| panic!("{entry}"));
    assert_eq!(op, "Sin", "{entry}");
    assert!(
        node.contains("/activation") && node.ends_with("/Sin"),
        "{entry}"
    );
    assert!(stdout.contains("report mlp -\n"), "{stdout}");
    assert!(stdout.contains("predicted"), "{stdout}");
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("run on the CPU"))
        .collect();
    assert_eq!(said.len(), 1, "once per node:\n{stderr}");
    assert!(
        said[0].contains(&format!(
            "1 float op(s) of a graph on FPGA run on the CPU: {entry}"
        )),
        "{}",
        said[0]
    );
    // Off: nothing on stderr; the helper still reports.
    let output = run_tf_with_plugin("tf_fallback_report.py", &["off"], None);
    let off = check(&output, "tf_fallback_report.py off");
    assert!(off.contains(&format!("report sin {entry}\n")), "{off}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("run on the CPU"), "{stderr}");
    let output = run_tf_with_plugin("tf_fallback_report.py", &["error"], None);
    let stdout = check(&output, "tf_fallback_report.py error");
    let says = format!(
        "assertion failed: [{op} node {node} runs on the CPU, not on FPGA (no kernel): \
         TENSORPLUG_FALLBACK=error]"
    );
    assert!(stdout.contains(&says), "{says:?} not in\n{stdout}");
}

/// A Bidirectional LSTM trains one epoch with `TENSORPLUG_FALLBACK=error`:
/// no float op of its step runs on the CPU. What TF's CPU executor still
/// runs of it are the gradient loop's `variant` `TensorList` ops
/// (`ZerosLike`, `AddN`), int64 counters and `tf.data`, which no device
/// kernel can take (`docs/ops.md`); the loop's float math is on the FPGA,
/// as a profile of a second epoch shows.
#[test]
fn a_bidirectional_lstm_trains_with_no_float_op_on_the_cpu() {
    let output = run_tf_with_plugin("tf_fallback_report.py", &["bilstm"], None);
    let stdout = check(&output, "tf_fallback_report.py bilstm");
    assert!(stdout.contains("bilstm fit ok"), "{stdout}");
    let cpu = tensorplug_tests::op_counts(&stdout, "cpu_ops ");
    let device = tensorplug_tests::op_counts(&stdout, "device_ops ");
    let count =
        |ops: &std::collections::BTreeMap<String, u64>, op: &str| ops.get(op).copied().unwrap_or(0);
    for op in [
        "MatMul",
        "Sigmoid",
        "SigmoidGrad",
        "Tanh",
        "TanhGrad",
        "BiasAddGrad",
    ] {
        assert!(count(&device, op) > 0, "no {op} on the FPGA: {device:?}");
        assert_eq!(count(&cpu, op), 0, "{op} on the CPU: {cpu:?}");
    }
    eprintln!("on the CPU: {cpu:?}");
}

/// A BiLSTM's gradient loop sums its input's list gradients on the FPGA:
/// with `graph/list_grads.rs` and `list_zeros.rs` no `AddN` of lists is
/// left, and no `ZerosLike` of one runs on the CPU; without them TF's
/// `variant` `AddN` and `ZerosLike` run on the CPU (TF 2.19 and later,
/// which export no `TF_AddNVariant`) or on the FPGA through it (2.15–2.18,
/// `kernels/ops/variant.rs`). With Keras 3 the loops' int32 lists run on
/// the CPU (`list_host.rs`). Three SGD steps each way: losses and weights
/// bit-equal (`tests/python/tf_list_grads.py`).
#[test]
fn a_bidirectional_lstm_accumulates_its_list_gradients_on_the_device() {
    let output = run_tf_with_plugin("tf_list_grads.py", &[], None);
    let stdout = check(&output, "tf_list_grads.py");
    let field = |key: &str| tensorplug_tests::field(&stdout, key);
    assert_eq!(field("losses_equal "), "True", "{stdout}");
    assert_eq!(field("weights_equal "), "True", "{stdout}");
    let counts = |key: &str| tensorplug_tests::op_counts(&stdout, key);
    let (off, on) = (counts("off "), counts("on "));
    let n =
        |ops: &std::collections::BTreeMap<String, u64>, op: &str| ops.get(op).copied().unwrap_or(0);
    // Without the pass, each iteration's sum of lists runs somewhere.
    assert!(
        n(&off, "addn_cpu") + n(&off, "addn_device") > n(&on, "addn_device"),
        "{stdout}"
    );
    assert_eq!(n(&on, "addn_cpu"), 0, "{stdout}");
    assert_eq!(n(&on, "zeros_cpu"), 0, "{stdout}");
    let lists = counts("lists_on ");
    if field("keras ") == "3" {
        // The loops' int32 lists are pushed and popped on the CPU, so no
        // backward iteration waits for the device to hand back its index:
        // fewer host waits in the whole step than backward iterations (the
        // sequence's length, each direction).
        let backward: u64 = field("steps ").parse().expect("steps");
        let backward = 2 * backward;
        // Each forward iteration pushes its index, which its backward
        // iteration pops; the lists of the input's length and element
        // shape, which nothing pops once the gradient's fresh list is gone
        // (`list_grads.rs`), are removed (`list_dead.rs`).
        assert_eq!(n(&lists, "push_cpu"), backward, "{stdout}");
        assert_eq!(n(&lists, "pop_cpu"), backward, "{stdout}");
        assert!(n(&lists, "host_syncs") < backward, "{stdout}");
        assert!(
            n(&lists, "host_syncs") < n(&counts("lists_off "), "host_syncs"),
            "{stdout}"
        );
    } else {
        // Keras 2 runs the loop in a function of its own and its gradient in
        // another: the lists are a function's outputs, and stay.
        assert_eq!(n(&lists, "push_cpu"), 0, "{stdout}");
    }
    if field("variant_kernels ") == "yes" {
        // TF_AddNVariant and TF_ZerosLikeVariant keep the lists on the FPGA.
        assert_eq!(n(&off, "addn_cpu"), 0, "{stdout}");
        assert_eq!(n(&off, "zeros_cpu"), 0, "{stdout}");
    } else {
        assert!(n(&off, "addn_cpu") > 0, "{stdout}");
        assert!(n(&off, "zeros_cpu") > 0, "{stdout}");
    }
    println!("{stdout}");
}

/// Attribute values the FPGA cannot run (Einsum equations it does not
/// lower, `GatherV2` with `batch_dims` ≠ 0) run on the CPU in a graph with
/// the right answer and a fallback report entry, instead of failing the step
/// with `UnimplementedError`; `GatherV2` with `batch_dims` ≠ 0 also in eager
/// mode (TF places it: the kernel allows `batch_dims` 0 only); an Einsum
/// label summed within one operand runs on the device, eager and in a
/// graph, and so does an eager repeated label (a graph's goes to the CPU,
/// reported); ThreeFry,
/// which TF's CPU refuses too, fails with the CPU's error class; and
/// `TENSORPLUG_FALLBACK=error` fails the graph gather
/// (`tests/python/tf_attr_fallback.py`).
#[test]
fn attribute_values_the_device_cannot_run_fall_back_to_the_cpu() {
    let output = run_tf_with_plugin("tf_attr_fallback.py", &[], None);
    let stdout = check(&output, "tf_attr_fallback.py");
    for case in [
        "einsum_summed_in_one_operand ok on the device",
        "eager_einsum_summed_in_one_operand ok on FPGA:0",
        "eager_einsum_two_operands_each_summing ok on FPGA:0",
        "eager_einsum_repeated_label ok on FPGA:0",
        "eager_einsum_trace ok on FPGA:0",
        "einsum_repeated_label ok Einsum",
        "einsum_three_operands ok on the device",
        "gather_batch_dims_1 ok GatherV2",
        "eager_gather_batch_dims_1 ok on CPU:0",
        "eager_gather_batch_dims_0 ok on FPGA:0",
        "threefry stateless_uniform same error as the CPU: InvalidArgumentError",
        "threefry raw_alg_2 same error as the CPU: InvalidArgumentError",
        "fallback error ok",
    ] {
        assert!(stdout.contains(case), "no `{case}` in:\n{stdout}");
    }
    assert!(stdout.contains("done"), "{stdout}");
}

/// The rest of the line of `stdout` that starts with `key`.
fn keyed(stdout: &str, key: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(key).map(str::trim))
        .unwrap_or_else(|| panic!("no `{key}` in:\n{stdout}"))
        .to_owned()
}

/// A `mixed_bfloat16` Keras convnet with no device scope runs its
/// convolution block and its `Dense` on the device, read from the profile's
/// device plane. On a CPU with oneDNN's bfloat16 support TF's remapper
/// fused them on the CPU (`_MklNativeFusedConv2D`, `_MklNativeFusedMatMul`)
/// while they were placed there; with the half-precision kernels TF's
/// placer puts them on our device first, so the graph our pass sees has no
/// CPU fusion (`fused_by_tf no`) on any CPU (`tests/python/tf_half_fused.py`).
#[test]
fn a_bfloat16_convnet_runs_its_fused_blocks_on_the_device() {
    let output = run_tf_with_plugin("tf_half_fused.py", &[], None);
    let stdout = check(&output, "tf_half_fused.py");
    let line = |key: &str| keyed(&stdout, key);
    let device = line("device_ops");
    let ran = |op: &str| {
        device
            .split_whitespace()
            .any(|kv| kv.split('=').next() == Some(op))
    };
    assert!(
        ran("_FusedConv2D") || ran("Conv2D"),
        "no convolution on the device: {device}"
    );
    assert!(
        ran("_FusedMatMul") || ran("MatMul"),
        "no matmul on the device: {device}"
    );
    assert_eq!(line("cpu_compute"), "", "compute on the CPU:\n{stdout}");
    let diff: f64 = line("max_diff").parse().expect("max_diff is a number");
    assert!(diff <= 1e-2, "predictions differ from the CPU's by {diff}");
    assert_eq!(line("fused_by_tf"), "no", "TF fused on the CPU:\n{stdout}");
}

/// Half ops follow the user's device scope: in a function that uses the
/// FPGA, a bfloat16 `MatMul` with no scope runs on the device and one
/// under `tf.device("/CPU:0")` on the CPU (read from the profile's planes,
/// where oneDNN's `_MklMatMul` counts too). Before the half kernels the
/// graph pass took the pinned one to the device, and eager half ops ran on
/// the CPU. Eager bfloat16 and float16 ops run on the device, within one
/// of the type's ulps of the float32 op rounded once (TF's CPU rounds more
/// often on TF 2.15). The same casts around the float32 kernel run
/// `tf.linalg.matmul` of int8 into int32 on the device, which ran on the
/// CPU before (`tests/python/tf_half_scope.py`).
#[test]
fn half_ops_with_no_scope_run_on_the_device_and_pinned_ones_on_the_cpu() {
    let output = run_tf_with_plugin("tf_half_scope.py", &[], None);
    let stdout = check(&output, "tf_half_scope.py");
    let line = |key: &str| keyed(&stdout, key);
    let count = |ops: &str, op: &str| -> u32 {
        ops.split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .filter(|(k, _)| *k == op || (op == "*MatMul" && k.ends_with("MatMul")))
            .map(|(_, v)| v.parse::<u32>().unwrap())
            .sum()
    };
    let device = line("graph_device");
    assert_eq!(count(&device, "MatMul"), 1, "device plane: {device}");
    assert_eq!(count(&device, "Relu"), 1, "device plane: {device}");
    let cpu = line("graph_cpu");
    assert_eq!(count(&cpu, "*MatMul"), 1, "CPU plane: {cpu}");
    assert_eq!(line("pinned_exact"), "True", "{stdout}");
    let eager: Vec<&str> = stdout.lines().filter(|l| l.starts_with("eager ")).collect();
    assert_eq!(eager.len(), 6, "{stdout}");
    for row in eager {
        let [_, name, device, diff, _cpu] = row.split_whitespace().collect::<Vec<_>>()[..] else {
            panic!("bad row `{row}`");
        };
        assert_eq!(device, "device:FPGA:0", "{row}");
        let ulp = if name.ends_with("bfloat16") {
            2f64.powi(-8)
        } else {
            2f64.powi(-11)
        };
        let diff: f64 = diff.parse().expect("a number");
        assert!(
            diff <= ulp,
            "{row}: more than an ulp from float32 rounded once"
        );
    }
    // LeakyRelu and LeakyReluGrad in both half types: on the device, eager
    // and in a function, equal to TF's CPU bit for bit (`alpha` rounded to
    // the type first, as TF's kernels do).
    for dtype in ["bfloat16", "float16"] {
        assert_eq!(
            line(&format!("leaky {dtype}")),
            "device:FPGA:0 device:FPGA:0 True 1 1",
            "{stdout}"
        );
    }
    // int8 × int8 → int32 (`BatchMatMulV3`): on the device, exact over 1000
    // terms, broadcast and transposed; past 1024 terms refused by name.
    assert_eq!(
        line("int8_matmul"),
        "device:FPGA:0 int32 True True",
        "{stdout}"
    );
    assert_eq!(line("int8_matmul_long"), "refused True", "{stdout}");
}

/// A convnet's `predict` under `mixed_float16` and `mixed_bfloat16`, against
/// the same weights in float32: the device (float32 between casts, one
/// rounding) is within a few half ulps of float32, and no further from it
/// than TF's CPU kernels. On TF 2.15 the CPU's float16 is the one further
/// off (7.7e-3 against the device's 1.0e-3): the gap to the CPU that the
/// f16 `fit` comparison shows there (`tests/python/half_vs_float32.py`).
#[test]
fn half_precision_predictions_are_as_close_to_float32_as_the_cpus() {
    let output = run_tf_with_plugin("half_vs_float32.py", &[], None);
    let stdout = check(&output, "half_vs_float32.py");
    for (policy, ulp) in [
        ("mixed_float16", 2f64.powi(-11)),
        ("mixed_bfloat16", 2f64.powi(-8)),
    ] {
        let line = stdout
            .lines()
            .find_map(|l| l.strip_prefix(policy))
            .unwrap_or_else(|| panic!("no `{policy}` line in:\n{stdout}"));
        let words: Vec<&str> = line.split_whitespace().collect();
        let [_, fpga, _, cpu] = words[..] else {
            panic!("`{policy}{line}` is not `fpga <e> cpu <e>`");
        };
        let (fpga, cpu): (f64, f64) = (fpga.parse().unwrap(), cpu.parse().unwrap());
        assert!(
            fpga <= 4.0 * ulp,
            "{policy}: the device is {fpga} off float32"
        );
        assert!(
            fpga <= cpu + ulp,
            "{policy}: the device ({fpga}) is further from float32 than the CPU ({cpu})"
        );
        println!("{policy}: from float32, the device {fpga}, TF's CPU {cpu}");
    }
}

/// TF did not refuse a function the graph pass rewrote: it would run the
/// graph as it was, without any of the plugin's rewrites, and say so only
/// as a warning (`tf_programs.py` turns TF's warnings on).
fn tf_took_the_rewrite(output: &std::process::Output) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let refused: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("optimization failure") || l.contains("Failed to apply optimizer"))
        .collect();
    assert!(
        refused.is_empty(),
        "TF refused a rewritten graph:\n{}",
        refused.join("\n")
    );
}

/// Device programs in TF (`TENSORPLUG_GRAPH_PROGRAMS=1`): a Keras MLP's
/// dense stack becomes one program node, `predict` equals the CPU's, the
/// report names the program, the compiled program is dumped, and the
/// profile's FPGA plane still shows each TF node of it by its op type
/// (`tests/python/tf_programs.py`).
#[test]
fn a_keras_mlp_predicts_through_a_device_program_equal_to_the_cpu() {
    let work = scratch("programs");
    let dir = work.path().to_str().expect("utf-8 path");
    let output = run_tf_with_plugin("tf_programs.py", &[dir], None);
    let stdout = check(&output, "tf_programs.py");
    tf_took_the_rewrite(&output);
    assert!(stdout.contains("5 commands"), "{stdout}");
    println!("{stdout}");
}

/// A Keras MLP built under a CPU scope, then `predict` and `evaluate` on
/// the FPGA: each traces its own function, whose programs take the CPU's
/// weights as host weights; `evaluate`'s find the copy `predict`'s keep on
/// the device and add none (TF's memory statistics of the FPGA;
/// `tests/python/tf_programs.py shared`).
#[test]
fn two_functions_over_one_cpu_model_share_its_weights_on_the_device() {
    let work = scratch("programs-shared");
    let dir = work.path().to_str().expect("utf-8 path");
    let output = run_tf_with_plugin("tf_programs.py", &[dir, "shared"], None);
    let stdout = check(&output, "tf_programs.py shared");
    tf_took_the_rewrite(&output);
    let line = tensorplug_tests::field(&stdout, "shared: ");
    let figure = |key: &str| -> u64 {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(key))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {key}<number> in {line}"))
    };
    let (weights, added) = (figure("weights="), figure("evaluate_added="));
    assert!(added < weights / 2, "{stdout}");
    println!("{stdout}");
}

/// A program the device refuses falls back to its native segment: on an
/// empty contraction (which a program refuses, naming the node) the
/// segment's nodes run op by op on the FPGA, equal to TF's CPU; on a call
/// the device runs as a program, they run nothing; the report says it
/// once; with `TENSORPLUG_FALLBACK=error` the call fails naming the reason
/// (`tests/python/tf_program_native.py`).
#[test]
fn a_refused_program_falls_back_to_its_native_segment() {
    let work = scratch("programs-native");
    let dir = work.path().to_str().expect("utf-8 path");
    let output = run_tf_with_plugin("tf_program_native.py", &[dir], None);
    let stdout = check(&output, "tf_program_native.py");
    let field = |key: &str| tensorplug_tests::field(&stdout, key);
    for key in ["ran ok ", "native ok "] {
        let diff: f64 = field(key).parse().expect("a number");
        assert!(diff <= 1e-6, "{key}{diff}:\n{stdout}");
    }
    // (copies' ops, program's ops) on the FPGA plane: one or the other.
    let counts = |key: &str| -> (u32, u32) {
        let f = field(key);
        let (a, b) = f.split_once(' ').expect("two counts");
        (a.parse().expect("a count"), b.parse().expect("a count"))
    };
    let (native, program) = counts("device_native ");
    assert!(native == 0 && program > 0, "{stdout}");
    let (native, program) = counts("refused_native ");
    assert!(native > 0 && program == 0, "{stdout}");
    assert_eq!(field("report "), "1", "{stdout}");
    let error = field("error ok ");
    assert!(
        error.starts_with("InvalidArgumentError") && error.contains("an empty input"),
        "{error}"
    );
}

/// Reductions in device programs on `sim`: LayerNormalization's `Mean`,
/// GlobalAveragePooling2D's over two axes and a `Sum` over a middle axis
/// are held by programs, and the model equals the CPU
/// (`tests/python/tf_programs.py reduce`).
#[test]
fn reductions_in_device_programs_equal_the_cpu() {
    let work = scratch("programs-reduce");
    let dir = work.path().to_str().expect("utf-8 path");
    let output = run_tf_with_plugin("tf_programs.py", &[dir, "reduce"], None);
    let stdout = check(&output, "tf_programs.py reduce");
    tf_took_the_rewrite(&output);
    assert!(stdout.contains("reduce: equal to the CPU"), "{stdout}");
    println!("{stdout}");
}

/// Keras' MultiHeadAttention with a residual and a LayerNormalization on
/// `sim`: its projections and `Einsum`s are `BatchMatMul` records inside
/// one program, equal to the CPU, and its ops are on the FPGA's profile
/// plane under their own names; the LayerNormalization is one fused
/// `LayerNorm` command and the `gelu` of a Dense after it one `Gelu`,
/// bit-equal to the program with fusion off
/// (`tests/python/tf_programs.py attention`).
#[test]
fn an_attention_block_is_one_device_program_equal_to_the_cpu() {
    let work = scratch("programs-attention");
    let dir = work.path().to_str().expect("utf-8 path");
    let output = run_tf_with_plugin("tf_programs.py", &[dir, "attention"], None);
    let stdout = check(&output, "tf_programs.py attention");
    tf_took_the_rewrite(&output);
    assert!(
        stdout.contains("attention: equal to the CPU in 3 calls; 1 program(s) compiled"),
        "{stdout}"
    );
    // Keras 3 writes the projections as BatchMatMulV2, Keras 2 as Einsums.
    assert!(stdout.contains("'Einsum'"), "{stdout}");
    // Keras 3's LayerNormalization is one fused command (TF 2.15's Keras 2
    // writes one FusedBatchNormV3: nothing to fuse).
    // (The script requires the first under Keras 3.)
    assert!(
        stdout.contains("layer norm: one LayerNorm command, bit-equal to the unfused program")
            || stdout.contains("writes FusedBatchNormV3, not fused"),
        "{stdout}"
    );
    // (The script requires the first where TF writes `gelu` with `Erfc`.)
    assert!(
        stdout.contains("gelu: one Gelu command, bit-equal to the unfused program")
            || stdout.contains("writes it with Erf, not fused"),
        "{stdout}"
    );
    println!("{stdout}");
}

/// Keras `fit` of an MLP through device programs on `sim`, its variables
/// on the FPGA and on the CPU, of a small convnet, whose backward
/// window ops (`MaxPoolGrad`, `AvgPoolGrad`, `Conv2DBackpropFilter`,
/// `Conv2DBackpropInput`) programs hold too, and of an unrolled LSTM,
/// whose gates (`Split`) and their gradients (`ConcatV2`, `BiasAddGrad`)
/// they hold:
/// losses and trained weights bit-equal to op by op
/// (`tests/python/tf_programs.py fit`).
#[test]
fn keras_fit_through_device_programs_is_bit_equal_to_op_by_op() {
    let work = scratch("programs-fit");
    let dir = work.path().to_str().expect("utf-8 path");
    let output = run_tf_with_plugin("tf_programs.py", &[dir, "fit"], None);
    let stdout = check(&output, "tf_programs.py fit");
    tf_took_the_rewrite(&output);
    for what in [
        "an MLP, variables on /device:FPGA:0",
        "an MLP, variables on /device:CPU:0",
        "a convnet, variables on /device:FPGA:0",
        "an unrolled LSTM, variables on /device:FPGA:0",
    ] {
        assert!(stdout.contains(&format!("fit of {what}")), "{stdout}");
    }
    // The convnet's backward window ops run as program commands.
    let held = keyed(&stdout, "fit: programs hold");
    for op in [
        "AvgPoolGrad",
        "Conv2DBackpropFilter",
        "Conv2DBackpropInput",
        "MaxPoolGrad",
        "ConcatV2",
        "BiasAddGrad",
        "Split",
    ] {
        assert!(held.contains(&format!("{op}=")), "{stdout}");
    }
    println!("{stdout}");
}

/// A Keras convnet through a device program on `sim`: its convolution
/// block, Flatten and its dense head become one program (`_FusedConv2D`,
/// `MaxPool`, `Reshape`, `_FusedMatMul` among its nodes), and `predict`
/// equals the CPU, also for the model built under a CPU scope, whose
/// weights the program keeps on the device.
#[test]
fn a_keras_convnet_predicts_through_device_programs_equal_to_the_cpu() {
    let work = scratch("programs-convnet");
    let dir = work.path().to_str().expect("utf-8 path");
    let output = run_tf_with_plugin("tf_programs.py", &[dir, "convnet"], None);
    let stdout = check(&output, "tf_programs.py convnet");
    tf_took_the_rewrite(&output);
    assert!(stdout.contains("convnet: equal to the CPU"), "{stdout}");
    assert!(
        stdout.contains("convnet with CPU variables: equal to the CPU"),
        "{stdout}"
    );
}
