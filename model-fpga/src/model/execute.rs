//! Running a validated command on device memory with `crate::kernels`.

use core::ops::Range;
use tensorplug_core::accelerator::DType;

use crate::kernels::{self, BinaryOp, KernelError};

use super::bus::{BusError, HostBus};
use super::memory::{MemoryView, Split};
use super::validate::{Bcast3, TypedWork, Work};

/// Why a validated command still failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ExecError {
    /// A DMA transfer failed (`BUS_ERROR`).
    Bus,
    /// A kernel refused slices that validation accepted: a model bug
    /// (`DEVICE_FAULT`).
    Internal,
    /// An int8 command's quantization block was refused when read
    /// (`INVALID_ARGUMENT`, detail [`tensorplug_core::quant::block::detail`]).
    Quantization(tensorplug_core::quant::QuantError),
    /// An index command's index is out of range (`INVALID_ARGUMENT`,
    /// detail `src1`'s offset).
    Index,
}

impl From<BusError> for ExecError {
    fn from(_: BusError) -> Self {
        ExecError::Bus
    }
}
impl From<KernelError> for ExecError {
    fn from(_: KernelError) -> Self {
        ExecError::Internal
    }
}

/// Executes `work` on `mem` (4-byte aligned), reaching the host through `bus`.
/// Only the command's operand ranges are borrowed.
pub(crate) fn execute<B: HostBus>(
    work: &Work,
    mem: &mut MemoryView<'_>,
    bus: &mut B,
) -> Result<(), ExecError> {
    match work {
        Work::Nop => Ok(()),
        Work::CopyH2D { host, dst } => Ok(bus.read(*host, get_mut(mem, dst)?)?),
        Work::CopyD2H { src, host } => Ok(bus.write(*host, get(mem, src)?)?),
        Work::CopyD2D { src, dst } => mem.copy_within(src, dst.start).ok_or(ExecError::Internal),
        Work::Fill { dst, pattern } => {
            for (i, b) in get_mut(mem, dst)?.iter_mut().enumerate() {
                *b = pattern[i % 4];
            }
            Ok(())
        }
        Work::Gemm {
            spec,
            a,
            b,
            bias,
            out,
        } => {
            let s = split(mem, out)?;
            let bias = match bias {
                Some(r) => Some(floats(src(&s, r)?)?),
                None => None,
            };
            Ok(kernels::gemm(
                spec,
                floats(src(&s, a)?)?,
                floats(src(&s, b)?)?,
                bias,
                floats_mut(s.out)?,
            )?)
        }
        Work::Unary { op, param, x, out } if x == out => {
            kernels::unary_in_place(*op, *param, floats_mut(get_mut(mem, out)?)?);
            Ok(())
        }
        Work::Transpose { dims, perm, x, out } => {
            let s = split(mem, out)?;
            let x = floats(src(&s, x)?)?;
            Ok(kernels::transpose4(*dims, *perm, x, floats_mut(s.out)?)?)
        }
        Work::Unary { op, param, x, out } => {
            let s = split(mem, out)?;
            Ok(kernels::unary(
                *op,
                *param,
                floats(src(&s, x)?)?,
                floats_mut(s.out)?,
            )?)
        }
        Work::BiasAdd { x, bias, out } => {
            let s = split(mem, out)?;
            let bias = floats(src(&s, bias)?)?;
            if x == out {
                Ok(kernels::bias_add_in_place(floats_mut(s.out)?, bias)?)
            } else {
                Ok(kernels::bias_add(
                    floats(src(&s, x)?)?,
                    bias,
                    floats_mut(s.out)?,
                )?)
            }
        }
        Work::Softmax { x, out, row, log } if x == out => {
            let x = floats_mut(get_mut(mem, out)?)?;
            Ok(if *log {
                kernels::log_softmax_last_axis_in_place(x, *row)
            } else {
                kernels::softmax_last_axis_in_place(x, *row)
            }?)
        }
        Work::Softmax { x, out, row, log } => {
            let s = split(mem, out)?;
            let (x, out) = (floats(src(&s, x)?)?, floats_mut(s.out)?);
            Ok(if *log {
                kernels::log_softmax_last_axis(x, *row, out)
            } else {
                kernels::softmax_last_axis(x, *row, out)
            }?)
        }
        Work::Reduce { op, x, out, row } => {
            let s = split(mem, out)?;
            let (x, out) = (floats(src(&s, x)?)?, floats_mut(s.out)?);
            Ok(match op {
                None => kernels::reduce_sum_last_axis(x, *row, out),
                Some(op) => kernels::reduce_last_axis(*op, x, *row, out),
            }?)
        }
        Work::Binary {
            op,
            param,
            a,
            b,
            out,
            shape,
        } => binary((*op, *param), a, b, out, shape.as_ref(), mem),
        Work::Window {
            op,
            spec,
            src0,
            src1,
            dst,
            epilogue,
        } => {
            let s = split(mem, dst)?;
            let src1 = match src1 {
                Some(r) => floats(src(&s, r)?)?,
                None => &[],
            };
            let src0 = floats(src(&s, src0)?)?;
            let epilogue = match epilogue {
                Some((bias, act)) => Some((floats(src(&s, bias)?)?, *act)),
                None => None,
            };
            let out = floats_mut(s.out)?;
            kernels::window(*op, spec, src0, src1, out)?;
            if let Some((bias, act)) = epilogue {
                kernels::bias_activation(out, bias, act)?;
            }
            Ok(())
        }
        Work::Typed(w) => int8(w, mem),
        Work::Cast { from, to, src, dst } => cast(*from, *to, src, dst, mem),
        Work::Arg {
            min,
            out_type,
            x,
            out,
            row,
        } => {
            let s = split(mem, out)?;
            tensorplug_core::reference::arg::arg_reduce(*min, src(&s, x)?, *row, *out_type, s.out)
                .map_err(|_| ExecError::Internal)
        }
        Work::Select { cond, a, b, out } => select([cond, a, b], out, mem),
        Work::Record {
            code,
            args,
            inputs,
            out,
        } => {
            let kernel = crate::kernels::records::record(*code).ok_or(ExecError::Internal)?;
            let s = split(mem, out)?;
            let mut data: [&[f32]; 3] = [&[]; 3];
            for (d, r) in data.iter_mut().zip(inputs) {
                if !r.is_empty() {
                    *d = floats(src(&s, r)?)?;
                }
            }
            (kernel.run)(*args, data, floats_mut(s.out)?);
            Ok(())
        }
        Work::Random { key, counter, out } => {
            tensorplug_core::reference::random::uniform(
                *key,
                *counter,
                floats_mut(get_mut(mem, out)?)?,
            );
            Ok(())
        }
    }
}

