//! The fallback report: the float ops of a graph that runs on our device
//! which TF placed on the CPU because our device cannot run them (no
//! kernel, not for that element type, or not with those attributes). The
//! pass sees each function graph whole, after placement; it says so once
//! per node, or fails the step (`TENSORPLUG_FALLBACK`,
//! `docs/graph-optimizer.md`, "The fallback report").
//!
//! An op on the CPU that our device could run was put there on purpose (a
//! device scope, colocation with a CPU variable) and is not reported; nor
//! are host-side ops (arguments, variable reads, constants, copies) and
//! what only feeds the plugin's own CPU ops.

use super::context::Context;
use super::device::is_ours;
use super::edges::Uses;
use super::kernel_list::{DEFAULT_DEVICE, has_kernel_for, takes_attrs};
use super::proto::{DataType, GraphDef, KernelList, NodeDef, attr_value};
use crate::error::{Error, Result};
use crate::{log, settings};
use std::collections::BTreeSet;
use std::fmt;
use std::sync::Mutex;

/// Why a float op is on the CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Why {
    /// Our device type has no kernel for the op.
    NoKernel,
    /// It has one, not for this element type.
    DType(String),
    /// It has one, not for these attributes (e.g. channels-first).
    Attributes,
}

/// One float op on the CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fallback {
    /// Its op type.
    pub op: String,
    /// Its node.
    pub node: String,
    /// Why it is not on our device.
    pub why: Why,
}

impl Fallback {
    /// Why, in words.
    pub fn why_text(&self) -> String {
        match &self.why {
            Why::NoKernel => "no kernel".into(),
            Why::DType(t) => format!("no kernel for {t}"),
            Why::Attributes => "not with these attributes".into(),
        }
    }
}

impl fmt::Display for Fallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} '{}' ({})", self.op, self.node, self.why_text())
    }
}

/// What `TENSORPLUG_FALLBACK` asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// Say it on stderr, once per node (the default).
    #[default]
    Warn,
    /// Say nothing.
    Off,
    /// Fail the step that would run them, naming them.
    Error,
}

impl Mode {
    /// Reads `TENSORPLUG_FALLBACK` (`warn`, `off`, `error`).
    pub fn from_env() -> Result<Self> {
        let Some(value) = settings::get(settings::FALLBACK)? else {
            return Ok(Self::Warn);
        };
        match value.text.to_ascii_lowercase().as_str() {
            "warn" | "on" | "1" | "true" => Ok(Self::Warn),
            "off" | "0" | "false" => Ok(Self::Off),
            "error" => Ok(Self::Error),
            _ => Err(value.error("expected warn, off or error")),
        }
    }
}

/// Ops that run on the host whatever the device: arguments, constants,
/// variable handles and reads, copies, control flow, shapes.
const HOST_OPS: [&str; 24] = [
    "Const",
    "Identity",
    "IdentityN",
    "Placeholder",
    "PlaceholderWithDefault",
    "NoOp",
    "ReadVariableOp",
    "AssignVariableOp",
    "AssignAddVariableOp",
    "AssignSubVariableOp",
    "VarHandleOp",
    "VariableShape",
    "IteratorGetNext",
    "Shape",
    "ShapeN",
    "Size",
    "Rank",
    "Switch",
    "Merge",
    "Enter",
    "Exit",
    "NextIteration",
    "StopGradient",
    "Snapshot",
];

const FLOAT_TYPES: [(DataType, &str); 3] = [
    (DataType::DtFloat, "float32"),
    (DataType::DtHalf, "float16"),
    (DataType::DtBfloat16, "bfloat16"),
];

/// The float element type a node computes on, if any.
fn float_type(node: &NodeDef) -> Option<&'static str> {
    ["T", "dtype", "Tparams", "SrcT", "DstT"]
        .iter()
        .filter_map(|k| match node.attr.get(*k)?.value.as_ref()? {
            attr_value::Value::Type(t) => Some(*t),
            _ => None,
        })
        .find_map(|t| {
            FLOAT_TYPES
                .iter()
                .find(|(d, _)| *d as i32 == t)
                .map(|(_, name)| *name)
        })
}

fn on_cpu(device: &str) -> bool {
    device
        .split('/')
        .any(|part| part.starts_with("device:CPU:"))
}

