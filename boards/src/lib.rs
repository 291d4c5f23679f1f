//! Boards as data. A board is one TOML file under `firmware/boards/`: its
//! chip, memory map, link UART, the FPGA's SPI bus and chip select, clocks,
//! the RAM it gives device programs and the FPGA model, and its probe-rs
//! chip name (or, for an emulated board, its QEMU machine). As probe-rs
//! describes chips as data, a new board is a new file (plus, for a chip no
//! board used before, its HAL glue in the firmware).
//!
//! Two readers share this crate: `cargo xtask flash --firmware --board`
//! (which image to build, and where it may go) and the firmware's
//! `build.rs` (its `memory.x` and its constants). Both go through
//! [`Board::parse`], so both refuse the same files. The format:
//! `docs/boards.md`.

use serde::Deserialize;
use std::fmt;
use std::path::{Path, PathBuf};

/// Where the board files are, relative to the workspace root.
pub const BOARDS_DIR: &str = "firmware/boards";

/// Rust targets a board may name: the Cortex-M profiles the firmware's
/// crates build for.
pub const TARGETS: &[&str] = &[
    "thumbv6m-none-eabi",
    "thumbv7m-none-eabi",
    "thumbv7em-none-eabi",
    "thumbv7em-none-eabihf",
];

/// RAM a board must leave to the firmware besides the program store and
/// the model's device memory: statics (the event ring, the driver, about
/// 12 KiB) and `main`'s stack (the link buffers, the driver's and the
/// model's frames). Measured on `netduinoplus2-qemu` (128 KiB of RAM): the
/// HIL tests overflowed the stack into the statics with 64 KiB of device
/// memory (53 KiB left for the stack) and passed with 48 KiB (69 KiB
/// left); 72 KiB is consistent with both, not a measured peak
/// (`docs/boards.md`).
pub const FIRMWARE_RAM: u64 = 72 << 10;

/// One board, as its file describes it (checked: [`Board::parse`]).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Board {
    /// The file's name without `.toml`: lowercase letters, digits, `-`.
    pub name: String,
    /// One line for people.
    pub description: String,
    /// The MCU (for people and logs), e.g. `STM32F405RG`.
    pub chip: String,
    /// probe-rs' name of the chip, for a board on a desk. An emulated
    /// board has none: its image is never flashed.
    #[serde(default)]
    pub probe_rs_chip: Option<String>,
    /// The emulator that boots it, for an emulated board.
    #[serde(default)]
    pub emulator: Option<Emulator>,
    /// The Rust target the image is built for.
    pub target: String,
    /// The firmware's glue for this chip (`firmware/src/board/…`).
    pub hal: Hal,
    /// What the FPGA is.
    pub fpga: Fpga,
    pub memory: Memory,
    pub clocks: Clocks,
    pub link: Link,
    /// The FPGA's SPI bus, for `fpga = "spi"`.
    #[serde(default)]
    pub fpga_spi: Option<FpgaSpi>,
    pub ram_budget: RamBudget,
    /// The firmware's driver of the FPGA.
    #[serde(default)]
    pub driver: DriverSettings,
}

/// The firmware's glue for a chip: its UART, clock, watchdog and SPI.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub enum Hal {
    /// The CMSDK peripherals of Arm's MPS2 boards, driven by hand-written
    /// register code (QEMU's `mps2-an385/an386`).
    #[serde(rename = "cmsdk")]
    Cmsdk,
    /// STM32F4 chips through the `stm32f4xx-hal` crate.
    #[serde(rename = "stm32f4xx-hal")]
    Stm32f4xxHal,
}

impl Hal {
    /// The name the firmware's `cfg(tp_hal = "…")` uses.
    pub const fn cfg_name(self) -> &'static str {
        match self {
            Self::Cmsdk => "cmsdk",
            Self::Stm32f4xxHal => "stm32f4",
        }
    }
}

