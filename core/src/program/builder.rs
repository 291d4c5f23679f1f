//! Building a program on the host: declare buffers, append commands, then
//! [`ProgramBuilder::finish`] plans the arena, encodes and validates it.

use super::error::{BufferFault, CommandFault, Limit, ProgramError};
use super::format::{
    BUFFER_LEN, BufferKind, BufferRecord, COMMAND_LEN, CRC32, CommandRecord, CommandTag,
    HEADER_LEN, Header, MAX_BUFFERS, NO_BUFFER, VERSION_MAJOR, VERSION_MINOR,
};
use super::plan::{Lifetime, Plan, plan};
use super::validate::{Limits, validate};
use super::view::Program;
use crate::accelerator::{
    ATTR_BYTES, Attrs, DType, DeviceAddr, MAX_RANK, OpDesc, OpId, OpKind, Shape, TensorDesc,
    VendorOps,
};
use alloc::vec::Vec;

/// A buffer of the program being built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BufferId(pub u16);

#[derive(Clone, Copy, Debug)]
struct Declared {
    kind: BufferKind,
    dtype: DType,
    shape: Shape,
    slot: u32,
}

/// A program under construction.
#[derive(Debug, Default)]
pub struct ProgramBuilder {
    buffers: Vec<Declared>,
    commands: Vec<CommandRecord>,
    bindings: u32,
}

/// A finished program and its arena plan.
#[derive(Clone, Debug)]
pub struct Built {
    /// The program's bytes.
    pub bytes: Vec<u8>,
    /// The arena plan of its scratch buffers.
    pub plan: Plan,
}

impl ProgramBuilder {
    /// An empty program.
    pub fn new() -> Self {
        Self::default()
    }

    /// Declares a buffer. Bound kinds take the next binding slot, in the
    /// order they are declared.
    ///
    /// # Errors
    /// More than [`MAX_BUFFERS`] buffers, or a dim above `u32::MAX`.
    pub fn buffer(
        &mut self,
        kind: BufferKind,
        dtype: DType,
        shape: Shape,
    ) -> Result<BufferId, ProgramError> {
        let index = self.buffers.len();
        if index >= MAX_BUFFERS {
            return Err(ProgramError::TooLarge(Limit::Buffers));
        }
        let fault = |fault| ProgramError::Buffer {
            index: index as u16,
            fault,
        };
        if shape.dims().iter().any(|&d| d > u64::from(u32::MAX)) {
            return Err(fault(BufferFault::Shape));
        }
        TensorDesc::new(DeviceAddr(0), dtype, shape)
            .byte_len()
            .ok_or(fault(BufferFault::Overflow))?;
        let slot = if kind == BufferKind::Scratch {
            0
        } else {
            self.bindings += 1;
            self.bindings - 1
        };
        self.buffers.push(Declared {
            kind,
            dtype,
            shape,
            slot,
        });
        Ok(BufferId(index as u16))
    }

    /// Declares a view of `of`: its bytes in `shape` (format 1.1), which
    /// copies nothing. A view of a view views the same buffer.
    ///
    /// # Errors
    /// As [`buffer`](Self::buffer), an unknown `of`, or a `shape` of
    /// another byte length.
    pub fn view(&mut self, of: BufferId, shape: Shape) -> Result<BufferId, ProgramError> {
        let target = self.root(of.0);
        let t = *self
            .buffers
            .get(usize::from(target))
            .ok_or(ProgramError::Buffer {
                index: of.0,
                fault: BufferFault::View,
            })?;
        let id = self.buffer(BufferKind::Scratch, t.dtype, shape)?;
        let fits =
            self.desc(id).and_then(|d| d.byte_len()) == self.desc(of).and_then(|d| d.byte_len());
        if !fits {
            self.buffers.pop();
            return Err(ProgramError::Buffer {
                index: id.0,
                fault: BufferFault::View,
            });
        }
        self.buffers[usize::from(id.0)].kind = BufferKind::View;
        self.buffers[usize::from(id.0)].slot = u32::from(target);
        Ok(id)
    }

    /// Removes the copies a view can stand for, and returns the indices
    /// the removed commands had. A copy `dst ← src` of one dtype goes when
    /// nothing else writes `dst` and nothing writes `src` after it: a
    /// scratch `dst` becomes a view of `src`; else, if `dst` is an output
    /// and `src` scratch that one earlier command writes, `src` becomes a
    /// view of `dst`, so that command writes the output in place.
    pub fn elide_copies(&mut self) -> Vec<usize> {
        let mut removed = Vec::new();
        let mut index: Vec<usize> = (0..self.commands.len()).collect();
        let mut c = 0;
        while c < self.commands.len() {
            let r = self.commands[c];
            if r.tag == CommandTag::Copy as u8 && self.elide(c, r.output, r.inputs[0]) {
                self.commands.remove(c);
                removed.push(index.remove(c));
            } else {
                c += 1;
            }
        }
        removed
    }

