//! The checks a device runs before it accepts a program: every record
//! decodes, every launch passes its op's shape rule, data flows forwards
//! (through views to the buffers they view), and scratch buffers alive at
//! once never share arena bytes.

use super::error::{BufferFault, CommandFault, Limit, ProgramError};
use super::format::{ARENA_ALIGN, BufferKind, MAX_BUFFERS};
use super::resolve::{BufferSpec, Step, launch_desc};
use super::view::Program;
use crate::accelerator::{DeviceAddr, VendorOps};

/// What a device takes: it refuses a program past any of these.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Limits {
    /// Bytes of the program itself.
    pub bytes: u32,
    /// Buffers (at most [`MAX_BUFFERS`]).
    pub buffers: u16,
    /// Commands.
    pub commands: u16,
    /// Bytes of scratch arena.
    pub arena: u32,
}

impl Limits {
    /// A host's: only the format's own bounds.
    pub const HOST: Self = Self {
        bytes: u32::MAX,
        buffers: MAX_BUFFERS as u16,
        commands: u16::MAX,
        arena: u32::MAX,
    };
}

/// A program that passed [`validate`]: only these run.
#[derive(Clone, Copy, Debug)]
pub struct Validated<'a> {
    program: Program<'a>,
    vendor: &'a VendorOps,
}

impl<'a> Validated<'a> {
    /// The program.
    pub const fn program(&self) -> &Program<'a> {
        &self.program
    }

    /// The vendor ops its launches were resolved against.
    pub const fn vendor(&self) -> &'a VendorOps {
        self.vendor
    }

    /// A program validated before, kept where nothing else writes (the
    /// link's program store), whose CRC [`Program::parse`] checked again.
    pub(crate) const fn trusted(program: Program<'a>, vendor: &'a VendorOps) -> Self {
        Self { program, vendor }
    }
}

const NONE: u16 = u16::MAX;

