//! The vendor seam in real TensorFlow: the reference FPGA's plugin and the
//! example NPU's plugin loaded together into one process.

use std::process::Command;
use tensorplug_tests::{
    npu_plugin_path, plugin_path, python, scratch_dir, tf_minor_version, workspace_root,
};

/// A folder with both plugins, for `TF_PLUGGABLE_DEVICE_LIBRARY_PATH`.
fn plugins_dir() -> std::path::PathBuf {
    let dir = scratch_dir("two-plugins");
    for plugin in [plugin_path(), npu_plugin_path()] {
        let link = dir.join(plugin.file_name().unwrap());
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&plugin, &link).unwrap();
    }
    dir
}

#[test]
fn fpga_and_npu_plugins_run_side_by_side_with_cpu_fallback_and_one_plane_each() {
    let logdir = scratch_dir("two-plugins-profile");
    let out = Command::new(python())
        .arg(workspace_root().join("tests/python/tf_two_plugins.py"))
        .arg(&logdir)
        .env("TF_CPP_MIN_LOG_LEVEL", "2")
        .env("TF_PLUGGABLE_DEVICE_LIBRARY_PATH", plugins_dir())
        .env_remove("TENSORPLUG_DEVICE")
        .output()
        .expect("python");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    // TF 2.15-2.18 number the visible devices of every pluggable type in
    // one list, so a second device type fails TF's context creation (fixed
    // in 2.19; docs/tf-abi.md). There the test pins that failure.
    if tf_minor_version() < (2, 19) {
        assert!(
            !out.status.success()
                && stderr.contains("'visible_device_list' listed an invalid Device id '1'"),
            "TF {:?} was expected to fail with two plugin device types ({}):\n{stdout}\n{stderr}",
            tf_minor_version(),
            out.status
        );
        eprintln!(
            "TF {:?}: two plugin device types fail in TF itself",
            tf_minor_version()
        );
        return;
    }
    assert!(
        out.status.success(),
        "scenario failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    for marker in [
        "matmul+relu correct on FPGA:0 and NPU:0",
        "softmax without an NPU kernel: refused, then ran on",
        "profile: one plane per device",
    ] {
        assert!(stdout.contains(marker), "no `{marker}` in:\n{stdout}");
    }
}

#[test]
fn a_second_plugin_with_the_same_device_type_declines_instead_of_aborting() {
    // The FPGA plugin twice under two file names: TF loads both.
    let dir = scratch_dir("duplicate-plugins");
    for name in ["libtensorplug_fpga.so", "libtensorplug_fpga_copy.so"] {
        let _ = std::fs::remove_file(dir.join(name));
        std::fs::copy(plugin_path(), dir.join(name)).unwrap();
    }
    let out = Command::new(python())
        .arg(workspace_root().join("tests/python/tf_device_discovery.py"))
        .arg("1")
        .env("TF_CPP_MIN_LOG_LEVEL", "2")
        .env("TF_PLUGGABLE_DEVICE_LIBRARY_PATH", &dir)
        .env_remove("TENSORPLUG_DEVICE")
        .output()
        .expect("python");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "a duplicate plugin must not abort TF ({}):\n{stderr}",
        out.status
    );
    assert!(
        stderr.contains("already registered device type FPGA")
            && stderr.contains("Install only one plugin per device type"),
        "the decline is said on stderr:\n{stderr}"
    );
}
