//! Which TF nodes a device program holds, and how each lowers to one
//! catalogue command: its [`OpKind`] and output shape from its input
//! shapes, or, for a view ([`VIEW_OPS`]), a copy into its new shape. The
//! graph pass asks [`supported`]; the program kernel, [`lower`] and
//! [`view_shape`], once per input shapes.

use super::super::failure::{Failure, KernelResult};
use super::super::ops::int8::{
    int8_kernel, lower_for_program as int8_lower, program_holds as int8_holds,
};
use super::super::ops::window::{
    gradient_ops, gradient_sizes_input, lower_for_program, lower_gradient_for_program,
    program_holds,
};
use super::super::ops::{self, TfKernel};
use super::super::tf::AttrSource;
pub use super::batched::needs_record;
use super::batched::{self, BATCHED};
use super::pieces::Lowering;
use super::reduce;
pub use super::reduce::{AXES_ATTR, REDUCE_OPS};
use super::rows;
use crate::graph::nodes::{attr_of, type_attr};
use crate::graph::proto::{DataType, NodeDef, attr_value::Value};
use std::ffi::CStr;
use tensorplug_core::accelerator::{
    DType, DeviceAddr, MAX_RANK, OpDesc, OpKind, Shape, TensorDesc,
};

/// A node's attributes as a kernel reads them at construction.
struct NodeAttrs<'a>(&'a NodeDef);

impl AttrSource for NodeAttrs<'_> {
    fn string(&self, name: &CStr) -> KernelResult<String> {
        match attr_of(self.0, &name.to_string_lossy()) {
            Some(Value::S(s)) => Ok(String::from_utf8_lossy(s).into_owned()),
            _ => Err(Failure::invalid(format!("no string attribute {name:?}"))),
        }
    }
    fn string_list(&self, name: &CStr) -> KernelResult<Vec<String>> {
        match attr_of(self.0, &name.to_string_lossy()) {
            Some(Value::List(l)) => Ok(l
                .s
                .iter()
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect()),
            None => Ok(Vec::new()),
            _ => Err(Failure::invalid(format!(
                "no string list attribute {name:?}"
            ))),
        }
    }
    fn int(&self, name: &CStr) -> KernelResult<i32> {
        match attr_of(self.0, &name.to_string_lossy()) {
            Some(&Value::I(i)) => i32::try_from(i).map_err(|_| Failure::invalid("int attribute")),
            _ => Err(Failure::invalid(format!("no int attribute {name:?}"))),
        }
    }
    fn int_list(&self, name: &CStr) -> KernelResult<Vec<i64>> {
        match attr_of(self.0, &name.to_string_lossy()) {
            Some(Value::List(l)) => Ok(l.i.clone()),
            None => Ok(Vec::new()),
            _ => Err(Failure::invalid(format!("no int list attribute {name:?}"))),
        }
    }
}

/// TF's window ops a program holds.
const WINDOW_OPS: [&str; 5] = [
    "Conv2D",
    "_FusedConv2D",
    "DepthwiseConv2dNative",
    "MaxPool",
    "AvgPool",
];

/// Views a program holds: ops that keep their input's bytes and change its
/// shape. A `Reshape` only with a constant shape, which the graph pass
/// writes into the segment's copy of the node ([`SHAPE_ATTR`]).
pub const VIEW_OPS: [&str; 2] = ["Reshape", "Squeeze"];

/// A segment `Reshape`'s constant shape (TF's, with at most one -1).
pub const SHAPE_ATTR: &str = "_tensorplug_shape";

/// A segment `Transpose`'s constant permutation.
pub const PERM_ATTR: &str = "_tensorplug_perm";

/// A segment `Transpose`'s permutation ([`PERM_ATTR`]) and its length, if
/// every entry is an axis.
fn constant_perm(node: &NodeDef) -> Option<([u8; MAX_RANK], usize)> {
    let Some(Value::List(l)) = attr_of(node, PERM_ATTR) else {
        return None;
    };
    let mut perm = [0u8; MAX_RANK];
    if l.i.len() > MAX_RANK {
        return None;
    }
    for (p, &i) in perm.iter_mut().zip(&l.i) {
        *p = u8::try_from(i)
            .ok()
            .filter(|&a| usize::from(a) < MAX_RANK)?;
    }
    Some((perm, l.i.len()))
}

