//! `LogicalAnd`, `LogicalOr` (broadcasting) and `LogicalNot` on bool, in
//! host memory, computed on the host as TF's CPU kernels compute them. TF
//! registers no `DEVICE_DEFAULT` kernel for them, so a `while` loop's
//! condition (`i < n and i < max`, as Keras' RNN loop writes it) went to
//! the CPU, and every iteration crossed from our device's partition to the
//! CPU's and back before the next could start.

use super::kernel::{Op, is_empty};
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::shapes;
use crate::kernels::tf::{Context, Tensor};
use std::ffi::CStr;
use tensorplug_core::accelerator::{OpKind, Shape};

/// `LogicalAnd` or `LogicalOr`.
pub struct Logical {
    op: &'static CStr,
    apply: fn(bool, bool) -> bool,
}

/// The kernels.
pub static KERNELS: [Logical; 2] = [
    Logical {
        op: c"LogicalAnd",
        apply: |a, b| a && b,
    },
    Logical {
        op: c"LogicalOr",
        apply: |a, b| a || b,
    },
];

/// A host-memory bool tensor's elements (TF stores a bool as one byte).
fn bools(tensor: &Tensor) -> KernelResult<Vec<bool>> {
    Ok(tensor.host_bytes(None)?.iter().map(|&b| b != 0).collect())
}

/// Writes `values` into a host-memory bool output.
fn write(out: &Tensor, values: impl ExactSizeIterator<Item = bool>) -> KernelResult<()> {
    let (data, len) = (out.data().cast::<u8>(), out.byte_size());
    if len != values.len() || (len > 0 && data.is_null()) {
        return Err(Failure::invalid(format!(
            "a {len}-byte bool output for {} values",
            values.len()
        )));
    }
    for (i, value) in values.enumerate() {
        // SAFETY: a HostMemory output of `len` bytes, `i < len`.
        unsafe { data.add(i).write(u8::from(value)) };
    }
    Ok(())
}

/// The element of `dims` (broadcast into `out`, aligned right) that output
/// element `index` reads.
fn source(index: u64, out: &[u64], dims: &[u64]) -> usize {
    let (mut rest, mut at, mut stride) = (index, 0u64, 1u64);
    let skip = out.len() - dims.len();
    for (axis, &size) in out.iter().enumerate().rev() {
        let coordinate = rest % size;
        rest /= size;
        if axis >= skip {
            let dim = dims[axis - skip];
            if dim != 1 {
                at += coordinate * stride;
            }
            stride *= dim;
        }
    }
    at as usize
}

impl Op for Logical {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        self.op
    }

    fn family(&self) -> Option<OpKind> {
        None
    }

    fn type_attr(&self) -> Option<&'static CStr> {
        None
    }

    fn host_memory(&self) -> &'static [&'static CStr] {
        &[c"x", c"y", c"z"]
    }

    fn compute(&self, (): &(), ctx: &Context, _: &mut Launcher<'_>) -> KernelResult<()> {
        let (x, y) = (ctx.input(0, true)?, ctx.input(1, true)?);
        let (sx, sy) = (x.shape()?, y.shape()?);
        let shape = shapes::broadcast(&sx, &sy)?;
        let out = ctx.output(&shape, &[])?;
        if is_empty(&shape) {
            return Ok(());
        }
        let (a, b) = (bools(&x)?, bools(&y)?);
        let dims = shape.dims();
        let count = shape.elements().unwrap_or(0);
        let values = (0..count).map(|i| {
            let (p, q) = (source(i, dims, sx.dims()), source(i, dims, sy.dims()));
            (self.apply)(
                a.get(p).copied().unwrap_or(false),
                b.get(q).copied().unwrap_or(false),
            )
        });
        write(&out, values.collect::<Vec<_>>().into_iter())
    }
}

/// `LogicalNot`.
pub struct LogicalNot;

impl Op for LogicalNot {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        c"LogicalNot"
    }

    fn family(&self) -> Option<OpKind> {
        None
    }

    fn type_attr(&self) -> Option<&'static CStr> {
        None
    }

    fn host_memory(&self) -> &'static [&'static CStr] {
        &[c"x", c"y"]
    }

    fn compute(&self, (): &(), ctx: &Context, _: &mut Launcher<'_>) -> KernelResult<()> {
        let x = ctx.input(0, true)?;
        let shape: Shape = x.shape()?;
        let out = ctx.output(&shape, &[])?;
        if is_empty(&shape) {
            return Ok(());
        }
        let values = bools(&x)?;
        write(&out, values.into_iter().map(|v| !v))
    }
}

#[cfg(test)]
mod tests {
    use super::source;

    #[test]
    fn broadcast_elements_read_their_aligned_source() {
        // [2, 3] against [3]: each row reads the same three.
        let out = [2, 3];
        let read: Vec<usize> = (0..6).map(|i| source(i, &out, &[3])).collect();
        assert_eq!(read, [0, 1, 2, 0, 1, 2]);
        // [2, 3] against [2, 1]: each row reads its one.
        let read: Vec<usize> = (0..6).map(|i| source(i, &out, &[2, 1])).collect();
        assert_eq!(read, [0, 0, 0, 1, 1, 1]);
        // A scalar is read everywhere; an equal shape is read in place.
        assert!((0..6).all(|i| source(i, &out, &[]) == 0));
        let read: Vec<usize> = (0..6).map(|i| source(i, &out, &out)).collect();
        assert_eq!(read, [0, 1, 2, 3, 4, 5]);
    }
}
