//! Small `NodeDef` helpers shared by our graph passes.

use super::edges::Input;
use super::proto::{
    AttrValue, DataType, NodeDef, TensorProto, TensorShapeProto, attr_value, tensor_shape_proto,
};
use std::collections::HashSet;

/// The node's `type` attr `key`, if set and valid.
pub fn type_attr(node: &NodeDef, key: &str) -> Option<i32> {
    match node.attr.get(key)?.value {
        Some(attr_value::Value::Type(t)) if t != DataType::DtInvalid as i32 => Some(t),
        _ => None,
    }
}

/// An attr holding `value`.
pub fn value(value: attr_value::Value) -> AttrValue {
    AttrValue { value: Some(value) }
}

/// A `type` attr value.
pub fn type_value(dtype: i32) -> AttrValue {
    AttrValue {
        value: Some(attr_value::Value::Type(dtype)),
    }
}

/// `<name>/<suffix>`, or with a number appended until no node has it.
pub fn unique(names: &mut HashSet<String>, name: &str, suffix: &str) -> String {
    let mut candidate = format!("{name}/{suffix}");
    let mut n = 1;
    while names.contains(&candidate) {
        candidate = format!("{name}/{suffix}_{n}");
        n += 1;
    }
    names.insert(candidate.clone());
    candidate
}

/// Control inputs that make a new node wait for everything a node with
/// `inputs` waited for, but its data inputs at `skip` (the variable): its
/// control inputs, and each data input's producer, since TF's dependency
/// optimizer drops a control edge that a data path already implies.
pub fn waits_of(inputs: &[String], skip: &[usize]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut data = 0;
    for text in inputs {
        let wait = match Input::parse(text) {
            Input::Control(_) => text.clone(),
            input => {
                data += 1;
                if skip.contains(&(data - 1)) {
                    continue;
                }
                format!("^{}", input.node())
            }
        };
        if !out.contains(&wait) {
            out.push(wait);
        }
    }
    out
}

/// A `Const` node of `dtype` with `dims` and little-endian `content`.
pub fn constant(
    name: &str,
    device: &str,
    dtype: DataType,
    dims: &[i64],
    content: Vec<u8>,
) -> NodeDef {
    let tensor = TensorProto {
        dtype: dtype as i32,
        tensor_shape: Some(TensorShapeProto {
            dim: dims
                .iter()
                .map(|&size| tensor_shape_proto::Dim {
                    size,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        tensor_content: content,
        ..Default::default()
    };
    NodeDef {
        name: name.into(),
        op: "Const".into(),
        device: device.into(),
        attr: [
            ("dtype".to_string(), type_value(dtype as i32)),
            (
                "value".to_string(),
                AttrValue {
                    value: Some(attr_value::Value::Tensor(tensor)),
                },
            ),
        ]
        .into(),
        ..Default::default()
    }
}

/// The value of attribute `key`, if set.
pub fn attr_of<'a>(node: &'a NodeDef, key: &str) -> Option<&'a attr_value::Value> {
    node.attr.get(key)?.value.as_ref()
}

/// Whether the node's `data_format` is NHWC (its default), the device's
/// only layout.
pub fn is_nhwc(node: &NodeDef) -> bool {
    match attr_of(node, "data_format") {
        None => true,
        Some(attr_value::Value::S(format)) => format == b"NHWC",
        Some(_) => false,
    }
}

/// The values of an int32 or int64 `Const` (a lone value repeated, as TF
/// reads it).
pub fn int_constant(node: &NodeDef) -> Option<Vec<i64>> {
    if node.op != "Const" {
        return None;
    }
    let Some(attr_value::Value::Tensor(t)) = node.attr.get("value").and_then(|a| a.value.as_ref())
    else {
        return None;
    };
    let count: i64 = t
        .tensor_shape
        .as_ref()?
        .dim
        .iter()
        .map(|d| d.size)
        .product();
    let count = usize::try_from(count).ok()?;
    let content = &t.tensor_content;
    let values: Vec<i64> = match DataType::try_from(t.dtype).ok()? {
        DataType::DtInt32 if content.is_empty() => t.int_val.iter().map(|&v| v.into()).collect(),
        DataType::DtInt64 if content.is_empty() => t.int64_val.clone(),
        DataType::DtInt32 => content
            .chunks_exact(4)
            .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]).into())
            .collect(),
        DataType::DtInt64 => content
            .chunks_exact(8)
            .map(|b| i64::from_le_bytes(b.try_into().unwrap_or_default()))
            .collect(),
        _ => return None,
    };
    let values = match values.as_slice() {
        &[one] if count > 1 => vec![one; count],
        _ => values,
    };
    (values.len() == count).then_some(values)
}

/// The value of a `Const` holding one `float` (of rank 0, or all of whose
/// dimensions are 1).
pub fn float_scalar(node: &NodeDef) -> Option<f32> {
    if node.op != "Const" {
        return None;
    }
    let Some(attr_value::Value::Tensor(t)) = node.attr.get("value").and_then(|a| a.value.as_ref())
    else {
        return None;
    };
    let one = t.tensor_shape.as_ref()?.dim.iter().all(|d| d.size == 1);
    if !one || DataType::try_from(t.dtype).ok()? != DataType::DtFloat {
        return None;
    }
    match (t.tensor_content.as_slice(), t.float_val.as_slice()) {
        (&[a, b, c, d], _) => Some(f32::from_le_bytes([a, b, c, d])),
        ([], &[v]) => Some(v),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::waits_of;

    #[test]
    fn waits_cover_controls_and_data_producers_but_the_variable() {
        let inputs: Vec<String> = ["v", "grad:1", "grad:0", "^step", "lr"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(waits_of(&inputs, &[0]), ["^grad", "^step", "^lr"]);
        assert_eq!(waits_of(&inputs, &[0, 1, 2, 3]), ["^step"]);
    }
}