/// A segment window gradient's constant sizes (TF's `input_sizes`,
/// `filter_sizes` or `orig_input_shape`).
pub const SIZES_ATTR: &str = "_tensorplug_sizes";

/// The TF op type of `node` as a `'static` name (a profiler label), if a
/// program can hold it.
pub fn static_op(op: &str) -> Option<&'static str> {
    const FIXED: [&str; 10] = [
        "MatMul",
        "_FusedMatMul",
        "BiasAdd",
        "BatchMatMul",
        "BatchMatMulV2",
        "Einsum",
        "Transpose",
        "ConcatV2",
        "BiasAddGrad",
        "Split",
    ];
    FIXED
        .iter()
        .chain(&WINDOW_OPS)
        .chain(&VIEW_OPS)
        .chain(&REDUCE_OPS)
        .copied()
        .find(|&n| n == op)
        .or_else(|| gradient_ops().find(|&n| n == op))
        .or_else(|| elementwise(op).and_then(|k| k.op().to_str().ok()))
        .or_else(|| int8_kernel(op).and_then(|k| k.op().to_str().ok()))
        .or_else(|| (op == super::fuse::LAYER_NORM_OP).then_some("LayerNorm"))
        .or_else(|| (op == super::fuse::GELU_OP).then_some("Gelu"))
}

/// The types a node's command reads and writes: an int8 op's (its
/// operands', its output's); `None` for the float32 ops, every operand and
/// the output float32.
pub fn node_types(node: &NodeDef) -> Option<(&'static [DType], DType)> {
    if VIEW_OPS.contains(&node.op.as_str()) && type_attr(node, "T") == Some(DataType::DtInt8 as i32)
    {
        // A view of int8 data (a quantized `Flatten`): the same bytes.
        return Some((&[DType::I8], DType::I8));
    }
    int8_kernel(&node.op).and_then(|k| k.family()?.operand_types())
}

/// The element type `node`'s command takes at data input `slot`.
pub fn input_type(node: &NodeDef, slot: usize) -> DType {
    node_types(node)
        .and_then(|(operands, _)| operands.get(slot).copied())
        .unwrap_or(DType::F32)
}

/// The element type of `node`'s output.
pub fn output_type(node: &NodeDef) -> DType {
    node_types(node).map_or(DType::F32, |(_, out)| out)
}

/// TF's type for a program's element type.
pub fn tf_data_type(dtype: DType) -> DataType {
    match dtype {
        DType::I8 => DataType::DtInt8,
        DType::I32 => DataType::DtInt32,
        _ => DataType::DtFloat,
    }
}

/// An int8 node's `transpose_b` (`MatMulInt8`'s; false for the others).
fn transpose_b(node: &NodeDef) -> Option<bool> {
    match attr_of(node, "transpose_b") {
        None => Some(false),
        Some(&Value::B(b)) => Some(b),
        Some(_) => None,
    }
}

/// The kernel of an element-wise or softmax op `op`: one command whose
/// attributes are its [`TfKernel::family`] (a kernel that launches more,
/// as a comparison's cast of its mask to bool, is not one command).
fn elementwise(op: &str) -> Option<&'static dyn TfKernel> {
    ops::builtin().find(|k| {
        k.op().to_bytes() == op.as_bytes()
            && k.also_launches().is_empty()
            && matches!(
                k.family(),
                Some(OpKind::Unary(_) | OpKind::Binary(_) | OpKind::Softmax | OpKind::LogSoftmax)
            )
    })
}