/// The fallbacks of `graph`: none unless some node is on a `device_type`
/// device. `kernels(op)` is TF's kernel list for `op` (`None`: unknown,
/// e.g. a function call, never reported).
pub fn fallbacks(
    graph: &GraphDef,
    device_type: &str,
    mut kernels: impl FnMut(&str) -> Option<KernelList>,
) -> Vec<Fallback> {
    if !graph.node.iter().any(|n| is_ours(&n.device, device_type)) {
        return Vec::new();
    }
    let uses = Uses::index(&graph.node);
    let ours = |consumer: usize| graph.node[consumer].op.starts_with("_Tensorplug");
    let mut found = Vec::new();
    for node in &graph.node {
        // `_`-prefixed ops are TF's internals, except the fusions its
        // remapper makes on the CPU (`_FusedConv2D`, `_FusedMatMul`, …).
        let internal = node.op.starts_with('_') && !node.op.starts_with("_Fused");
        if !on_cpu(&node.device) || internal || HOST_OPS.contains(&node.op.as_str()) {
            continue;
        }
        let Some(dtype) = float_type(node) else {
            continue;
        };
        let readers = uses.of(&node.name);
        if !readers.is_empty() && readers.iter().all(|u| ours(u.consumer)) {
            continue;
        }
        let Some(list) = kernels(&node.op) else {
            continue;
        };
        let why = if !list
            .kernel
            .iter()
            .any(|k| k.device_type == device_type || k.device_type == DEFAULT_DEVICE)
        {
            Why::NoKernel
        } else if !has_kernel_for(&list, device_type, node) {
            Why::DType(dtype.to_string())
        } else if !takes_attrs(node) {
            Why::Attributes
        } else {
            continue;
        };
        found.push(Fallback {
            op: node.op.clone(),
            node: node.name.clone(),
            why,
        });
    }
    found
}

/// `TENSORPLUG_FALLBACK=error`: each fallback node waits on an `Assert`
/// that fails, so the step fails with `InvalidArgumentError` naming the
/// op, the node and why, before the op runs.
pub fn fail_on(graph: &mut GraphDef, found: &[Fallback], device_type: &str) -> Result<()> {
    for f in found {
        let Some(at) = graph.node.iter().position(|n| n.name == f.node) else {
            return Err(Error::Internal(format!("no node '{}'", f.node)));
        };
        let device = graph.node[at].device.clone();
        let base = format!("{}/tensorplug_fallback", f.node);
        if graph.node.iter().any(|n| n.name == base) {
            continue; // TF's optimizer ran us on this graph before
        }
        // No quotes: TF's Assert escapes them.
        let message = format!(
            "{} node {} runs on the CPU, not on {device_type} ({}): TENSORPLUG_FALLBACK=error",
            f.op,
            f.node,
            f.why_text()
        );
        let (condition, data) = (format!("{base}/condition"), format!("{base}/message"));
        graph.node.extend([
            super::nodes::constant(&condition, &device, DataType::DtBool, &[], vec![0]),
            string_constant(&data, &device, &message),
            assert_node(&base, &device, &condition, &data),
        ]);
        graph.node[at].input.push(format!("^{base}"));
    }
    Ok(())
}

/// The report as a pass (`passes::Fallbacks`): appends to
/// `TENSORPLUG_FALLBACK_FILE` (whatever the mode), says on stderr once per
/// node, or (`error`) makes the step fail; returns 1 when it changed the
/// graph.
pub fn report(cx: &mut Context<'_>) -> Result<usize> {
    let mode = Mode::from_env()?;
    let file = settings::get(settings::FALLBACK_FILE)?;
    if mode == Mode::Off && file.is_none() {
        return Ok(0);
    }
    let registry = &mut *cx.registry;
    let found = fallbacks(&cx.graph, cx.device, |op| registry.kernels(op));
    if found.is_empty() {
        return Ok(0);
    }
    if let Some(file) = file {
        crate::report::append(&file, &found);
    }
    if mode == Mode::Off {
        return Ok(0);
    }
    static SAID: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    let new: Vec<String> = {
        let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
        found
            .iter()
            .map(ToString::to_string)
            .filter(|f| said.insert(f.clone()))
            .collect()
    };
    if !new.is_empty() && mode == Mode::Warn {
        log::warn(format_args!(
            "{} float op(s) of a graph on {} run on the CPU: {} (said once per node; \
             TENSORPLUG_FALLBACK=off silences this, =error fails the step)",
            new.len(),
            cx.device,
            new.join(", ")
        ));
    }
    if mode == Mode::Error {
        fail_on(&mut cx.graph, &found, cx.device)?;
        return Ok(1);
    }
    Ok(0)
}

fn string_constant(name: &str, device: &str, text: &str) -> NodeDef {
    let mut n = super::nodes::constant(name, device, DataType::DtString, &[], Vec::new());
    if let Some(attr_value::Value::Tensor(t)) =
        n.attr.get_mut("value").and_then(|v| v.value.as_mut())
    {
        t.string_val.push(text.as_bytes().to_vec());
    }
    n
}