/// What sits behind the driver's SPI transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fpga {
    /// The reference FPGA's behavioural model in the MCU's RAM (an
    /// emulated FPGA: `ram_budget.device_memory` is its memory).
    Model,
    /// A real FPGA on the board's SPI bus (`[fpga_spi]`): a production image.
    Spi,
}

impl Fpga {
    /// The name the firmware's `cfg(tp_fpga = "…")` uses.
    pub const fn cfg_name(self) -> &'static str {
        match self {
            Self::Model => "model",
            Self::Spi => "spi",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Emulator {
    /// `qemu-system-arm -machine …`.
    pub qemu_machine: String,
    /// `qemu-system-arm -cpu …`.
    pub qemu_cpu: String,
    /// Which of the machine's serial ports (`-serial`, counted from 0) is
    /// the link UART: QEMU's STM32F405 numbers USART1, USART2, USART3,
    /// UART4, UART5, USART6 from 0.
    #[serde(default)]
    pub serial: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    pub flash: Region,
    pub ram: Region,
}

/// An address range, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Region {
    pub origin: u64,
    pub length: u64,
}

impl Region {
    /// One past the last byte.
    pub const fn end(&self) -> u64 {
        self.origin.saturating_add(self.length)
    }
    const fn overlaps(&self, other: &Region) -> bool {
        self.origin < other.end() && other.origin < self.end()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Clocks {
    /// The core clock the firmware runs at (and times with).
    pub core_hz: u64,
    /// The external crystal, if the board has one the firmware uses
    /// (without one, an STM32F4 runs from its 16 MHz HSI).
    #[serde(default)]
    pub hse_hz: Option<u64>,
    /// The clock of the timer the glue keeps time with, when the chip's
    /// clock tree does not give it: QEMU clocks the STM32 timers at 1 GHz
    /// whatever the RCC says.
    #[serde(default)]
    pub timer_hz: Option<u64>,
}

/// The host link's UART.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    /// The peripheral, by the chip's name for it (`UART0`, `USART6`).
    pub uart: String,
    /// Its register base, for glue that drives registers by hand (CMSDK).
    #[serde(default)]
    pub base: Option<u64>,
    /// Transmit and receive pins, for a chip with pin muxing.
    #[serde(default)]
    pub tx: Option<String>,
    #[serde(default)]
    pub rx: Option<String>,
    pub baud: u32,
}

/// The real FPGA's SPI bus.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FpgaSpi {
    /// The peripheral (`SPI1`).
    pub bus: String,
    pub sck: String,
    pub miso: String,
    pub mosi: String,
    /// The chip-select pin, driven as a GPIO (active low).
    pub cs: String,
    /// The SPI clock.
    pub hz: u32,
}

/// RAM the board gives what the host puts on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RamBudget {
    /// The op server's store of device programs (`LoadProgram`), bytes.
    pub program_bytes: u64,
    /// The FPGA model's device memory (`fpga = "model"` only), bytes.
    #[serde(default)]
    pub device_memory: u64,
}

/// The firmware's driver of the FPGA (its `DriverConfig`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriverSettings {
    /// Entries of the event ring the driver places in the FPGA's memory (16
    /// bytes each, a power of two from 16 to 65 536; default 1 024). The
    /// firmware drains it every millisecond; on a model with little device
    /// memory a smaller ring leaves the heap more.
    #[serde(default = "default_event_entries")]
    pub event_entries: u32,
}

impl Default for DriverSettings {
    fn default() -> Self {
        Self {
            event_entries: default_event_entries(),
        }
    }
}

fn default_event_entries() -> u32 {
    1024
}

