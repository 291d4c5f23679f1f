//! A program's bytes, checked for shape and integrity, read record by
//! record without copying.

use super::error::ProgramError;
use super::format::{
    BUFFER_LEN, BufferRecord, COMMAND_LEN, CRC_LEN, CRC32, CommandRecord, HEADER_LEN, Header,
    MAGIC, VERSION_MAJOR,
};

/// A program whose header, length and CRC are right. Its records are
/// checked by [`Program::validate`](super::validate) before a run.
#[derive(Clone, Copy, Debug)]
pub struct Program<'a> {
    bytes: &'a [u8],
    header: Header,
}

impl<'a> Program<'a> {
    /// Reads the header and checks the magic, version, length and CRC.
    ///
    /// # Errors
    /// The first of those that is wrong.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, ProgramError> {
        let raw: &[u8; HEADER_LEN] = bytes
            .get(..HEADER_LEN)
            .and_then(|h| h.try_into().ok())
            .ok_or(ProgramError::Length)?;
        if raw[..4] != MAGIC {
            return Err(ProgramError::Magic);
        }
        let header = Header::read(raw);
        if header.major != VERSION_MAJOR {
            return Err(ProgramError::Version {
                major: header.major,
            });
        }
        let want = Header::length_for(header.buffers.into(), header.commands.into());
        if header.total as usize != bytes.len() || want != bytes.len() {
            return Err(ProgramError::Length);
        }
        let (covered, crc) = bytes.split_at(bytes.len() - CRC_LEN);
        let stored = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
        if CRC32.checksum(covered) != stored {
            return Err(ProgramError::Crc);
        }
        if header.flags != 0 {
            return Err(ProgramError::Flags);
        }
        Ok(Self { bytes, header })
    }

    /// The header.
    pub const fn header(&self) -> &Header {
        &self.header
    }

    /// The program's bytes.
    pub const fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Its CRC-32, which also names it (the device's program cache key).
    pub fn crc(&self) -> u32 {
        let tail = &self.bytes[self.bytes.len() - CRC_LEN..];
        u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]])
    }

    /// Number of buffers.
    pub fn buffer_count(&self) -> usize {
        self.header.buffers.into()
    }

    /// Number of commands.
    pub fn command_count(&self) -> usize {
        self.header.commands.into()
    }

    /// Buffer record `i`, or `None` past the end.
    pub fn buffer(&self, i: usize) -> Option<BufferRecord> {
        if i >= self.buffer_count() {
            return None;
        }
        let at = HEADER_LEN + i * BUFFER_LEN;
        let raw: &[u8; BUFFER_LEN] = self.bytes.get(at..at + BUFFER_LEN)?.try_into().ok()?;
        Some(BufferRecord::read(raw))
    }

    /// Command record `i`, or `None` past the end.
    pub fn command(&self, i: usize) -> Option<CommandRecord> {
        if i >= self.command_count() {
            return None;
        }
        let at = HEADER_LEN + self.buffer_count() * BUFFER_LEN + i * COMMAND_LEN;
        let raw: &[u8; COMMAND_LEN] = self.bytes.get(at..at + COMMAND_LEN)?.try_into().ok()?;
        Some(CommandRecord::read(raw))
    }

    /// The commands, in order.
    pub fn commands(&self) -> impl Iterator<Item = CommandRecord> + '_ {
        (0..self.command_count()).filter_map(|i| self.command(i))
    }
}
