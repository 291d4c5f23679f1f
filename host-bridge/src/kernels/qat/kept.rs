//! What a `Qat` op's device kernel keeps between calls: the bytes of its
//! last inputs (in host memory) and its outputs, the int8 ones as device
//! tensors. A call whose inputs are those very bytes (an exact comparison,
//! no hash to collide) hands the kept tensors out (`TF_SetOutput`, no
//! copy, no device work); any other call computes, uploads and keeps anew.
//! So a `predict` loop computes and uploads each weight once, and a model
//! that trained in between gets its current values.

use super::inputs::Inputs;
use super::out::{Out, write_output};
use super::packed::Value;
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::tf::{Context, Held};
use std::sync::Mutex;
use tensorplug_core::accelerator::{DType, Shape};

/// A device kernel's memory; locked through a call.
pub(super) struct Kept {
    /// The output that stays in host memory (`QatWeights`' scales).
    host_output: Option<usize>,
    last: Mutex<Last>,
}

#[derive(Default)]
struct Last {
    inputs: Vec<Input>,
    /// Empty until a call succeeded.
    outputs: Vec<Output>,
}

#[derive(PartialEq)]
struct Input {
    dtype: u32,
    dims: Vec<u64>,
    bytes: Vec<u8>,
}

enum Output {
    Device(Held),
    Host(Out),
}

impl Kept {
    pub(super) fn new(host_output: Option<usize>) -> Self {
        Self {
            host_output,
            last: Mutex::default(),
        }
    }

    /// One call: the kept outputs if the inputs are unchanged, else
    /// `evaluate`'s, uploaded and kept.
    pub(super) fn compute(
        &self,
        ctx: &Context,
        inputs: &Inputs,
        op_type: &'static str,
        evaluate: impl FnOnce() -> KernelResult<Vec<Out>>,
    ) -> KernelResult<()> {
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let inputs = (0..inputs.len())
            .map(|i| inputs.get(i))
            .collect::<KernelResult<Vec<_>>>()?;
        if last.outputs.is_empty() || !same(&last.inputs, &inputs) {
            *last = Last::default();
            let outputs = self.upload(ctx, op_type, evaluate()?)?;
            *last = Last {
                inputs: inputs.iter().map(snapshot).collect(),
                outputs,
            };
        }
        for (index, output) in last.outputs.iter().enumerate() {
            match output {
                Output::Device(held) => ctx.set_output(index, held.get())?,
                Output::Host(out) => write_output(ctx, index, out)?,
            }
        }
        Ok(())
    }

    fn upload(
        &self,
        ctx: &Context,
        op_type: &'static str,
        outs: Vec<Out>,
    ) -> KernelResult<Vec<Output>> {
        let mut run = Launcher::new(ctx.stream()?, op_type, ctx.node_name());
        let mut kept = Vec::with_capacity(outs.len());
        for (index, out) in outs.into_iter().enumerate() {
            if Some(index) == self.host_output {
                kept.push(Output::Host(out));
                continue;
            }
            let tensor = ctx.temp_of(out.dtype, &out.shape)?;
            if !out.bytes.is_empty() {
                let bytes = Shape::new(&[out.bytes.len() as u64])
                    .ok_or_else(|| Failure::invalid("shape"))?;
                let desc = run.typed_desc(&tensor, bytes, DType::I8)?;
                run.write(desc, &out.bytes)?;
            }
            kept.push(Output::Device(Held::new(tensor)));
        }
        Ok(kept)
    }
}

/// Whether `now` holds the dtypes, shapes and bytes of `then`.
fn same(then: &[Input], now: &[Value]) -> bool {
    then.len() == now.len()
        && then
            .iter()
            .zip(now)
            .all(|(kept, v)| kept.dtype == v.dtype && kept.dims == v.dims && kept.bytes == v.bytes)
}

fn snapshot(v: &Value) -> Input {
    Input {
        dtype: v.dtype,
        dims: v.dims.clone(),
        bytes: v.bytes.to_vec(),
    }
}