    /// Turns copy `c` (`dst ← src`) into a view, if it can be one.
    fn elide(&mut self, c: usize, dst: u16, src: u16) -> bool {
        let (d, s) = (self.root(dst), self.root(src));
        let kind = |b: u16| self.buffers[usize::from(b)].kind;
        if self.buffers[usize::from(d)].dtype != self.buffers[usize::from(s)].dtype {
            return false;
        }
        let writers = |b: u16| -> Vec<usize> {
            (self.commands.iter().enumerate())
                .filter(|(_, r)| self.root(r.output) == b)
                .map(|(i, _)| i)
                .collect()
        };
        let (dst_writers, src_writers) = (writers(d), writers(s));
        if dst_writers != [c] {
            return false;
        }
        if kind(dst) == BufferKind::Scratch && src_writers.iter().all(|&w| w < c) {
            self.alias(dst, s);
            return true;
        }
        let one_earlier = matches!(src_writers[..], [w] if w < c);
        if kind(d) == BufferKind::Output && kind(src) == BufferKind::Scratch && one_earlier {
            self.alias(src, d);
            return true;
        }
        false
    }

    /// Makes `b` a view of `target` (no view), and so every view of `b`.
    fn alias(&mut self, b: u16, target: u16) {
        for (i, d) in self.buffers.iter_mut().enumerate() {
            let of_b = d.kind == BufferKind::View && d.slot == u32::from(b);
            if i == usize::from(b) || of_b {
                d.kind = BufferKind::View;
                d.slot = u32::from(target);
            }
        }
    }

    /// The buffer `b` views, or `b`.
    fn root(&self, b: u16) -> u16 {
        match self.buffers.get(usize::from(b)) {
            Some(d) if d.kind == BufferKind::View => d.slot as u16,
            _ => b,
        }
    }

    /// Appends a launch of `kind` on `inputs` into `output`, checked
    /// against the op's shape rule.
    ///
    /// # Errors
    /// An unknown buffer, a write to a read-only buffer, or a shape the
    /// op's rule refuses.
    pub fn launch(
        &mut self,
        kind: OpKind,
        op_id: u16,
        inputs: &[BufferId],
        output: BufferId,
    ) -> Result<(), ProgramError> {
        let fault = self.fault();
        if inputs.len() > 3 {
            return Err(fault(CommandFault::BufferIndex));
        }
        let out = self.desc(output).ok_or(fault(CommandFault::BufferIndex))?;
        let mut tensors = [out; 3];
        for (slot, &b) in tensors.iter_mut().zip(inputs) {
            *slot = self.desc(b).ok_or(fault(CommandFault::BufferIndex))?;
        }
        let op = OpDesc {
            kind,
            inputs: &tensors[..inputs.len()],
            output: out,
            op_id,
        };
        op.validate().map_err(|_| fault(CommandFault::Shape))?;
        let mut slots = [NO_BUFFER; 3];
        for (s, b) in slots.iter_mut().zip(inputs) {
            *s = b.0;
        }
        self.push(
            CommandTag::Launch,
            inputs.len() as u8,
            op_id,
            kind.decl().id,
            output,
            slots,
            kind.attrs(),
        )
    }

    /// Appends a copy of `src` into `dst` (same byte length).
    ///
    /// # Errors
    /// As [`launch`](Self::launch), or lengths that differ.
    pub fn copy(&mut self, dst: BufferId, src: BufferId) -> Result<(), ProgramError> {
        let fault = self.fault();
        let (d, s) = (self.desc(dst), self.desc(src));
        let (Some(d), Some(s)) = (d, s) else {
            return Err(fault(CommandFault::BufferIndex));
        };
        if d.byte_len() != s.byte_len() {
            return Err(fault(CommandFault::CopyLength));
        }
        let slots = [src.0, NO_BUFFER, NO_BUFFER];
        self.push(
            CommandTag::Copy,
            1,
            0,
            OpId::builtin(0),
            dst,
            slots,
            Attrs::default(),
        )
    }

    /// Appends a fill of `dst` with the little-endian `pattern` repeated.
    ///
    /// # Errors
    /// As [`launch`](Self::launch).
    pub fn fill(&mut self, dst: BufferId, pattern: u32) -> Result<(), ProgramError> {
        let fault = self.fault();
        self.desc(dst).ok_or(fault(CommandFault::BufferIndex))?;
        let mut attrs = [0; ATTR_BYTES];
        attrs[..4].copy_from_slice(&pattern.to_le_bytes());
        let slots = [NO_BUFFER; 3];
        self.push(
            CommandTag::Fill,
            0,
            0,
            OpId::builtin(0),
            dst,
            slots,
            Attrs(attrs),
        )
    }