/// Whether a program can hold `node`: a float32 op of the table, an int8
/// op of the plugin's, or a view of float32 or int8 data, whose attributes
/// the device takes, on one output (a `Split`: on its pieces).
pub fn supported(node: &NodeDef) -> bool {
    if int8_kernel(&node.op).is_some() {
        let Some((operands, _)) = node_types(node) else {
            return false;
        };
        // An int8 op: its attributes as its kernel reads them, and its
        // operands, the quantization block last.
        let data_inputs = node.input.iter().filter(|i| !i.starts_with('^')).count();
        return data_inputs == operands.len()
            && transpose_b(node).is_some()
            && int8_holds(&node.op, &NodeAttrs(node));
    }
    let float = type_attr(node, "T") == Some(DataType::DtFloat as i32);
    if WINDOW_OPS.contains(&node.op.as_str()) {
        return float && program_holds(&node.op, &NodeAttrs(node));
    }
    if let Some(sizes) = gradient_sizes_input(&node.op) {
        let constant = sizes.is_none() || attr_of(node, SIZES_ATTR).is_some();
        return float && constant && program_holds(&node.op, &NodeAttrs(node));
    }
    // A view keeps its input's bytes: of float32 or of int8.
    let view_type = float || type_attr(node, "T") == Some(DataType::DtInt8 as i32);
    match node.op.as_str() {
        "Squeeze" => return view_type,
        "Transpose" => return float && constant_perm(node).is_some(),
        "Reshape" => return view_type && attr_of(node, SHAPE_ATTR).is_some(),
        op if REDUCE_OPS.contains(&op) => return float && attr_of(node, AXES_ATTR).is_some(),
        // Its values, the axis a constant the pass moved into the node.
        "ConcatV2" => {
            let data_inputs = node.input.iter().filter(|i| !i.starts_with('^')).count();
            let n = match attr_of(node, "N") {
                Some(&Value::I(n)) => usize::try_from(n).ok(),
                _ => None,
            };
            return float && attr_of(node, AXES_ATTR).is_some() && n == Some(data_inputs);
        }
        "BiasAddGrad" => return float && nhwc(node),
        // Its value, the axis a constant the pass moved into the node.
        "Split" => {
            let data_inputs = node.input.iter().filter(|i| !i.starts_with('^')).count();
            let pieces = matches!(attr_of(node, "num_split"), Some(&Value::I(1..)));
            return float && pieces && data_inputs == 1 && attr_of(node, AXES_ATTR).is_some();
        }
        "Neg" | "Square" => {
            let data_inputs = node.input.iter().filter(|i| !i.starts_with('^')).count();
            return float && data_inputs == 1;
        }
        op if BATCHED.contains(&op) || op == "Einsum" => return float && batched::holds(node),
        _ => {}
    }
    // One float32 type, and the arity of its command: an op whose kernel
    // shares a family but takes more (`SparseSoftmaxCrossEntropyWithLogits`
    // is a softmax with int labels and two outputs) stays op by op.
    let one_type = node
        .attr
        .iter()
        .all(|(k, v)| k == "T" || !matches!(v.value, Some(Value::Type(_))));
    let data_inputs = node.input.iter().filter(|i| !i.starts_with('^')).count();
    let arity = match kind(node) {
        Some(OpKind::Unary(_) | OpKind::Softmax | OpKind::LogSoftmax) => 1,
        Some(OpKind::Binary(_) | OpKind::MatMul { .. } | OpKind::BiasAdd) => 2,
        Some(OpKind::FusedMatMul { .. }) => 3,
        _ => return false,
    };
    static_op(&node.op).is_some() && float && one_type && data_inputs == arity
}

/// The node's catalogue op with its attributes (shapes aside).
fn kind(node: &NodeDef) -> Option<OpKind> {
    let flag = |key: &str| match attr_of(node, key) {
        None => Some(false),
        Some(&Value::B(b)) => Some(b),
        Some(_) => None,
    };
    Some(match node.op.as_str() {
        "MatMul" => OpKind::MatMul {
            transpose_a: flag("transpose_a")?,
            transpose_b: flag("transpose_b")?,
        },
        "_FusedMatMul" => {
            let ops: Vec<&[u8]> = match attr_of(node, "fused_ops") {
                Some(Value::List(l)) => l.s.iter().map(Vec::as_slice).collect(),
                _ => return None,
            };
            let relu = match ops.as_slice() {
                [b"BiasAdd"] => false,
                [b"BiasAdd", b"Relu"] => true,
                _ => return None,
            };
            if !matches!(attr_of(node, "num_args"), Some(Value::I(1))) {
                return None;
            }
            OpKind::FusedMatMul {
                transpose_a: flag("transpose_a")?,
                transpose_b: flag("transpose_b")?,
                relu,
            }
        }
        "Transpose" => OpKind::Transpose(constant_perm(node)?.0),
        "BiasAdd" if nhwc(node) => OpKind::BiasAdd,
        op => param_from(node, elementwise(op)?.family()?)?,
    })
}

