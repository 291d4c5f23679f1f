//! The commands of the float32 ops besides `FULLY_CONNECTED`: a launch,
//! and the fused activation after it through a temporary when the
//! device's op does not apply it.

use super::{Command, Kernel};
use crate::ops::DeviceOp;
use tensorplug_core::accelerator::{Activation, DType, OpKind, Shape, TensorDesc};

/// How many output-sized temporaries `op` needs.
pub(super) fn temps(op: &DeviceOp) -> usize {
    let act = |a: &Activation| usize::from(*a != Activation::None);
    match op {
        DeviceOp::Binary { activation, .. } | DeviceOp::PoolF32 { activation, .. } => {
            act(activation)
        }
        DeviceOp::FullyConnected {
            bias: None,
            relu: true,
            ..
        } => 1,
        DeviceOp::ConvF32 {
            kind: OpKind::DepthwiseConv2D(_),
            bias,
            activation,
            ..
        } => usize::from(bias.is_some()) + act(activation),
        _ => 0,
    }
}

impl Kernel {
    /// A float32 op's commands.
    pub(super) fn float_plan(&self, node: i32, op: &DeviceOp) -> Result<Vec<Command>, String> {
        let temps = self.temps.get(&node).map_or(&[][..], Vec::as_slice);
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
                let inputs = vec![self.full_desc(a)?, self.full_desc(b)?];
                let out = self.full_desc(out)?;
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
                let inputs = vec![self.full_desc(x)?];
                then_activate(
                    &mut commands,
                    OpKind::Unary(op),
                    inputs,
                    self.full_desc(out)?,
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
                let inputs = vec![self.desc(x, &x_dims)?];
                then_activate(
                    &mut commands,
                    kind,
                    inputs,
                    self.desc(out, &out_dims)?,
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
                let inputs = vec![self.desc(x, &[rows, depth])?];
                let out = self.desc(out, &[rows, depth])?;
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
                let filter =
                    TensorDesc::new(self.constant(node, 0)?, DType::F32, shape(&filter_dims)?);
                let (xd, od) = (self.desc(x, &x_dims)?, self.desc(out, &out_dims)?);
                let bias = match bias {
                    Some(_) => Some(TensorDesc::new(
                        self.constant(node, 1)?,
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
            _ => return Err(format!("node {node} is not a float32 op")),
        }
        Ok(commands)
    }
}
