//! Lowering the window ops: `Conv2D`, `DepthwiseConv2D`, `MaxPool`,
//! `AvgPool` and their gradients, each one command with the forward op's
//! geometry packed (`docs/device-abi.md`, "Window commands").

use tensorplug_abi::device::{CommandDescriptor, CommandFlags, Opcode, WindowFields};
use tensorplug_core::accelerator::{Activation, DType, OpDesc, OpKind, Window};
use tensorplug_core::quant::block::HEADER_WORDS;

use super::error::Error;
use super::fields::{F32, dim};

/// Emits the command of window op `op` (the output is not empty).
pub(super) fn lower_window(
    op: &OpDesc<'_>,
    base: CommandDescriptor,
    emit: &mut impl FnMut(&CommandDescriptor) -> Result<(), Error>,
) -> Result<(), Error> {
    let cmd = |opcode: Opcode| CommandDescriptor { opcode, ..base };
    // A gradient's forward output (`dy`): input 0, or 1 with `x` first.
    let dy = match op.kind {
        OpKind::Conv2DBackpropFilter(_) | OpKind::MaxPoolGrad(_) => op.inputs.get(1),
        _ => op.inputs.first(),
    };
    let (w, opcode) = match op.kind {
        OpKind::Conv2D(w) | OpKind::FusedConv2D(w, _) => (w, Opcode::CONV2D_F32),
        OpKind::DepthwiseConv2D(w) => (w, Opcode::DEPTHWISE_CONV2D_F32),
        OpKind::MaxPool(w) => (w, Opcode::MAX_POOL_F32),
        OpKind::AvgPool(w) => (w, Opcode::AVG_POOL_F32),
        OpKind::Conv2DBackpropInput(w) => (w, Opcode::CONV2D_BACKPROP_INPUT_F32),
        OpKind::Conv2DBackpropFilter(w) => (w, Opcode::CONV2D_BACKPROP_FILTER_F32),
        OpKind::MaxPoolGrad(w) => (w, Opcode::MAX_POOL_GRAD_F32),
        OpKind::AvgPoolGrad(w) => (w, Opcode::AVG_POOL_GRAD_F32),
        _ => return Err(Error::Undeclared { op: op.kind.name() }),
    };
    let gradient = !matches!(
        opcode,
        Opcode::CONV2D_F32
            | Opcode::DEPTHWISE_CONV2D_F32
            | Opcode::MAX_POOL_F32
            | Opcode::AVG_POOL_F32
    );
    if gradient && dy.and_then(|t| t.shape.elements()) == Some(0) {
        // No forward output (an empty batch or window): every gradient is 0.
        let elements = op.output.shape.elements().ok_or(Error::InvalidArgument)?;
        return emit(&CommandDescriptor {
            dst: op.output.addr.0,
            len: elements * F32,
            ..cmd(Opcode::FILL)
        });
    }
    let mut command = window(op, &w, cmd(opcode))?;
    if let OpKind::FusedConv2D(_, act) = op.kind {
        // The epilogue: `src2` bias, then the activation (`docs/device-abi.md`).
        command.src2 = op.inputs[2].addr.0;
        command.flags = command.flags.union(CommandFlags::BIAS).union(match act {
            Activation::None => CommandFlags(0),
            Activation::Relu => CommandFlags::RELU,
            Activation::Relu6 => CommandFlags::RELU6,
        });
    }
    emit(&command)
}

