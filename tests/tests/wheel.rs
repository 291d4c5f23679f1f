//! `cargo xtask dist`'s wheel, installed with pip into a fresh venv: without
//! `TF_PLUGGABLE_DEVICE_LIBRARY_PATH`, `import tensorflow` finds
//! `/physical_device:FPGA:0` and a tensor round-trips through it; `pip
//! uninstall` removes the `.so`.
//!
//! The suite's test packs the debug plugin the other e2e tests use (`cargo
//! xtask dist --plugin`) and gives the fresh venv the test venv's
//! `tensorflow-cpu` through a `.pth` file: pip then resolves the wheel's
//! `Requires-Dist` against that install with `--no-index`, and nothing is
//! downloaded (the registry here is not cached: a real install is ~2 min).
//! The ignored test does the full user path: `pip install tensorflow-cpu`
//! from PyPI and the wheel into a venv of its own.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use tensorplug_tests::{litert_python, plugin_path, python, workspace_root};

/// Imports TF from the fresh venv, checks where the plugin came from, the
/// device list, a bit-exact round trip, that the wheel's int8 module imports
/// and the int8 ops are defined, that a TF1 callable fetching into FPGA
/// memory is refused clearly, and that the wheel's RECORD matches the
/// installed files (sha256 + size).
const CHECK_INSTALLED: &str = r#"
import base64, hashlib, os, sys, sysconfig
import numpy as np
import tensorflow as tf
site = sysconfig.get_paths()["platlib"]
plugin = os.path.join(site, "tensorflow-plugins", "libtensorplug_fpga.so")
assert os.path.isfile(plugin), f"no {plugin}"
assert "TF_PLUGGABLE_DEVICE_LIBRARY_PATH" not in os.environ
names = [d.name for d in tf.config.list_physical_devices()]
assert "/physical_device:FPGA:0" in names, names
x = np.random.default_rng(1).standard_normal((257, 3)).astype(np.float32)
with tf.device("/device:FPGA:0"):
    y = tf.identity(tf.constant(x))
assert y.device.endswith("device:FPGA:0"), y.device
assert np.array_equal(y.numpy(), x)
import tensorplug_fpga_int8
assert tensorplug_fpga_int8.DEVICE_TYPE == "FPGA"
from tensorflow.python.framework import op_def_registry
assert op_def_registry.get("_TensorplugFPGAConv2DInt8") is not None
# A TF1 callable fetching into FPGA memory fails clearly (the wheel's
# session guard); Python read that memory as host memory and crashed.
from tensorflow.core.protobuf import config_pb2
g = tf.Graph()
with g.as_default():
    with tf.device("/device:FPGA:0"):
        a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        b = tf.matmul(a, a)
    sess = tf.compat.v1.Session(graph=g)
    opts = config_pb2.CallableOptions(fetch=[b.name], fetch_skip_sync=True)
    opts.fetch_devices[b.name] = "/job:localhost/replica:0/task:0/device:FPGA:0"
    try:
        sess._make_callable_from_options(opts)
        raise AssertionError("a callable fetching into FPGA memory was made")
    except tf.errors.UnimplementedError as e:
        assert "fetch_devices" in str(e), e
    del opts.fetch_devices[b.name]
    got = sess._make_callable_from_options(opts)()[0]
    assert np.array_equal(got, [[7.0, 10.0], [15.0, 22.0]]), got
info = [d for d in os.listdir(site) if d.startswith("tensorplug_fpga-") and d.endswith(".dist-info")]
assert len(info) == 1, info
checked = 0
for line in open(os.path.join(site, info[0], "RECORD")):
    path, digest, size = line.strip().rsplit(",", 2)
    if not digest:
        continue
    data = open(os.path.join(site, path), "rb").read()
    want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    assert digest == want and int(size) == len(data), path
    checked += 1
print(f"ok: {names}, round trip of {x.size} floats, {checked} RECORD hashes match, plugin {plugin}")
"#;

