//! The commands of the float32 ops besides `FULLY_CONNECTED`: a launch,
//! and the fused activation after it through a temporary when the
//! device's op does not apply it.

use super::command::Command;
use crate::ops::DeviceOp;
use tensorplug_core::accelerator::{
    Activation, Binary, DType, DeviceAddr, OpKind, Shape, TensorDesc, Unary, batch_matmul,
};

type Lookup<'a, T> = &'a dyn Fn(T) -> Result<TensorDesc, String>;
type Viewed<'a> = &'a dyn Fn(i32, &[u64]) -> Result<TensorDesc, String>;
type Constant<'a> = &'a dyn Fn(usize) -> Result<DeviceAddr, String>;

/// What a node's plan reads of its kernel: its temporaries, its tensors'
/// device views, and its own constants.
pub struct Views<'a> {
    pub temps: &'a [DeviceAddr],
    /// Tensor `t` viewed with `dims`.
    pub desc: Viewed<'a>,
    /// Tensor `t` with its own dims.
    pub full_desc: Lookup<'a, i32>,
    /// The node's `i`th own constant.
    pub constant: Constant<'a>,
}

/// How many output-sized temporaries `op` needs.
pub(super) fn temps(op: &DeviceOp) -> usize {
    let act = |a: &Activation| usize::from(*a != Activation::None);
    match op {
        DeviceOp::Binary { activation, .. } | DeviceOp::PoolF32 { activation, .. } => {
            act(activation)
        }
        DeviceOp::FullyConnected {
            bias, activation, ..
        } => match (bias, activation) {
            (_, Activation::None) | (Some(_), Activation::Relu) => 0,
            _ => 1,
        },
        DeviceOp::MeanLastF32 { .. } => 1,
        DeviceOp::HardSwishF32 { .. } => 2,
        DeviceOp::ConvF32 {
            kind: OpKind::DepthwiseConv2D(_),
            bias,
            activation,
            ..
        } => usize::from(bias.is_some()) + act(activation),
        _ => 0,
    }
}

