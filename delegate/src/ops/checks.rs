//! Checks every op's decision makes.

use crate::graph::NodeView;
use tensorplug_core::accelerator::{Capabilities, DType, OpKind};

pub fn one_in_one_out(node: &NodeView) -> Result<(i32, i32), String> {
    match (node.inputs.as_slice(), node.outputs.as_slice()) {
        ([x], [out]) => Ok((*x, *out)),
        _ => Err("expected 1 input and 1 output".into()),
    }
}

/// Whether the device declares `kind` on float32.
pub fn need(caps: &Capabilities, kind: OpKind) -> Result<(), String> {
    need_typed(caps, kind, DType::F32)
}

/// Whether the device declares `kind` on `dtype`, or which it lacks.
pub fn need_typed(caps: &Capabilities, kind: OpKind, dtype: DType) -> Result<(), String> {
    if caps.supports(kind, dtype) {
        Ok(())
    } else {
        let name = match dtype {
            DType::F32 => "float32".to_owned(),
            DType::I8 => "int8".to_owned(),
            other => format!("{other:?}"),
        };
        Err(format!("the device does not declare {kind:?} in {name}"))
    }
}
