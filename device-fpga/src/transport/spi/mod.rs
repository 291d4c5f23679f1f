//! [`Transport`] over any `embedded_hal::spi::SpiDevice`: CRC-checked
//! request/response frames (see [`frame`]), bounded busy polling, and
//! chunking of large transfers. No DMA.

use embedded_hal::spi::{Error as _, Operation, SpiDevice};

use super::{CrcSide, Error, Transport, check_reg_alignment};
use frame::{CRC_LEN, Command, Header, MAX_PAYLOAD, RESPONSE_HEAD_LEN, Status, crc16};

mod counting;
pub mod frame;
pub mod slave;

pub use counting::CountingSpi;

/// Tuning of the SPI transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SpiConfig {
    /// Largest payload per frame, `1..=MAX_PAYLOAD` (clamped).
    pub max_payload: usize,
    /// How many `Busy` answers one request tolerates; one more is a
    /// [`Error::Timeout`]. A short poll clocks 2 bytes, so at 10 MHz the
    /// default of 10 000 gives up after about 20 ms.
    pub max_busy_polls: u32,
}

impl Default for SpiConfig {
    fn default() -> Self {
        Self {
            max_payload: MAX_PAYLOAD,
            max_busy_polls: 10_000,
        }
    }
}

/// The host (master) side of the SPI frame protocol.
#[derive(Debug)]
pub struct SpiTransport<D> {
    spi: D,
    config: SpiConfig,
    seq: u8,
}

impl<D: SpiDevice> SpiTransport<D> {
    /// A transport over `spi` (SPI mode 0, MSB first, 8-bit words).
    pub fn new(spi: D, config: SpiConfig) -> Self {
        let config = SpiConfig {
            max_payload: config.max_payload.clamp(1, MAX_PAYLOAD),
            ..config
        };
        Self {
            spi,
            config,
            seq: 0,
        }
    }

    /// The configuration in effect (after clamping).
    pub const fn config(&self) -> &SpiConfig {
        &self.config
    }

    /// The SPI device.
    pub const fn device(&self) -> &D {
        &self.spi
    }

    /// The SPI device, mutably (e.g. to reach a model's fault hooks).
    pub fn device_mut(&mut self) -> &mut D {
        &mut self.spi
    }

    /// Gives the SPI device back.
    pub fn into_inner(self) -> D {
        self.spi
    }

    /// One request and its response: sends `header` (its `seq` is replaced)
    /// with `payload_out`, then fetches `payload_in`.
    fn exchange(
        &mut self,
        mut header: Header,
        payload_out: &[u8],
        payload_in: &mut [u8],
    ) -> Result<(), Error> {
        self.seq = self.seq.wrapping_add(1);
        header.seq = self.seq;
        let head = header.encode();
        let crc = crc16(&[&head, payload_out]).to_le_bytes();
        if payload_out.is_empty() {
            self.run(&mut [Operation::Write(&head), Operation::Write(&crc)])?;
        } else {
            self.run(&mut [
                Operation::Write(&head),
                Operation::Write(payload_out),
                Operation::Write(&crc),
            ])?;
        }

        let mut busy_polls = 0u32;
        loop {
            let mut response_head = [0; RESPONSE_HEAD_LEN];
            let mut response_crc = [0; CRC_LEN];
            self.fetch(&mut response_head, payload_in, &mut response_crc)?;
            if response_head[0] != Status::Busy as u8 {
                return decode(&header, response_head, payload_in, response_crc);
            }
            // Busy: short polls until the device is ready, then fetch again.
            loop {
                busy_polls += 1;
                if busy_polls > self.config.max_busy_polls {
                    return Err(Error::Timeout { polls: busy_polls });
                }
                let mut status = [0; 1];
                self.run(&mut [
                    Operation::Write(&[Command::Status as u8]),
                    Operation::Read(&mut status),
                ])?;
                if status[0] != Status::Busy as u8 {
                    break;
                }
            }
        }
    }

