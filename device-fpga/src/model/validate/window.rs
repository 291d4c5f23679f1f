//! Decoding the window commands (`docs/device-abi.md`, "Window commands").

use tensorplug_abi::device::{Opcode, WindowFields};

use super::{Ctx, Rejection, Work, field, in_place_or_disjoint, invalid};
use crate::kernels::{WindowOp, WindowSpec};

impl Ctx<'_> {
    pub(super) fn window(&self) -> Result<Work, Rejection> {
        let c = self.cmd;
        let op = match c.opcode {
            Opcode::CONV2D_F32 => WindowOp::Conv,
            Opcode::DEPTHWISE_CONV2D_F32 => WindowOp::Depthwise,
            Opcode::MAX_POOL_F32 => WindowOp::MaxPool,
            _ => WindowOp::AvgPool,
        };
        let f = WindowFields::unpack(c);
        let pool = matches!(op, WindowOp::MaxPool | WindowOp::AvgPool);
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
        let [x_len, f_len, out_len] = spec.lens(op).map_err(|_| invalid(field::LEN))?;
        let x = self.f32_range(field::SRC0, x_len as u64)?;
        let out = self.f32_range(field::DST, out_len as u64)?;
        in_place_or_disjoint(&x, &out, false)?;
        let filter = if pool {
            self.aligned(&[field::SRC0, field::DST])?;
            None
        } else {
            let filter = self.f32_range(field::SRC1, f_len as u64)?;
            self.aligned(&[field::SRC0, field::SRC1, field::DST])?;
            in_place_or_disjoint(&filter, &out, false)?;
            Some(filter)
        };
        Ok(Work::Window {
            op,
            spec,
            x,
            filter,
            out,
        })
    }
}
