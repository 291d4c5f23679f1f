//! The device (slave) side of the SPI frame protocol, as an
//! `embedded_hal::spi::SpiDevice`, for the behavioural model.
//!
//! [`SpiSlave`] decodes the bytes a host clocks into it, checks CRCs,
//! executes requests against an [`SpiTarget`] (the model's register space
//! and memory) and clocks the responses back, so an
//! [`SpiTransport`](super::SpiTransport) can run over it unchanged.
//! Requests run lazily, at the first status poll the target is not busy for;
//! the response is kept so it can be fetched again.

use core::convert::Infallible;

use embedded_hal::spi::{ErrorType, Operation, SpiDevice};

use super::frame::{
    CRC_LEN, Command, FILLER, HEADER_LEN, Header, MAX_REQUEST_LEN, MAX_RESPONSE_LEN,
    RESPONSE_HEAD_LEN, Status, crc16,
};

/// Why the target refused an access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum TargetError {
    /// No register or memory at that address.
    OutOfRange,
}

/// The device behind the SPI slave: its register space and memory.
pub trait SpiTarget {
    /// Reads the register at byte `offset`.
    fn read_reg(&mut self, offset: u32) -> Result<u32, TargetError>;
    /// Writes the register at byte `offset`.
    fn write_reg(&mut self, offset: u32, value: u32) -> Result<(), TargetError>;
    /// Reads device memory at `addr` into `buf`.
    fn read_mem(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), TargetError>;
    /// Writes `data` to device memory at `addr`.
    fn write_mem(&mut self, addr: u64, data: &[u8]) -> Result<(), TargetError>;
    /// Whether the device cannot serve the SPI port right now; the slave
    /// answers `Busy` to status polls meanwhile.
    fn busy(&mut self) -> bool {
        false
    }
}

impl<T: SpiTarget + ?Sized> SpiTarget for &mut T {
    fn read_reg(&mut self, offset: u32) -> Result<u32, TargetError> {
        (**self).read_reg(offset)
    }
    fn write_reg(&mut self, offset: u32, value: u32) -> Result<(), TargetError> {
        (**self).write_reg(offset, value)
    }
    fn read_mem(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), TargetError> {
        (**self).read_mem(addr, buf)
    }
    fn write_mem(&mut self, addr: u64, data: &[u8]) -> Result<(), TargetError> {
        (**self).write_mem(addr, data)
    }
    fn busy(&mut self) -> bool {
        (**self).busy()
    }
}

/// Where the slave is inside the current transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Waiting for the command byte.
    Command,
    /// Receiving a request: `received` bytes so far; `needed` once the
    /// header is in (0 before).
    Request { received: usize, needed: usize },
    /// Clocking out the response: `sent` bytes so far.
    Respond { sent: usize },
    /// Ignoring the rest of a bad transaction.
    Discard,
}

/// The state of the last request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pending {
    /// Nothing received since reset.
    Nothing,
    /// A valid request waits in the request buffer to be executed.
    Execute(Header),
    /// `response[..len]` is the answer.
    Answered { len: usize },
}

/// The device side of the SPI frames over an [`SpiTarget`].
///
/// Fault injection for reliability tests: [`SpiSlave::corrupt_next_response`],
/// [`SpiSlave::corrupt_next_request`], [`SpiSlave::stay_busy_for`],
/// [`SpiSlave::drop_next_request`].
#[derive(Debug)]
pub struct SpiSlave<T> {
    target: T,
    phase: Phase,
    pending: Pending,
    request: [u8; MAX_REQUEST_LEN],
    response: [u8; MAX_RESPONSE_LEN],
    /// Status byte of the poll in progress (`Busy` or the stored answer).
    busy_now: bool,
    faults: Faults,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Faults {
    corrupt_response: bool,
    corrupt_request: bool,
    drop_request: bool,
    busy_polls: u32,
}

impl<T: SpiTarget> SpiSlave<T> {
    /// A slave in front of `target`.
    pub const fn new(target: T) -> Self {
        Self {
            target,
            phase: Phase::Command,
            pending: Pending::Nothing,
            request: [0; MAX_REQUEST_LEN],
            response: [0; MAX_RESPONSE_LEN],
            busy_now: false,
            faults: Faults {
                corrupt_response: false,
                corrupt_request: false,
                drop_request: false,
                busy_polls: 0,
            },
        }
    }

    /// The device behind the slave.
    pub const fn target(&self) -> &T {
        &self.target
    }

    /// The device behind the slave, mutably.
    pub fn target_mut(&mut self) -> &mut T {
        &mut self.target
    }

    /// Gives the target back.
    pub fn into_inner(self) -> T {
        self.target
    }

