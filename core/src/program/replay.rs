//! Running a validated program on any [`Accelerator`]-like device, one
//! enqueue per command: how the host runs a program on a device that does
//! not run programs itself, and how a device's firmware runs the programs
//! it stores.

use super::error::ProgramError;
use super::format::BufferKind;
use super::resolve::{BufferSpec, Step, launch_desc};
use super::validate::Validated;
use crate::accelerator::{DeviceAddr, Fence, Launch, QueueId, TensorDesc, Transfer};

/// Where a run's buffers are: one address per binding slot, and the base
/// of a scratch arena of at least the program's `arena` bytes.
#[derive(Clone, Copy, Debug)]
pub struct Bindings<'b> {
    slots: Slots<'b>,
    arena: DeviceAddr,
}

#[derive(Clone, Copy, Debug)]
enum Slots<'b> {
    Addrs(&'b [DeviceAddr]),
    /// `u64` little-endian each, as `RunProgram` carries them.
    Le(&'b [u8]),
}

impl<'b> Bindings<'b> {
    /// Slot `i` at `slots[i]`, scratch from `arena`.
    pub const fn new(slots: &'b [DeviceAddr], arena: DeviceAddr) -> Self {
        Self {
            slots: Slots::Addrs(slots),
            arena,
        }
    }

    /// Slots as `u64` little-endian addresses back to back (the link's
    /// `RunProgram`), without copying them.
    pub const fn from_le_bytes(slots: &'b [u8], arena: DeviceAddr) -> Self {
        Self {
            slots: Slots::Le(slots),
            arena,
        }
    }

    /// How many slots there are (a trailing partial address does not count).
    pub const fn len(&self) -> usize {
        match self.slots {
            Slots::Addrs(a) => a.len(),
            Slots::Le(b) => b.len() / 8,
        }
    }

    /// Whether there are no slots.
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Slot `i`'s address.
    pub fn slot(&self, i: usize) -> Option<DeviceAddr> {
        match self.slots {
            Slots::Addrs(a) => a.get(i).copied(),
            Slots::Le(b) => {
                let raw: [u8; 8] = b.get(i * 8..i * 8 + 8)?.try_into().ok()?;
                Some(DeviceAddr(u64::from_le_bytes(raw)))
            }
        }
    }

    /// The arena's base.
    pub const fn arena(&self) -> DeviceAddr {
        self.arena
    }
}

/// Why a run stopped.
#[derive(Debug)]
pub enum RunError<E> {
    /// The bindings do not fit the program.
    Program(ProgramError),
    /// The device refused a command: its index and the device's error.
    Device {
        /// The command's index.
        command: u16,
        /// The device's error.
        error: E,
    },
}

/// Enqueues every command of `program` on `queue`, in order, and returns
/// the last command's fence (`None` for a program without commands). The
/// device runs them in order on that queue, so the fence covers them all.
///
/// # Errors
/// [`RunError::Program`] if the bindings do not fit; [`RunError::Device`]
/// for the first command the device refuses (those before it are queued).
pub fn replay<D: Launch + Transfer + ?Sized>(
    dev: &mut D,
    queue: QueueId,
    program: &Validated<'_>,
    at: &Bindings<'_>,
) -> Result<Option<Fence>, RunError<D::Error>> {
    let p = program.program();
    let h = p.header();
    let got = at.len().min(usize::from(u16::MAX)) as u16;
    let wrong = ProgramError::Bindings {
        expected: h.bindings,
        got,
    };
    if at.len() != usize::from(h.bindings) {
        return Err(RunError::Program(wrong));
    }
    let n = p.buffer_count();
    let spec = |i: u16| -> Result<BufferSpec, ProgramError> {
        let record = p.buffer(usize::from(i)).ok_or(ProgramError::Length)?;
        BufferSpec::decode(&record).map_err(|fault| ProgramError::Buffer { index: i, fault })
    };
    let addr = |b: &BufferSpec| match b.kind {
        BufferKind::Scratch => Ok(DeviceAddr(at.arena.0 + u64::from(b.place))),
        _ => at.slot(b.place as usize).ok_or(wrong),
    };
    let tensor = |i: u16| -> Result<TensorDesc, ProgramError> {
        let b = spec(i)?;
        // A view is at its target (validated: another buffer, no view).
        let at = match b.kind {
            BufferKind::View => addr(&spec(b.place as u16)?)?,
            _ => addr(&b)?,
        };
        Ok(b.at(at))
    };
    let mut last = None;
    for (c, record) in p.commands().enumerate() {
        let index = c as u16;
        let step = Step::decode(&record, program.vendor(), n)
            .map_err(|fault| RunError::Program(ProgramError::Command { index, fault }))?;
        let out = tensor(step.output()).map_err(RunError::Program)?;
        let len = out.byte_len().unwrap_or(0);
        let fence = match step {
            Step::Launch {
                kind,
                op_id,
                inputs,
                count,
                ..
            } => {
                let mut slots = [out; 3];
                let op = launch_desc(kind, op_id, &inputs[..count], &mut slots, out, &tensor)
                    .map_err(RunError::Program)?;
                dev.launch(queue, &op)
            }
            Step::Copy { src, .. } => {
                let src = tensor(src).map_err(RunError::Program)?;
                dev.copy_on_device(queue, out.addr, src.addr, len)
            }
            Step::Fill { pattern, .. } => dev.fill(queue, out.addr, len, pattern),
        };
        last = Some(fence.map_err(|error| RunError::Device {
            command: index,
            error,
        })?);
    }
    Ok(last)
}