/// Emits the command of int8 op `op` (the output is not empty): `dtype`
/// int8, the quantization block (the last input) in `src2`
/// (`docs/device-abi.md`, "int8 commands").
pub(super) fn lower_int8(
    op: &OpDesc<'_>,
    base: CommandDescriptor,
    add_i8_broadcast: bool,
    emit: &mut impl FnMut(&CommandDescriptor) -> Result<(), Error>,
) -> Result<(), Error> {
    let base = CommandDescriptor {
        dtype: DType::I8 as u8,
        ..base
    };
    let cmd = |opcode: Opcode| CommandDescriptor { opcode, ..base };
    let (x, block) = (op.inputs[0], op.inputs[op.inputs.len() - 1]);
    let elements = op.output.shape.elements().ok_or(Error::InvalidArgument)?;
    let flat = |opcode| CommandDescriptor {
        src0: x.addr.0,
        dst: op.output.addr.0,
        len: elements,
        ..cmd(opcode)
    };
    let command = match op.kind {
        OpKind::Conv2DInt8(w) => window(op, &w, cmd(Opcode::CONV2D_I8))?,
        OpKind::DepthwiseConv2DInt8(w) => window(op, &w, cmd(Opcode::DEPTHWISE_CONV2D_I8))?,
        OpKind::MaxPoolInt8(w) | OpKind::AvgPoolInt8(w) => {
            let opcode = match op.kind {
                OpKind::MaxPoolInt8(_) => Opcode::MAX_POOL_I8,
                _ => Opcode::AVG_POOL_I8,
            };
            // The block is input 1, not a window source.
            CommandDescriptor {
                src1: 0,
                ..window(op, &w, cmd(opcode))?
            }
        }
        OpKind::MatMulInt8 { transpose_b } => {
            let [m, k] = [x.shape.dims()[0], x.shape.last()];
            CommandDescriptor {
                src0: x.addr.0,
                src1: op.inputs[1].addr.0,
                dst: op.output.addr.0,
                m: dim(m)?,
                n: dim(op.output.shape.last())?,
                k: dim(k)?,
                flags: match transpose_b {
                    true => base.flags.union(CommandFlags::TRANSPOSE_B),
                    false => base.flags,
                },
                ..cmd(Opcode::GEMM_I8)
            }
        }
        OpKind::AddInt8 => {
            let b = op.inputs[1]
                .shape
                .elements()
                .ok_or(Error::InvalidArgument)?;
            // `n` 0: `b` has `len` elements, as before ABI 1.9.
            let n = match b == elements {
                true => 0,
                false if add_i8_broadcast => dim(b)?,
                false => {
                    return Err(Error::BeyondCommand {
                        what: "a broadcast int8 Add (ADD_I8's `n`) on a device before ABI 1.9",
                    });
                }
            };
            CommandDescriptor {
                src1: op.inputs[1].addr.0,
                n,
                ..flat(Opcode::ADD_I8)
            }
        }
        OpKind::Quantize | OpKind::Dequantize => CommandDescriptor {
            // The block's scales: 1, or the last axis' (validated).
            n: dim(block.shape.last().saturating_sub(HEADER_WORDS as u64))?,
            ..flat(match op.kind {
                OpKind::Quantize => Opcode::QUANTIZE_I8,
                _ => Opcode::DEQUANTIZE_I8,
            })
        },
        OpKind::SoftmaxInt8 => CommandDescriptor {
            n: dim(x.shape.last())?,
            ..flat(Opcode::SOFTMAX_I8)
        },
        OpKind::LookupInt8 => flat(Opcode::LOOKUP_I8),
        OpKind::MulInt8 => CommandDescriptor {
            src1: op.inputs[1].addr.0,
            n: dim(op.inputs[1]
                .shape
                .elements()
                .ok_or(Error::InvalidArgument)?)?,
            ..flat(Opcode::MUL_I8)
        },
        _ => return Err(Error::Undeclared { op: op.kind.name() }),
    };
    emit(&CommandDescriptor {
        src2: block.addr.0,
        ..command
    })
}