/// Why a board file, or a board for a device, is refused.
#[derive(Debug)]
pub enum BoardError {
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    /// Not TOML, or not this schema (unknown or missing keys, wrong types).
    Syntax { file: String, message: String },
    /// The file parses but describes an impossible board.
    Invalid { board: String, reason: String },
    /// No file for that name.
    Unknown { name: String, known: Vec<String> },
    /// `--device probe-rs:<chip>` for a board of another chip.
    ChipMismatch {
        board: String,
        board_chip: String,
        asked: String,
    },
    /// `probe-rs:` for an emulated board.
    EmulatedOnly { board: String, machine: String },
    /// `qemu` for a board on a desk.
    NotEmulated { board: String, chip: String },
    /// `probe-rs:<chip>` and no `--board`: no board file has that chip.
    NoBoardForChip {
        chip: String,
        known: Vec<(String, String)>,
    },
    /// `probe-rs:<chip>` and no `--board`: several board files have it.
    SeveralBoardsForChip { chip: String, boards: Vec<String> },
}

impl fmt::Display for BoardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { path, error } => write!(f, "reading {}: {error}", path.display()),
            Self::Syntax { file, message } => write!(f, "{file}: {}", message.trim_end()),
            Self::Invalid { board, reason } => write!(f, "board `{board}`: {reason}"),
            Self::Unknown { name, known } => write!(
                f,
                "no board `{name}` (no {BOARDS_DIR}/{name}.toml); the boards are: {}",
                known.join(", ")
            ),
            Self::ChipMismatch {
                board,
                board_chip,
                asked,
            } => write!(
                f,
                "board `{board}` is built for probe-rs chip `{board_chip}`, not `{asked}`: \
                 refusing to flash its image into another chip"
            ),
            Self::EmulatedOnly { board, machine } => write!(
                f,
                "board `{board}` is emulated (QEMU `{machine}`): its image is for QEMU, not a \
                 chip; boot it with `--device qemu`"
            ),
            Self::NotEmulated { board, chip } => write!(
                f,
                "board `{board}` is a real board (probe-rs chip `{chip}`), not emulated: use \
                 `--device probe-rs:{chip}`"
            ),
            Self::NoBoardForChip { chip, known } => {
                write!(
                    f,
                    "no board file has probe-rs chip `{chip}`, so there is no image for it \
                     (refusing to flash another board's); the real boards are: "
                )?;
                let list: Vec<String> = known.iter().map(|(b, c)| format!("{b} ({c})")).collect();
                write!(
                    f,
                    "{}; add {BOARDS_DIR}/<name>.toml for yours (docs/boards.md)",
                    if list.is_empty() {
                        "none".into()
                    } else {
                        list.join(", ")
                    }
                )
            }
            Self::SeveralBoardsForChip { chip, boards } => write!(
                f,
                "several boards have probe-rs chip `{chip}` ({}): name one with --board",
                boards.join(", ")
            ),
        }
    }
}

impl std::error::Error for BoardError {}

impl Board {
    /// Parses and checks the board file `<file_stem>.toml`.
    ///
    /// # Errors
    /// [`BoardError::Syntax`] for TOML or schema errors (an unknown key
    /// too: a misspelt key is never silently ignored),
    /// [`BoardError::Invalid`] for a board that cannot be.
    pub fn parse(file_stem: &str, text: &str) -> Result<Self, BoardError> {
        let board: Board = toml::from_str(text).map_err(|e| BoardError::Syntax {
            file: format!("{file_stem}.toml"),
            message: e.to_string(),
        })?;
        if board.name != file_stem {
            return Err(board.invalid(format!("its name must be its file's name, `{file_stem}`")));
        }
        board.validate()?;
        Ok(board)
    }

    fn invalid(&self, reason: String) -> BoardError {
        BoardError::Invalid {
            board: self.name.clone(),
            reason,
        }
    }