    /// Status command, then the whole response.
    fn fetch(
        &mut self,
        head: &mut [u8; 2],
        payload: &mut [u8],
        crc: &mut [u8; 2],
    ) -> Result<(), Error> {
        let command = [Command::Status as u8];
        if payload.is_empty() {
            self.run(&mut [
                Operation::Write(&command),
                Operation::Read(head),
                Operation::Read(crc),
            ])
        } else {
            self.run(&mut [
                Operation::Write(&command),
                Operation::Read(head),
                Operation::Read(payload),
                Operation::Read(crc),
            ])
        }
    }

    fn run(&mut self, operations: &mut [Operation<'_, u8>]) -> Result<(), Error> {
        self.spi
            .transaction(operations)
            .map_err(|e| Error::Bus(e.kind().into()))
    }

    /// Memory transfer in frames of at most `max_payload` bytes.
    fn chunked(
        &mut self,
        command: Command,
        addr: u64,
        len: usize,
        mut frame: impl FnMut(&mut Self, Header, usize) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let max = self.config.max_payload;
        let mut done = 0;
        while done < len {
            let n = max.min(len - done);
            let at = addr
                .checked_add(done as u64)
                .filter(|a| a.checked_add(n as u64).is_some())
                .ok_or(Error::out_of_range(addr, len))?;
            let header = Header {
                command,
                seq: 0,
                addr: at,
                // `n <= MAX_PAYLOAD`, which fits a u16.
                len: n as u16,
            };
            frame(self, header, done)?;
            done += n;
        }
        Ok(())
    }
}

/// Checks a fetched response against the request it answers.
fn decode(header: &Header, head: [u8; 2], payload: &[u8], crc: [u8; 2]) -> Result<(), Error> {
    if crc16(&[&head, payload]) != u16::from_le_bytes(crc) {
        return Err(Error::Crc(CrcSide::Response));
    }
    let [status, seq] = head;
    let framing = Error::Framing {
        status,
        expected_seq: header.seq,
        seq,
    };
    match Status::from_byte(status) {
        // The device could not trust this request's bytes, seq included.
        Some(Status::CrcError) => Err(Error::Crc(CrcSide::Request)),
        Some(Status::Rejected) => Err(Error::Rejected),
        _ if seq != header.seq => Err(framing),
        Some(Status::Ok) => Ok(()),
        Some(Status::OutOfRange) => Err(Error::out_of_range(header.addr, usize::from(header.len))),
        Some(Status::Idle | Status::Busy) | None => Err(framing),
    }
}

impl<D: SpiDevice> Transport for SpiTransport<D> {
    fn read_reg(&mut self, offset: u32) -> Result<u32, Error> {
        check_reg_alignment(offset)?;
        let header = Header {
            command: Command::ReadReg,
            seq: 0,
            addr: u64::from(offset),
            len: 4,
        };
        let mut value = [0; 4];
        self.exchange(header, &[], &mut value)?;
        Ok(u32::from_le_bytes(value))
    }

    fn write_reg(&mut self, offset: u32, value: u32) -> Result<(), Error> {
        check_reg_alignment(offset)?;
        let header = Header {
            command: Command::WriteReg,
            seq: 0,
            addr: u64::from(offset),
            len: 4,
        };
        self.exchange(header, &value.to_le_bytes(), &mut [])
    }

    fn read_mem(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), Error> {
        let len = buf.len();
        self.chunked(Command::ReadMem, addr, len, |t, header, done| {
            let n = usize::from(header.len);
            t.exchange(header, &[], &mut buf[done..done + n])
        })
    }

    fn write_mem(&mut self, addr: u64, data: &[u8]) -> Result<(), Error> {
        self.chunked(Command::WriteMem, addr, data.len(), |t, header, done| {
            let n = usize::from(header.len);
            t.exchange(header, &data[done..done + n], &mut [])
        })
    }
}
