//! Helpers for tensorplug's end-to-end tests: locating the TensorFlow venv
//! that `cargo xtask test` manages and running Python scenarios in it.

pub mod mcu;
pub mod model_server;
pub mod qemu;
pub mod wire;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// A pseudo-terminal pair, `(master, slave)`, whose descriptors child
/// processes do not inherit.
///
/// `serialport::TTYPort::pair` opens both without `O_CLOEXEC`, so a TF or
/// QEMU process spawned later holds the master open: when the test closes
/// its end, the slave never sees the hang-up. These are `F_DUPFD_CLOEXEC`
/// copies, the originals closed at once.
pub fn pty_pair() -> (serialport::TTYPort, serialport::TTYPort) {
    let (master, slave) = serialport::TTYPort::pair().expect("a pty pair");
    let cloexec = |end: &serialport::TTYPort| end.try_clone_native().expect("a pty's clone");
    (cloexec(&master), cloexec(&slave))
}

/// The workspace root (parent of this crate).
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests crate lives in the workspace")
        .to_path_buf()
}

/// The venv's Python, from `TENSORPLUG_PYTHON` or `target/venv/bin/python`.
///
/// Panics with a clear message when neither exists: these tests need the real
/// `tensorflow-cpu` wheel, which `cargo xtask test` installs.
pub fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("TENSORPLUG_PYTHON") {
        return PathBuf::from(p);
    }
    let default = workspace_root().join("target/venv/bin/python");
    assert!(
        default.exists(),
        "no TensorFlow venv at {}: run `cargo xtask test` once (it creates it), \
         or set TENSORPLUG_PYTHON to a python with tensorflow-cpu==2.21.0",
        default.display()
    );
    default
}

/// `(major, minor)` of the TF in [`python`]'s venv (read once).
pub fn tf_minor_version() -> (u32, u32) {
    static VERSION: OnceLock<(u32, u32)> = OnceLock::new();
    *VERSION.get_or_init(|| {
        let out = Command::new(python())
            .args([
                "-c",
                "import importlib.metadata as m; print(m.version('tensorflow-cpu'))",
            ])
            .output()
            .expect("python runs");
        let text = String::from_utf8_lossy(&out.stdout);
        let mut parts = text.trim().split('.').map(|p| p.parse::<u32>());
        match (parts.next(), parts.next()) {
            (Some(Ok(major)), Some(Ok(minor))) => (major, minor),
            _ => panic!(
                "cannot read the TF version of {}: {text:?}",
                python().display()
            ),
        }
    })
}

/// Runs `tests/python/<script>` with `args` in its own Python process.
pub fn run_python(script: &str, args: &[&str]) -> Output {
    run_python_with_env(script, args, &[])
}

/// [`run_python`] with extra environment variables (`(name, value)`).
pub fn run_python_with_env(script: &str, args: &[&str], env: &[(&str, &OsStr)]) -> Output {
    let path = workspace_root().join("tests/python").join(script);
    Command::new(python())
        .arg(&path)
        .args(args)
        .env("TF_CPP_MIN_LOG_LEVEL", "2")
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("cannot start python for {}: {e}", path.display()))
}

/// The Python of a TF outside the tested range (`cargo xtask test` sets
/// `TENSORPLUG_PYTHON_UNSUPPORTED_TF`; else `target/tf-venvs/2.14.1`).
pub fn unsupported_tf_python() -> PathBuf {
    if let Some(p) = std::env::var_os("TENSORPLUG_PYTHON_UNSUPPORTED_TF") {
        return PathBuf::from(p);
    }
    let default = workspace_root().join("target/tf-venvs/2.14.1/bin/python");
    assert!(
        default.exists(),
        "no venv of an unsupported TF at {}: run `cargo xtask test` once (it creates it), \
         or set TENSORPLUG_PYTHON_UNSUPPORTED_TF to a python with tensorflow-cpu==2.14.1",
        default.display()
    );
    default
}

/// The Python of the `ai-edge-litert` venv (LiteRT without TF; `cargo
/// xtask test` sets `TENSORPLUG_LITERT_PYTHON`; else `target/litert-venv`).
pub fn litert_python() -> PathBuf {
    if let Some(p) = std::env::var_os("TENSORPLUG_LITERT_PYTHON") {
        return PathBuf::from(p);
    }
    let default = workspace_root().join("target/litert-venv/bin/python");
    assert!(
        default.exists(),
        "no LiteRT venv at {}: run `cargo xtask test` once (it creates it), or set \
         TENSORPLUG_LITERT_PYTHON to a python with ai-edge-litert==2.3.0",
        default.display()
    );
    default
}

/// Runs a TF scenario with our plugin loaded through
/// `TF_PLUGGABLE_DEVICE_LIBRARY_PATH` and `TENSORPLUG_DEVICE=<devices>`
/// (`None`: unset, i.e. one `sim` device).
pub fn run_tf_with_plugin(script: &str, args: &[&str], devices: Option<&str>) -> Output {
    run_tf_with_plugin_in(&python(), script, args, devices)
}

/// [`run_tf_with_plugin`] in the venv of `python`.
pub fn run_tf_with_plugin_in(
    python: &std::path::Path,
    script: &str,
    args: &[&str],
    devices: Option<&str>,
) -> Output {
    let path = workspace_root().join("tests/python").join(script);
    let mut cmd = Command::new(python);
    cmd.arg(&path)
        .args(args)
        .env("TF_CPP_MIN_LOG_LEVEL", "2")
        .env("TF_PLUGGABLE_DEVICE_LIBRARY_PATH", plugin_path());
    match devices {
        Some(devices) => cmd.env("TENSORPLUG_DEVICE", devices),
        None => cmd.env_remove("TENSORPLUG_DEVICE"),
    };
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot start python for {}: {e}", path.display()))
}

