//! The pluggable profiler end to end against the real `tensorflow-cpu`
//! wheel: `tf.profiler.experimental.start/stop` around work on
//! `/device:FPGA:0`, the `.xplane.pb` read with TF's `xplane_pb2` and
//! converted with `xprof` (trace viewer). One Python process per scenario
//! (`tests/python/tf_profiler_scenarios.py`).

use std::process::Output;
use tensorplug_tests::run_tf_with_plugin;

/// RSS growth allowed over 90 start/stop/collect cycles (cycle 10 → 100).
/// Measured 0.0 MiB in each run here; a leak of 23 KiB or more per cycle
/// (e.g. one drained-event buffer of 1,500 events) exceeds it.
const MAX_RSS_GROWTH_MIB: &str = "2";

#[track_caller]
fn assert_ok(output: &Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("ok:"),
        "scenario failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    stdout
}

/// A two-layer MLP (`tf.function`, name scopes `dense1`/`dense2`) runs 3
/// times under the profiler: our plane `/device:GPU:1000` has a `Queue 0`
/// line whose events are named after the TF nodes, carry `tf_op`, bytes and
/// flops, have durations, do not overlap, run dense1 → dense2 three times,
/// and sit on TF's clock; every host launch span pairs with its own device
/// op (FIFO order, one op tag per launch), which begins after the launch and
/// ends before the result read that waited for it (`launch_offsets`); xprof's
/// trace viewer shows the same ops in the same order with durations.
#[test]
fn model_ops_show_in_the_xplane_and_in_xprof_in_order() {
    let output = run_tf_with_plugin("tf_profiler_scenarios.py", &["model"], None);
    let stdout = assert_ok(&output);
    assert!(stdout.contains("xprof shows"), "{stdout}");
}

/// With both cores kept busy by two other processes, no device
/// op of 60 MLP runs begins before its launch on TF's clock (within 10 µs).
/// The sim's counter is read live from the model's clock for the sync
/// pairs; a snapshot the model thread published went stale by hundreds of
/// µs under this load, and ops showed before their launches.
#[test]
fn device_ops_never_precede_their_launch_with_both_cores_busy() {
    let output = run_tf_with_plugin("tf_profiler_scenarios.py", &["under_load", "60"], None);
    let stdout = assert_ok(&output);
    assert!(stdout.contains("under load"), "{stdout}");
}

/// Two `sim` devices: each `/device:GPU:<1000 + n>` plane has its own `Host
/// API` line with exactly the launches (and copies) made for that device,
/// and every launch pairs with its own op within the same bounds.
#[test]
fn two_devices_each_get_their_own_host_spans() {
    let output = run_tf_with_plugin(
        "tf_profiler_scenarios.py",
        &["two_devices"],
        Some("sim,sim"),
    );
    let stdout = assert_ok(&output);
    assert!(stdout.contains("host spans per device"), "{stdout}");
}

/// The launch → op pairing the two tests above rely on, on made-up planes:
/// it accepts ops that run after later launches (FIFO, one tag per launch,
/// a node launched three times in a row) and rejects a launch without an
/// op, an op before its launch or after the read that waited for it, an op
/// without a launch, and overlapping ops, each for the stated reason.
#[test]
fn launch_pairing_rejects_mispaired_planes() {
    let output = run_tf_with_plugin("tf_profiler_scenarios.py", &["pairing"], None);
    let stdout = assert_ok(&output);
    assert!(stdout.contains("rejects 5 mispairings"), "{stdout}");
}

/// Profiling CPU-only work writes no device plane.
#[test]
fn no_fpga_work_means_no_device_plane() {
    let output = run_tf_with_plugin("tf_profiler_scenarios.py", &["no_fpga_ops"], None);
    assert_ok(&output);
}

/// `TENSORPLUG_PROFILER=off` (read at every start): TF's profile has no
/// device plane; set back to `on` in the same process, it has one again.
#[test]
fn tensorplug_profiler_off_traces_no_device() {
    let output = run_tf_with_plugin("tf_profiler_scenarios.py", &["switch_off"], None);
    let stdout = assert_ok(&output);
    assert!(stdout.contains("device planes off []"), "{stdout}");
}

/// 100 start/stop/collect cycles in one process, each with an FPGA op:
/// RSS stays flat and the last cycle still records the op.
#[test]
fn hundred_profiler_cycles_keep_memory_flat() {
    let output = run_tf_with_plugin(
        "tf_profiler_scenarios.py",
        &["cycles", "100", MAX_RSS_GROWTH_MIB],
        None,
    );
    let stdout = assert_ok(&output);
    assert!(stdout.contains("100 cycles"), "{stdout}");
}
