//! A JEDEC SPI NOR flash (Winbond W25Q128JV) behind
//! `embedded_hal::spi::SpiDevice`: the configuration flash holding the
//! bitstream images (`docs/device-abi.md`, "Flash layout").
//!
//! Commands (`NorCommand`): `0x9F` READ_JEDEC_ID (`EF 40 18`), `0x03`
//! READ_DATA (3 address bytes, then data, wrapping at the end), `0x05`
//! READ_STATUS (repeated), `0x06` WRITE_ENABLE, `0x04` WRITE_DISABLE, `0x02`
//! PAGE_PROGRAM (needs WEL; data wraps inside the 256-byte page; bits only
//! go 1 → 0), `0x20` SECTOR_ERASE_4K (needs WEL; to 0xFF). Program and erase
//! run when chip select is released and keep `BUSY` set for a modelled time;
//! while busy only READ_STATUS is answered. A transaction is one
//! chip-select window; bytes are a stream across its operations.

use core::convert::Infallible;

use embedded_hal::spi::{ErrorType, Operation, SpiDevice};
use tensorplug_abi::device::flash::{self, NorCommand, NorStatus};

use super::clock::TickSource;

/// JEDEC manufacturer, memory type and capacity of the W25Q128JV.
pub const JEDEC_ID: [u8; 3] = [0xEF, 0x40, 0x18];

const CONFIG_FLASH_PAGE_SIZE: usize = flash::CONFIG_FLASH_PAGE_SIZE as usize;
const CONFIG_FLASH_SECTOR_SIZE: usize = flash::CONFIG_FLASH_SECTOR_SIZE as usize;
const READ_JEDEC_ID: u8 = NorCommand::READ_JEDEC_ID.0;
const READ_DATA: u8 = NorCommand::READ_DATA.0;
const READ_STATUS: u8 = NorCommand::READ_STATUS.0;
const WRITE_ENABLE: u8 = NorCommand::WRITE_ENABLE.0;
/// Not in the ABI's list; the W25Q128JV has it.
const WRITE_DISABLE: u8 = 0x04;
const PAGE_PROGRAM: u8 = NorCommand::PAGE_PROGRAM.0;
const SECTOR_ERASE_4K: u8 = NorCommand::SECTOR_ERASE_4K.0;
const STATUS_BUSY: u8 = NorStatus::BUSY.0;
const STATUS_WEL: u8 = NorStatus::WRITE_ENABLED.0;

/// How long program and erase keep `BUSY` set, in ticks of the tick source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NorTiming {
    /// Ticks a PAGE_PROGRAM takes.
    pub page_program_ticks: u64,
    /// Ticks a SECTOR_ERASE_4K takes.
    pub sector_erase_ticks: u64,
}

impl NorTiming {
    /// Datasheet typicals at a 100 MHz tick: 0.4 ms per page, 45 ms per sector.
    pub const W25Q128JV: NorTiming = NorTiming {
        page_program_ticks: 40_000,
        sector_erase_ticks: 4_500_000,
    };
    /// 1000× faster than the datasheet, for tests on a real-time clock.
    pub const FAST: NorTiming = NorTiming {
        page_program_ticks: 40,
        sector_erase_ticks: 4_500,
    };
}

/// Where the flash is inside the current chip-select window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Command,
    /// Collecting the 3 address bytes of `cmd`.
    Address {
        cmd: u8,
        got: u8,
        addr: u32,
    },
    /// Streaming data of `cmd` at `addr`.
    Data {
        cmd: u8,
        addr: u32,
    },
    /// A byte-less command (or one to ignore) until chip select rises.
    Done {
        cmd: u8,
    },
}

