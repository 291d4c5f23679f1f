//! `StatelessRandomUniformV2(shape, key, counter, alg)` on float32, the
//! four inputs in host memory: one device `RandomUniform` with the key and
//! counter, TF's Philox floats bit for bit (Keras' dropout masks). The
//! algorithm must be Philox (1) or auto-select (3, Philox on TF's CPU);
//! ThreeFry (2) fails as on TF's CPU, `InvalidArgument`.

use super::kernel::{Op, flat, is_empty};
use super::sum::read_host_ints;
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::tf::{Construction, Context, Tensor};
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
            // TF's CPU kernel refuses ThreeFry (2) too, with this error:
            // there is no CPU to fall back to (only XLA runs it).
            let id = alg.first().copied().unwrap_or_default();
            return Err(Failure::invalid(format!(
                "Unsupported algorithm id: {id} (as on TF's CPU, which runs ThreeFry only under \
                 XLA; the FPGA runs Philox: 1, or auto-select: 3)"
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
        let dims = super::sum::sizes(&dims, "shape")?;
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

/// The stateful `RandomUniform(shape)` on float32 (`seed`, `seed2`): TF's
/// `PhiloxRandomOp`, whose generator lives in the kernel. Each call takes
/// the generator's counter and skips it by 256 groups per output, as TF's
/// `GuardedPhiloxRandom::ReserveRandomOutputs` does, so the floats equal
/// TF's CPU kernel's call by call (Keras 2's dropout).
pub struct StatefulUniform;

/// The kernel's generator: Philox's key and its next counter.
#[derive(Debug, Default)]
pub struct Generator(std::sync::Mutex<(u64, [u64; 2])>);

impl Op for StatefulUniform {
    type Attrs = Generator;

    fn op(&self) -> &'static CStr {
        c"RandomUniform"
    }

    fn family(&self) -> Option<OpKind> {
        Some(UNIFORM)
    }

    fn type_attr(&self) -> Option<&'static CStr> {
        Some(c"dtype")
    }

    fn host_memory(&self) -> &'static [&'static CStr] {
        &[c"shape"]
    }

    fn construct(&self, ctx: &Construction) -> KernelResult<Generator> {
        let (mut seed, mut seed2) = (ctx.int64_attr(c"seed")?, ctx.int64_attr(c"seed2")?);
        if seed == 0 && seed2 == 0 {
            // TF seeds such a generator at random too.
            let random = |i: u64| {
                use std::hash::{BuildHasher, Hasher};
                let mut h = std::collections::hash_map::RandomState::new().build_hasher();
                h.write_u64(i);
                h.finish() as i64
            };
            (seed, seed2) = (random(1), random(2));
        }
        Ok(Generator(std::sync::Mutex::new((
            seed as u64,
            [0, seed2 as u64],
        ))))
    }

    fn compute(&self, g: &Generator, ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let dims = read_host_ints(&ctx.input(0, true)?, "shape")?;
        let dims = super::sum::sizes(&dims, "shape")?;
        let shape = flat(&dims)?;
        let out = ctx.output(&shape, &[])?;
        let n = shape.elements().unwrap_or(0);
        let (key, counter) = {
            let mut state = g.0.lock().unwrap_or_else(|e| e.into_inner());
            let taken = *state;
            state.1 = tensorplug_core::reference::random::skipped(state.1, n.saturating_mul(256));
            taken
        };
        if n == 0 {
            return Ok(());
        }
        run.launch(
            OpKind::RandomUniform { key, counter },
            &[],
            run.desc(&out, shape)?,
        )
    }
}
