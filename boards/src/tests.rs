use super::*;

/// A valid real board; tests change one thing at a time.
const REAL: &str = r#"
name = "desk"
description = "a board on a desk"
chip = "STM32F405RG"
probe_rs_chip = "STM32F405RGTx"
target = "thumbv7em-none-eabihf"
hal = "stm32f4xx-hal"
fpga = "spi"
[memory]
flash = { origin = 0x0800_0000, length = 0x10_0000 }
ram = { origin = 0x2000_0000, length = 0x2_0000 }
[clocks]
core_hz = 168_000_000
[link]
uart = "USART6"
baud = 115_200
[fpga_spi]
bus = "SPI1"
sck = "PA5"
miso = "PA6"
mosi = "PA7"
cs = "PA4"
hz = 10_000_000
[ram_budget]
program_bytes = 8192
"#;

/// A valid emulated board.
const EMULATED: &str = r#"
name = "emu"
description = "an emulated board"
chip = "Cortex-M4"
target = "thumbv7em-none-eabihf"
hal = "cmsdk"
fpga = "model"
[emulator]
qemu_machine = "mps2-an386"
qemu_cpu = "cortex-m4"
[memory]
flash = { origin = 0, length = 0x40_0000 }
ram = { origin = 0x2000_0000, length = 0x40_0000 }
[clocks]
core_hz = 25_000_000
[link]
uart = "UART0"
base = 0x4000_4000
baud = 115_200
[ram_budget]
program_bytes = 8192
device_memory = 0x30_0000
"#;

fn edited(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "the template has no `{from}`");
    text.replacen(from, to, 1)
}

fn invalid(stem: &str, text: &str) -> String {
    match Board::parse(stem, text) {
        Err(BoardError::Invalid { reason, .. }) => reason,
        other => panic!("expected Invalid, got {other:?}"),
    }
}

fn workspace_boards() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("boards/ lives in the workspace")
        .join(BOARDS_DIR)
}

#[test]
fn the_templates_are_valid() {
    let real = Board::parse("desk", REAL).unwrap();
    assert!(!real.is_emulated());
    assert_eq!(real.fpga, Fpga::Spi);
    assert_eq!(real.memory.ram.end(), 0x2002_0000);
    let emu = Board::parse("emu", EMULATED).unwrap();
    assert!(emu.is_emulated());
    assert_eq!(emu.emulator().unwrap().qemu_machine, "mps2-an386");
}

#[test]
fn every_board_file_of_the_firmware_loads() {
    let dir = workspace_boards();
    let boards = all(&dir).unwrap();
    let names: Vec<&str> = boards.iter().map(|b| b.name.as_str()).collect();
    assert!(names.contains(&"mps2-an386"), "{names:?}");
    assert!(
        boards.iter().any(|b| !b.is_emulated()),
        "at least one real board: {names:?}"
    );
}

#[test]
fn the_emulated_board_keeps_the_mps2_memory_map() {
    let board = load(&workspace_boards(), "mps2-an386").unwrap();
    let memory_x = board.memory_x();
    assert!(
        memory_x.contains("FLASH : ORIGIN = 0x00000000, LENGTH = 0x400000"),
        "{memory_x}"
    );
    assert!(
        memory_x.contains("RAM   : ORIGIN = 0x20000000, LENGTH = 0x400000"),
        "{memory_x}"
    );
    assert_eq!(board.clocks.core_hz, 25_000_000);
    assert_eq!(board.link.base, Some(0x4000_4000));
    assert_eq!(board.ram_budget.device_memory, 3 << 20);
    assert_eq!(board.feature(), "board-mps2-an386");
}