/// An int8 or index command: [`kernels::int8()`] (`tensorplug_core`'s reference
/// kernels, TFLite's, bit for bit; the convolutions and `MatMulInt8`
/// computed faster to the same bytes) on the typed operands.
fn int8(w: &TypedWork, mem: &mut MemoryView<'_>) -> Result<(), ExecError> {
    use tensorplug_core::accelerator::DType;
    use tensorplug_core::reference::{self, int8::Data, int8::DataMut};
    let s = split(mem, &w.out.0)?;
    let mut data: [(Data<'_>, _); 3] = [(Data::I8(&[]), w.out.2); 3];
    for (slot, (r, dtype, shape)) in data.iter_mut().zip(&w.inputs[..w.count]) {
        let bytes = src(&s, r)?;
        *slot = match dtype {
            DType::I8 => (Data::I8(int8s(bytes)), *shape),
            DType::I32 => (Data::I32(ints(bytes)?), *shape),
            DType::I64 => (Data::I64(longs(bytes)?), *shape),
            _ => (Data::F32(floats(bytes)?), *shape),
        };
    }
    let out = match w.out.1 {
        DType::F32 => DataMut::F32(floats_mut(s.out)?),
        _ => DataMut::I8(int8s_mut(s.out)),
    };
    match kernels::int8(w.kind, &data[..w.count], w.out.2, out) {
        Ok(()) => Ok(()),
        Err(reference::Error::Quant(e)) => Err(ExecError::Quantization(e)),
        Err(reference::Error::Index { .. }) => Err(ExecError::Index),
        Err(_) => Err(ExecError::Internal),
    }
}

/// Elements staged per step of the commands that may run in place.
const STAGE: usize = 64;

/// `CAST` (core's reference conversion, exact), in steps of [`STAGE`]
/// elements: each step reads its sources before it writes, so `dst` may
/// be `src` (types of one size).
fn cast(
    from: DType,
    to: DType,
    src: &Range<usize>,
    dst: &Range<usize>,
    mem: &mut MemoryView<'_>,
) -> Result<(), ExecError> {
    let (fs, ts) = (from.size(), to.size());
    let mut staged = [0u8; STAGE * 8];
    let mut done = 0;
    while done < src.len() / fs {
        let n = (src.len() / fs - done).min(STAGE);
        let at = |r: &Range<usize>, size: usize| r.start + done * size..r.start + (done + n) * size;
        staged[..n * fs].copy_from_slice(get(mem, &at(src, fs))?);
        let out = get_mut(mem, &at(dst, ts))?;
        tensorplug_core::reference::cast::cast(from, to, &staged[..n * fs], out)
            .map_err(|_| ExecError::Internal)?;
        done += n;
    }
    Ok(())
}

/// `SELECT` in steps of [`STAGE`] elements, as [`cast`] (`out` may be
/// any of the sources).
fn select(
    [cond, a, b]: [&Range<usize>; 3],
    out: &Range<usize>,
    mem: &mut MemoryView<'_>,
) -> Result<(), ExecError> {
    let len = out.len() / 4;
    let mut done = 0;
    while done < len {
        let n = (len - done).min(STAGE);
        let at = |r: &Range<usize>| r.start + done * 4..r.start + (done + n) * 4;
        let mut staged = [[0f32; STAGE]; 3];
        for (stage, r) in staged.iter_mut().zip([cond, a, b]) {
            stage[..n].copy_from_slice(floats(get(mem, &at(r))?)?);
        }
        let o = floats_mut(get_mut(mem, &at(out))?)?;
        for (i, o) in o.iter_mut().enumerate() {
            *o = if staged[0][i] != 0.0 {
                staged[1][i]
            } else {
                staged[2][i]
            };
        }
        done += n;
    }
    Ok(())
}

fn int8s(bytes: &[u8]) -> &[i8] {
    // SAFETY: i8 and u8 have one layout and no invalid values.
    unsafe { core::slice::from_raw_parts(bytes.as_ptr().cast(), bytes.len()) }
}
fn int8s_mut(bytes: &mut [u8]) -> &mut [i8] {
    // SAFETY: as in `int8s`.
    unsafe { core::slice::from_raw_parts_mut(bytes.as_mut_ptr().cast(), bytes.len()) }
}
fn longs(bytes: &[u8]) -> Result<&[i64], ExecError> {
    // SAFETY: any 8 bytes are an i64; only aligned elements are in `mid`.
    let (pre, mid, post) = unsafe { bytes.align_to::<i64>() };
    if pre.is_empty() && post.is_empty() {
        Ok(mid)
    } else {
        Err(ExecError::Internal)
    }
}
fn ints(bytes: &[u8]) -> Result<&[i32], ExecError> {
    // SAFETY: any 4 bytes are an i32; only aligned elements are in `mid`.
    let (pre, mid, post) = unsafe { bytes.align_to::<i32>() };
    if pre.is_empty() && post.is_empty() {
        Ok(mid)
    } else {
        Err(ExecError::Internal)
    }
}

fn binary(
    (op, p): (BinaryOp, f32),
    a: &Range<usize>,
    b: &Range<usize>,
    out: &Range<usize>,
    shape: Option<&Bcast3>,
    mem: &mut MemoryView<'_>,
) -> Result<(), ExecError> {
    let s = split(mem, out)?;
    let rhs = floats(src(&s, b)?)?;
    let dims = shape.map_or([1, 1, out.len() / 4], |sh| sh.dims);
    let rhs_bcast = shape.map_or([false; 3], |sh| sh.src1);
    if a == out {
        // In place: src0 is the output itself (never broadcast, see validation).
        let dst = floats_mut(s.out)?;
        for_each_3d(dims, rhs_bcast, |o, r| {
            dst[o] = op.apply_with(dst[o], rhs[r], p)
        });
        return Ok(());
    }
    let lhs = floats(src(&s, a)?)?;
    let dst = floats_mut(s.out)?;
    match shape {
        None => Ok(kernels::binary_with(
            op,
            p,
            lhs,
            &[lhs.len()],
            rhs,
            &[rhs.len()],
            dst,
        )?),
        // NumPy broadcasting of the two extents reproduces [m][n][k] unless
        // both sources are broadcast along an axis longer than 1.
        Some(sh) if (0..3).all(|i| !(sh.src0[i] && sh.src1[i]) || sh.dims[i] == 1) => {
            Ok(kernels::binary_with(
                op,
                p,
                lhs,
                &sh.extents(sh.src0),
                rhs,
                &sh.extents(sh.src1),
                dst,
            )?)
        }
        Some(sh) => {
            for_each_3d(sh.dims, sh.src0, |o, l| dst[o] = lhs[l]);
            for_each_3d(sh.dims, sh.src1, |o, r| {
                dst[o] = op.apply_with(dst[o], rhs[r], p)
            });
            Ok(())
        }
    }
}

/// Calls `f(output index, source index)` over `[m][n][k]` for a source
/// broadcast along the axes flagged in `bcast`.
fn for_each_3d(dims: [usize; 3], bcast: [bool; 3], mut f: impl FnMut(usize, usize)) {
    let [m, n, k] = dims;
    let ext = |i: usize| if bcast[i] { 1 } else { dims[i] };
    let (sk, sn) = (usize::from(!bcast[2]), ext(2));
    let sm = ext(1) * ext(2);
    let (sn, sm) = (if bcast[1] { 0 } else { sn }, if bcast[0] { 0 } else { sm });
    let mut o = 0;
    for i in 0..m {
        for j in 0..n {
            let base = i * sm + j * sn;
            for l in 0..k {
                f(o, base + l * sk);
                o += 1;
            }
        }
    }
}

fn get<'m>(mem: &'m MemoryView<'_>, r: &Range<usize>) -> Result<&'m [u8], ExecError> {
    mem.bytes(r).ok_or(ExecError::Internal)
}
fn get_mut<'m>(mem: &'m mut MemoryView<'_>, r: &Range<usize>) -> Result<&'m mut [u8], ExecError> {
    mem.bytes_mut(r).ok_or(ExecError::Internal)
}
fn src<'v>(s: &Split<'v>, r: &Range<usize>) -> Result<&'v [u8], ExecError> {
    s.src(r).ok_or(ExecError::Internal)
}
fn split<'v>(mem: &'v mut MemoryView<'_>, out: &Range<usize>) -> Result<Split<'v>, ExecError> {
    mem.split(out).ok_or(ExecError::Internal)
}

/// Reinterprets 4-byte-aligned bytes as f32s (every bit pattern is an f32).
fn floats(bytes: &[u8]) -> Result<&[f32], ExecError> {
    // SAFETY: any 4 initialised bytes are a valid f32; `align_to` only puts
    // properly aligned elements in the middle part.
    let (pre, mid, post) = unsafe { bytes.align_to::<f32>() };
    if pre.is_empty() && post.is_empty() {
        Ok(mid)
    } else {
        Err(ExecError::Internal)
    }
}
fn floats_mut(bytes: &mut [u8]) -> Result<&mut [f32], ExecError> {
    // SAFETY: as in `floats`; f32 has no invalid bit patterns, so any f32
    // written is valid bytes.
    let (pre, mid, post) = unsafe { bytes.align_to_mut::<f32>() };
    if pre.is_empty() && post.is_empty() {
        Ok(mid)
    } else {
        Err(ExecError::Internal)
    }
}
