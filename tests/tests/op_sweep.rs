//! The op sweep's CI subset (`cargo xtask op-sweep --ci`): every op the
//! plugin registers for the FPGA, over a fixed part of the grid, against
//! TF's CPU kernels with soft placement off. `cargo xtask op-sweep` runs the
//! whole grid; `docs/ops.md` shows its table.

use tensorplug_tests::run_tf_with_plugin;

#[test]
fn every_registered_op_matches_the_cpu_on_the_ci_grid() {
    let output = run_tf_with_plugin("op_sweep.py", &["ci"], None);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let mismatches: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("MISMATCH"))
        .collect();
    assert!(
        output.status.success(),
        "op sweep failed ({}):\n{}\nstdout:\n{stdout}\nstderr (tail):\n{}",
        output.status,
        mismatches.join("\n"),
        &stderr[stderr.len().saturating_sub(3000)..]
    );
    assert!(stdout.contains("| `MatMul` |"), "{stdout}");
    assert!(stdout.contains(", 0 mismatches"), "{stdout}");
    println!("{stdout}");
}
