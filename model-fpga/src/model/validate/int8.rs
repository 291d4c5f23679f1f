//! Decoding the int8 commands (`docs/device-abi.md`, "int8 commands") into
//! the catalogue op they run, its operand shapes and ranges. The shapes are
//! checked with `OpDesc::validate`; the quantization block is read, and
//! checked, when the command runs.

use core::ops::Range;
use tensorplug_abi::device::{CommandFlags, Opcode, WindowFields};
use tensorplug_core::accelerator::{DType, DeviceAddr, OpDesc, OpKind, Shape, TensorDesc, Window};
use tensorplug_core::quant::block::{
    ADD_WORDS, HEADER_WORDS, LOOKUP_WORDS, MUL_WORDS, SOFTMAX_WORDS,
};

use super::{Ctx, Rejection, TypedWork, Work, field, in_place_or_disjoint, invalid};

const SOURCES: [u32; 3] = [field::SRC0, field::SRC1, field::SRC2];

impl Ctx<'_> {
    pub(super) fn int8(&self) -> Result<Work, Rejection> {
        let c = self.cmd;
        let shape = |d: &[u64]| Shape::new(d).ok_or(invalid(field::LEN));
        let (kind, ins, out): (OpKind, [Option<Shape>; 2], Shape) = match c.opcode {
            Opcode::GEMM_I8 => {
                self.dims(&[(c.m, field::M), (c.n, field::N), (c.k, field::K)])?;
                let (m, n, k) = (u64::from(c.m), u64::from(c.n), u64::from(c.k));
                let transpose_b = c.flags.contains(CommandFlags::TRANSPOSE_B);
                let b = if transpose_b { [n, k] } else { [k, n] };
                let kind = OpKind::MatMulInt8 { transpose_b };
                (
                    kind,
                    [Some(shape(&[m, k])?), Some(shape(&b)?)],
                    shape(&[m, n])?,
                )
            }
            Opcode::ADD_I8 => {
                // `n` 0: `src1` is `len` elements; else `n` of them
                // repeated along `src0`'s rows (ABI 1.9).
                let len = self.nonzero_len()?;
                let n = match u64::from(c.n) {
                    0 => len,
                    n if len.is_multiple_of(n) => n,
                    _ => return Err(invalid(field::N)),
                };
                let (a, b) = (shape(&[len / n, n])?, shape(&[n])?);
                (OpKind::AddInt8, [Some(a), Some(b)], a)
            }
            Opcode::MUL_I8 => {
                // `src1` is `n` values broadcast along `src0`'s rows.
                let len = self.nonzero_len()?;
                self.dims(&[(c.n, field::N)])?;
                let n = u64::from(c.n);
                if !len.is_multiple_of(n) {
                    return Err(invalid(field::N));
                }
                let (a, b) = (shape(&[len / n, n])?, shape(&[n])?);
                (OpKind::MulInt8, [Some(a), Some(b)], a)
            }
            Opcode::LOOKUP_I8 => {
                let x = shape(&[self.nonzero_len()?])?;
                (OpKind::LookupInt8, [Some(x), None], x)
            }
            Opcode::SOFTMAX_I8 | Opcode::QUANTIZE_I8 | Opcode::DEQUANTIZE_I8 => {
                // `len` elements in rows of `n` (a softmax's rows, or the
                // (de)quantize's last axis, whose scales the block may hold).
                let len = self.nonzero_len()?;
                self.dims(&[(c.n, field::N)])?;
                let n = u64::from(c.n);
                if !len.is_multiple_of(n) {
                    return Err(invalid(field::N));
                }
                let x = shape(&[len / n, n])?;
                let kind = match c.opcode {
                    Opcode::SOFTMAX_I8 => OpKind::SoftmaxInt8,
                    Opcode::QUANTIZE_I8 => OpKind::Quantize,
                    _ => OpKind::Dequantize,
                };
                (kind, [Some(x), None], x)
            }
            _ => self.int8_window()?,
        };
        let scales = |x: &Shape| if c.n == 1 { 1 } else { x.last() };
        let block_words = match kind {
            OpKind::AddInt8 => ADD_WORDS as u64,
            OpKind::SoftmaxInt8 => SOFTMAX_WORDS as u64,
            OpKind::LookupInt8 => LOOKUP_WORDS as u64,
            OpKind::MulInt8 => MUL_WORDS as u64,
            OpKind::MaxPoolInt8(_) | OpKind::AvgPoolInt8(_) => 0,
            OpKind::Quantize | OpKind::Dequantize => ins[0].as_ref().map_or(1, scales),
            _ => out.last().saturating_mul(3),
        };
        let block = shape(&[block_words + HEADER_WORDS as u64])?;
        let (types, out_type) = kind.operand_types().ok_or(invalid(field::LEN))?;
        let shapes: [Shape; 3] = match ins {
            [Some(a), Some(b)] => [a, b, block],
            [Some(a), None] => [a, block, Shape::SCALAR],
            _ => return Err(invalid(field::LEN)),
        };
        let count = types.len();
        let desc = |i: usize| TensorDesc::new(DeviceAddr(0), types[i], shapes[i]);
        let descs = [desc(0), desc(1), desc(count - 1)];
        OpDesc {
            kind,
            inputs: &descs[..count],
            output: TensorDesc::new(DeviceAddr(0), out_type, out),
            op_id: 0,
        }
        .validate()
        .map_err(|_| invalid(field::LEN))?;
        // The block is src2; a pool's or (de)quantize's one input is src0.
        let fields = match count {
            2 => [field::SRC0, field::SRC2, field::SRC2],
            _ => SOURCES,
        };
        let bytes = |d: DType, s: &Shape| s.elements().unwrap_or(0) * d.size() as u64;
        let dst = self.range(field::DST, bytes(out_type, &out))?;
        let mut inputs: [(Range<usize>, DType, Shape); 3] =
            core::array::from_fn(|_| (0..0, DType::I8, Shape::SCALAR));
        for i in 0..count {
            let r = self.range(fields[i], bytes(types[i], &shapes[i]))?;
            in_place_or_disjoint(&r, &dst, false)?;
            inputs[i] = (r, types[i], shapes[i]);
        }
        let wide: heapless::Vec<u32, 4> = (0..count)
            .filter(|&i| types[i] != DType::I8)
            .map(|i| fields[i])
            .chain((out_type != DType::I8).then_some(field::DST))
            .collect();
        self.aligned(&wide)?;
        Ok(Work::Typed(TypedWork {
            kind,
            inputs,
            count,
            out: (dst, out_type, out),
        }))
    }

    /// The window commands: the fields as `CONV2D_F32`'s; the padding after
    /// the input is what makes the output `oh × ow`.
    fn int8_window(&self) -> Result<(OpKind, [Option<Shape>; 2], Shape), Rejection> {
        let c = self.cmd;
        let f = WindowFields::unpack(c);
        let pool = matches!(c.opcode, Opcode::MAX_POOL_I8 | Opcode::AVG_POOL_I8);
        self.window_fields(&f, pool)?;
        let after = |i: usize| {
            let span = (u32::from(f.size[i]) - 1) * u32::from(f.dilation[i]) + 1;
            let reach = (u32::from(f.output[i]) - 1) * u32::from(f.stride[i]) + span;
            let before = u32::from(f.input[i]) + u32::from(f.pad[i]);
            u16::try_from(reach.saturating_sub(before)).map_err(|_| invalid(field::LEN))
        };
        let w = Window {
            size: f.size,
            stride: f.stride.map(u16::from),
            dilation: f.dilation.map(u16::from),
            pad: [f.pad[0].into(), after(0)?, f.pad[1].into(), after(1)?],
        };
        let d = |v: &[u64]| Shape::new(v).ok_or(invalid(field::LEN));
        let (n, [h, wd], ch, k) = (
            u64::from(f.batch),
            f.input.map(u64::from),
            u64::from(f.channels),
            u64::from(f.k),
        );
        let [kh, kw] = f.size.map(u64::from);
        let [oh, ow] = f.output.map(u64::from);
        let x = Some(d(&[n, h, wd, ch])?);
        Ok(match c.opcode {
            Opcode::CONV2D_I8 => (
                OpKind::Conv2DInt8(w),
                [x, Some(d(&[kh, kw, ch, k])?)],
                d(&[n, oh, ow, k])?,
            ),
            Opcode::DEPTHWISE_CONV2D_I8 => (
                OpKind::DepthwiseConv2DInt8(w),
                [x, Some(d(&[kh, kw, ch, k])?)],
                d(&[n, oh, ow, ch * k])?,
            ),
            Opcode::MAX_POOL_I8 => (OpKind::MaxPoolInt8(w), [x, None], d(&[n, oh, ow, ch])?),
            _ => (OpKind::AvgPoolInt8(w), [x, None], d(&[n, oh, ow, ch])?),
        })
    }
}
