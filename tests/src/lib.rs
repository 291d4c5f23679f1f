//! Helpers for tensorplug's end-to-end tests: locating the TensorFlow venv
//! that `cargo xtask test` manages and running Python scenarios in it.

use std::path::PathBuf;
use std::process::{Command, Output};

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

/// Runs `tests/python/<script>` with `args` in its own Python process.
pub fn run_python(script: &str, args: &[&str]) -> Output {
    let path = workspace_root().join("tests/python").join(script);
    Command::new(python())
        .arg(&path)
        .args(args)
        .env("TF_CPP_MIN_LOG_LEVEL", "2")
        .output()
        .unwrap_or_else(|e| panic!("cannot start python for {}: {e}", path.display()))
}
