//! Decoding `GATHER` and `SEGMENT_SUM` (`INDEX`, ABI 1.5) into the typed
//! work of [`TypedWork`]: f32 data, int32 indices; the indices are checked
//! against their bound when the command runs. And `CAST` (`TYPES`).

use tensorplug_abi::device::{CompletionStatus, Opcode};
use tensorplug_core::accelerator::{DType, OpKind, Shape, cast_supported};

use super::{Ctx, Rejection, TypedWork, Work, field, in_place_or_disjoint, invalid};

impl Ctx<'_> {
    pub(super) fn index(&self) -> Result<Work, Rejection> {
        let c = self.cmd;
        let count = self.nonzero_len()?;
        // The indices' type: `imm` 0 or 6 int32, 7 int64.
        let index = match c.imm {
            0 | 6 => DType::I32,
            7 => DType::I64,
            other => return Err(super::reject(CompletionStatus::UNSUPPORTED, other)),
        };
        let shape = |d: &[u64]| Shape::new(d).ok_or(invalid(field::LEN));
        let (kind, data, out) = match c.opcode {
            Opcode::GATHER => {
                self.dims(&[(c.m, field::M), (c.n, field::N), (c.k, field::K)])?;
                let (m, n, k) = (u64::from(c.m), u64::from(c.n), u64::from(c.k));
                (
                    OpKind::Gather(index),
                    shape(&[m, n, k])?,
                    shape(&[m, count, k])?,
                )
            }
            _ => {
                self.dims(&[(c.n, field::N), (c.k, field::K)])?;
                let (n, k) = (u64::from(c.n), u64::from(c.k));
                (
                    OpKind::SegmentSum(index),
                    shape(&[count, k])?,
                    shape(&[n, k])?,
                )
            }
        };
        let floats = |s: &Shape| s.elements().unwrap_or(u64::MAX);
        let data_range = self.f32_range(field::SRC0, floats(&data))?;
        let ids = self.range(field::SRC1, count.saturating_mul(index.size() as u64))?;
        let dst = self.f32_range(field::DST, floats(&out))?;
        self.aligned(&[field::SRC0, field::SRC1, field::DST])?;
        if index == DType::I64 && !c.src1.is_multiple_of(8) {
            return Err(super::reject(CompletionStatus::MISALIGNED, field::SRC1));
        }
        in_place_or_disjoint(&data_range, &dst, false)?;
        in_place_or_disjoint(&ids, &dst, false)?;
        let none = (0..0, DType::I8, Shape::SCALAR);
        Ok(Work::Typed(TypedWork {
            kind,
            inputs: [
                (data_range, DType::F32, data),
                (ids, index, shape(&[count])?),
                none,
            ],
            count: 2,
            out: (dst, DType::F32, out),
        }))
    }
}

impl Ctx<'_> {
    /// `CONCAT`: `m` rows of `n` then `k` elements of `dtype` (f32 or int8),
    /// one of `n` and `k` may be 0.
    pub(super) fn concat(&self) -> Result<Work, Rejection> {
        let c = self.cmd;
        self.dims(&[(c.m, field::M)])?;
        if c.n == 0 && c.k == 0 {
            return Err(invalid(field::N));
        }
        let t = match c.dtype == DType::I8 as u8 {
            true => DType::I8,
            false => DType::F32,
        };
        let (m, n, k) = (u64::from(c.m), u64::from(c.n), u64::from(c.k));
        let bytes = |elements: u64| elements.saturating_mul(t.size() as u64);
        let a = self.range(field::SRC0, bytes(m * n))?;
        let b = self.range(field::SRC1, bytes(m * k))?;
        let out = self.range(field::DST, bytes(m * (n + k)))?;
        if t == DType::F32 {
            self.aligned(&[field::SRC0, field::SRC1, field::DST])?;
        }
        for src in [&a, &b] {
            if !src.is_empty() {
                in_place_or_disjoint(src, &out, false)?;
            }
        }
        let shape = |d: &[u64]| Shape::new(d).ok_or(invalid(field::M));
        Ok(Work::Typed(TypedWork {
            kind: OpKind::Concat(t),
            inputs: [
                (a, t, shape(&[m, n])?),
                (b, t, shape(&[m, k])?),
                (0..0, DType::I8, Shape::SCALAR),
            ],
            count: 2,
            out: (out, t, shape(&[m, n + k])?),
        }))
    }

    /// `CAST`: `dtype` and `imm` name a pair `OpKind::Cast` converts.
    pub(super) fn cast(&self) -> Result<Work, Rejection> {
        let c = self.cmd;
        let pair = (u32::from(c.dtype) << 8) | c.imm;
        let unsupported = super::reject(CompletionStatus::UNSUPPORTED, pair);
        let from = DType::from_code(c.dtype).ok_or(unsupported)?;
        let to = u8::try_from(c.imm)
            .ok()
            .and_then(DType::from_code)
            .ok_or(unsupported)?;
        if !cast_supported(from, to) {
            return Err(unsupported);
        }
        let len = self.nonzero_len()?;
        let bytes = |d: DType| len.saturating_mul(d.size() as u64);
        let src = self.range(field::SRC0, bytes(from))?;
        let dst = self.range(field::DST, bytes(to))?;
        let wide: heapless::Vec<u32, 2> = [(field::SRC0, from), (field::DST, to)]
            .into_iter()
            .filter(|(_, d)| d.size() >= 4)
            .map(|(f, _)| f)
            .collect();
        self.aligned(&wide)?;
        in_place_or_disjoint(&src, &dst, from.size() == to.size())?;
        Ok(Work::Cast { from, to, src, dst })
    }
}
