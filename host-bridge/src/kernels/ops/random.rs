//! `StatelessRandomUniformV2(shape, key, counter, alg)` on float32, the
//! four inputs in host memory: one device `RandomUniform` with the key and
//! counter, TF's Philox floats bit for bit (Keras' dropout masks). The
//! algorithm must be Philox (1) or auto-select (3, Philox on TF's CPU).

use super::sum::read_host_ints;
use super::{Op, flat, is_empty};
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::tf::{Context, Tensor};
use std::ffi::CStr;
use tensorplug_core::accelerator::OpKind;

/// The `StatelessRandomUniformV2` kernel.
pub struct StatelessUniform;

const UNIFORM: OpKind = OpKind::RandomUniform {
    key: 0,
    counter: [0; 2],
};

impl Op for StatelessUniform {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        c"StatelessRandomUniformV2"
    }

    fn family(&self) -> Option<OpKind> {
        Some(UNIFORM)
    }

    fn type_attr(&self) -> Option<&'static CStr> {
        Some(c"dtype")
    }

    fn host_memory(&self) -> &'static [&'static CStr] {
        &[c"shape", c"key", c"counter", c"alg"]
    }

    fn compute(&self, (): &(), ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let dims = read_host_ints(&ctx.input(0, true)?, "shape")?;
        let (key, counter) = (ctx.input(1, true)?, ctx.input(2, true)?);
        let alg = read_host_ints(&ctx.input(3, true)?, "alg")?;
        if alg.as_slice() != [1] && alg.as_slice() != [3] {
            return Err(Failure::unimplemented(format!(
                "random algorithm {alg:?} (the FPGA runs Philox: 1, or auto-select: 3)"
            )));
        }
        let key = match words(&key, "key")?.as_slice() {
            &[k] => k,
            other => {
                return Err(Failure::invalid(format!(
                    "key must have 1 element, got {other:?}"
                )));
            }
        };
        let counter = match words(&counter, "counter")?.as_slice() {
            &[a, b, ..] => [a, b],
            other => {
                return Err(Failure::invalid(format!(
                    "counter must have at least 2 elements for Philox, got {other:?}"
                )));
            }
        };
        let dims: Vec<u64> = dims
            .iter()
            .map(|&d| u64::try_from(d))
            .collect::<Result<_, _>>()
            .map_err(|_| Failure::invalid(format!("shape {dims:?} has a negative size")))?;
        let shape = flat(&dims)?;
        let out = ctx.output(&shape, &[])?;
        if is_empty(&shape) {
            return Ok(());
        }
        let kind = OpKind::RandomUniform { key, counter };
        run.launch(kind, &[], run.desc(&out, shape)?)
    }
}

/// A host-memory uint64 (or int64) vector.
fn words(t: &Tensor, name: &str) -> KernelResult<Vec<u64>> {
    let bytes = t.byte_size();
    let data = t.data().cast::<u8>();
    if !bytes.is_multiple_of(8) || (bytes > 0 && data.is_null()) {
        return Err(Failure::invalid(format!("{name} must be 64-bit words")));
    }
    Ok((0..bytes / 8)
        // SAFETY: host memory (HostMemory input) of `bytes` bytes; unaligned reads.
        .map(|i| unsafe { data.add(i * 8).cast::<u64>().read_unaligned() })
        .collect())
}
