//! The SPI NOR command layer: JEDEC ID, read, status, write enable, page
//! program and 4 KiB sector erase, with bounded `BUSY` waits.

use embedded_hal::spi::{Error as _, Operation, SpiDevice};
use tensorplug_abi::device::flash::{NorCommand, NorStatus};

use super::error::{FlashError, Phase};
use crate::driver::Clock;
use crate::driver::clock::Deadline;

/// Timeouts of the NOR operations, in microseconds (W25Q128JV maxima by
/// default: page program 3 ms, sector erase 400 ms).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NorTimeouts {
    /// Budget for one page program.
    pub page_program_us: u64,
    /// Budget for one sector erase.
    pub sector_erase_us: u64,
}

impl Default for NorTimeouts {
    fn default() -> Self {
        Self {
            page_program_us: 3_000,
            sector_erase_us: 400_000,
        }
    }
}

/// A JEDEC SPI NOR flash with 24-bit addresses.
#[derive(Debug)]
pub struct Nor<S, C> {
    spi: S,
    clock: C,
    timeouts: NorTimeouts,
}

fn command(cmd: NorCommand, addr: u32) -> [u8; 4] {
    let [_, a2, a1, a0] = addr.to_be_bytes();
    [cmd.0, a2, a1, a0]
}

impl<S: SpiDevice, C: Clock> Nor<S, C> {
    /// The flash on `spi`.
    pub const fn new(spi: S, clock: C, timeouts: NorTimeouts) -> Self {
        Self {
            spi,
            clock,
            timeouts,
        }
    }

    /// The SPI device (e.g. to reach a model's fault hooks).
    pub fn spi_mut(&mut self) -> &mut S {
        &mut self.spi
    }

    /// Gives the SPI device back.
    pub fn into_inner(self) -> S {
        self.spi
    }

    fn run(&mut self, ops: &mut [Operation<'_, u8>]) -> Result<(), FlashError> {
        self.spi
            .transaction(ops)
            .map_err(|e| FlashError::Spi(e.kind().into()))
    }

    /// Manufacturer, memory type, capacity code.
    pub fn jedec_id(&mut self) -> Result<[u8; 3], FlashError> {
        let mut id = [0; 3];
        self.run(&mut [
            Operation::Write(&[NorCommand::READ_JEDEC_ID.0]),
            Operation::Read(&mut id),
        ])?;
        Ok(id)
    }

    /// Reads `buf.len()` bytes from `addr`.
    pub fn read(&mut self, addr: u32, buf: &mut [u8]) -> Result<(), FlashError> {
        let cmd = command(NorCommand::READ_DATA, addr);
        self.run(&mut [Operation::Write(&cmd), Operation::Read(buf)])
    }

    fn status(&mut self) -> Result<NorStatus, FlashError> {
        let mut status = [0; 1];
        self.run(&mut [
            Operation::Write(&[NorCommand::READ_STATUS.0]),
            Operation::Read(&mut status),
        ])?;
        Ok(NorStatus(status[0]))
    }

    fn write_enable(&mut self) -> Result<(), FlashError> {
        self.run(&mut [Operation::Write(&[NorCommand::WRITE_ENABLE.0])])?;
        let status = self.status()?;
        // All-ones is what a silent bus reads: not a latch that is set.
        if status.contains(NorStatus::WRITE_ENABLED) && !status.contains(NorStatus::BUSY) {
            Ok(())
        } else {
            Err(FlashError::WriteEnableFailed)
        }
    }

    fn wait_ready(&mut self, phase: Phase, addr: u32, budget_us: u64) -> Result<(), FlashError> {
        let mut deadline = Deadline::start(&mut self.clock, budget_us.saturating_mul(1000));
        loop {
            if !self.status()?.contains(NorStatus::BUSY) {
                return Ok(());
            }
            if !deadline.keep_waiting(&mut self.clock) {
                return Err(FlashError::Timeout { phase, addr });
            }
        }
    }

    /// Erases the 4 KiB sector at `addr` to 0xFF and waits for it.
    pub fn erase_sector(&mut self, addr: u32) -> Result<(), FlashError> {
        self.write_enable()?;
        let cmd = command(NorCommand::SECTOR_ERASE_4K, addr);
        self.run(&mut [Operation::Write(&cmd)])?;
        self.wait_ready(Phase::Erase, addr, self.timeouts.sector_erase_us)
    }

    /// Programs `data` (within one 256-byte page) at `addr` and waits.
    pub fn program_page(&mut self, addr: u32, data: &[u8]) -> Result<(), FlashError> {
        self.write_enable()?;
        let cmd = command(NorCommand::PAGE_PROGRAM, addr);
        self.run(&mut [Operation::Write(&cmd), Operation::Write(data)])?;
        self.wait_ready(Phase::Program, addr, self.timeouts.page_program_us)
    }
}