/// Whether `node`'s `data_format` is NHWC (or not given).
fn nhwc(node: &NodeDef) -> bool {
    match attr_of(node, "data_format") {
        None => true,
        Some(Value::S(s)) => s == b"NHWC",
        Some(_) => false,
    }
}

/// The device op a node lowers to beyond the ops every program command
/// has, which the graph pass asks every device for: a batched product's
/// record, `ConcatV2`'s `Concat`, `Split`'s `Gather`.
pub fn needs_op(node: &NodeDef) -> Option<OpKind> {
    match node.op.as_str() {
        "ConcatV2" => Some(rows::CONCAT),
        "Split" => Some(rows::GATHER),
        _ => needs_record(node),
    }
}

/// `kind` with its parameter read from `node` (`LeakyRelu`'s `alpha`, as
/// the op-by-op kernel reads it); `None` if the attribute is missing.
fn param_from(node: &NodeDef, kind: OpKind) -> Option<OpKind> {
    let Some(name) = kind.decl().param() else {
        return Some(kind);
    };
    let &Value::F(value) = attr_of(node, name)? else {
        return None;
    };
    Some(ops::kernel::with_param(kind, value))
}

/// The most temporaries a node's lowering makes (a reduction's moved,
/// merged and summed rows, its divisor and quotient; `Neg`'s −1), for the
/// graph pass to keep a program within its buffers.
pub fn max_temps(node: &NodeDef) -> usize {
    match node.op.as_str() {
        op if REDUCE_OPS.contains(&op) => reduce::MAX_TEMPS,
        // `Neg`'s −1.
        "Neg" => 1,
        "ConcatV2" => rows::concat_temps(node.input.len()),
        "BiasAddGrad" => rows::BIAS_GRAD_TEMPS,
        "Split" => match attr_of(node, "num_split") {
            Some(&Value::I(n)) => rows::split_temps(usize::try_from(n).unwrap_or(0)),
            _ => 0,
        },
        // Two transposed and two copied operands, the product and its
        // result seen label by label.
        "Einsum" => 6,
        _ => 0,
    }
}

/// What `node` becomes for inputs of `shapes`: a view's copy, a
/// reduction's commands, or one launch.
///
/// # Errors
/// A node a program does not hold, or shapes its op refuses.
pub fn lower_node(node: &NodeDef, shapes: &[Shape]) -> Result<Lowering, String> {
    let named = |e: String| named_error(node, e);
    if gradient_sizes_input(&node.op).is_some() {
        let sizes = match attr_of(node, SIZES_ATTR) {
            Some(Value::List(l)) => l.i.clone(),
            _ => Vec::new(),
        };
        return match lower_gradient_for_program(&node.op, &NodeAttrs(node), shapes, &sizes) {
            Some(Ok((kind, out, inputs))) => Ok(Lowering::launch_over(kind, inputs, out)),
            Some(Err(f)) => Err(named(f.cause)),
            None => Err(named("is not an op a program holds".into())),
        };
    }
    if REDUCE_OPS.contains(&node.op.as_str()) {
        return match shapes {
            [x] => reduce::reduction(node, *x).map_err(named),
            _ => Err(named("takes one input in a program".into())),
        };
    }
    match (node.op.as_str(), shapes) {
        ("Einsum", _) => return batched::einsum(node, shapes).map_err(named),
        ("ConcatV2", _) => return rows::concat(node, shapes).map_err(named),
        ("BiasAddGrad", [x]) => return rows::bias_grad(*x).map_err(named),
        ("Split", [x]) => return rows::split(node, *x).map_err(named),
        ("BiasAddGrad" | "Split", _) => return Err(named("takes one input".into())),
        _ => {}
    }
    if let ("Transpose", [x]) = (node.op.as_str(), shapes) {
        let (_, len) = constant_perm(node).ok_or_else(|| named("no permutation".into()))?;
        if len != x.dims().len() {
            return Err(named(format!(
                "a permutation of {len} axes for an input of rank {}",
                x.dims().len()
            )));
        }
    }
    match (node.op.as_str(), shapes) {
        // `x · x`, and `x · (−1)` with the −1 filled: exact, as TF's `x * x`
        // and `-x` (the kernels' own lowering, `ops/neg_square.rs`).
        ("Square", [x]) => return Ok(Lowering::mul_by(*x, None)),
        ("Neg", [x]) => return Ok(Lowering::mul_by(*x, Some((-1f32).to_bits()))),
        (_, [one]) => {
            if let Some(out) = view_shape(node, *one) {
                return out.map(Lowering::view);
            }
        }
        (op, _) if VIEW_OPS.contains(&op) => {
            return Err(named("a view takes one input".into()));
        }
        _ => {}
    }
    let (kind, out) = lower(node, shapes)?;
    Ok(Lowering::launch(kind, shapes.len(), out))
}

