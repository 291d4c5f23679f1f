//! The vendor seam in real TensorFlow: the reference FPGA's plugin and the
//! example NPU's plugin loaded together into one process.

use std::process::Command;
use tensorplug_tests::{
    expect_success, npu_plugin_path, plugin_path, python, run_python, scratch_dir,
    tf_minor_version, workspace_root,
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

/// A vendor op from a vendor's crates, in real TF: the example NPU declares
/// `LeakyRelu` in its own namespace and registers its TF kernel through
/// `Backend::KERNELS`; Keras' `LeakyReLU` runs on `/device:NPU:0` with soft
/// placement off, bit-exact with the CPU.
#[test]
fn the_npus_own_op_runs_keras_leaky_relu_on_the_npu() {
    npu_vendor_op_scenario(&npu_plugin_path());
}

/// Runs `tests/python/tf_npu_vendor_op.py` with the NPU plugin at `plugin`
/// and asserts it passed and printed both of its checks.
fn npu_vendor_op_scenario(plugin: &std::path::Path) {
    let out = Command::new(python())
        .arg(workspace_root().join("tests/python/tf_npu_vendor_op.py"))
        .env("TF_CPP_MIN_LOG_LEVEL", "2")
        .env("TF_PLUGGABLE_DEVICE_LIBRARY_PATH", plugin)
        .env_remove("TENSORPLUG_DEVICE")
        .output()
        .expect("python");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "scenario failed with {} ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
        plugin.display(),
        out.status
    );
    for marker in [
        "LeakyReLU on the NPU's own op: bit-exact",
        "Dense + LeakyReLU on the NPU",
        "Dense + LeakyReLU on the NPU in a tf.function",
    ] {
        assert!(stdout.contains(marker), "no `{marker}` in:\n{stdout}");
    }
    // The NPU never declared Conv2D: the graph pass has no conv chain to
    // fuse for it, and says nothing about `_FusedConv2D`.
    assert!(
        !stderr.contains("_FusedConv2D"),
        "a warning about a conv fusion the NPU cannot have:\n{stderr}"
    );
}

/// The NPU's crates as a vendor has them: copied out of this workspace into
/// a workspace of their own that reaches tensorplug's crates by path only
/// (no workspace inheritance, no private item). Builds the plugin there and
/// runs the vendor-op scenario with that `.so`.
#[test]
fn the_npu_plugin_builds_outside_the_workspace_and_its_own_op_runs_in_tf() {
    let root = workspace_root();
    let outside = scratch_dir("npu-outside-workspace");
    let copy_src = |krate: &str| {
        let (from, to) = (
            root.join("examples").join(krate).join("src"),
            outside.join(krate).join("src"),
        );
        std::fs::create_dir_all(&to).unwrap();
        for entry in std::fs::read_dir(&from).unwrap() {
            let path = entry.unwrap().path();
            std::fs::copy(&path, to.join(path.file_name().unwrap())).unwrap();
        }
    };
    copy_src("device-npu");
    copy_src("plugin-npu");
    let path = |krate: &str| root.join(krate).display().to_string();
    let package = |name: &str| {
        format!(
            "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\npublish = false\n"
        )
    };
    std::fs::write(
        outside.join("Cargo.toml"),
        "[workspace]\nmembers = [\"device-npu\", \"plugin-npu\"]\nresolver = \"3\"\n",
    )
    .unwrap();
    std::fs::write(
        outside.join("device-npu/Cargo.toml"),
        format!(
            "{}\n[features]\nstd = []\n\n[dependencies]\ntensorplug-core = {{ path = \"{}\" }}\n\
             heapless = {{ version = \"0.9\", default-features = false }}\n",
            package("tensorplug-device-npu"),
            path("core")
        ),
    )
    .unwrap();
    std::fs::write(
        outside.join("plugin-npu/Cargo.toml"),
        format!(
            "{}\n[lib]\nname = \"tensorplug_npu\"\ncrate-type = [\"cdylib\"]\n\n[dependencies]\n\
             tensorplug-core = {{ path = \"{}\" }}\ntensorplug-host-bridge = {{ path = \"{}\" }}\n\
             tensorplug-delegate = {{ path = \"{}\" }}\n\
             tensorplug-device-npu = {{ path = \"../device-npu\", features = [\"std\"] }}\n",
            package("tensorplug-plugin-npu"),
            path("core"),
            path("host-bridge"),
            path("delegate")
        ),
    )
    .unwrap();
    let target = build_outside(&outside, &["-p", "tensorplug-plugin-npu"]);
    npu_vendor_op_scenario(&target.join("debug/libtensorplug_npu.so"));
}

