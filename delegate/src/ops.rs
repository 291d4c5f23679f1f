//! Which nodes the device takes: each node's op, version, element types,
//! fused activation and shapes, checked against what the device declares
//! ([`Capabilities`]). The same function decides at partitioning and
//! rebuilds the plan in the kernel, so the two cannot disagree.

use crate::graph::{Graph, NodeView, TensorView};
use tensorplug_abi::tflite::{
    TfLiteAddParams, TfLiteFullyConnectedParams, TfLiteFusedActivation, TfLiteType, builtin_name,
    kTfLiteBuiltinAdd, kTfLiteBuiltinFullyConnected, kTfLiteBuiltinRelu, kTfLiteOptionalTensor,
};
use tensorplug_core::accelerator::{
    Binary, Capabilities, DType, OpKind, Shape, Unary, broadcast_shapes,
};

/// The ops the delegate can hand to a device, as the report names them.
pub const OP_SET: &str = "float32 FULLY_CONNECTED (activation none or RELU), ADD (activation \
                          none or RELU), RELU";

/// A node the device runs: one or two device launches.
#[derive(Clone, Debug, PartialEq)]
pub enum DeviceOp {
    /// `out[m,n] = x[m,k] · w[n,k]ᵀ (+ bias[n]) (then ReLU)`.
    FullyConnected {
        x: i32,
        w: i32,
        bias: Option<i32>,
        out: i32,
        m: u64,
        k: u64,
        n: u64,
        relu: bool,
    },
    /// `out = a + b` with broadcasting (then ReLU).
    Add {
        a: i32,
        b: i32,
        out: i32,
        relu: bool,
    },
    /// `out = max(x, 0)`.
    Relu { x: i32, out: i32 },
}

/// The schema name of a node's op (`BUILTIN_<code>` when the table lacks it).
pub fn op_name(code: i32) -> String {
    builtin_name(code).map_or_else(|| format!("BUILTIN_{code}"), str::to_owned)
}

/// What the device does with `node`, or why it stays on the CPU.
#[allow(non_upper_case_globals)] // TFLite's C names
pub fn decide(graph: &Graph, node: &NodeView, caps: &Capabilities) -> Result<DeviceOp, String> {
    let tensor = |i: i32| graph.tensor(i);
    match node.builtin_code {
        kTfLiteBuiltinFullyConnected => fully_connected(node, &tensor, caps),
        kTfLiteBuiltinAdd => add(node, &tensor, caps),
        kTfLiteBuiltinRelu => {
            let (x, out) = one_in_one_out(node)?;
            let (xt, ot) = (tensor(x)?, tensor(out)?);
            all_f32(&[&xt, &ot])?;
            if xt.dims != ot.dims {
                return Err(format!(
                    "output {:?} is not the input's {:?}",
                    ot.dims, xt.dims
                ));
            }
            shape(&xt)?;
            need(caps, OpKind::Unary(Unary::RELU))?;
            Ok(DeviceOp::Relu { x, out })
        }
        code => Err(format!(
            "{} is not in the delegate's op set ({OP_SET})",
            op_name(code)
        )),
    }
}

