//! `cargo xtask`: the only entry point tensorplug needs beyond cargo.

mod bench;
mod checks;
mod demo;
mod dist;
mod flash;
mod fuzz;
mod header;
mod hil;
mod idle;
mod import_loops;
mod lanes;
mod layout;
mod op_sweep;
mod protos;
mod qemu_serve;
mod setup;
mod size;
mod soak;
mod test;
mod tf_suite;
mod util;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cargo xtask", about = "tensorplug's task runner")]
struct Cli {
    #[command(subcommand)]
    command: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Run a Keras model on /device:FPGA:0 (the simulated FPGA) under the profiler.
    Demo,
    /// Set up a fresh machine and run the whole suite (what CI runs).
    Test(test::TestArgs),
    /// Program FPGA bitstreams into the configuration flash, or the MCU firmware (--firmware).
    Flash(flash::FlashArgs),
    /// Hardware-in-the-loop tests: the firmware under QEMU, driven over its UART.
    Hil,
    /// Keep an emulated board's firmware running, its UART served on TCP (mcu-tcp:).
    Qemu(qemu_serve::QemuArgs),
    /// Criterion benchmarks, printed as ratios against same-run baselines.
    Bench(bench::BenchArgs),
    /// Build the TensorFlow plugin wheel.
    Dist(dist::DistArgs),
    /// The firmware's flash and static RAM against firmware/size.json.
    Size(size::SizeArgs),
    /// Every op the FPGA registers, over a grid, against TF's CPU kernels.
    OpSweep(op_sweep::OpSweepArgs),
    /// Regenerate the device-ABI C header (abi/include/tensorplug_device_abi.h).
    Header,
    /// Regenerate the prost types checked in from core/proto and host-bridge/proto.
    Protos,
    /// Check abi's TF structs against a TF's headers (default: target/venv's).
    Layout(LayoutArgs),
    /// Every cargo-fuzz target: a smoke run, `--runs N` or `--minutes N` each.
    Fuzz(fuzz::FuzzArgs),
    /// Time-boxed soaks (open/close, profiler, an hour of fit), plotted.
    Soak(soak::SoakArgs),
    /// Module import loops inside each crate (fails on any).
    ImportLoops,
}

#[derive(clap::Args)]
struct LayoutArgs {
    /// The Python of the TF venv whose headers to check against.
    #[arg(long)]
    python: Option<std::path::PathBuf>,
}

fn main() -> std::process::ExitCode {
    match run(Cli::parse().command) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            // `{:#}` prints the whole context chain on one line per cause,
            // without anyhow's backtrace (RUST_BACKTRACE is set on CI).
            eprintln!("error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(task: Task) -> anyhow::Result<()> {
    match task {
        Task::Test(args) => test::run(&args),
        Task::Demo => demo::run_task(),
        Task::Flash(args) => flash::run_task(&args),
        Task::Hil => hil::run_task(),
        Task::Qemu(args) => qemu_serve::run_task(&args),
        Task::Bench(args) => bench::run_task(&args),
        Task::Dist(args) => dist::run_task(&args),
        Task::Header => header::run(),
        Task::Protos => protos::run(),
        Task::Size(args) => size::run_task(&args),
        Task::OpSweep(args) => op_sweep::run_task(&args),
        Task::Fuzz(args) => fuzz::run_task(&args),
        Task::Soak(args) => soak::run_task(&args),
        Task::ImportLoops => import_loops::run(),
        Task::Layout(args) => {
            let python = args.python.as_deref();
            let newest = python.is_none_or(|p| {
                setup::tf_version(p).ok().as_deref() == setup::TF_VERSIONS.last().copied()
            });
            layout::run(python, newest)
        }
    }
}