/// Checks every record of `program` against `limits`, resolving vendor ops
/// in `vendor`. Needs no allocator: about 1 KiB of stack.
///
/// # Errors
/// The first fault found.
pub fn validate<'a>(
    program: Program<'a>,
    vendor: &'a VendorOps,
    limits: &Limits,
) -> Result<Validated<'a>, ProgramError> {
    let h = *program.header();
    let too_large = |over: bool, limit| {
        if over {
            Err(ProgramError::TooLarge(limit))
        } else {
            Ok(())
        }
    };
    too_large(
        program.bytes().len() as u64 > u64::from(limits.bytes),
        Limit::Bytes,
    )?;
    too_large(
        usize::from(h.buffers) > MAX_BUFFERS.min(limits.buffers.into()),
        Limit::Buffers,
    )?;
    too_large(h.commands > limits.commands, Limit::Commands)?;
    too_large(h.arena > limits.arena, Limit::Arena)?;
    let n = program.buffer_count();
    let spec = |i: usize| -> Result<BufferSpec, ProgramError> {
        let record = program.buffer(i).ok_or(ProgramError::Length)?;
        BufferSpec::decode(&record).map_err(|fault| ProgramError::Buffer {
            index: i as u16,
            fault,
        })
    };

    // Buffers: each decodes; binding slots are a permutation; scratch fits.
    let mut slots = [0u32; MAX_BUFFERS / 32];
    let mut bound = 0u16;
    for i in 0..n {
        let b = spec(i)?;
        let fault = |fault| ProgramError::Buffer {
            index: i as u16,
            fault,
        };
        if b.kind == BufferKind::View {
            let target = b.place as usize;
            let of = if target != i && target < n {
                Some(spec(target)?)
            } else {
                None
            };
            if !of.is_some_and(|t| {
                t.kind != BufferKind::View && t.dtype == b.dtype && t.byte_len() == b.byte_len()
            }) {
                return Err(fault(BufferFault::View));
            }
        } else if b.kind == BufferKind::Scratch {
            let end = u64::from(b.place) + b.byte_len().unwrap_or(usize::MAX) as u64;
            if b.place % ARENA_ALIGN != 0 || end > u64::from(h.arena) {
                return Err(fault(BufferFault::Arena));
            }
        } else {
            let slot = b.place as usize;
            if slot >= usize::from(h.bindings) || slot >= MAX_BUFFERS {
                return Err(fault(BufferFault::Slot));
            }
            let (word, bit) = (slot / 32, 1u32 << (slot % 32));
            if slots[word] & bit != 0 {
                return Err(fault(BufferFault::Slot));
            }
            slots[word] |= bit;
            bound += 1;
        }
    }
    if bound != h.bindings {
        return Err(ProgramError::Buffer {
            index: 0,
            fault: BufferFault::Slot,
        });
    }

    // The buffer a view views; any other buffer is its own.
    let root = |i: u16| -> Result<usize, ProgramError> {
        let b = spec(usize::from(i))?;
        Ok(if b.kind == BufferKind::View {
            b.place as usize
        } else {
            usize::from(i)
        })
    };

    // Commands: each decodes and passes its rule; data flows forwards.
    let mut first_write = [NONE; MAX_BUFFERS];
    let mut last_use = [NONE; MAX_BUFFERS];
    for (c, record) in program.commands().enumerate() {
        let fault = |fault| ProgramError::Command {
            index: c as u16,
            fault,
        };
        let step = Step::decode(&record, vendor, n).map_err(fault)?;
        let out_spec = spec(usize::from(step.output()))?;
        // A view's reads and writes are its target's.
        let out = root(step.output())?;
        let mut reads_out = false;
        for &i in step.inputs() {
            reads_out |= root(i)? == out;
        }
        if !spec(out)?.kind.writable() || reads_out {
            return Err(fault(CommandFault::Writes));
        }
        for &i in step.inputs() {
            let i = root(i)?;
            let kind = spec(i)?.kind;
            let needs_write = matches!(kind, BufferKind::Scratch | BufferKind::Output);
            if needs_write && first_write[i] == NONE {
                return Err(fault(CommandFault::ReadsUnwritten));
            }
            last_use[i] = c as u16;
        }
        check_step(&step, out_spec, &spec).map_err(|e| match e {
            Check::Program(e) => e,
            Check::Command(f) => fault(f),
        })?;
        if first_write[out] == NONE {
            first_write[out] = c as u16;
        }
        last_use[out] = c as u16;
    }

    // Outputs are written; scratch alive at once is disjoint.
    for i in 0..n {
        let a = spec(i)?;
        if a.kind == BufferKind::Output && first_write[i] == NONE {
            return Err(ProgramError::Buffer {
                index: i as u16,
                fault: BufferFault::NeverWritten,
            });
        }
        if a.kind != BufferKind::Scratch || first_write[i] == NONE {
            continue;
        }
        for j in i + 1..n {
            let b = spec(j)?;
            if b.kind != BufferKind::Scratch || first_write[j] == NONE {
                continue;
            }
            let alive = first_write[i] <= last_use[j] && first_write[j] <= last_use[i];
            let (a0, b0) = (u64::from(a.place), u64::from(b.place));
            let a1 = a0 + a.byte_len().unwrap_or(0) as u64;
            let b1 = b0 + b.byte_len().unwrap_or(0) as u64;
            if alive && a0 < b1 && b0 < a1 {
                return Err(ProgramError::Buffer {
                    index: j as u16,
                    fault: BufferFault::Overlap { with: i as u16 },
                });
            }
        }
    }
    Ok(Validated { program, vendor })
}

enum Check {
    Program(ProgramError),
    Command(CommandFault),
}

fn check_step(
    step: &Step,
    out: BufferSpec,
    spec: &dyn Fn(usize) -> Result<BufferSpec, ProgramError>,
) -> Result<(), Check> {
    let desc = |i: u16| {
        spec(usize::from(i))
            .map(|s| s.at(DeviceAddr(0)))
            .map_err(Check::Program)
    };
    match *step {
        Step::Launch {
            kind,
            op_id,
            inputs,
            count,
            ..
        } => {
            let output = out.at(DeviceAddr(0));
            let mut slots = [output; 3];
            let op = launch_desc(kind, op_id, &inputs[..count], &mut slots, output, desc)?;
            op.validate()
                .map_err(|_| Check::Command(CommandFault::Shape))
        }
        Step::Copy { src, .. } => {
            if desc(src)?.byte_len() == out.byte_len() {
                Ok(())
            } else {
                Err(Check::Command(CommandFault::CopyLength))
            }
        }
        Step::Fill { .. } => Ok(()),
    }
}
