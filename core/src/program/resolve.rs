//! Records decoded into the accelerator's types: a buffer's kind, dtype and
//! shape; a command's op and operands.

use super::error::{BufferFault, CommandFault};
use super::format::{BufferKind, BufferRecord, CommandRecord, CommandTag, NO_BUFFER};
use crate::accelerator::{
    DType, DeviceAddr, MAX_RANK, OpDesc, OpKind, Shape, TensorDesc, VendorOps, builtin,
};

/// A buffer record, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferSpec {
    /// What it is to the caller.
    pub kind: BufferKind,
    /// Its element type.
    pub dtype: DType,
    /// Its shape.
    pub shape: Shape,
    /// Binding slot, or arena offset (scratch).
    pub place: u32,
}

impl BufferSpec {
    /// Decodes and checks a record.
    ///
    /// # Errors
    /// Which field is wrong.
    pub fn decode(r: &BufferRecord) -> Result<Self, BufferFault> {
        let kind = BufferKind::from_code(r.kind).ok_or(BufferFault::Kind)?;
        let dtype = DType::from_code(r.dtype).ok_or(BufferFault::DType)?;
        let rank = usize::from(r.rank);
        if rank > MAX_RANK
            || r.reserved != 0
            || r.dims[rank.min(MAX_RANK)..].iter().any(|&d| d != 0)
        {
            return Err(BufferFault::Shape);
        }
        let dims: [u64; MAX_RANK] = core::array::from_fn(|i| u64::from(r.dims[i]));
        let shape = Shape::new(&dims[..rank]).ok_or(BufferFault::Shape)?;
        let spec = Self {
            kind,
            dtype,
            shape,
            place: r.place,
        };
        spec.byte_len().ok_or(BufferFault::Overflow)?;
        Ok(spec)
    }

    /// Its size in bytes, or `None` on overflow.
    pub fn byte_len(&self) -> Option<usize> {
        self.at(DeviceAddr(0)).byte_len()
    }

    /// Its descriptor at `addr`.
    pub const fn at(&self, addr: DeviceAddr) -> TensorDesc {
        TensorDesc::new(addr, self.dtype, self.shape)
    }
}

/// A command record, decoded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Step {
    /// Launch `kind` on `inputs[..count]` into `output`.
    Launch {
        /// The op.
        kind: OpKind,
        /// Its profiling id.
        op_id: u16,
        /// Input buffers.
        inputs: [u16; 3],
        /// How many of `inputs` are used.
        count: usize,
        /// Output buffer.
        output: u16,
    },
    /// Copy `src` into `dst`.
    Copy {
        /// Destination buffer.
        dst: u16,
        /// Source buffer.
        src: u16,
    },
    /// Fill `dst` with `pattern`.
    Fill {
        /// Destination buffer.
        dst: u16,
        /// The pattern, little-endian.
        pattern: u32,
    },
}

impl Step {
    /// Decodes a record, looking vendor ops up in `vendor`.
    ///
    /// # Errors
    /// Which field is wrong (buffer indices are checked against `buffers`).
    pub fn decode(
        r: &CommandRecord,
        vendor: &VendorOps,
        buffers: usize,
    ) -> Result<Self, CommandFault> {
        let tag = CommandTag::from_code(r.tag).ok_or(CommandFault::Tag)?;
        if r.reserved != 0 || r.tail != 0 {
            return Err(CommandFault::Tag);
        }
        let count = usize::from(r.inputs_used);
        let want = match tag {
            CommandTag::Launch => count.min(3),
            CommandTag::Copy => 1,
            CommandTag::Fill => 0,
        };
        let in_range = |b: u16| usize::from(b) < buffers;
        if count != want
            || !in_range(r.output)
            || !r.inputs[..count].iter().all(|&b| in_range(b))
            || r.inputs[count..].iter().any(|&b| b != NO_BUFFER)
        {
            return Err(CommandFault::BufferIndex);
        }
        let plain = r.op.code == 0 && r.op.namespace.0 == 0;
        Ok(match tag {
            CommandTag::Launch => {
                let kind = builtin(r.op)
                    .or_else(|| vendor.find(r.op))
                    .and_then(|decl| decl.kind(&r.attrs))
                    .ok_or(CommandFault::UnknownOp)?;
                Self::Launch {
                    kind,
                    op_id: r.op_id,
                    inputs: r.inputs,
                    count,
                    output: r.output,
                }
            }
            CommandTag::Copy if plain && r.attrs.0.iter().all(|&b| b == 0) => Self::Copy {
                dst: r.output,
                src: r.inputs[0],
            },
            CommandTag::Fill if plain && r.attrs.0[4..].iter().all(|&b| b == 0) => Self::Fill {
                dst: r.output,
                pattern: u32::from_le_bytes([
                    r.attrs.0[0],
                    r.attrs.0[1],
                    r.attrs.0[2],
                    r.attrs.0[3],
                ]),
            },
            _ => return Err(CommandFault::Tag),
        })
    }

    /// The buffer it writes.
    pub const fn output(&self) -> u16 {
        match *self {
            Self::Launch { output, .. } => output,
            Self::Copy { dst, .. } | Self::Fill { dst, .. } => dst,
        }
    }

    /// The buffers it reads.
    pub fn inputs(&self) -> &[u16] {
        match self {
            Self::Launch { inputs, count, .. } => &inputs[..*count],
            Self::Copy { src, .. } => core::slice::from_ref(src),
            Self::Fill { .. } => &[],
        }
    }
}

/// A `Launch` step's op descriptor: `kind` over `inputs`, each resolved by
/// `tensor` into `slots`, writing `out`.
///
/// # Errors
/// `tensor`'s.
pub fn launch_desc<'t, E>(
    kind: OpKind,
    op_id: u16,
    inputs: &[u16],
    slots: &'t mut [TensorDesc; 3],
    out: TensorDesc,
    mut tensor: impl FnMut(u16) -> Result<TensorDesc, E>,
) -> Result<OpDesc<'t>, E> {
    let count = inputs.len().min(3);
    for (slot, &i) in slots.iter_mut().zip(inputs) {
        *slot = tensor(i)?;
    }
    Ok(OpDesc {
        kind,
        inputs: &slots[..count],
        output: out,
        op_id,
    })
}