    /// Plans the arena, encodes the program and validates it.
    ///
    /// # Errors
    /// Any fault [`validate`] finds (a scratch read before it is written,
    /// an output never written, …).
    pub fn finish(self, vendor: &VendorOps) -> Result<Built, ProgramError> {
        let scratch: Vec<usize> = (0..self.buffers.len())
            .filter(|&i| self.buffers[i].kind == BufferKind::Scratch)
            .collect();
        let lifetimes: Vec<Lifetime> = scratch.iter().map(|&i| self.lifetime(i)).collect();
        let plan = plan(&lifetimes);
        let arena = u32::try_from(plan.arena).map_err(|_| ProgramError::TooLarge(Limit::Arena))?;
        let commands = u16::try_from(self.commands.len())
            .map_err(|_| ProgramError::TooLarge(Limit::Commands))?;
        let total = Header::length_for(self.buffers.len(), self.commands.len());
        let header = Header {
            major: VERSION_MAJOR,
            minor: VERSION_MINOR,
            buffers: self.buffers.len() as u16,
            commands,
            bindings: self.bindings as u16,
            flags: 0,
            arena,
            total: u32::try_from(total).map_err(|_| ProgramError::TooLarge(Limit::Bytes))?,
        };
        let mut bytes = alloc::vec![0u8; total];
        header.write(
            (&mut bytes[..HEADER_LEN])
                .try_into()
                .expect("header length"),
        );
        for (i, b) in self.buffers.iter().enumerate() {
            let place = match scratch.iter().position(|&s| s == i) {
                Some(k) => plan.offsets[k] as u32,
                None => b.slot,
            };
            let mut dims = [0u32; MAX_RANK];
            for (d, &v) in dims.iter_mut().zip(b.shape.dims()) {
                *d = v as u32;
            }
            let record = BufferRecord {
                kind: b.kind as u8,
                dtype: b.dtype as u8,
                rank: b.shape.dims().len() as u8,
                reserved: 0,
                place,
                dims,
            };
            let at = HEADER_LEN + i * BUFFER_LEN;
            record.write(
                (&mut bytes[at..at + BUFFER_LEN])
                    .try_into()
                    .expect("record length"),
            );
        }
        let base = HEADER_LEN + self.buffers.len() * BUFFER_LEN;
        for (i, c) in self.commands.iter().enumerate() {
            let at = base + i * COMMAND_LEN;
            c.write(
                (&mut bytes[at..at + COMMAND_LEN])
                    .try_into()
                    .expect("record length"),
            );
        }
        let crc = CRC32.checksum(&bytes[..total - 4]);
        bytes[total - 4..].copy_from_slice(&crc.to_le_bytes());
        validate(Program::parse(&bytes)?, vendor, &Limits::HOST)?;
        Ok(Built { bytes, plan })
    }

    fn desc(&self, b: BufferId) -> Option<TensorDesc> {
        let d = self.buffers.get(usize::from(b.0))?;
        Some(TensorDesc::new(DeviceAddr(0), d.dtype, d.shape))
    }

    fn fault(&self) -> impl Fn(CommandFault) -> ProgramError + use<> {
        let index = self.commands.len().min(usize::from(u16::MAX)) as u16;
        move |fault| ProgramError::Command { index, fault }
    }

    fn lifetime(&self, buffer: usize) -> Lifetime {
        let b = buffer as u16;
        let touches = |c: &CommandRecord| {
            let inputs = &c.inputs[..usize::from(c.inputs_used).min(3)];
            self.root(c.output) == b || inputs.iter().any(|&i| self.root(i) == b)
        };
        let first = self.commands.iter().position(|c| self.root(c.output) == b);
        let last = self.commands.iter().rposition(touches);
        let d = &self.buffers[buffer];
        let bytes = TensorDesc::new(DeviceAddr(0), d.dtype, d.shape)
            .byte_len()
            .unwrap_or(0) as u64;
        Lifetime {
            bytes,
            // A scratch buffer no command writes is never read (validation
            // refuses that), so it may sit anywhere: give it command 0 only.
            first: first.unwrap_or(0) as u16,
            last: last.unwrap_or(0) as u16,
        }
    }

    #[allow(clippy::too_many_arguments, reason = "one record's fields")]
    fn push(
        &mut self,
        tag: CommandTag,
        inputs_used: u8,
        op_id: u16,
        op: OpId,
        output: BufferId,
        inputs: [u16; 3],
        attrs: Attrs,
    ) -> Result<(), ProgramError> {
        if self.commands.len() >= usize::from(u16::MAX) {
            return Err(ProgramError::TooLarge(Limit::Commands));
        }
        let out = self.root(output.0);
        let dst = self.buffers.get(usize::from(out)).map(|d| d.kind);
        let used = &inputs[..usize::from(inputs_used)];
        if !dst.is_some_and(BufferKind::writable) || used.iter().any(|&i| self.root(i) == out) {
            return Err(self.fault()(CommandFault::Writes));
        }
        self.commands.push(CommandRecord {
            tag: tag as u8,
            inputs_used,
            op_id,
            op,
            output: output.0,
            inputs,
            reserved: 0,
            attrs,
            tail: 0,
        });
        Ok(())
    }
}
