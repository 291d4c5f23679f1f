//! Which TF nodes a device program holds, and how each lowers to one
//! catalogue command: its [`OpKind`] and output shape from its input
//! shapes. The graph pass asks [`supported`]; the program kernel,
//! [`lower`], once per input shapes.

use super::super::ops::{self, TfKernel};
use crate::graph::nodes::{attr_of, type_attr};
use crate::graph::proto::{DataType, NodeDef, attr_value::Value};
use tensorplug_core::accelerator::{OpKind, Shape, broadcast_shapes, matmul_shape};

/// The TF op type of `node` as a `'static` name (a profiler label), if a
/// program can hold it.
pub fn static_op(op: &str) -> Option<&'static str> {
    const FIXED: [&str; 3] = ["MatMul", "_FusedMatMul", "BiasAdd"];
    FIXED
        .iter()
        .copied()
        .find(|&n| n == op)
        .or_else(|| elementwise(op).and_then(|k| k.op().to_str().ok()))
}

/// The kernel of an element-wise or softmax op `op`: one command whose
/// attributes are its [`TfKernel::family`].
fn elementwise(op: &str) -> Option<&'static dyn TfKernel> {
    ops::builtin().find(|k| {
        k.op().to_bytes() == op.as_bytes()
            && matches!(
                k.family(),
                Some(OpKind::Unary(_) | OpKind::Binary(_) | OpKind::Softmax | OpKind::LogSoftmax)
            )
    })
}

/// Whether a program can hold `node`: a float32 op of the table whose
/// attributes the device takes, on one output.
pub fn supported(node: &NodeDef) -> bool {
    static_op(&node.op).is_some()
        && type_attr(node, "T") == Some(DataType::DtFloat as i32)
        && kind(node).is_some()
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
        "BiasAdd" => {
            let nhwc = match attr_of(node, "data_format") {
                None => true,
                Some(Value::S(s)) => s == b"NHWC",
                Some(_) => false,
            };
            if !nhwc {
                return None;
            }
            OpKind::BiasAdd
        }
        op => elementwise(op)?.family()?,
    })
}

/// `node`'s command for inputs of `shapes`: its op and output shape.
///
/// # Errors
/// A node a program does not hold, or shapes its op refuses (TF's own
/// kernel would refuse them too).
pub fn lower(node: &NodeDef, shapes: &[Shape]) -> Result<(OpKind, Shape), String> {
    let kind = kind(node).ok_or_else(|| format!("{} is not an op a program holds", node.op))?;
    let want = kind.input_count();
    if shapes.len() != want {
        return Err(format!(
            "{} takes {want} inputs, has {}",
            node.op,
            shapes.len()
        ));
    }
    let shape_error = |e| format!("{} '{}': {e:?}", node.op, node.name);
    let out = match kind {
        OpKind::MatMul {
            transpose_a,
            transpose_b,
        }
        | OpKind::FusedMatMul {
            transpose_a,
            transpose_b,
            ..
        } => matmul_shape(&shapes[0], &shapes[1], transpose_a, transpose_b).map_err(shape_error)?,
        OpKind::Binary(_) => broadcast_shapes(&shapes[0], &shapes[1]).map_err(shape_error)?,
        _ => shapes[0],
    };
    Ok((kind, out))
}