    /// The checks [`Board::parse`] makes after the schema's.
    ///
    /// # Errors
    /// [`BoardError::Invalid`] with the first rule broken.
    pub fn validate(&self) -> Result<(), BoardError> {
        let fail = |reason: String| Err(self.invalid(reason));
        let valid_name = |s: &str| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        };
        if !valid_name(&self.name) {
            return fail("a name is lowercase letters, digits and `-`".into());
        }
        if !TARGETS.contains(&self.target.as_str()) {
            return fail(format!(
                "target `{}` is not one the firmware builds for ({})",
                self.target,
                TARGETS.join(", ")
            ));
        }
        if self.hal == Hal::Stm32f4xxHal && !self.target.starts_with("thumbv7em") {
            return fail(format!(
                "an STM32F4 is a Cortex-M4: target thumbv7em-…, not `{}`",
                self.target
            ));
        }
        match (&self.probe_rs_chip, &self.emulator) {
            (Some(_), Some(_)) => {
                return fail(
                    "give `probe_rs_chip` (a board on a desk) or `[emulator]` (an emulated \
                     board), not both: one board file is one image"
                        .into(),
                );
            }
            (None, None) => {
                return fail(
                    "give `probe_rs_chip` (a board on a desk) or `[emulator]` (an emulated board)"
                        .into(),
                );
            }
            (Some(chip), None) if chip.trim().is_empty() => {
                return fail("`probe_rs_chip` is empty".into());
            }
            _ => {}
        }
        let Memory { flash, ram } = self.memory;
        for (what, region) in [("flash", flash), ("ram", ram)] {
            if region.length == 0 {
                return fail(format!("memory.{what} is empty"));
            }
            if region.end() > 1 << 32 {
                return fail(format!(
                    "memory.{what} ({:#x} + {:#x}) ends beyond the 32-bit address space",
                    region.origin, region.length
                ));
            }
            if region.origin % 4 != 0 || region.length % 4 != 0 {
                return fail(format!("memory.{what} is not word-aligned"));
            }
        }
        if flash.overlaps(&ram) {
            return fail(format!(
                "memory.flash [{:#x}, {:#x}) and memory.ram [{:#x}, {:#x}) overlap",
                flash.origin,
                flash.end(),
                ram.origin,
                ram.end()
            ));
        }
        if self.clocks.core_hz == 0 {
            return fail("clocks.core_hz is 0".into());
        }
        if self.clocks.hse_hz == Some(0) || self.clocks.timer_hz == Some(0) {
            return fail("a clock of 0 Hz".into());
        }
        if self.link.baud == 0 || u64::from(self.link.baud) * 16 > self.clocks.core_hz {
            return fail(format!(
                "link.baud {} cannot be made from a {} Hz clock (at most clock / 16)",
                self.link.baud, self.clocks.core_hz
            ));
        }
        if self.hal == Hal::Cmsdk && self.link.base.is_none() {
            return fail("the CMSDK glue drives the UART by address: give link.base".into());
        }
        let budget = self.ram_budget;
        match (self.fpga, &self.fpga_spi) {
            (Fpga::Model, Some(_)) => {
                return fail("`fpga = \"model\"` has no SPI bus: drop [fpga_spi]".into());
            }
            (Fpga::Model, None) if budget.device_memory == 0 => {
                return fail("the FPGA model needs ram_budget.device_memory".into());
            }
            (Fpga::Spi, None) => return fail("`fpga = \"spi\"` needs [fpga_spi]".into()),
            (Fpga::Spi, Some(_)) if budget.device_memory != 0 => {
                return fail(
                    "ram_budget.device_memory is the model's; a real FPGA has its own memory"
                        .into(),
                );
            }
            (Fpga::Spi, Some(spi)) if spi.hz == 0 => return fail("fpga_spi.hz is 0".into()),
            _ => {}
        }
        let events = self.driver.event_entries;
        if !events.is_power_of_two() || !(16..=65_536).contains(&events) {
            return fail(format!(
                "driver.event_entries {events} is not a power of two from 16 to 65536"
            ));
        }
        let needed = budget
            .program_bytes
            .saturating_add(budget.device_memory)
            .saturating_add(FIRMWARE_RAM);
        if needed > ram.length {
            return fail(format!(
                "ram_budget needs {} B (programs {} + device memory {} + {} for the firmware) \
                 but memory.ram is {} B",
                needed, budget.program_bytes, budget.device_memory, FIRMWARE_RAM, ram.length
            ));
        }
        Ok(())
    }

    /// Whether it boots in an emulator rather than on a chip.
    pub fn is_emulated(&self) -> bool {
        self.emulator.is_some()
    }

    /// The firmware's cargo feature that selects this board.
    pub fn feature(&self) -> String {
        format!("board-{}", self.name)
    }

    /// Checks that `--device probe-rs:<asked>` is this board's chip (probe-rs
    /// compares chip names without regard to case).
    ///
    /// # Errors
    /// [`BoardError::EmulatedOnly`] or [`BoardError::ChipMismatch`].
    pub fn check_probe_chip(&self, asked: &str) -> Result<(), BoardError> {
        match (&self.probe_rs_chip, &self.emulator) {
            (Some(chip), _) if chip.eq_ignore_ascii_case(asked) => Ok(()),
            (Some(chip), _) => Err(BoardError::ChipMismatch {
                board: self.name.clone(),
                board_chip: chip.clone(),
                asked: asked.into(),
            }),
            (None, emulator) => Err(BoardError::EmulatedOnly {
                board: self.name.clone(),
                machine: emulator
                    .as_ref()
                    .map_or_else(String::new, |e| e.qemu_machine.clone()),
            }),
        }
    }

    /// Checks that the board boots in an emulator; returns it.
    ///
    /// # Errors
    /// [`BoardError::NotEmulated`].
    pub fn emulator(&self) -> Result<&Emulator, BoardError> {
        self.emulator
            .as_ref()
            .ok_or_else(|| BoardError::NotEmulated {
                board: self.name.clone(),
                chip: self.probe_rs_chip.clone().unwrap_or_default(),
            })
    }

    /// cortex-m-rt's `memory.x` for this board.
    pub fn memory_x(&self) -> String {
        let Memory { flash, ram } = self.memory;
        format!(
            "/* Generated from {BOARDS_DIR}/{}.toml by firmware/build.rs: {} */\n\
             MEMORY\n{{\n  FLASH : ORIGIN = {:#010x}, LENGTH = {:#x}\n  \
             RAM   : ORIGIN = {:#010x}, LENGTH = {:#x}\n}}\n",
            self.name, self.description, flash.origin, flash.length, ram.origin, ram.length
        )
    }

    /// The firmware's `board` constants (`OUT_DIR/board.rs`).
    pub fn rust_consts(&self) -> String {
        let mut out = format!(
            "// Generated from {BOARDS_DIR}/{}.toml by firmware/build.rs.\n",
            self.name
        );
        let mut item = |doc: &str, decl: String| {
            out.push_str(&format!("/// {doc}\npub const {decl};\n"));
        };
        item("The board's name.", format!("NAME: &str = {:?}", self.name));
        item("The MCU.", format!("CHIP: &str = {:?}", self.chip));
        item(
            "The core clock, Hz.",
            format!("CORE_HZ: u64 = {}", self.clocks.core_hz),
        );
        item(
            "The external crystal, Hz, if the board has one.",
            format!("HSE_HZ: Option<u32> = {:?}", self.clocks.hse_hz),
        );
        item(
            "The timers' clock, Hz, where the clock tree does not give it.",
            format!("TIMER_HZ: Option<u64> = {:?}", self.clocks.timer_hz),
        );
        item(
            "The link's UART.",
            format!("LINK_UART: &str = {:?}", self.link.uart),
        );
        if let Some(base) = self.link.base {
            item(
                "The link UART's register base.",
                format!("LINK_BASE: usize = {base:#x}"),
            );
        }
        for (what, pin) in [("TX", &self.link.tx), ("RX", &self.link.rx)] {
            if let Some(pin) = pin {
                item(
                    &format!("The link UART's {what} pin."),
                    format!("LINK_{what}: &str = {pin:?}"),
                );
            }
        }
        item(
            "The link's line rate.",
            format!("LINK_BAUD: u32 = {}", self.link.baud),
        );
        if let Some(spi) = &self.fpga_spi {
            for (name, value) in [
                ("BUS", &spi.bus),
                ("SCK", &spi.sck),
                ("MISO", &spi.miso),
                ("MOSI", &spi.mosi),
                ("CS", &spi.cs),
            ] {
                item(
                    &format!("The FPGA's SPI: {name}."),
                    format!("FPGA_SPI_{name}: &str = {value:?}"),
                );
            }
            item(
                "The FPGA's SPI clock, Hz.",
                format!("FPGA_SPI_HZ: u32 = {}", spi.hz),
            );
        }
        item(
            "RAM for device programs, bytes.",
            format!("PROGRAM_BYTES: usize = {}", self.ram_budget.program_bytes),
        );
        item(
            "The FPGA model's device memory, bytes (0 with a real FPGA).",
            format!("DEVICE_MEMORY: usize = {}", self.ram_budget.device_memory),
        );
        item(
            "Event-ring entries in the FPGA's memory.",
            format!("EVENT_ENTRIES: u32 = {}", self.driver.event_entries),
        );
        item(
            "The RAM region.",
            format!(
                "RAM: (usize, usize) = ({:#x}, {:#x})",
                self.memory.ram.origin, self.memory.ram.length
            ),
        );
        out
    }
}

