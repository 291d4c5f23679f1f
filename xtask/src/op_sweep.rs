//! `cargo xtask op-sweep`: every op the FPGA plugin registers, over a grid
//! of shapes, attributes and dtypes, against TF's CPU kernel, with soft
//! placement off (`tests/python/op_sweep.py`). Prints the coverage table;
//! fails on a mismatch. `tests/tests/op_sweep.rs` runs the `ci` subset.

use crate::util::{root, run};
use anyhow::Result;
use std::path::PathBuf;
use std::process::Command;

#[derive(clap::Args)]
pub struct OpSweepArgs {
    /// The fixed CI subset of the grid (every third case) instead of all of it.
    #[arg(long)]
    pub ci: bool,
    /// Also write the table (markdown) to this file.
    #[arg(long)]
    pub table: Option<PathBuf>,
}

pub fn run_task(args: &OpSweepArgs) -> Result<()> {
    let python = crate::setup::ensure_venv()?;
    run(&mut crate::dist::plugin_build_command(&crate::dist::FPGA))?;
    let mut cmd = Command::new(python);
    cmd.arg(root().join("tests/python/op_sweep.py"))
        .arg(if args.ci { "ci" } else { "full" })
        .current_dir(root().join("tests/python"))
        .env("TF_CPP_MIN_LOG_LEVEL", "2")
        .env(
            "TF_PLUGGABLE_DEVICE_LIBRARY_PATH",
            crate::dist::plugin_built_path(&crate::dist::FPGA),
        )
        .env_remove("TENSORPLUG_DEVICE");
    if let Some(table) = &args.table {
        cmd.arg(table);
    }
    run(&mut cmd)
}
