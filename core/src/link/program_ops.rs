//! The bodies of the messages that store device programs on the MCU and
//! run them (protocol 2.3): a program crosses the link once, then each
//! step is one `RunProgram`. `docs/link-protocol.md`, "Programs (2.3)".

use serde::{Deserialize, Serialize};

/// One chunk of a program to store (≤ `MAX_BULK_CHUNK` bytes). Chunks come
/// in order: `offset` 0 starts a program (dropping any half-loaded one),
/// each next one starts where the last ended. Answered by `Ack`; the last
/// chunk's `Ack` comes once the program is validated and stored, or an
/// `Error` `ProgramRefused` whose `detail` is
/// [`ProgramError::detail`](crate::program::ProgramError::detail).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LoadProgram<'a> {
    /// Where this chunk goes in the program.
    pub offset: u32,
    /// The program's whole length.
    pub total: u32,
    /// The bytes.
    pub data: &'a [u8],
}

/// Runs a stored program on one queue. Answered by `Ack` once every
/// command is enqueued, or `Error` (`UnknownProgram`: load it again;
/// `ProgramRefused`: bindings that do not fit; an accelerator error with
/// the refused command's index as `detail`); later by one `Completion`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RunProgram<'a> {
    /// The device queue.
    pub queue: u8,
    /// Which program: its CRC-32.
    pub program: u32,
    /// The scratch arena's device address.
    pub arena: u64,
    /// One device address per binding slot, each a `u64` little-endian.
    pub slots: &'a [u8],
}

impl RunProgram<'_> {
    /// The binding addresses, in slot order (a trailing partial one is
    /// dropped; the run then has too few and is refused).
    pub fn slots(&self) -> impl Iterator<Item = u64> + '_ {
        self.slots
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
    }
}

/// Drops every stored program (and a half-loaded one). Answered by `Ack`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ForgetPrograms;