/// Reads and checks `<dir>/<name>.toml`.
///
/// # Errors
/// [`BoardError::Unknown`] (with the boards there are) when there is no
/// such file; any error of [`Board::parse`].
pub fn load(dir: &Path, name: &str) -> Result<Board, BoardError> {
    let path = dir.join(format!("{name}.toml"));
    let valid = !name.is_empty() && !name.contains(['/', '\\', '.']);
    if !valid || !path.is_file() {
        return Err(BoardError::Unknown {
            name: name.into(),
            known: names(dir)?,
        });
    }
    let text = std::fs::read_to_string(&path).map_err(|error| BoardError::Io { path, error })?;
    Board::parse(name, &text)
}

/// The names of the board files in `dir`, sorted.
///
/// # Errors
/// [`BoardError::Io`] when `dir` cannot be listed.
pub fn names(dir: &Path) -> Result<Vec<String>, BoardError> {
    let io = |error| BoardError::Io {
        path: dir.into(),
        error,
    };
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        if path.extension().is_some_and(|e| e == "toml")
            && let Some(stem) = path.file_stem().and_then(|s| s.to_str())
        {
            names.push(stem.to_owned());
        }
    }
    names.sort();
    Ok(names)
}

/// Every board in `dir`, checked.
///
/// # Errors
/// The first file that does not load.
pub fn all(dir: &Path) -> Result<Vec<Board>, BoardError> {
    names(dir)?.iter().map(|name| load(dir, name)).collect()
}

/// The one board whose probe-rs chip is `chip` (no `--board` given).
///
/// # Errors
/// [`BoardError::NoBoardForChip`] or [`BoardError::SeveralBoardsForChip`].
pub fn for_probe_chip<'a>(boards: &'a [Board], chip: &str) -> Result<&'a Board, BoardError> {
    let matching: Vec<&Board> = boards
        .iter()
        .filter(|b| b.check_probe_chip(chip).is_ok())
        .collect();
    match matching.as_slice() {
        [one] => Ok(one),
        [] => Err(BoardError::NoBoardForChip {
            chip: chip.into(),
            known: boards
                .iter()
                .filter_map(|b| Some((b.name.clone(), b.probe_rs_chip.clone()?)))
                .collect(),
        }),
        several => Err(BoardError::SeveralBoardsForChip {
            chip: chip.into(),
            boards: several.iter().map(|b| b.name.clone()).collect(),
        }),
    }
}

#[cfg(test)]
mod tests;