    /// Flips one bit of the next response clocked out (the stored response
    /// stays intact, so fetching it again succeeds).
    pub fn corrupt_next_response(&mut self) {
        self.faults.corrupt_response = true;
    }

    /// Flips one bit of the next request received, as noise on MOSI would.
    pub fn corrupt_next_request(&mut self) {
        self.faults.corrupt_request = true;
    }

    /// Ignores the next request entirely, as if chip select glitched.
    pub fn drop_next_request(&mut self) {
        self.faults.drop_request = true;
    }

    /// Answers `Busy` to the next `polls` status polls (`u32::MAX`: stuck).
    pub fn stay_busy_for(&mut self, polls: u32) {
        self.faults.busy_polls = polls;
    }

    /// Back to the power-on state (fault injection is cleared too).
    pub fn reset(&mut self) {
        self.phase = Phase::Command;
        self.pending = Pending::Nothing;
        self.busy_now = false;
        self.faults = Faults::default();
    }

    /// Chip select asserted.
    fn begin(&mut self) {
        self.phase = Phase::Command;
    }

    /// Clocks bytes in from MOSI (whatever goes out on MISO is dropped).
    fn receive(&mut self, mut data: &[u8]) {
        while let Some((&first, rest)) = data.split_first() {
            match self.phase {
                Phase::Request { received, needed } => {
                    let want = if needed == 0 { HEADER_LEN } else { needed };
                    let n = (want - received).min(data.len());
                    if n == 0 {
                        // More bytes than the frame holds.
                        self.reject(self.request[1]);
                        continue;
                    }
                    self.request[received..received + n].copy_from_slice(&data[..n]);
                    data = &data[n..];
                    self.request_progress(received + n, needed);
                }
                _ => {
                    self.clock(first);
                    data = rest;
                }
            }
        }
    }

    /// Clocks bytes out on MISO while the host sends `0x00`.
    fn send(&mut self, buf: &mut [u8]) {
        match self.phase {
            Phase::Respond { sent } => {
                for (i, out) in buf.iter_mut().enumerate() {
                    *out = self.response_byte(sent + i);
                }
                self.phase = Phase::Respond {
                    sent: sent + buf.len(),
                };
            }
            _ => {
                for out in buf {
                    *out = self.clock(0x00);
                }
            }
        }
    }

    /// One byte time: returns the MISO byte, consumes the MOSI byte.
    fn clock(&mut self, mosi: u8) -> u8 {
        match self.phase {
            Phase::Command => {
                match Command::from_byte(mosi) {
                    Some(Command::Status) => self.start_poll(),
                    Some(_) => {
                        self.request[0] = mosi;
                        self.phase = Phase::Request {
                            received: 1,
                            needed: 0,
                        };
                    }
                    // Line noise or an idle bus: ignore the transaction.
                    None => self.phase = Phase::Discard,
                }
                FILLER
            }
            Phase::Request { received, needed } => {
                let want = if needed == 0 { HEADER_LEN } else { needed };
                if received >= want {
                    self.reject(self.request[1]);
                } else {
                    self.request[received] = mosi;
                    self.request_progress(received + 1, needed);
                }
                FILLER
            }
            Phase::Respond { sent } => {
                self.phase = Phase::Respond { sent: sent + 1 };
                self.response_byte(sent)
            }
            Phase::Discard => FILLER,
        }
    }

    /// After `received` request bytes: parse the header when complete.
    fn request_progress(&mut self, received: usize, needed: usize) {
        let needed = if needed == 0 && received == HEADER_LEN {
            let mut head = [0; HEADER_LEN];
            head.copy_from_slice(&self.request[..HEADER_LEN]);
            match Header::decode(&head) {
                Ok(header) => HEADER_LEN + header.request_payload_len() + CRC_LEN,
                Err(_) => {
                    // Without a valid length the CRC cannot be found.
                    self.reject(head[1]);
                    return;
                }
            }
        } else {
            needed
        };
        self.phase = Phase::Request { received, needed };
    }

    /// A status poll starts: decide the answer it clocks out.
    fn start_poll(&mut self) {
        self.phase = Phase::Respond { sent: 0 };
        self.busy_now = if self.faults.busy_polls > 0 {
            if self.faults.busy_polls != u32::MAX {
                self.faults.busy_polls -= 1;
            }
            true
        } else {
            matches!(self.pending, Pending::Execute(_)) && self.target.busy()
        };
        if !self.busy_now {
            match self.pending {
                Pending::Execute(header) => self.execute(header),
                Pending::Nothing => self.answer(Status::Idle, 0, 0),
                Pending::Answered { .. } => {}
            }
        }
    }