/// The reference FPGA's TF plugin (`libtensorplug_fpga.so`):
/// `TENSORPLUG_PLUGIN` if set, otherwise built once per test process with
/// `cargo build -p tensorplug-plugin-fpga` into `<target>/tensorplug-plugin`
/// (a target dir of its own: the `cargo test` that runs us holds the lock
/// on ours).
pub fn plugin_path() -> PathBuf {
    static PLUGIN: OnceLock<PathBuf> = OnceLock::new();
    PLUGIN
        .get_or_init(|| match std::env::var_os("TENSORPLUG_PLUGIN") {
            Some(path) => given_artifact(PathBuf::from(path)),
            None => build_plugin("tensorplug-plugin-fpga", "tensorplug_fpga"),
        })
        .clone()
}

/// The example NPU's TF plugin (`libtensorplug_npu.so`):
/// `TENSORPLUG_NPU_PLUGIN` if set, otherwise built like [`plugin_path`].
pub fn npu_plugin_path() -> PathBuf {
    static PLUGIN: OnceLock<PathBuf> = OnceLock::new();
    PLUGIN
        .get_or_init(|| match std::env::var_os("TENSORPLUG_NPU_PLUGIN") {
            Some(path) => given_artifact(PathBuf::from(path)),
            None => build_plugin("tensorplug-plugin-npu", "tensorplug_npu"),
        })
        .clone()
}

/// Where test helpers build workspace artifacts (the plugin, the model
/// server): `<target>/tensorplug-plugin`.
pub fn helper_target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
        .join("tensorplug-plugin")
}

/// A command that runs `cargo xtask`, at the workspace's root: the binary
/// `cargo xtask test` names (`TENSORPLUG_XTASK`), else `cargo run` into
/// [`helper_target_dir`] (the running `cargo test` locks ours).
pub fn xtask() -> Command {
    let mut cmd = match std::env::var_os("TENSORPLUG_XTASK") {
        Some(xtask) => Command::new(xtask),
        None => {
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let mut cmd = Command::new(cargo);
            cmd.args(["run", "--quiet", "--package", "xtask", "--"])
                .env("CARGO_TARGET_DIR", helper_target_dir());
            cmd
        }
    };
    cmd.current_dir(workspace_root());
    cmd
}

/// A prebuilt artifact named by an environment variable (`cargo xtask
/// test` builds them before the tests, so no test process builds them into
/// [`helper_target_dir`]).
pub fn given_artifact(path: PathBuf) -> PathBuf {
    assert!(path.is_file(), "{} does not exist", path.display());
    path
}

/// `cargo build -p <package> --lib` into [`helper_target_dir`]; `lib<lib>.so`.
fn build_plugin(package: &str, lib: &str) -> PathBuf {
    let target = helper_target_dir();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--package", package, "--lib"])
        .env("CARGO_TARGET_DIR", &target)
        .current_dir(workspace_root())
        .status()
        .expect("cannot run cargo to build the TF plugin");
    assert!(
        status.success(),
        "building the TF plugin ({package}) failed"
    );
    let plugin = target.join(format!("debug/lib{lib}.so"));
    assert!(plugin.is_file(), "cargo built no {}", plugin.display());
    plugin
}

/// A new empty directory `<name>-<pid>` under [`helper_target_dir`]. The
/// `<name>-<pid>` directories of test processes that are gone are removed
/// first, so runs do not pile them up (some hold a plugin build).
pub fn scratch_dir(name: &str) -> PathBuf {
    let parent = helper_target_dir();
    remove_dead_scratch(&parent, name);
    let dir = parent.join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// Removes `<name>-<pid>` under `parent` for every `pid` not running.
fn remove_dead_scratch(parent: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(pid) = file_name
            .to_str()
            .and_then(|n| n.strip_prefix(name)?.strip_prefix('-'))
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Asserts that the scenario `what` was not killed by a signal (a SIGSEGV
/// in TF or the plugin) and exited 0; returns its stdout. The failure
/// message holds its stdout and the end of its stderr.
pub fn expect_success(output: &Output, what: &str) -> String {
    use std::os::unix::process::ExitStatusExt;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let tail = &stderr[stderr.floor_char_boundary(stderr.len().saturating_sub(6000))..];
    assert_eq!(
        output.status.signal(),
        None,
        "{what} was killed by a signal (SIGSEGV is 11):\nstdout:\n{stdout}\nstderr:\n{tail}"
    );
    assert_eq!(
        output.status.code(),
        Some(0),
        "{what} failed:\nstdout:\n{stdout}\nstderr:\n{tail}"
    );
    stdout
}

/// The rest of a script's line that starts with `prefix`, trimmed; panics
/// showing `stdout` when there is none.
pub fn field(stdout: &str, prefix: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no {prefix:?} line:\n{stdout}"))
        .trim()
        .to_string()
}

/// A script's `<prefix> <op type>=<count>…` line (e.g. the op counts of a
/// profile's planes) as a map.
pub fn op_counts(stdout: &str, prefix: &str) -> BTreeMap<String, u64> {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no {prefix}line:\n{stdout}"));
    line.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.parse().unwrap()))
        .collect()
}