/// `e` prefixed with `node`'s op and name.
pub(super) fn named_error(node: &NodeDef, e: String) -> String {
    format!("{} '{}': {e}", node.op, node.name)
}

/// `node`'s command for inputs of `shapes`: its op and output shape.
///
/// # Errors
/// A node a program does not hold, or shapes its op refuses (TF's own
/// kernel would refuse them too).
pub fn lower(node: &NodeDef, shapes: &[Shape]) -> Result<(OpKind, Shape), String> {
    let t = transpose_b(node).ok_or_else(|| named_error(node, "transpose_b".into()))?;
    if let Some(lowered) = int8_lower(&node.op, &NodeAttrs(node), t, shapes) {
        return lowered.map_err(|f| named_error(node, f.cause));
    }
    if let Some(lowered) = lower_for_program(&node.op, &NodeAttrs(node), shapes) {
        return lowered.map_err(|f| format!("{} '{}': {}", node.op, node.name, f.cause));
    }
    let kind = match (super::fuse::kind(node), batched::product(node, shapes)) {
        (Some(kind), _) | (None, Some(kind)) => kind.map_err(|e| named_error(node, e))?,
        (None, None) => {
            kind(node).ok_or_else(|| format!("{} is not an op a program holds", node.op))?
        }
    };
    let desc = |s: Shape| TensorDesc::new(DeviceAddr(0), DType::F32, s);
    let inputs: Vec<TensorDesc> = shapes.iter().map(|&s| desc(s)).collect();
    let placeholder = desc(shapes.first().copied().unwrap_or(Shape::SCALAR));
    let op = OpDesc {
        kind,
        inputs: &inputs,
        output: placeholder,
        op_id: 0,
    };
    let out = op
        .output_shape()
        .map_err(|e| format!("{} '{}': {e:?}", node.op, node.name))?;
    Ok((kind, out))
}

/// A view's output shape for input `input`; `None` for a node that is no
/// view.
///
/// # Errors
/// A shape TF's own kernel would refuse.
pub fn view_shape(node: &NodeDef, input: Shape) -> Option<Result<Shape, String>> {
    let ints = |key: &str| match attr_of(node, key) {
        Some(Value::List(l)) => l.i.clone(),
        _ => Vec::new(),
    };
    let dims = input.dims();
    let out = match node.op.as_str() {
        "Squeeze" => squeezed(dims, &ints("squeeze_dims")),
        "Reshape" => reshaped(input, &ints(SHAPE_ATTR)),
        _ => return None,
    };
    Some(
        out.and_then(|d| Shape::new(&d).ok_or_else(|| "rank".into()))
            .map_err(|e| format!("{} '{}': {e}", node.op, node.name)),
    )
}

fn squeezed(dims: &[u64], axes: &[i64]) -> Result<Vec<u64>, String> {
    let rank = dims.len() as i64;
    let mut drop = vec![axes.is_empty(); dims.len()];
    for &a in axes {
        let a = if a < 0 { a + rank } else { a };
        let at = usize::try_from(a)
            .ok()
            .filter(|&a| a < dims.len())
            .ok_or_else(|| format!("axis {a} of a rank-{rank} input"))?;
        if dims[at] != 1 {
            return Err(format!("axis {a} has size {}, not 1", dims[at]));
        }
        drop[at] = true;
    }
    Ok(dims
        .iter()
        .zip(drop)
        .filter(|&(&d, drop)| !(drop && d == 1))
        .map(|(&d, _)| d)
        .collect())
}

