//! One op case ([`OpCase`]: its op, inputs and output shape) and running
//! it on the device. A leaf the op families (`ops`, `index`, `int8`) share.

use crate::accelerator::prelude::*;
use std::format;
use std::string::String;
use std::vec::Vec;

use super::support::{Check, Ctx, Scope, fail, first_difference};
use super::types::Fixture;
use crate::accelerator::{DType, DeviceAddr, OpDesc, OpKind, Shape, TensorDesc};
use crate::reference;

/// One launch: the op, its inputs (dims, data) and the output's dims.
pub(crate) struct OpCase {
    pub(crate) kind: OpKind,
    pub(crate) inputs: Vec<(Vec<u64>, Values)>,
    pub(crate) out: Vec<u64>,
}

/// A tensor's elements, of the type the op's operand has.
#[derive(Clone, Debug)]
pub(crate) enum Values {
    F32(Vec<f32>),
    I8(Vec<i8>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    Bool(Vec<bool>),
    /// bf16 or f16 bit patterns.
    Half(DType, Vec<u16>),
}

impl Values {
    pub(crate) fn dtype(&self) -> DType {
        match self {
            Self::F32(_) => DType::F32,
            Self::I8(_) => DType::I8,
            Self::I32(_) => DType::I32,
            Self::I64(_) => DType::I64,
            Self::Bool(_) => DType::Bool,
            Self::Half(d, _) => *d,
        }
    }

    /// Little-endian bytes, as device memory holds them.
    pub(crate) fn bytes(&self) -> Vec<u8> {
        match self {
            Self::F32(v) => super::support::to_bytes(v),
            Self::I8(v) => v.iter().map(|&x| x as u8).collect(),
            Self::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Self::I64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Self::Bool(v) => v.iter().map(|&b| u8::from(b)).collect(),
            Self::Half(_, v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }

    /// The f32 elements (none for another type).
    pub(crate) fn floats(&self) -> &[f32] {
        match self {
            Self::F32(v) => v,
            _ => &[],
        }
    }

    /// The values as the int8 and index ops' reference takes them (a bool
    /// operand, which only `Cast` has, as no elements).
    pub(crate) fn as_data(&self) -> reference::int8::Data<'_> {
        match self {
            Self::F32(v) => reference::int8::Data::F32(v),
            Self::I8(v) => reference::int8::Data::I8(v),
            Self::I32(v) => reference::int8::Data::I32(v),
            Self::I64(v) => reference::int8::Data::I64(v),
            Self::Bool(_) | Self::Half(..) => reference::int8::Data::I8(&[]),
        }
    }
}

impl OpCase {
    pub(crate) fn new(kind: OpKind, inputs: Vec<(Vec<u64>, Vec<f32>)>, out: Vec<u64>) -> Self {
        let inputs = inputs
            .into_iter()
            .map(|(d, v)| (d, Values::F32(v)))
            .collect();
        Self { kind, inputs, out }
    }

    /// The output's element type.
    pub(crate) fn out_dtype(&self) -> DType {
        self.kind.operand_types().map_or(DType::F32, |(_, out)| out)
    }

    /// `kind [dims] [dims] -> [dims]`, for messages.
    pub(crate) fn label(&self) -> String {
        let ins: Vec<String> = self.inputs.iter().map(|(d, _)| format!("{d:?}")).collect();
        format!("{:?} {} -> {:?}", self.kind, ins.join(" "), self.out)
    }
}

/// The output buffer's initial contents: `0xDEADBEEF` words, so an output
/// the device never writes cannot pass for a result.
pub(crate) const SENTINEL: [u8; 4] = 0xDEAD_BEEFu32.to_le_bytes();

pub(crate) fn sentinel(bytes: usize) -> Vec<u8> {
    SENTINEL.iter().copied().cycle().take(bytes).collect()
}

pub(crate) fn shape(dims: &[u64]) -> Shape {
    // Every case's rank is ≤ MAX_RANK.
    Shape::new(dims).unwrap_or(Shape::SCALAR)
}

pub(crate) fn elements(dims: &[u64]) -> usize {
    dims.iter().product::<u64>() as usize
}

/// A case's tensors in device memory; the output holds the sentinel.
pub(crate) struct Staged {
    pub(crate) inputs: Vec<TensorDesc>,
    pub(crate) out: DeviceAddr,
    /// Bytes of the output buffer (at least the output's).
    pub(crate) out_bytes: usize,
}

impl Staged {
    /// The op descriptor of `case` over these buffers.
    pub(crate) fn op(&self, case: &OpCase, op_id: u16) -> OpDesc<'_> {
        OpDesc {
            kind: case.kind,
            inputs: &self.inputs,
            output: TensorDesc::new(self.out, case.out_dtype(), shape(&case.out)),
            op_id,
        }
    }
}

/// Uploads `case`'s inputs and allocates its output (`extra` more bytes
/// than needed), filled with [`SENTINEL`].
pub(crate) fn stage<F: Fixture>(
    s: &mut Scope<'_, F>,
    case: &OpCase,
    extra: usize,
) -> Check<Staged> {
    let mut inputs = Vec::new();
    for (dims, data) in &case.inputs {
        let bytes = data.bytes();
        let addr = s.alloc(bytes.len() as u64, 64)?;
        if !bytes.is_empty() {
            s.write(addr, &bytes)?;
        }
        inputs.push(TensorDesc::new(addr, data.dtype(), shape(dims)));
    }
    let out_bytes = elements(&case.out) * case.out_dtype().size() + extra;
    let out = s.alloc(out_bytes as u64, 64)?;
    if out_bytes > 0 {
        s.write(out, &sentinel(out_bytes))?;
    }
    Ok(Staged {
        inputs,
        out,
        out_bytes,
    })
}

/// Frees a staged case's buffers.
pub(crate) fn unstage<F: Fixture>(s: &mut Scope<'_, F>, staged: Staged) -> Check {
    for t in &staged.inputs {
        s.free(t.addr)?;
    }
    s.free(staged.out)
}

/// Fails unless the output buffer still holds only the sentinel.
pub(crate) fn untouched<F: Fixture>(s: &mut Scope<'_, F>, staged: &Staged, what: &str) -> Check {
    if staged.out_bytes == 0 {
        return Ok(());
    }
    let now = s.read(staged.out, staged.out_bytes)?;
    if let Some(diff) = first_difference(&now, &sentinel(staged.out_bytes)) {
        fail!("{what}, yet the output buffer was written: {diff}");
    }
    Ok(())
}

/// Runs `case` on the device and returns its output.
pub(crate) fn run_on_device<F: Fixture>(
    s: &mut Scope<'_, F>,
    case: &OpCase,
    op_id: u16,
) -> Check<Vec<f32>> {
    Ok(super::support::to_floats(&run_for_bytes(s, case, op_id)?))
}

/// Runs `case` on the device and returns its output's bytes.
pub(crate) fn run_for_bytes<F: Fixture>(
    s: &mut Scope<'_, F>,
    case: &OpCase,
    op_id: u16,
) -> Check<Vec<u8>> {
    let staged = stage(s, case, 0)?;
    let q = s.cfg.queue;
    let label = case.label();
    let fence = s
        .dev()
        .launch(q, &staged.op(case, op_id))
        .ctx(format_args!("launch {label}"))?;
    s.wait(fence, &label)?;
    let n = elements(&case.out) * case.out_dtype().size();
    let got = if n == 0 {
        Vec::new()
    } else {
        s.read(staged.out, n)?
    };
    unstage(s, staged)?;
    Ok(got)
}
