//! Decoding the window commands (`docs/device-abi.md`, "Window commands").

use core::ops::Range;
use tensorplug_abi::device::{CommandFlags, Opcode, WindowFields};
use tensorplug_core::accelerator::Activation;

use super::{Ctx, Rejection, Work, field, in_place_or_disjoint, invalid};
use crate::kernels::{WindowOp, WindowSpec};

impl Ctx<'_> {
    pub(super) fn window(&self) -> Result<Work, Rejection> {
        let c = self.cmd;
        let op = match c.opcode {
            Opcode::CONV2D_F32 => WindowOp::Conv,
            Opcode::DEPTHWISE_CONV2D_F32 => WindowOp::Depthwise,
            Opcode::MAX_POOL_F32 => WindowOp::MaxPool,
            Opcode::AVG_POOL_F32 => WindowOp::AvgPool,
            Opcode::CONV2D_BACKPROP_INPUT_F32 => WindowOp::ConvBackpropInput,
            Opcode::CONV2D_BACKPROP_FILTER_F32 => WindowOp::ConvBackpropFilter,
            Opcode::MAX_POOL_GRAD_F32 => WindowOp::MaxPoolGrad,
            _ => WindowOp::AvgPoolGrad,
        };
        let f = WindowFields::unpack(c);
        let pool = matches!(
            op,
            WindowOp::MaxPool | WindowOp::AvgPool | WindowOp::MaxPoolGrad | WindowOp::AvgPoolGrad
        );
        self.window_fields(&f, pool)?;
        let spec = WindowSpec {
            n: f.batch as usize,
            hwc: [f.input[0].into(), f.input[1].into(), f.channels.into()],
            k: f.k.into(),
            size: [f.size[0].into(), f.size[1].into()],
            out: [f.output[0].into(), f.output[1].into()],
            stride: [f.stride[0].into(), f.stride[1].into()],
            dilation: [f.dilation[0].into(), f.dilation[1].into()],
            pad: [f.pad[0].into(), f.pad[1].into()],
        };
        // Every length is checked before a range is formed: an output that
        // would not fit is an error here, never a write past device memory.
        let [src0_len, src1_len, dst_len] = spec.lens(op).map_err(|_| invalid(field::LEN))?;
        let src0 = self.f32_range(field::SRC0, src0_len as u64)?;
        let dst = self.f32_range(field::DST, dst_len as u64)?;
        in_place_or_disjoint(&src0, &dst, false)?;
        let src1 = if matches!(
            op,
            WindowOp::MaxPool | WindowOp::AvgPool | WindowOp::AvgPoolGrad
        ) {
            self.aligned(&[field::SRC0, field::DST])?;
            None
        } else {
            let src1 = self.f32_range(field::SRC1, src1_len as u64)?;
            self.aligned(&[field::SRC0, field::SRC1, field::DST])?;
            in_place_or_disjoint(&src1, &dst, false)?;
            Some(src1)
        };
        let epilogue = self.epilogue(&spec, &dst)?;
        Ok(Work::Window {
            op,
            spec,
            src0,
            src1,
            dst,
            epilogue,
        })
    }

    /// The window fields' counts: each ≥ 1 (`k` too, but 0 for a pool).
    pub(super) fn window_fields(&self, f: &WindowFields, pool: bool) -> Result<(), Rejection> {
        let counts = [
            (f.batch, field::M),
            (u32::from(f.input[0]) * u32::from(f.input[1]), field::N),
            (u32::from(f.channels), field::K),
            (u32::from(f.k) + u32::from(pool), field::K),
            (u32::from(f.size[0]) * u32::from(f.size[1]), field::LEN),
            (u32::from(f.output[0]) * u32::from(f.output[1]), field::LEN),
            (u32::from(f.stride[0]) * u32::from(f.stride[1]), field::IMM),
            (
                u32::from(f.dilation[0]) * u32::from(f.dilation[1]),
                field::IMM,
            ),
        ];
        self.dims(&counts)?;
        if pool && f.k != 0 {
            return Err(invalid(field::K));
        }
        Ok(())
    }

    /// `CONV2D_F32`'s flags: `BIAS` (then `src2` is `k` floats), and `RELU`
    /// or `RELU6` only with it; without `BIAS`, `src2` must be 0.
    fn epilogue(
        &self,
        spec: &WindowSpec,
        dst: &Range<usize>,
    ) -> Result<Option<(Range<usize>, Activation)>, Rejection> {
        let flags = self.cmd.flags;
        let (relu, relu6) = (
            flags.contains(CommandFlags::RELU),
            flags.contains(CommandFlags::RELU6),
        );
        if !flags.contains(CommandFlags::BIAS) {
            if relu || relu6 {
                return Err(invalid(field::FLAGS));
            }
            if self.cmd.src2 != 0 {
                return Err(invalid(field::SRC2));
            }
            return Ok(None);
        }
        let act = match (relu, relu6) {
            (false, false) => Activation::None,
            (true, false) => Activation::Relu,
            (false, true) => Activation::Relu6,
            (true, true) => return Err(invalid(field::FLAGS)),
        };
        let bias = self.f32_range(field::SRC2, spec.k as u64)?;
        self.aligned(&[field::SRC2])?;
        in_place_or_disjoint(&bias, dst, false)?;
        Ok(Some((bias, act)))
    }
}