fn assert_node(name: &str, device: &str, condition: &str, data: &str) -> NodeDef {
    let types = attr_value::ListValue {
        r#type: vec![DataType::DtString as i32],
        ..Default::default()
    };
    NodeDef {
        name: name.into(),
        op: "Assert".into(),
        device: device.into(),
        input: vec![condition.into(), data.into()],
        attr: [
            (
                "T".to_string(),
                super::proto::AttrValue {
                    value: Some(attr_value::Value::List(types)),
                },
            ),
            (
                "summarize".to_string(),
                super::proto::AttrValue {
                    value: Some(attr_value::Value::I(3)),
                },
            ),
        ]
        .into(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::proto::{KernelDef, kernel_def::AttrConstraint};
    use crate::graph::test_nodes::{CPU, FPGA, node};

    fn typed(mut n: NodeDef, device: &str, t: DataType) -> NodeDef {
        n.device = device.into();
        n.attr
            .insert("T".into(), super::super::nodes::type_value(t as i32));
        n
    }

    fn kernel(device: &str, types: &[DataType]) -> KernelDef {
        KernelDef {
            device_type: device.into(),
            constraint: vec![AttrConstraint {
                name: "T".into(),
                allowed_values: Some(super::super::proto::AttrValue {
                    value: Some(attr_value::Value::List(attr_value::ListValue {
                        r#type: types.iter().map(|t| *t as i32).collect(),
                        ..Default::default()
                    })),
                }),
            }],
            ..Default::default()
        }
    }

    fn lookup(op: &str) -> Option<KernelList> {
        let cpu = kernel("CPU", &[DataType::DtFloat, DataType::DtHalf]);
        let fpga_f32 = kernel("FPGA", &[DataType::DtFloat]);
        Some(KernelList {
            kernel: match op {
                "Erfc" => vec![cpu],
                "MatMul" | "Relu" | "MaxPool" | "_FusedConv2D" => vec![cpu, fpga_f32],
                "_Internal" => vec![cpu],
                _ => return None,
            },
        })
    }

    fn graph() -> GraphDef {
        GraphDef {
            node: vec![
                typed(node("x", "ReadVariableOp", &[]), CPU, DataType::DtFloat),
                typed(node("mm", "MatMul", &["x", "x"]), FPGA, DataType::DtFloat),
                typed(node("erfc", "Erfc", &["mm"]), CPU, DataType::DtFloat),
                typed(node("half", "Relu", &["erfc"]), CPU, DataType::DtHalf),
                // On the CPU by choice: the device could run it.
                typed(node("pinned", "Relu", &["erfc"]), CPU, DataType::DtFloat),
                typed(node("ints", "Relu", &["erfc"]), CPU, DataType::DtInt32),
                // TF's remapper's bfloat16 fusion on an AVX512_BF16 CPU.
                typed(
                    node("fused", "_FusedConv2D", &["erfc"]),
                    CPU,
                    DataType::DtBfloat16,
                ),
                // TF's own internals are not named.
                typed(
                    node("internal", "_Internal", &["erfc"]),
                    CPU,
                    DataType::DtFloat,
                ),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn float_ops_our_device_cannot_run_are_named_with_why() {
        let found = fallbacks(&graph(), "FPGA", lookup);
        let said: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(
            said,
            [
                "Erfc 'erfc' (no kernel)",
                "Relu 'half' (no kernel for float16)",
                "_FusedConv2D 'fused' (no kernel for bfloat16)"
            ]
        );
    }

    #[test]
    fn a_graph_with_nothing_on_our_device_is_not_reported() {
        let mut g = graph();
        g.node[1].device = CPU.into();
        assert!(fallbacks(&g, "FPGA", lookup).is_empty());
    }

    #[test]
    fn error_mode_makes_each_fallback_wait_on_a_failing_assert() {
        let mut g = graph();
        let found = fallbacks(&g, "FPGA", lookup);
        fail_on(&mut g, &found, "FPGA").unwrap();
        let count = g.node.len();
        fail_on(&mut g, &found, "FPGA").unwrap();
        assert_eq!(g.node.len(), count, "a second run adds nothing");
        let erfc = g.node.iter().find(|n| n.name == "erfc").unwrap();
        assert!(
            erfc.input
                .contains(&"^erfc/tensorplug_fallback".to_string())
        );
        let assert = g
            .node
            .iter()
            .find(|n| n.name == "erfc/tensorplug_fallback")
            .unwrap();
        assert_eq!(assert.op, "Assert");
        let message = g
            .node
            .iter()
            .find(|n| n.name == "erfc/tensorplug_fallback/message")
            .unwrap();
        let Some(attr_value::Value::Tensor(t)) = message.attr["value"].value.as_ref() else {
            panic!("no tensor");
        };
        let text = String::from_utf8(t.string_val[0].clone()).unwrap();
        assert!(
            text.starts_with("Erfc node erfc runs on the CPU, not on FPGA (no kernel)"),
            "{text}"
        );
    }
}
