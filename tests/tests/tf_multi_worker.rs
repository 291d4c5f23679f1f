//! Training across processes on TF's own runtime: two workers on localhost
//! (`TF_CONFIG`, `MultiWorkerMirroredStrategy()` with no device list), each
//! with its own simulated FPGA registered as `GPU` (`TENSORPLUG_AS_GPU`).
//! A custom loop and Keras 2's `fit` equal a one-worker run over the same
//! global batches, the all-reduce's merge runs on the device (profile), a
//! killed worker fails its peer with a clear error in bounded time, and
//! `MirroredStrategy()` picks two FPGAs in one process.
//! `docs/multi-worker.md`; the script is `tests/python/tf_multi_worker.py`.

use tensorplug_tests::{expect_success, run_tf_with_plugin};

#[test]
fn two_workers_train_on_their_fpgas_equal_to_one() {
    let output = run_tf_with_plugin("tf_multi_worker.py", &[], None);
    let stdout = expect_success(&output, "tf_multi_worker.py");
    for marker in [
        "loop: merges on the device in the profiled step:",
        "loop: OK,",
        "fit: OK,",
        "kill: OK,",
        "mirrored: OK, MirroredStrategy() picked",
    ] {
        assert!(stdout.contains(marker), "no `{marker}` in:\n{stdout}");
    }
    print!("{stdout}");
}