/// A float32 op's commands.
pub fn plan(node: i32, op: &DeviceOp, v: &Views<'_>) -> Result<Vec<Command>, String> {
    let temps = v.temps;
    let launch = |kind: OpKind, inputs: Vec<TensorDesc>, output: TensorDesc| Command::Launch {
        node,
        kind,
        inputs,
        output,
    };
    let shape = |d: &[u64]| Shape::new(d).ok_or_else(|| format!("node {node}: shape {d:?}"));
    let mut commands = Vec::new();
    // `kind` into `out`, or into the temporary `temps[at]` and the
    // activation from there into `out`.
    let then_activate =
        |commands: &mut Vec<Command>, kind, inputs, out: TensorDesc, act, at: usize| {
            match crate::ops::activation_op(act) {
                None => commands.push(launch(kind, inputs, out)),
                Some(op) => {
                    let t = TensorDesc {
                        addr: *temps.get(at).ok_or("a missing temporary")?,
                        ..out
                    };
                    commands.push(launch(kind, inputs, t));
                    commands.push(launch(OpKind::Unary(op), vec![t], out));
                }
            }
            Ok::<(), String>(())
        };
    match *op {
        DeviceOp::Binary {
            op,
            a,
            b,
            out,
            activation,
        } => {
            let inputs = vec![(v.full_desc)(a)?, (v.full_desc)(b)?];
            let out = (v.full_desc)(out)?;
            then_activate(
                &mut commands,
                OpKind::Binary(op),
                inputs,
                out,
                activation,
                0,
            )?;
        }
        DeviceOp::Unary { op, x, out } => {
            let inputs = vec![(v.full_desc)(x)?];
            then_activate(
                &mut commands,
                OpKind::Unary(op),
                inputs,
                (v.full_desc)(out)?,
                Activation::None,
                0,
            )?;
        }
        DeviceOp::ViewF32 {
            kind,
            x,
            out,
            ref dims,
        } => {
            let inputs = vec![(v.desc)(x, dims)?];
            then_activate(
                &mut commands,
                kind,
                inputs,
                (v.desc)(out, dims)?,
                Activation::None,
                0,
            )?;
        }
        DeviceOp::PoolF32 {
            x,
            out,
            kind,
            x_dims,
            out_dims,
            activation,
        } => {
            let inputs = vec![(v.desc)(x, &x_dims)?];
            then_activate(
                &mut commands,
                kind,
                inputs,
                (v.desc)(out, &out_dims)?,
                activation,
                0,
            )?;
        }
        DeviceOp::SoftmaxF32 {
            x,
            out,
            rows,
            depth,
        } => {
            let inputs = vec![(v.desc)(x, &[rows, depth])?];
            let out = (v.desc)(out, &[rows, depth])?;
            then_activate(
                &mut commands,
                OpKind::Softmax,
                inputs,
                out,
                Activation::None,
                0,
            )?;
        }
        DeviceOp::ConvF32 {
            x,
            out,
            kind,
            x_dims,
            filter_dims,
            out_dims,
            ref bias,
            activation,
            ..
        } => {
            let filter = TensorDesc::new((v.constant)(0)?, DType::F32, shape(&filter_dims)?);
            let (xd, od) = ((v.desc)(x, &x_dims)?, (v.desc)(out, &out_dims)?);
            let bias = match bias {
                Some(_) => Some(TensorDesc::new(
                    (v.constant)(1)?,
                    DType::F32,
                    shape(&[out_dims[3]])?,
                )),
                None => None,
            };
            match (kind, bias) {
                (OpKind::FusedConv2D(..), Some(b)) => {
                    commands.push(launch(kind, vec![xd, filter, b], od));
                }
                (_, Some(b)) => {
                    // The depthwise result, then its bias (and activation).
                    let t = TensorDesc {
                        addr: *temps.first().ok_or("a missing temporary")?,
                        ..od
                    };
                    commands.push(launch(kind, vec![xd, filter], t));
                    let inputs = vec![t, b];
                    then_activate(&mut commands, OpKind::BiasAdd, inputs, od, activation, 1)?;
                }
                (_, None) => {
                    let inputs = vec![xd, filter];
                    then_activate(&mut commands, kind, inputs, od, activation, 0)?;
                }
            }
        }
        DeviceOp::ScaleF32 { x, out, .. } => {
            let factor = TensorDesc::new((v.constant)(0)?, DType::F32, shape(&[1])?);
            let (xd, od) = ((v.full_desc)(x)?, (v.full_desc)(out)?);
            commands.push(launch(OpKind::Binary(Binary::MUL), vec![xd, factor], od));
        }
        DeviceOp::HardSwishF32 { x, out } => {
            let one = shape(&[1])?;
            let three = TensorDesc::new((v.constant)(0)?, DType::F32, one);
            let six = TensorDesc::new((v.constant)(1)?, DType::F32, one);
            let (xd, od) = ((v.full_desc)(x)?, (v.full_desc)(out)?);
            let temp = |i: usize| {
                temps
                    .get(i)
                    .map(|&addr| TensorDesc { addr, ..od })
                    .ok_or("a missing temporary")
            };
            let (a, b) = (temp(0)?, temp(1)?);
            commands.push(launch(OpKind::Binary(Binary::ADD), vec![xd, three], a));
            commands.push(launch(OpKind::Unary(Unary::RELU6), vec![a], b));
            commands.push(launch(OpKind::Binary(Binary::MUL), vec![xd, b], a));
            commands.push(launch(OpKind::Binary(Binary::DIV), vec![a, six], od));
        }
        DeviceOp::MeanLastF32 { x, out, rows, n } => {
            let count = TensorDesc::new((v.constant)(0)?, DType::F32, shape(&[1])?);
            let od = (v.desc)(out, &[rows])?;
            let sums = TensorDesc {
                addr: *temps.first().ok_or("a missing temporary")?,
                ..od
            };
            commands.push(launch(
                OpKind::ReduceSum,
                vec![(v.desc)(x, &[rows, n])?],
                sums,
            ));
            commands.push(launch(OpKind::Binary(Binary::DIV), vec![sums, count], od));
        }
        DeviceOp::TransposeF32 { x, out, perm } => {
            let (xd, od) = ((v.full_desc)(x)?, (v.full_desc)(out)?);
            commands.push(launch(OpKind::Transpose(perm), vec![xd], od));
        }
        DeviceOp::BatchMatMulF32 {
            x,
            y,
            out,
            batch,
            m,
            k,
            n,
            adj_x,
            adj_y,
            record,
        } => {
            let kind = OpKind::MatMul {
                transpose_a: adj_x,
                transpose_b: adj_y,
            };
            let xs = if adj_x { [k, m] } else { [m, k] };
            let ys = if adj_y { [n, k] } else { [k, n] };
            if record {
                let batched = |t, d: [u64; 2]| (v.desc)(t, &[batch, d[0], d[1]]);
                let inputs = vec![batched(x, xs)?, batched(y, ys)?];
                let kind = batch_matmul(adj_x, adj_y);
                commands.push(launch(kind, inputs, batched(out, [m, n])?));
                return Ok(commands);
            }
            let (xd, yd, od) = (
                (v.desc)(x, &xs)?,
                (v.desc)(y, &ys)?,
                (v.desc)(out, &[m, n])?,
            );
            // Batch element `b` of a view: its bytes from `b` times its size.
            let at = |d: TensorDesc, b: u64, elems: u64| TensorDesc {
                addr: DeviceAddr(d.addr.0 + b * elems * 4),
                ..d
            };
            for b in 0..batch {
                let inputs = vec![at(xd, b, m * k), at(yd, b, k * n)];
                commands.push(launch(kind, inputs, at(od, b, m * n)));
            }
        }
        _ => return Err(format!("node {node} is not a float32 op")),
    }
    Ok(commands)
}
