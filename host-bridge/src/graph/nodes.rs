//! Small `NodeDef` helpers shared by our graph passes.

use super::proto::{AttrValue, DataType, NodeDef, attr_value};
use std::collections::HashSet;

/// The node's `type` attr `key`, if set and valid.
pub fn type_attr(node: &NodeDef, key: &str) -> Option<i32> {
    match node.attr.get(key)?.value {
        Some(attr_value::Value::Type(t)) if t != DataType::DtInvalid as i32 => Some(t),
        _ => None,
    }
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