/// The flash over caller-provided storage (its length is the capacity,
/// 16 MiB for the W25Q128JV; any multiple of 4 KiB works).
#[derive(Debug)]
pub struct NorFlash<S, C> {
    storage: S,
    clock: C,
    timing: NorTiming,
    wel: bool,
    busy_until: u64,
    phase: Phase,
    /// Bytes of the pending page program (offset in page, byte), kept until CS rises.
    page: [u8; CONFIG_FLASH_PAGE_SIZE],
    page_mask: [bool; CONFIG_FLASH_PAGE_SIZE],
    page_addr: u32,
    /// Fault: after this many more programmed bytes the power fails.
    power_cut_after: Option<u32>,
    powered: bool,
}

impl<S: AsMut<[u8]> + AsRef<[u8]>, C: TickSource> NorFlash<S, C> {
    /// A flash over `storage` (contents kept: pass 0xFF for an erased chip).
    pub fn new(storage: S, clock: C, timing: NorTiming) -> Self {
        Self {
            storage,
            clock,
            timing,
            wel: false,
            busy_until: 0,
            phase: Phase::Command,
            page: [0xFF; CONFIG_FLASH_PAGE_SIZE],
            page_mask: [false; CONFIG_FLASH_PAGE_SIZE],
            page_addr: 0,
            power_cut_after: None,
            powered: true,
        }
    }

    /// The flash contents.
    pub fn storage(&self) -> &[u8] {
        self.storage.as_ref()
    }
    /// The flash contents, writable (to prepare a test image).
    pub fn storage_mut(&mut self) -> &mut [u8] {
        self.storage.as_mut()
    }
    /// The tick source.
    pub fn clock_mut(&mut self) -> &mut C {
        &mut self.clock
    }

    /// Fault: the power fails once `bytes` more bytes have been programmed;
    /// the program in progress writes only those bytes, and the flash answers
    /// nothing (MISO 0xFF) until [`NorFlash::power_on`].
    pub fn cut_power_after(&mut self, bytes: u32) {
        self.power_cut_after = Some(bytes);
    }
    /// Whether the injected power cut has happened.
    pub const fn power_failed(&self) -> bool {
        !self.powered
    }
    /// Power comes back: contents kept, WEL and BUSY clear, fault disarmed.
    pub fn power_on(&mut self) {
        self.powered = true;
        self.power_cut_after = None;
        self.wel = false;
        self.busy_until = 0;
        self.phase = Phase::Command;
    }

    fn busy(&mut self) -> bool {
        self.clock.now_ticks() < self.busy_until
    }

    fn status(&mut self) -> u8 {
        let mut s = 0;
        if self.busy() {
            s |= STATUS_BUSY;
        }
        if self.wel {
            s |= STATUS_WEL;
        }
        s
    }

    /// One byte clocked: `mosi` in, the returned byte out.
    fn clock_byte(&mut self, mosi: u8) -> u8 {
        if !self.powered {
            return 0xFF;
        }
        match self.phase {
            Phase::Command => {
                self.phase = match mosi {
                    _ if self.busy() && mosi != READ_STATUS => Phase::Done { cmd: 0 },
                    READ_DATA | PAGE_PROGRAM | SECTOR_ERASE_4K => Phase::Address {
                        cmd: mosi,
                        got: 0,
                        addr: 0,
                    },
                    READ_JEDEC_ID | READ_STATUS => Phase::Data { cmd: mosi, addr: 0 },
                    _ => Phase::Done { cmd: mosi },
                };
                0xFF
            }
            Phase::Address { cmd, got, addr } => {
                let addr = addr << 8 | u32::from(mosi);
                self.phase = if got == 2 {
                    if cmd == PAGE_PROGRAM {
                        self.page_addr = addr;
                        self.page_mask = [false; CONFIG_FLASH_PAGE_SIZE];
                    }
                    Phase::Data { cmd, addr }
                } else {
                    Phase::Address {
                        cmd,
                        got: got + 1,
                        addr,
                    }
                };
                0xFF
            }
            Phase::Data { cmd, addr } => {
                self.phase = Phase::Data {
                    cmd,
                    addr: addr.wrapping_add(1),
                };
                match cmd {
                    READ_JEDEC_ID => JEDEC_ID.get(addr as usize).copied().unwrap_or(0xFF),
                    READ_STATUS => self.status(),
                    READ_DATA => {
                        let s = self.storage.as_ref();
                        match s.len() {
                            0 => 0xFF,
                            len => s[addr as usize % len],
                        }
                    }
                    PAGE_PROGRAM => {
                        let at = addr as usize % CONFIG_FLASH_PAGE_SIZE;
                        self.page[at] = mosi;
                        self.page_mask[at] = true;
                        0xFF
                    }
                    _ => 0xFF,
                }
            }
            Phase::Done { .. } => 0xFF,
        }
    }