/// A window command: the geometry packed as `docs/device-abi.md` says.
/// Sizes beyond the packing (a dimension over 65535, a stride or dilation
/// over 15, a leading padding over 255) are `Unsupported`.
fn window(
    op: &OpDesc<'_>,
    w: &Window,
    base: CommandDescriptor,
) -> Result<CommandDescriptor, Error> {
    // The forward op's input and output, and its output channels.
    let shape = |i: usize| op.inputs[i].shape;
    let (x, o, k) = match op.kind {
        OpKind::Conv2D(_)
        | OpKind::FusedConv2D(..)
        | OpKind::DepthwiseConv2D(_)
        | OpKind::Conv2DInt8(_)
        | OpKind::DepthwiseConv2DInt8(_) => (shape(0), op.output.shape, shape(1).last()),
        OpKind::Conv2DBackpropInput(_) => (op.output.shape, shape(0), shape(1).last()),
        OpKind::Conv2DBackpropFilter(_) => (shape(0), shape(1), shape(1).last()),
        OpKind::MaxPoolGrad(_) => (shape(0), shape(1), 0),
        OpKind::AvgPoolGrad(_) => (op.output.shape, shape(0), 0),
        _ => (shape(0), op.output.shape, 0),
    };
    let (x, o) = (x.dims(), o.dims());
    let beyond = |what| Error::BeyondCommand { what };
    let small = |v: u64| {
        u16::try_from(v).map_err(|_| beyond("a height, width or channel count over 65535"))
    };
    let step = |v: u16| {
        u8::try_from(v)
            .ok()
            .filter(|&s| s <= WindowFields::MAX_STEP)
            .ok_or(beyond("a stride or dilation over 15"))
    };
    let pad = |v: u16| u8::try_from(v).map_err(|_| beyond("a leading padding over 255"));
    let fields = WindowFields {
        batch: dim(x[0])?,
        input: [small(x[1])?, small(x[2])?],
        channels: small(x[3])?,
        k: small(k)?,
        size: w.size,
        output: [small(o[1])?, small(o[2])?],
        stride: [step(w.stride[0])?, step(w.stride[1])?],
        dilation: [step(w.dilation[0])?, step(w.dilation[1])?],
        pad: [pad(w.pad[0])?, pad(w.pad[2])?],
    };
    Ok(CommandDescriptor {
        src0: op.inputs[0].addr.0,
        src1: op.inputs.get(1).map_or(0, |f| f.addr.0),
        dst: op.output.addr.0,
        ..fields.pack(base)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tensorplug_core::accelerator::{DeviceAddr, Shape, TensorDesc};

    /// `ADD_I8`'s `n`: 0 for one shape; `b`'s count when it broadcasts,
    /// and only on a device of ABI 1.9 or later.
    #[test]
    fn an_int8_add_sends_n_only_when_it_broadcasts_and_the_device_knows_it() {
        let t = |addr: u64, dims: &[u64], dtype| {
            TensorDesc::new(DeviceAddr(addr), dtype, Shape::new(dims).unwrap())
        };
        let block = t(0x300, &[14], DType::I32);
        let n_of = |b: &[u64], add_i8_broadcast| {
            let inputs = [t(0, &[2, 3, 4], DType::I8), t(0x100, b, DType::I8), block];
            let op = OpDesc {
                kind: OpKind::AddInt8,
                inputs: &inputs,
                output: t(0x200, &[2, 3, 4], DType::I8),
                op_id: 0,
            };
            let mut sent = None;
            let base = CommandDescriptor::new(Opcode::NOP, 1, 0);
            lower_int8(&op, base, add_i8_broadcast, &mut |c| {
                sent = Some((c.opcode, c.len, c.n));
                Ok(())
            })
            .map(|()| sent.unwrap())
        };
        assert_eq!(n_of(&[2, 3, 4], false), Ok((Opcode::ADD_I8, 24, 0)));
        assert_eq!(n_of(&[1, 3, 4], true), Ok((Opcode::ADD_I8, 24, 12)));
        assert_eq!(n_of(&[4], true), Ok((Opcode::ADD_I8, 24, 4)));
        assert!(matches!(
            n_of(&[4], false),
            Err(Error::BeyondCommand { .. })
        ));
    }
}