/// Builds the workspace at `dir` with this workspace's lock file (the same
/// versions, offline), in a target dir the outside builds share; returns
/// that target dir.
fn build_outside(dir: &std::path::Path, args: &[&str]) -> std::path::PathBuf {
    std::fs::copy(workspace_root().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    let target = tensorplug_tests::helper_target_dir().join("outside");
    let built = Command::new(env!("CARGO"))
        .args(["build", "--offline"])
        .args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", &target)
        // As this workspace's dev profile: a third less to compile and link.
        .env("CARGO_PROFILE_DEV_DEBUG", "line-tables-only")
        .output()
        .expect("cargo");
    assert!(
        built.status.success(),
        "{} does not build outside the workspace:\n{}",
        dir.display(),
        String::from_utf8_lossy(&built.stderr)
    );
    target
}

/// The files of `docs/vendor-guide.md`'s quick start, each the fenced block
/// after a `<!-- guide-file: NAME -->` line.
fn guide_files() -> Vec<(String, String)> {
    let guide = std::fs::read_to_string(workspace_root().join("docs/vendor-guide.md")).unwrap();
    let mut files = Vec::new();
    let mut lines = guide.lines();
    while let Some(line) = lines.next() {
        let Some(name) = line
            .strip_prefix("<!-- guide-file: ")
            .and_then(|rest| rest.strip_suffix(" -->"))
        else {
            continue;
        };
        let fence = lines.next().unwrap_or_default();
        assert!(fence.starts_with("```"), "no code block after {line}");
        let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        files.push((name.to_owned(), body.join("\n") + "\n"));
    }
    files
}

/// The vendor guide works as written: its quick start's files, laid out as
/// the guide says beside this checkout (reached by path only, with this
/// workspace's lock file), build a plugin, and the guide's own Python check
/// passes against it in real TF.
#[test]
fn the_vendor_guides_files_build_outside_the_workspace_and_run_in_tf() {
    let root = workspace_root();
    let acme = scratch_dir("vendor-guide").join("acme");
    let files = guide_files();
    let names: Vec<&str> = files.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        [
            "Cargo.toml",
            "acme-driver/Cargo.toml",
            "acme-driver/src/lib.rs",
            "acme-plugin/Cargo.toml",
            "acme-plugin/src/lib.rs",
            "try_acme.py"
        ],
        "the guide's quick start lists other files"
    );
    // The guide's layout puts tensorplug at `work/tensorplug`.
    let checkout = format!("{}/", root.display());
    for (name, body) in &files {
        let path = acme.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, body.replace("../../tensorplug/", &checkout)).unwrap();
    }
    let target = build_outside(&acme, &[]);
    let out = Command::new(python())
        .arg(acme.join("try_acme.py"))
        .env("TF_CPP_MIN_LOG_LEVEL", "2")
        .env(
            "TF_PLUGGABLE_DEVICE_LIBRARY_PATH",
            target.join("debug/libacme_plugin.so"),
        )
        .env_remove("TENSORPLUG_DEVICE")
        .output()
        .expect("python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("relu on /device:ACME:0"),
        "the guide's check failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `docs/vendor-guide.md`'s table of the TF ops Keras layers emit is what
/// `tests/python/keras_layer_ops.py` reads off the Keras of the newest TF
/// (2.21), as the guide says; older TFs bring other Kerases (2.15: Keras 2),
/// whose ops differ in places, so there it only says so.
#[test]
fn the_vendor_guides_keras_layer_table_is_what_keras_emits() {
    if tf_minor_version() != (2, 21) {
        eprintln!("TF {:?}: the table is TF 2.21's Keras", tf_minor_version());
        return;
    }
    let guide = std::fs::read_to_string(workspace_root().join("docs/vendor-guide.md")).unwrap();
    let table = guide
        .split_once("<!-- keras-layer-ops -->\n")
        .and_then(|(_, rest)| rest.split_once("<!-- /keras-layer-ops -->"))
        .map(|(table, _)| table)
        .expect("the guide's table markers");
    let stdout = expect_success(&run_python("keras_layer_ops.py", &[]), "keras_layer_ops.py");
    assert_eq!(
        table, stdout,
        "docs/vendor-guide.md's Keras table is stale: paste in the script's output"
    );
}