    /// The MISO byte at position `at` of the poll's answer.
    fn response_byte(&mut self, at: usize) -> u8 {
        if self.busy_now {
            return if at == 0 { Status::Busy as u8 } else { FILLER };
        }
        let Pending::Answered { len } = self.pending else {
            return FILLER;
        };
        let Some(&byte) = self.response[..len].get(at) else {
            return FILLER;
        };
        if self.faults.corrupt_response && at == len / 2 {
            self.faults.corrupt_response = false;
            return byte ^ 0x10;
        }
        byte
    }

    /// Chip select released.
    fn end(&mut self) {
        if let Phase::Request { received, needed } = self.phase {
            if needed != 0 && received == needed {
                self.request_complete(needed);
            } else {
                self.reject(if received > 1 { self.request[1] } else { 0 });
            }
        }
        self.phase = Phase::Command;
    }

    /// A whole request frame of `len` bytes is in the buffer.
    fn request_complete(&mut self, len: usize) {
        if core::mem::take(&mut self.faults.drop_request) {
            return;
        }
        if core::mem::take(&mut self.faults.corrupt_request) {
            self.request[len / 2] ^= 0x01;
        }
        let (body, crc) = self.request[..len].split_at(len - CRC_LEN);
        let crc_ok = crc16(&[body]) == u16::from_le_bytes([crc[0], crc[1]]);
        let mut head = [0; HEADER_LEN];
        head.copy_from_slice(&self.request[..HEADER_LEN]);
        match Header::decode(&head) {
            Ok(header) if crc_ok => self.pending = Pending::Execute(header),
            // Answer with the header's response length so a reading host
            // finds the CRC where it expects it.
            Ok(header) => self.answer(Status::CrcError, header.seq, header.response_payload_len()),
            Err(_) => self.answer(Status::Rejected, head[1], 0),
        }
    }

    /// Ends the request phase with a `Rejected` (or `CrcError`) answer.
    fn reject(&mut self, seq: u8) {
        if self.phase != Phase::Discard {
            self.answer(Status::Rejected, seq, 0);
        }
        self.phase = Phase::Discard;
    }

    /// Runs a valid request against the target.
    fn execute(&mut self, header: Header) {
        let payload = &self.request[HEADER_LEN..HEADER_LEN + header.request_payload_len()];
        let out_len = header.response_payload_len();
        let out = &mut self.response[RESPONSE_HEAD_LEN..RESPONSE_HEAD_LEN + out_len];
        let result = match (header.command, u32::try_from(header.addr)) {
            (Command::ReadReg, Ok(offset)) => self
                .target
                .read_reg(offset)
                .map(|v| out.copy_from_slice(&v.to_le_bytes())),
            (Command::WriteReg, Ok(offset)) => {
                let value = u32::from_le_bytes([payload[0], payload[1], payload[2], payload[3]]);
                self.target.write_reg(offset, value)
            }
            (Command::ReadMem, _) => self.target.read_mem(header.addr, out),
            (Command::WriteMem, _) => self.target.write_mem(header.addr, payload),
            _ => Err(TargetError::OutOfRange),
        };
        let status = match result {
            Ok(()) => Status::Ok,
            Err(TargetError::OutOfRange) => Status::OutOfRange,
        };
        self.answer(status, header.seq, out_len);
    }

    /// Stores the answer `status, seq, response payload (len bytes), CRC`.
    /// For error statuses the payload is zero-filled.
    fn answer(&mut self, status: Status, seq: u8, len: usize) {
        let end = RESPONSE_HEAD_LEN + len;
        self.response[0] = status as u8;
        self.response[1] = seq;
        if status != Status::Ok {
            self.response[RESPONSE_HEAD_LEN..end].fill(0);
        }
        let crc = crc16(&[&self.response[..end]]);
        self.response[end..end + CRC_LEN].copy_from_slice(&crc.to_le_bytes());
        self.pending = Pending::Answered { len: end + CRC_LEN };
    }
}

impl<T> ErrorType for SpiSlave<T> {
    type Error = Infallible;
}

impl<T: SpiTarget> SpiDevice for SpiSlave<T> {
    fn transaction(&mut self, operations: &mut [Operation<'_, u8>]) -> Result<(), Infallible> {
        self.begin();
        for op in operations.iter_mut() {
            match op {
                Operation::Write(data) => self.receive(data),
                Operation::Read(buf) => self.send(buf),
                Operation::Transfer(read, write) => {
                    for i in 0..read.len().max(write.len()) {
                        let miso = self.clock(write.get(i).copied().unwrap_or(0x00));
                        if let Some(slot) = read.get_mut(i) {
                            *slot = miso;
                        }
                    }
                }
                Operation::TransferInPlace(buf) => {
                    for byte in buf.iter_mut() {
                        *byte = self.clock(*byte);
                    }
                }
                Operation::DelayNs(_) => {}
            }
        }
        self.end();
        Ok(())
    }
}