    /// Chip select rises: commands that act at the end of the window run.
    fn end(&mut self) {
        let phase = core::mem::replace(&mut self.phase, Phase::Command);
        if !self.powered {
            return;
        }
        match phase {
            Phase::Done { cmd: WRITE_ENABLE } => self.wel = true,
            Phase::Done { cmd: WRITE_DISABLE } => self.wel = false,
            Phase::Data {
                cmd: PAGE_PROGRAM, ..
            } if self.wel => self.program_page(),
            Phase::Data {
                cmd: SECTOR_ERASE_4K,
                addr,
            } if self.wel => self.erase_sector(addr),
            _ => {}
        }
    }

    fn program_page(&mut self) {
        self.wel = false;
        let page_start = self.page_addr as usize & !(CONFIG_FLASH_PAGE_SIZE - 1);
        let storage = self.storage.as_mut();
        // Start at the addressed byte, wrapping inside the page, so a power
        // cut interrupts the program in the order the bytes were sent.
        let first = self.page_addr as usize % CONFIG_FLASH_PAGE_SIZE;
        for i in 0..CONFIG_FLASH_PAGE_SIZE {
            let at = (first + i) % CONFIG_FLASH_PAGE_SIZE;
            if !self.page_mask[at] {
                continue;
            }
            if let Some(left) = self.power_cut_after.as_mut() {
                if *left == 0 {
                    self.powered = false;
                    return;
                }
                *left -= 1;
            }
            if let Some(b) = storage.get_mut(page_start + at) {
                *b &= self.page[at];
            }
        }
        self.busy_until = self
            .clock
            .now_ticks()
            .saturating_add(self.timing.page_program_ticks);
    }

    fn erase_sector(&mut self, addr: u32) {
        self.wel = false;
        let start = addr as usize & !(CONFIG_FLASH_SECTOR_SIZE - 1);
        let storage = self.storage.as_mut();
        let end = (start + CONFIG_FLASH_SECTOR_SIZE).min(storage.len());
        if let Some(sector) = storage.get_mut(start..end) {
            sector.fill(0xFF);
        }
        self.busy_until = self
            .clock
            .now_ticks()
            .saturating_add(self.timing.sector_erase_ticks);
    }
}

impl<S, C> ErrorType for NorFlash<S, C> {
    type Error = Infallible;
}

impl<S: AsMut<[u8]> + AsRef<[u8]>, C: TickSource> SpiDevice for NorFlash<S, C> {
    fn transaction(&mut self, operations: &mut [Operation<'_, u8>]) -> Result<(), Infallible> {
        for op in operations {
            match op {
                Operation::Write(data) => {
                    for &b in data.iter() {
                        self.clock_byte(b);
                    }
                }
                Operation::Read(buf) => {
                    for b in buf.iter_mut() {
                        *b = self.clock_byte(0x00);
                    }
                }
                Operation::Transfer(read, write) => {
                    let n = read.len().max(write.len());
                    for i in 0..n {
                        let out = self.clock_byte(write.get(i).copied().unwrap_or(0x00));
                        if let Some(r) = read.get_mut(i) {
                            *r = out;
                        }
                    }
                }
                Operation::TransferInPlace(buf) => {
                    for b in buf.iter_mut() {
                        *b = self.clock_byte(*b);
                    }
                }
                Operation::DelayNs(_) => {}
            }
        }
        self.end();
        Ok(())
    }
}