#[test]
fn unknown_and_missing_keys_are_syntax_errors() {
    let misspelt = edited(REAL, "probe_rs_chip", "probers_chip");
    match Board::parse("desk", &misspelt) {
        Err(BoardError::Syntax { file, message }) => {
            assert_eq!(file, "desk.toml");
            assert!(message.contains("probers_chip"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let no_clock = edited(REAL, "core_hz = 168_000_000", "");
    let error = Board::parse("desk", &no_clock).unwrap_err().to_string();
    assert!(error.contains("core_hz"), "{error}");
    let bad_hal = edited(REAL, "\"stm32f4xx-hal\"", "\"esp-hal\"");
    assert!(matches!(
        Board::parse("desk", &bad_hal),
        Err(BoardError::Syntax { .. })
    ));
}

#[test]
fn the_name_must_be_the_file_name() {
    let reason = invalid("other", REAL);
    assert!(reason.contains("`other`"), "{reason}");
    let upper = edited(REAL, "name = \"desk\"", "name = \"Desk\"");
    assert!(invalid("Desk", &upper).contains("lowercase"));
}

#[test]
fn a_board_is_real_or_emulated_never_both_or_neither() {
    let both = edited(
        REAL,
        "[memory]",
        "[emulator]\nqemu_machine = \"x\"\nqemu_cpu = \"y\"\n[memory]",
    );
    assert!(invalid("desk", &both).contains("not both"));
    let neither = edited(REAL, "probe_rs_chip = \"STM32F405RGTx\"", "");
    assert!(invalid("desk", &neither).contains("probe_rs_chip"));
}

#[test]
fn impossible_memory_maps_are_refused() {
    let overlap = edited(
        REAL,
        "ram = { origin = 0x2000_0000",
        "ram = { origin = 0x0808_0000",
    );
    assert!(invalid("desk", &overlap).contains("overlap"));
    let beyond = edited(
        REAL,
        "ram = { origin = 0x2000_0000",
        "ram = { origin = 0xFFFF_0000",
    );
    assert!(invalid("desk", &beyond).contains("32-bit"));
    let empty = edited(REAL, "length = 0x10_0000", "length = 0");
    assert!(invalid("desk", &empty).contains("flash is empty"));
}

#[test]
fn the_fpga_and_its_bus_must_agree() {
    let no_bus = REAL.split("[fpga_spi]").next().unwrap().to_owned()
        + "[ram_budget]\nprogram_bytes = 8192\n";
    assert!(invalid("desk", &no_bus).contains("[fpga_spi]"));
    let model_memory = edited(
        REAL,
        "program_bytes = 8192",
        "program_bytes = 8192\ndevice_memory = 4096",
    );
    assert!(invalid("desk", &model_memory).contains("own memory"));
    let model_without_memory = edited(EMULATED, "device_memory = 0x30_0000", "");
    assert!(invalid("emu", &model_without_memory).contains("device_memory"));
    let model_with_bus = format!(
        "{EMULATED}[fpga_spi]\nbus = \"S\"\nsck = \"a\"\nmiso = \"b\"\nmosi = \"c\"\ncs = \"d\"\nhz = 1\n"
    );
    assert!(invalid("emu", &model_with_bus).contains("no SPI bus"));
}

#[test]
fn the_ram_budget_must_fit_the_ram() {
    // 128 KiB of RAM: a 64 KiB program store leaves less than the firmware needs.
    let greedy = edited(REAL, "program_bytes = 8192", "program_bytes = 65536");
    let reason = invalid("desk", &greedy);
    assert!(
        reason.contains("65536") && reason.contains("131072"),
        "{reason}"
    );
    // The overflow measured on QEMU: 64 KiB of device memory on the
    // emulated Netduino left the stack too little.
    let text = std::fs::read_to_string(workspace_boards().join("netduinoplus2-qemu.toml")).unwrap();
    let overflowing = edited(&text, "device_memory = 0xC000", "device_memory = 0x1_0000");
    assert!(invalid("netduinoplus2-qemu", &overflowing).contains("ram_budget needs"));
    let just = format!("program_bytes = {}", 0x2_0000 - FIRMWARE_RAM);
    assert!(Board::parse("desk", &edited(REAL, "program_bytes = 8192", &just)).is_ok());
}

#[test]
fn the_event_ring_defaults_and_is_checked() {
    assert_eq!(
        Board::parse("desk", REAL).unwrap().driver.event_entries,
        1024
    );
    let text = std::fs::read_to_string(workspace_boards().join("netduinoplus2-qemu.toml")).unwrap();
    let stm32 = Board::parse("netduinoplus2-qemu", &text).unwrap();
    assert_eq!(stm32.driver.event_entries, 256);
    assert!(stm32.rust_consts().contains("EVENT_ENTRIES: u32 = 256"));
    for bad in ["255", "8", "131072"] {
        let edited = edited(
            &text,
            "event_entries = 256",
            &format!("event_entries = {bad}"),
        );
        assert!(
            invalid("netduinoplus2-qemu", &edited).contains("driver.event_entries"),
            "{bad}"
        );
    }
}

#[test]
fn the_link_rate_and_the_target_are_checked() {
    let fast = edited(REAL, "baud = 115_200", "baud = 20_000_000");
    assert!(invalid("desk", &fast).contains("link.baud"));
    let riscv = edited(
        REAL,
        "thumbv7em-none-eabihf",
        "riscv32imac-unknown-none-elf",
    );
    assert!(invalid("desk", &riscv).contains("riscv32imac"));
    let m0 = edited(REAL, "thumbv7em-none-eabihf", "thumbv6m-none-eabi");
    assert!(invalid("desk", &m0).contains("Cortex-M4"));
    let no_base = edited(EMULATED, "base = 0x4000_4000", "");
    assert!(invalid("emu", &no_base).contains("link.base"));
}

#[test]
fn a_probe_rs_chip_must_be_the_boards() {
    let real = Board::parse("desk", REAL).unwrap();
    real.check_probe_chip("STM32F405RGTx").unwrap();
    real.check_probe_chip("stm32f405rgtx").unwrap();
    let error = real.check_probe_chip("STM32F407VGTx").unwrap_err();
    assert!(matches!(error, BoardError::ChipMismatch { .. }));
    let message = error.to_string();
    assert!(
        message.contains("STM32F405RGTx") && message.contains("STM32F407VGTx"),
        "{message}"
    );
    let emu = Board::parse("emu", EMULATED).unwrap();
    let error = emu.check_probe_chip("STM32F405RGTx").unwrap_err();
    assert!(
        matches!(&error, BoardError::EmulatedOnly { machine, .. } if machine == "mps2-an386"),
        "{error:?}"
    );
    assert!(matches!(
        real.emulator(),
        Err(BoardError::NotEmulated { chip, .. }) if chip == "STM32F405RGTx"
    ));
}

#[test]
fn a_chip_without_a_board_is_refused_and_a_shared_chip_is_ambiguous() {
    let real = Board::parse("desk", REAL).unwrap();
    let emu = Board::parse("emu", EMULATED).unwrap();
    let boards = [real.clone(), emu];
    assert_eq!(
        for_probe_chip(&boards, "stm32f405rgtx").unwrap().name,
        "desk"
    );
    let error = for_probe_chip(&boards, "nRF52840_xxAA").unwrap_err();
    let message = error.to_string();
    assert!(
        matches!(error, BoardError::NoBoardForChip { .. })
            && message.contains("desk (STM32F405RGTx)"),
        "{message}"
    );
    let twin = Board {
        name: "twin".into(),
        ..real.clone()
    };
    let error = for_probe_chip(&[real, twin], "STM32F405RGTx").unwrap_err();
    assert!(
        matches!(&error, BoardError::SeveralBoardsForChip { boards, .. } if boards == &["desk", "twin"]),
        "{error:?}"
    );
}

#[test]
fn an_unknown_board_names_the_known_ones() {
    let dir = workspace_boards();
    for name in ["no-such-board", "../boards/mps2-an386", ""] {
        match load(&dir, name) {
            Err(BoardError::Unknown { known, .. }) => {
                assert!(known.iter().any(|k| k == "mps2-an386"), "{known:?}")
            }
            other => panic!("{name:?}: {other:?}"),
        }
    }
}

#[test]
fn the_generated_constants_carry_the_board() {
    let real = Board::parse("desk", REAL).unwrap();
    let consts = real.rust_consts();
    for line in [
        "pub const CORE_HZ: u64 = 168000000;",
        "pub const LINK_UART: &str = \"USART6\";",
        "pub const FPGA_SPI_CS: &str = \"PA4\";",
        "pub const FPGA_SPI_HZ: u32 = 10000000;",
        "pub const PROGRAM_BYTES: usize = 8192;",
        "pub const DEVICE_MEMORY: usize = 0;",
    ] {
        assert!(consts.contains(line), "no `{line}` in\n{consts}");
    }
    assert!(!consts.contains("LINK_BASE"), "{consts}");
    assert!(
        consts.contains("pub const HSE_HZ: Option<u32> = None;"),
        "{consts}"
    );
    let emulated_stm32 = edited(
        &edited(
            &edited(REAL, "probe_rs_chip = \"STM32F405RGTx\"", ""),
            "[memory]",
            "[emulator]\nqemu_machine = \"netduinoplus2\"\nqemu_cpu = \"cortex-m4\"\nserial = 5\n[memory]",
        ),
        "core_hz = 168_000_000",
        "core_hz = 16_000_000\ntimer_hz = 1_000_000_000",
    );
    let board = Board::parse("desk", &emulated_stm32).unwrap();
    assert_eq!(board.emulator().unwrap().serial, 5);
    let consts = board.rust_consts();
    assert!(
        consts.contains("pub const TIMER_HZ: Option<u64> = Some(1000000000);"),
        "{consts}"
    );
    let emu = Board::parse("emu", EMULATED).unwrap().rust_consts();
    assert!(
        emu.contains("pub const LINK_BASE: usize = 0x40004000;"),
        "{emu}"
    );
}
