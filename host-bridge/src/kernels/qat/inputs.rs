//! A `Qat` op's declared inputs as host bytes: its own inputs, or, in the
//! packed form the graph pass makes on the device, entries of the one
//! `QatPack` tensor (input 0) and its remaining own inputs.

use super::packed::{self, Value};
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::tf::{Context, Tensor};
use tensorplug_abi::tf::TF_DataType;
use tensorplug_core::accelerator::Shape;

/// Where a declared input is.
enum Slot {
    /// The call's own input at this index.
    Own(usize),
    /// This entry of the pack (the call's input 0).
    Packed(usize),
}

/// One call's inputs.
pub(super) struct Inputs {
    tensors: Vec<Tensor>,
    slots: Vec<Slot>,
}

impl Inputs {
    /// The call's inputs; `packed` is the op's `packed_inputs` attribute
    /// (per declared input, an entry of the pack, or −1 for the next own
    /// input after it), `None` for the plain form.
    pub(super) fn of(ctx: &Context, packed: Option<&[i64]>) -> KernelResult<Self> {
        let tensors = (0..ctx.num_inputs())
            .map(|i| ctx.input(i, true))
            .collect::<KernelResult<Vec<_>>>()?;
        let slots = match packed {
            None => (0..tensors.len()).map(Slot::Own).collect(),
            Some(map) => {
                let mut own = 0;
                map.iter()
                    .map(|&at| match usize::try_from(at) {
                        Ok(entry) => Slot::Packed(entry),
                        Err(_) => {
                            own += 1;
                            Slot::Own(own)
                        }
                    })
                    .collect()
            }
        };
        Ok(Self { tensors, slots })
    }

    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }

    /// Declared input `index`.
    pub(super) fn get(&self, index: usize) -> KernelResult<Value<'_>> {
        let missing = || Failure::invalid(format!("input {index} is missing"));
        match *self.slots.get(index).ok_or_else(missing)? {
            Slot::Own(at) => {
                let t = self.tensors.get(at).ok_or_else(missing)?;
                Ok(Value {
                    dtype: t.dtype().0,
                    dims: t.shape()?.dims().to_vec(),
                    bytes: t.host_bytes(None)?,
                })
            }
            Slot::Packed(entry) => {
                let pack = self.tensors.first().ok_or_else(missing)?;
                packed::unpack(pack.host_bytes(None)?, entry).map_err(Failure::invalid)
            }
        }
    }

    /// Declared input `index` as f32 values.
    pub(super) fn floats(&self, index: usize) -> KernelResult<&[f32]> {
        floats(self.get(index)?)
    }

    /// Declared input `index`, which holds one f32.
    pub(super) fn scalar(&self, index: usize, what: &str) -> KernelResult<f32> {
        match self.floats(index)? {
            [v] => Ok(*v),
            values => Err(Failure::invalid(format!(
                "{what} has {} values, expected one",
                values.len()
            ))),
        }
    }
}

/// A value's f32 elements.
pub(super) fn floats<'a>(v: Value<'a>) -> KernelResult<&'a [f32]> {
    if v.dtype != TF_DataType::TF_FLOAT.0 {
        return Err(Failure::invalid(format!(
            "{:?} input, expected float",
            TF_DataType(v.dtype)
        )));
    }
    if v.bytes.is_empty() {
        return Ok(&[]);
    }
    // SAFETY: f32 has no invalid bit patterns; `align_to` splits off
    // whatever is not aligned, which must then be nothing.
    match unsafe { v.bytes.align_to::<f32>() } {
        ([], values, []) => Ok(values),
        _ => Err(Failure::invalid("a float input that is not 4-byte aligned")),
    }
}

/// The shape of value `v`.
pub(super) fn shape(v: &Value<'_>) -> KernelResult<Shape> {
    Shape::new(&v.dims).ok_or_else(|| Failure::invalid(format!("a shape of {:?}", v.dims)))
}