fn stdout_or_panic(what: &str, output: &Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{what} failed ({}):\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

fn run(what: &str, cmd: &mut Command) -> String {
    let output = cmd
        .env_remove("TF_PLUGGABLE_DEVICE_LIBRARY_PATH")
        .env_remove("TENSORPLUG_DEVICE")
        .env("TF_CPP_MIN_LOG_LEVEL", "2")
        .output()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    stdout_or_panic(what, &output)
}

/// `cargo xtask dist --plugin <plugin> --out-dir <dir>` (the FPGA's crate);
/// the wheel's path.
fn build_wheel(plugin: &Path, dir: &Path) -> PathBuf {
    build_wheel_of("tensorplug-plugin-fpga", "tensorplug_fpga", plugin, dir)
}

/// [`build_wheel`] for the plugin crate `package` whose lib is `lib`.
fn build_wheel_of(package: &str, lib: &str, plugin: &Path, dir: &Path) -> PathBuf {
    let stdout = run(
        "cargo xtask dist",
        tensorplug_tests::xtask()
            .arg("dist")
            .args(["--plugin-crate", package])
            .arg("--plugin")
            .arg(plugin)
            .arg("--out-dir")
            .arg(dir),
    );
    let wheel = PathBuf::from(stdout.trim());
    let name = wheel.file_name().and_then(|n| n.to_str()).unwrap_or("");
    assert!(
        name.starts_with(&format!("{lib}-")) && name.contains("-py3-none-"),
        "wheel name {name}"
    );
    assert!(
        name.ends_with("_x86_64.whl") || name.ends_with("_aarch64.whl"),
        "platform tag in {name}"
    );
    wheel
}

/// Installs `wheel` with `pip() install <install_args>`, checks it in `venv`,
/// uninstalls it and checks the `.so` is gone.
fn install_check_uninstall(
    venv: &Path,
    pip: &dyn Fn() -> Command,
    install_args: &[&str],
    wheel: &Path,
) {
    run(
        "pip install",
        pip().arg("install").args(install_args).arg(wheel),
    );
    let checked = run(
        "import tensorflow in the fresh venv",
        Command::new(venv.join("bin/python")).args(["-c", CHECK_INSTALLED]),
    );
    assert!(checked.contains("ok:"), "{checked}");
    let plugin = checked
        .trim()
        .rsplit_once(" plugin ")
        .map(|(_, p)| PathBuf::from(p))
        .expect("the check prints the plugin path");
    assert!(
        plugin.starts_with(venv),
        "{} is in the venv",
        plugin.display()
    );

    run(
        "pip uninstall",
        pip().args(["uninstall", "-y", "tensorplug-fpga"]),
    );
    assert!(!plugin.exists(), "pip uninstall left {}", plugin.display());
}

#[test]
fn wheel_installs_into_tensorflow_plugins_and_tf_loads_it() {
    let dir = tensorplug_tests::scratch_dir("wheel-test");
    let wheel = build_wheel(&plugin_path(), &dir);

    let (venv, pip) = fresh_venv_with_test_tf(&dir);
    // --no-index: the Requires-Dist must be met by the tensorflow-cpu found.
    install_check_uninstall(&venv, &pip, &["--no-index"], &wheel);
    std::fs::remove_dir_all(&dir).ok();
}

/// A fresh venv without pip (fast) that sees the test venv's
/// `tensorflow-cpu` through a `.pth` file, and a pip command for it.
fn fresh_venv_with_test_tf(dir: &Path) -> (PathBuf, impl Fn() -> Command + use<>) {
    fresh_venv_over(&python(), dir)
}

/// [`fresh_venv_with_test_tf`] over the packages of `base`'s venv.
fn fresh_venv_over(base: &Path, dir: &Path) -> (PathBuf, impl Fn() -> Command + use<>) {
    let venv = dir.join("venv");
    run(
        "python -m venv",
        Command::new(base)
            .args(["-m", "venv", "--without-pip"])
            .arg(&venv),
    );
    let site = |python: &Path| {
        let code = "import sysconfig; print(sysconfig.get_paths()['purelib'])";
        run("site-packages", Command::new(python).args(["-c", code]))
    };
    let fresh_python = venv.join("bin/python");
    std::fs::write(
        Path::new(site(&fresh_python).trim()).join("tensorflow-from-test-venv.pth"),
        format!("{}\n", site(base).trim()),
    )
    .expect("write .pth");
    let pip = move || {
        let mut cmd = Command::new(python());
        cmd.args(["-m", "pip", "--python"])
            .arg(&fresh_python)
            .args(["--disable-pip-version-check", "--no-input"]);
        cmd
    };
    (venv, pip)
}

/// A float MLP from TF's converter, written to `argv[1]` (in the test venv,
/// without the plugin: the converter crashes with a plugin device, FACTS.md).
const CONVERT: &str = r#"
import sys
import tensorflow as tf
tf.keras.utils.set_random_seed(7)
x = tf.keras.Input((8,), batch_size=4)
h = tf.keras.layers.Dense(16, activation="relu")(x)
model = tf.keras.Model(x, tf.keras.layers.Dense(4)(h))
open(sys.argv[1], "wb").write(tf.lite.TFLiteConverter.from_keras_model(model).convert())
"#;

/// LiteRT (no TF) loads the installed wheel's `.so` as a delegate by the
/// path the docs give; every node of model `argv[1]` runs on the device
/// (report `argv[2]`), within the float tolerance of the plain interpreter.
const LITERT_CHECK: &str = r#"
import json, os, sys, sysconfig
import numpy as np
from ai_edge_litert.interpreter import Interpreter, load_delegate
plugin = os.path.join(sysconfig.get_paths()["platlib"], "tensorflow-plugins", "libtensorplug_fpga.so")
assert os.path.isfile(plugin), f"no {plugin}"
model, report = open(sys.argv[1], "rb").read(), sys.argv[2]
x = np.random.default_rng(3).uniform(-1, 1, (4, 8)).astype(np.float32)
def run(delegates):
    it = Interpreter(model_content=model, experimental_delegates=delegates)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])