fn reshaped(input: Shape, shape: &[i64]) -> Result<Vec<u64>, String> {
    let elements = input.elements().ok_or("size overflows")?;
    let known: u64 = shape
        .iter()
        .filter(|&&d| d >= 0)
        .map(|&d| d as u64)
        .product();
    let free = shape.iter().filter(|&&d| d < 0).count();
    let out: Vec<u64> = match free {
        0 => shape.iter().map(|&d| d as u64).collect(),
        1 if known > 0 && elements % known == 0 => shape
            .iter()
            .map(|&d| if d < 0 { elements / known } else { d as u64 })
            .collect(),
        _ => return Err(format!("{elements} elements into {shape:?}")),
    };
    if shape.iter().any(|&d| d < -1) || out.iter().product::<u64>() != elements {
        return Err(format!("{elements} elements into {shape:?}"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::pieces::{Cmd, Operand};
    use super::*;
    use crate::graph::proto::AttrValue;
    use crate::kernels::ops::{Transposes, record_kind};

    fn leaky(alpha: Option<f32>) -> NodeDef {
        let mut n = NodeDef {
            name: "l".into(),
            op: "LeakyRelu".into(),
            input: vec!["x".into()],
            ..Default::default()
        };
        let t = Value::Type(DataType::DtFloat as i32);
        n.attr.insert("T".into(), AttrValue { value: Some(t) });
        if let Some(a) = alpha {
            n.attr.insert(
                "alpha".into(),
                AttrValue {
                    value: Some(Value::F(a)),
                },
            );
        }
        n
    }

    #[test]
    fn an_elementwise_ops_parameter_comes_from_its_attribute() {
        let x = Shape::new(&[2, 3]).unwrap();
        let (kind, _) = lower(&leaky(Some(0.3)), &[x]).unwrap();
        // Not the declaration's 0, which made a program's LeakyRelu a Relu.
        assert_eq!(format!("{kind:?}"), "Unary(LeakyRelu(alpha=0.3))");
        assert!(supported(&leaky(Some(0.3))));
        assert!(
            !supported(&leaky(None)),
            "no alpha: op by op, as TF defaults it"
        );
    }

    fn node(op: &str, attrs: &[(&str, Value)]) -> NodeDef {
        let mut n = NodeDef {
            name: "n".into(),
            op: op.into(),
            input: vec!["a".into(), "b".into()],
            ..Default::default()
        };
        let t = Value::Type(DataType::DtFloat as i32);
        n.attr.insert("T".into(), AttrValue { value: Some(t) });
        for (k, v) in attrs {
            n.attr.insert(
                (*k).into(),
                AttrValue {
                    value: Some(v.clone()),
                },
            );
        }
        n
    }

    fn shape(d: &[u64]) -> Shape {
        Shape::new(d).unwrap()
    }

    #[test]
    fn a_batched_product_is_one_record_or_one_matmul() {
        let bmm = node("BatchMatMulV2", &[("adj_y", Value::B(true))]);
        assert!(supported(&bmm));
        assert!(needs_record(&bmm).is_some());
        let (kind, out) = lower(&bmm, &[shape(&[4, 3, 5, 6]), shape(&[4, 3, 7, 6])]).unwrap();
        assert_eq!(kind, record_kind(Transposes { a: false, b: true }));
        assert_eq!(out, shape(&[4, 3, 5, 7]));
        // One `b` for every batch.
        let (_, out) = lower(&bmm, &[shape(&[4, 5, 6]), shape(&[1, 7, 6])]).unwrap();
        assert_eq!(out, shape(&[4, 5, 7]));
        let (kind, _) = lower(&bmm, &[shape(&[5, 6]), shape(&[7, 6])]).unwrap();
        assert!(matches!(
            kind,
            OpKind::MatMul {
                transpose_b: true,
                ..
            }
        ));
        // A broadcast `a`, or part of `b`'s batch broadcast, is no one
        // command: its segment runs op by op, and the warning says why.
        let why = lower(&bmm, &[shape(&[1, 5, 6]), shape(&[3, 7, 6])]).unwrap_err();
        assert!(
            why.contains("operands [1, 5, 6] and [3, 7, 6] broadcast"),
            "{why}"
        );
        assert!(lower(&bmm, &[shape(&[2, 3, 5, 6]), shape(&[2, 1, 7, 6])]).is_err());
        assert!(lower(&bmm, &[shape(&[5, 6]), shape(&[3, 7, 6])]).is_err());
    }

    #[test]
    fn attentions_einsum_is_its_transposes_and_one_product() {
        let eq = |e: &str| node("Einsum", &[("equation", Value::S(e.as_bytes().to_vec()))]);
        // Keras' MultiHeadAttention: scores, then the weighted values.
        let scores = eq("aecd,abcd->acbe");
        assert!(supported(&scores));
        let x = shape(&[2, 5, 3, 4]);
        let low = lower_node(&scores, &[x, x]).unwrap();
        assert_eq!(low.out, shape(&[2, 3, 5, 5]));
        let cmds: Vec<Cmd> = low.pieces.iter().map(|p| p.cmd).collect();
        let transposes = cmds
            .iter()
            .filter(|c| matches!(c, Cmd::Launch(OpKind::Transpose(_))))
            .count();
        let products: Vec<&Cmd> = cmds
            .iter()
            .filter(|c| matches!(c, Cmd::Launch(OpKind::Record(_))))
            .collect();
        assert_eq!((transposes, products.len()), (2, 1), "{cmds:?}");
        assert_eq!(low.pieces.last().unwrap().output, Operand::Output);
        assert!(low.temps.len() <= max_temps(&scores));
        let values = eq("acbe,aecd->abcd");
        let low = lower_node(&values, &[shape(&[2, 3, 5, 5]), x]).unwrap();
        assert_eq!(low.out, x);
        assert!(low.temps.len() <= max_temps(&values));
        // An output interleaving the groups: the product's [i, b·k] is
        // copied into [i, b, k] before the transpose into [b, i, k].
        let mixed = eq("ij,bjk->bik");
        let low = lower_node(&mixed, &[shape(&[4, 5]), shape(&[3, 5, 6])]).unwrap();
        let cmds: Vec<Cmd> = low.pieces.iter().map(|p| p.cmd).collect();
        assert!(
            matches!(
                cmds.as_slice(),
                [
                    ..,
                    Cmd::Launch(OpKind::MatMul { .. }),
                    Cmd::Copy,
                    Cmd::Launch(OpKind::Transpose(_))
                ]
            ),
            "{cmds:?}"
        );
        assert_eq!(low.temps[low.temps.len() - 1], shape(&[4, 3, 6]));
        assert_eq!(low.out, shape(&[3, 4, 6]));
        assert!(low.temps.len() <= max_temps(&mixed));
        // Summed within an operand, a diagonal, `...`, one operand: op by op.
        for e in ["ab,bc->a", "aa,ab->b", "...ab,bc->...ac", "ab->ba"] {
            assert!(!supported(&eq(e)), "{e}");
        }
    }

    #[test]
    fn a_transpose_by_a_constant_permutation_is_one_command() {
        let perm = |p: &[i64]| {
            let l = crate::graph::proto::attr_value::ListValue {
                i: p.to_vec(),
                ..Default::default()
            };
            node("Transpose", &[(PERM_ATTR, Value::List(l))])
        };
        let mut t = perm(&[0, 2, 1, 3]);
        t.input.pop();
        assert!(supported(&t));
        let (kind, out) = lower(&t, &[shape(&[2, 3, 4, 5])]).unwrap();
        assert!(matches!(kind, OpKind::Transpose(p) if p[..4] == [0, 2, 1, 3]));
        assert_eq!(out, shape(&[2, 4, 3, 5]));
        // A permutation of another rank, or not a permutation: refused.
        assert!(lower_node(&t, &[shape(&[2, 3, 4])]).is_err());
        let mut bad = perm(&[0, 0, 1, 3]);
        bad.input.pop();
        assert!(lower_node(&bad, &[shape(&[2, 3, 4, 5])]).is_err());
        // Without the pass's attribute (a computed permutation): op by op.
        let mut computed = node("Transpose", &[]);
        computed.input.pop();
        assert!(!supported(&computed));
    }
}