fn fully_connected(
    node: &NodeView,
    tensor: &dyn Fn(i32) -> Result<TensorView, String>,
    caps: &Capabilities,
) -> Result<DeviceOp, String> {
    let [x, w, rest @ ..] = node.inputs.as_slice() else {
        return Err(format!("{} inputs, expected 2 or 3", node.inputs.len()));
    };
    let bias = match rest {
        [] => None,
        [b] if *b == kTfLiteOptionalTensor => None,
        [b] => Some(*b),
        _ => return Err(format!("{} inputs, expected 2 or 3", node.inputs.len())),
    };
    let [out] = node.outputs.as_slice() else {
        return Err(format!("{} outputs, expected 1", node.outputs.len()));
    };
    if node.builtin_data.is_null() {
        return Err("no FullyConnected parameters".into());
    }
    // SAFETY: a FULLY_CONNECTED node's builtin data is the runtime's
    // TfLiteFullyConnectedParams, whose first fields we mirror.
    let params = unsafe { *node.builtin_data.cast::<TfLiteFullyConnectedParams>() };
    if params.weights_format != 0 {
        return Err(format!(
            "weights format {} (only the default)",
            params.weights_format
        ));
    }
    let relu = activation(params.activation)?;
    let (xt, wt, ot) = (tensor(*x)?, tensor(*w)?, tensor(*out)?);
    let mut ts = vec![&xt, &wt, &ot];
    let bt = bias.map(tensor).transpose()?;
    if let Some(bt) = &bt {
        ts.push(bt);
    }
    all_f32(&ts)?;
    if !wt.constant || bt.as_ref().is_some_and(|b| !b.constant) {
        return Err("weights or bias are not constant tensors".into());
    }
    let [n, k] = wt.dims[..] else {
        return Err(format!("weights of rank {}, expected 2", wt.dims.len()));
    };
    let elements: usize = xt.dims.iter().product();
    if k == 0 || !elements.is_multiple_of(k) {
        return Err(format!(
            "input {:?} does not flatten to rows of {k}",
            xt.dims
        ));
    }
    let m = elements / k;
    if ot.dims.iter().product::<usize>() != m * n {
        return Err(format!("output {:?} is not {m}×{n}", ot.dims));
    }
    if let Some(bt) = &bt
        && bt.dims != [n]
    {
        return Err(format!("bias {:?}, expected [{n}]", bt.dims));
    }
    let kind = match bias {
        Some(_) => OpKind::FusedMatMul {
            transpose_a: false,
            transpose_b: true,
            relu,
        },
        None => OpKind::MatMul {
            transpose_a: false,
            transpose_b: true,
        },
    };
    need(caps, kind)?;
    if relu && bias.is_none() {
        need(caps, OpKind::Unary(Unary::RELU))?;
    }
    let u = |v: usize| v as u64;
    Ok(DeviceOp::FullyConnected {
        x: *x,
        w: *w,
        bias,
        out: *out,
        m: u(m),
        k: u(k),
        n: u(n),
        relu,
    })
}

fn add(
    node: &NodeView,
    tensor: &dyn Fn(i32) -> Result<TensorView, String>,
    caps: &Capabilities,
) -> Result<DeviceOp, String> {
    let ([a, b], [out]) = (node.inputs.as_slice(), node.outputs.as_slice()) else {
        return Err("expected 2 inputs and 1 output".into());
    };
    if node.builtin_data.is_null() {
        return Err("no Add parameters".into());
    }
    // SAFETY: an ADD node's builtin data is the runtime's TfLiteAddParams.
    let params = unsafe { *node.builtin_data.cast::<TfLiteAddParams>() };
    let relu = activation(params.activation)?;
    let (at, bt, ot) = (tensor(*a)?, tensor(*b)?, tensor(*out)?);
    all_f32(&[&at, &bt, &ot])?;
    let result = broadcast_shapes(&shape(&at)?, &shape(&bt)?)
        .map_err(|e| format!("shapes {:?} and {:?}: {e:?}", at.dims, bt.dims))?;
    if result != shape(&ot)? {
        return Err(format!("output {:?} is not the broadcast shape", ot.dims));
    }
    need(caps, OpKind::Binary(Binary::ADD))?;
    if relu {
        need(caps, OpKind::Unary(Unary::RELU))?;
    }
    Ok(DeviceOp::Add {
        a: *a,
        b: *b,
        out: *out,
        relu,
    })
}

/// A tensor's shape as the device takes it (`Err`: a rank above its
/// maximum).
fn shape(t: &TensorView) -> Result<Shape, String> {
    let dims: Vec<u64> = t.dims.iter().map(|&d| d as u64).collect();
    Shape::new(&dims).ok_or_else(|| format!("tensor {} of rank {}", t.index, t.dims.len()))
}

fn one_in_one_out(node: &NodeView) -> Result<(i32, i32), String> {
    match (node.inputs.as_slice(), node.outputs.as_slice()) {
        ([x], [out]) => Ok((*x, *out)),
        _ => Err("expected 1 input and 1 output".into()),
    }
}

/// Whether a fused activation is ReLU (`Err`: one the delegate lacks).
fn activation(act: TfLiteFusedActivation) -> Result<bool, String> {
    match act {
        TfLiteFusedActivation::kTfLiteActNone => Ok(false),
        TfLiteFusedActivation::kTfLiteActRelu => Ok(true),
        other => Err(format!("fused activation {other:?} (only none or RELU)")),
    }
}

fn all_f32(tensors: &[&TensorView]) -> Result<(), String> {
    match tensors
        .iter()
        .find(|t| t.dtype != TfLiteType::kTfLiteFloat32)
    {
        Some(t) => Err(format!("tensor {} is {:?}, not float32", t.index, t.dtype)),
        None => Ok(()),
    }
}

fn need(caps: &Capabilities, kind: OpKind) -> Result<(), String> {
    if caps.supports(kind, DType::F32) {
        Ok(())
    } else {
        Err(format!("the device does not declare {kind:?} in float32"))
    }
}