want = run([])
got = run([load_delegate(plugin, {"device": "sim", "report_file": report})])
assert np.allclose(got, want, rtol=1e-5, atol=1e-6), (got, want)
nodes = json.load(open(report))["graphs"][0]["nodes"]
off = [(n["op"], n["reason"]) for n in nodes if n["decision"] != "device"]
assert nodes and not off, off
print(f"ok: {len(nodes)} nodes on the device from {plugin}")
"#;

/// The wheel is also the LiteRT delegate: installed (`--no-deps`) into a
/// fresh venv over ai-edge-litert's, which has no TF (a LiteRT user's),
/// `load_delegate` on the `.so` in `site-packages/tensorflow-plugins/`
/// runs a converted model wholly on the device.
#[test]
fn the_installed_wheel_is_a_litert_delegate() {
    let dir = tensorplug_tests::scratch_dir("wheel-delegate");
    let wheel = build_wheel(&plugin_path(), &dir);
    let model = dir.join("mlp.tflite");
    run(
        "convert a model",
        Command::new(python()).args(["-c", CONVERT]).arg(&model),
    );
    let (venv, pip) = fresh_venv_over(&litert_python(), &dir);
    run(
        "pip install",
        pip()
            .args(["install", "--no-deps", "--no-index"])
            .arg(&wheel),
    );
    let checked = run(
        "load_delegate from the installed wheel",
        Command::new(venv.join("bin/python"))
            .args(["-c", LITERT_CHECK])
            .arg(&model)
            .arg(dir.join("report.json")),
    );
    assert!(
        checked.contains("ok: ") && checked.contains(&*venv.to_string_lossy()),
        "{checked}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Two vendors' wheels (the FPGA's and the example NPU's) install side by
/// side: distinct `.so` and dist-info names, and TF loads both.
#[test]
fn two_plugin_wheels_install_side_by_side() {
    let dir = tensorplug_tests::scratch_dir("wheels-side-by-side");
    let fpga = build_wheel(&plugin_path(), &dir);
    let npu = build_wheel_of(
        "tensorplug-plugin-npu",
        "tensorplug_npu",
        &tensorplug_tests::npu_plugin_path(),
        &dir,
    );
    let (venv, pip) = fresh_venv_with_test_tf(&dir);
    run(
        "pip install both wheels",
        pip().args(["install", "--no-index"]).arg(&fpga).arg(&npu),
    );
    let check = r#"
import os, sysconfig
import tensorflow as tf
plugins = sorted(os.listdir(os.path.join(sysconfig.get_paths()["platlib"], "tensorflow-plugins")))
assert plugins == ["libtensorplug_fpga.so", "libtensorplug_npu.so"], plugins
names = [d.name for d in tf.config.list_physical_devices()]
assert "/physical_device:FPGA:0" in names and "/physical_device:NPU:0" in names, names
with tf.device("/device:NPU:0"):
    y = tf.nn.relu(tf.constant([-1.0, 2.0]))
assert y.device.endswith("NPU:0") and y.numpy().tolist() == [0.0, 2.0], (y.device, y)
print("both:", names)
"#;
    // TF 2.15-2.18 refuse a second pluggable device type at context
    // creation (docs/tf-abi.md): there the wheels install side by side and
    // TF's own error is pinned.
    let old_tf = r#"
import os, sysconfig
import tensorflow as tf
plugins = sorted(os.listdir(os.path.join(sysconfig.get_paths()["platlib"], "tensorflow-plugins")))
assert plugins == ["libtensorplug_fpga.so", "libtensorplug_npu.so"], plugins
try:
    tf.config.list_logical_devices()
except tf.errors.InvalidArgumentError as e:
    assert "'visible_device_list' listed an invalid Device id '1'" in str(e), e
    print("installed:", plugins, "; TF refuses two plugin device types itself")
"#;
    let old = tensorplug_tests::tf_minor_version() < (2, 19);
    let out = run(
        "import tensorflow with both wheels",
        Command::new(venv.join("bin/python")).args(["-c", if old { old_tf } else { check }]),
    );
    let marker = if old {
        "TF refuses two plugin"
    } else {
        "both:"
    };
    assert!(out.contains(marker), "{out}");
    run(
        "pip uninstall both",
        pip().args(["uninstall", "-y", "tensorplug-fpga", "tensorplug-npu"]),
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// The full user path: a venv with pip, `pip install tensorflow-cpu==2.21.0`
/// and the wheel from PyPI (about 2 minutes and 274 MB here).
#[test]
#[ignore = "downloads tensorflow-cpu from PyPI (~274 MB, ~2 min uncached); run with --ignored"]
fn wheel_installs_with_tensorflow_from_pypi_in_a_fresh_venv() {
    let dir = tensorplug_tests::scratch_dir("wheel-pypi");
    let wheel = build_wheel(&plugin_path(), &dir);
    let venv = dir.join("venv");
    run(
        "python -m venv",
        Command::new(python()).args(["-m", "venv"]).arg(&venv),
    );
    let pip = venv.join("bin/pip");
    run(
        "pip install tensorflow-cpu",
        Command::new(&pip).args(["install", "tensorflow-cpu==2.21.0"]),
    );
    install_check_uninstall(&venv, &|| Command::new(&pip), &[], &wheel);
    std::fs::remove_dir_all(&dir).ok();
}

/// Keras programs as the Keras guides write them, in a venv with the wheel
/// installed (its `.pth` hook: `docs/wheel.md`, "Keras and XLA"): no device
/// scope, no `jit_compile`; and the hook's switch and explicit XLA.
#[test]
fn keras_guide_programs_run_unchanged_on_the_fpga() {
    let dir = tensorplug_tests::scratch_dir("wheel-keras-guides");
    let wheel = build_wheel(&plugin_path(), &dir);
    let (venv, pip) = fresh_venv_with_test_tf(&dir);
    run(
        "pip install",
        pip().args(["install", "--no-index"]).arg(&wheel),
    );
    let script = workspace_root().join("tests/python/keras_tutorials.py");
    let scenario = |mode: &str, keras_decides: bool| {
        let mut cmd = Command::new(venv.join("bin/python"));
        cmd.arg(&script).arg(mode).env_remove("TENSORPLUG_DEVICE");
        if keras_decides {
            cmd.env("TENSORPLUG_KERAS_AUTO_JIT", "keras");
        }
        let out = run(&format!("keras_tutorials.py {mode}"), &mut cmd);
        out.lines()
            .filter(|l| !l.contains(": ("))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let unchanged = scenario("unchanged", false);
    // Keras 3 turns XLA on by itself (the hook decides); Keras 2 (TF 2.15)
    // never does, and TF 2.15 runs an explicit jit_compile=True without XLA.
    let keras_2 = tensorplug_tests::tf_minor_version() < (2, 16);
    let auto = if keras_2 {
        "auto decisions: Keras 2 leaves XLA off unless asked"
    } else {
        "auto decisions: CPU only -> no XLA, FPGA -> no XLA, FPGA+GPU -> XLA"
    };
    let mut markers = vec![
        "Sequential guide: unchanged program on FPGA:0",
        "Functional guide: unchanged program on FPGA:0",
        "DCGAN discriminator: unchanged program on FPGA:0",
        auto,
    ];
    if !keras_2 {
        markers.push("grouped convolutions: no XLA, Conv2D and DepthwiseConv2dNative on FPGA:0");
    }
    for marker in markers {
        assert!(unchanged.contains(marker), "no `{marker}` in:\n{unchanged}");
    }
    println!("{unchanged}");
    let decides = scenario("keras-decides", true);
    let decided = if keras_2 {
        "keras decides: no XLA (Keras 2)"
    } else {
        "keras decides: XLA"
    };
    assert!(decides.contains(decided), "{decides}");
    assert!(
        keras_2 || decides.contains("keras decides: grouped convolutions through XLA"),
        "{decides}"
    );
    let explicit = scenario("explicit-jit", false);
    assert!(explicit.contains("explicit jit_compile=True"), "{explicit}");
    println!("{decides}\n{explicit}");
    // The Keras guide's text-classification transformer, a
    // bidirectional LSTM classifier and a convnet under `mixed_bfloat16`
    // (and on Keras 3 `mixed_float16`) fit and predict with no float op on
    // the CPU (the fallback report), equal to the CPU. TF 2.15's CPU
    // float16 convolution rounds more often than ours (predictions 9e-3
    // apart), so f16 is compared on Keras 3 only.
    let sequence = workspace_root().join("tests/python/keras_sequence.py");
    let programs: &[&str] = if keras_2 {
        &["transformer", "bilstm", "bf16"]
    } else {
        &["transformer", "bilstm", "bf16", "f16"]
    };
    for &program in programs {
        let mut cmd = Command::new(venv.join("bin/python"));
        cmd.arg(&sequence)
            .arg(program)
            .env_remove("TENSORPLUG_DEVICE")
            .env("PYTHONPATH", workspace_root().join("tests/python"));
        let out = run(&format!("keras_sequence.py {program}"), &mut cmd);
        let ok = out.lines().find(|l| l.starts_with("OK "));
        assert!(ok.is_some(), "keras_sequence.py {program}:\n{out}");
        println!("{}", ok.unwrap_or_default());
    }
    std::fs::remove_dir_all(&dir).ok();
}
