//! The requantization golden vectors are what their generator writes: it
//! implements TFLite's formulas independently of `tensorplug_core::quant`
//! (`tests/python/requantize_golden.py`), and `core`'s test checks the Rust
//! code against the checked-in file.

use tensorplug_tests::{python, workspace_root};

#[test]
fn the_golden_vectors_are_what_the_generator_writes() {
    let root = workspace_root();
    let out = std::process::Command::new(python())
        .arg(root.join("tests/python/requantize_golden.py"))
        .arg("-")
        .output()
        .expect("python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let checked_in = std::fs::read_to_string(root.join("core/tests/data/requantize_golden.txt"))
        .expect("core/tests/data/requantize_golden.txt");
    assert!(
        out.stdout == checked_in.as_bytes(),
        "core/tests/data/requantize_golden.txt is stale: run python3 tests/python/requantize_golden.py"
    );
}
