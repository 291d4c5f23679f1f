//! Builds the firmware for one board: the board file
//! (`boards/<name>.toml`, selected by the cargo feature `board-<name>`)
//! becomes cortex-m-rt's `memory.x`, the constants of `src/main.rs`'s
//! `board` module, and the `cfg`s `tp_hal` (which glue), `tp_fpga` (the
//! FPGA model or a real FPGA on SPI) and `tp_log` (defmt over semihosting
//! on an emulated board, over RTT on a real one). `docs/boards.md`.

use std::path::PathBuf;
use tensorplug_boards::Board;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let dir = manifest.join("boards");
    println!("cargo::rerun-if-changed=boards");
    println!("cargo::rustc-check-cfg=cfg(tp_hal, values(\"cmsdk\", \"stm32f4\"))");
    println!("cargo::rustc-check-cfg=cfg(tp_fpga, values(\"model\", \"spi\"))");
    println!("cargo::rustc-check-cfg=cfg(tp_log, values(\"semihosting\", \"rtt\"))");
    let names = tensorplug_boards::names(&dir).unwrap_or_else(|e| panic!("{e}"));
    let feature = |name: &str| {
        format!(
            "CARGO_FEATURE_BOARD_{}",
            name.to_uppercase().replace('-', "_")
        )
    };
    let selected: Vec<&String> = names
        .iter()
        .filter(|name| std::env::var_os(feature(name)).is_some())
        .collect();
    let name = match selected.as_slice() {
        [one] => one.as_str(),
        [] => panic!(
            "no board selected: enable exactly one feature board-<name> of {}",
            names.join(", ")
        ),
        several => panic!(
            "several boards selected ({}): enable exactly one feature board-<name>",
            several
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let board: Board = tensorplug_boards::load(&dir, name).unwrap_or_else(|e| panic!("{e}"));
    let target = std::env::var("TARGET").expect("cargo sets TARGET");
    assert!(
        target == board.target,
        "board `{name}` is built for {}, not {target}",
        board.target
    );
    std::fs::write(out.join("memory.x"), board.memory_x()).expect("writing memory.x");
    std::fs::write(out.join("board.rs"), board.rust_consts()).expect("writing board.rs");
    println!("cargo::rustc-link-search={}", out.display());
    println!("cargo::rustc-cfg=tp_hal=\"{}\"", board.hal.cfg_name());
    println!("cargo::rustc-cfg=tp_fpga=\"{}\"", board.fpga.cfg_name());
    // An emulator prints semihosting; a board on a desk has a probe for RTT
    // (semihosting without a debugger attached would fault).
    let log = if board.is_emulated() {
        "semihosting"
    } else {
        "rtt"
    };
    println!("cargo::rustc-cfg=tp_log=\"{log}\"");
}
