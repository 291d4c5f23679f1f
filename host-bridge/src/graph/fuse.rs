//! The pass: `MatMul → BiasAdd (→ Relu)` on an FPGA becomes one
//! `_FusedMatMul`, and `Conv2D → BiasAdd (→ Relu | Relu6)` one
//! `_FusedConv2D`, with the attributes TF's remapper writes (`remapper.cc`:
//! `CopyMatMulAttributes`/`CopyConv2DAttributes` + `SetFusedOpAttributes`).

use super::device;
use super::edges::{Input, Uses};
use super::nodes::{is_nhwc, value};
use super::proto::{AttrValue, DataType, GraphDef, NodeDef, attr_value};
use crate::error::{Error, Result};
use std::collections::HashSet;

/// The op `MatMul` chains are rewritten into.
pub const FUSED_OP: &str = "_FusedMatMul";
/// The op `Conv2D` chains are rewritten into.
pub const FUSED_CONV_OP: &str = "_FusedConv2D";

/// Which chain heads to fuse (each needs its fused kernel registered).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Heads {
    /// `MatMul` chains into `_FusedMatMul`.
    pub matmul: bool,
    /// `Conv2D` chains into `_FusedConv2D`.
    pub conv2d: bool,
}

#[cfg(test)]
impl Heads {
    /// Both heads.
    pub const ALL: Self = Self {
        matmul: true,
        conv2d: true,
    };
}

/// What one run of the pass rewrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fusions {
    /// Chains with an activation (`fused_ops = [BiasAdd, Relu]`, or
    /// `Relu6` after a `Conv2D`).
    pub with_relu: usize,
    /// `→ BiasAdd` chains (`fused_ops = [BiasAdd]`).
    pub bias_only: usize,
    /// How many of those were `Conv2D` chains.
    pub conv2d: usize,
}

impl Fusions {
    /// Whether the graph changed.
    pub fn any(self) -> bool {
        self.with_relu + self.bias_only > 0
    }

    /// How many chains were fused.
    pub fn count(self) -> usize {
        self.with_relu + self.bias_only
    }
}

impl std::ops::AddAssign for Fusions {
    fn add_assign(&mut self, other: Self) {
        self.with_relu += other.with_relu;
        self.bias_only += other.bias_only;
        self.conv2d += other.conv2d;
    }
}

/// One matched chain (indices into `GraphDef.node`).
#[derive(Clone, Copy, Debug)]
struct Chain {
    /// The `MatMul` or `Conv2D`.
    matmul: usize,
    bias_add: usize,
    relu: Option<usize>,
    conv: bool,
}

impl Chain {
    /// The node whose name (and outputs) the fused node takes over.
    fn root(self) -> usize {
        self.relu.unwrap_or(self.bias_add)
    }

    fn members(self) -> impl Iterator<Item = usize> {
        [Some(self.matmul), Some(self.bias_add), self.relu]
            .into_iter()
            .flatten()
    }
}

/// Rewrites every fusable chain of `graph` in place. Nodes named in
/// `preserve` (TF's fetch/feed/keep nodes) are never removed; a chain root
/// keeps its name, so a preserved root is still fused, as in TF's remapper.
///
/// Errors only on graphs TF itself would reject (duplicate node names).
/// Fuses the chains of `heads` of a type `T` in `types` placed on devices
/// of `device_type` (the plugin's, e.g. `FPGA`).
pub fn fuse_chains(
    graph: &mut GraphDef,
    preserve: &HashSet<String>,
    device_type: &str,
    heads: Heads,
    types: &[DataType],
) -> Result<Fusions> {
    check_unique_names(&graph.node)?;
    let chains = {
        let uses = Uses::index(&graph.node);
        find_chains(&graph.node, &uses, preserve, device_type, heads, types)
    };
    let mut fusions = Fusions::default();
    let mut removed = vec![false; graph.node.len()];
    for chain in &chains {
        let fused = fused_node(&graph.node, *chain);
        graph.node[chain.root()] = fused;
        removed[chain.matmul] = true;
        fusions.conv2d += usize::from(chain.conv);
        if chain.relu.is_some() {
            removed[chain.bias_add] = true;
            fusions.with_relu += 1;
        } else {
            fusions.bias_only += 1;
        }
    }
    if fusions.any() {
        let mut index = 0;
        graph.node.retain(|_| {
            index += 1;
            !removed[index - 1]
        });
    }
    Ok(fusions)
}

fn check_unique_names(nodes: &[NodeDef]) -> Result<()> {
    let mut seen = HashSet::with_capacity(nodes.len());
    match nodes.iter().find(|node| !seen.insert(node.name.as_str())) {
        Some(node) => Err(Error::InvalidArgument(format!(
            "graph_in is not a valid GraphDef: two nodes are named `{}`",
            node.name
        ))),
        None => Ok(()),
    }
}

fn find_chains(
    nodes: &[NodeDef],
    uses: &Uses<'_>,
    preserve: &HashSet<String>,
    device_type: &str,
    heads: Heads,
    types: &[DataType],
) -> Vec<Chain> {
    let removable = |node: &NodeDef| !preserve.contains(&node.name);
    let mut chains = Vec::new();
    for (matmul, node) in nodes.iter().enumerate() {
        let conv = node.op == "Conv2D";
        let head = (heads.matmul && node.op == "MatMul") || (heads.conv2d && conv && is_nhwc(node));
        if !head || !is_typed_on(node, device_type, types) || !removable(node) {
            continue;
        }
        if data_inputs(node).count() != 2 {
            continue;
        }
        let Some(bias_add) = uses.sole_first_input(&node.name) else {
            continue;
        };
        let bias = &nodes[bias_add];
        if bias.op != "BiasAdd" || !follows(bias, node) || data_inputs(bias).count() != 2 {
            continue;
        }
        if !is_nhwc(bias) {
            continue;
        }
        let relu = Some(bias)
            .filter(|bias| removable(bias))
            .and_then(|bias| uses.sole_first_input(&bias.name))
            .filter(|&relu| {
                let relu_node = &nodes[relu];
                (relu_node.op == "Relu" || (conv && relu_node.op == "Relu6"))
                    && follows(relu_node, node)
                    && data_inputs(relu_node).count() == 1
            });
        chains.push(Chain {
            matmul,
            bias_add,
            relu,
            conv,
        });
    }
    chains
}

/// `next` may join `matmul`'s chain: same device, same `T`.
fn follows(next: &NodeDef, matmul: &NodeDef) -> bool {
    next.device == matmul.device && next.attr.get("T") == matmul.attr.get("T")
}

fn is_typed_on(node: &NodeDef, device_type: &str, types: &[DataType]) -> bool {
    device::is_ours(&node.device, device_type)
        && matches!(
            node.attr.get("T").and_then(|t| t.value.as_ref()),
            Some(attr_value::Value::Type(t)) if types.iter().any(|&d| *t == d as i32)
        )
}

fn data_inputs(node: &NodeDef) -> impl Iterator<Item = &String> {
    node.input.iter().filter(|input| !input.starts_with('^'))
}

fn fused_node(nodes: &[NodeDef], chain: Chain) -> NodeDef {
    let matmul = &nodes[chain.matmul];
    let bias_add = &nodes[chain.bias_add];
    let root = &nodes[chain.root()];
    let mut input: Vec<String> = data_inputs(matmul).cloned().collect();
    input.extend(data_inputs(bias_add).nth(1).cloned());
    // Control dependencies of every member, minus edges inside the chain.
    let members: Vec<&str> = chain.members().map(|i| nodes[i].name.as_str()).collect();
    for member in chain.members() {
        for control in nodes[member].input.iter().filter(|i| i.starts_with('^')) {
            if !members.contains(&Input::parse(control).node()) && !input.contains(control) {
                input.push(control.clone());
            }
        }
    }
    let mut fused_ops = vec![b"BiasAdd".to_vec()];
    if let Some(relu) = chain.relu {
        fused_ops.push(nodes[relu].op.as_bytes().to_vec());
    }
    let mut attr = if chain.conv {
        conv_attrs(matmul)
    } else {
        let mut attr = std::collections::HashMap::new();
        for key in ["T", "transpose_a", "transpose_b"] {
            let value = matmul
                .attr
                .get(key)
                .cloned()
                .unwrap_or_else(|| value(attr_value::Value::B(false)));
            attr.insert(key.to_owned(), value);
        }
        attr
    };
    let list = attr_value::ListValue {
        s: fused_ops,
        ..Default::default()
    };
    attr.insert("fused_ops".into(), value(attr_value::Value::List(list)));
    attr.insert("num_args".into(), value(attr_value::Value::I(1)));
    attr.insert("epsilon".into(), value(attr_value::Value::F(0.0)));
    NodeDef {
        name: root.name.clone(),
        op: if chain.conv { FUSED_CONV_OP } else { FUSED_OP }.into(),
        input,
        device: matmul.device.clone(),
        attr,
        experimental_debug_info: root.experimental_debug_info.clone(),
        experimental_type: None,
    }
}

/// `_FusedConv2D`'s attributes from the `Conv2D`'s, TF's defaults where it
/// has none, and the ones `_FusedConv2D` adds (one bias argument of `T`).
fn conv_attrs(conv: &NodeDef) -> std::collections::HashMap<String, AttrValue> {
    use attr_value::Value;
    let ints = |i: Vec<i64>| {
        Value::List(attr_value::ListValue {
            i,
            ..Default::default()
        })
    };
    let defaults = [
        ("explicit_paddings", ints(vec![])),
        ("data_format", Value::S(b"NHWC".to_vec())),
        ("dilations", ints(vec![1, 1, 1, 1])),
        ("use_cudnn_on_gpu", Value::B(true)),
    ];
    let mut attr: std::collections::HashMap<String, AttrValue> = ["T", "strides", "padding"]
        .into_iter()
        .filter_map(|key| Some((key.to_owned(), conv.attr.get(key)?.clone())))
        .collect();
    for (key, default) in defaults {
        let given = conv.attr.get(key).cloned();
        attr.insert(key.into(), given.unwrap_or_else(|| value(default)));
    }
    let t = match conv.attr.get("T").and_then(|t| t.value.as_ref()) {
        Some(Value::Type(t)) => *t,
        _ => DataType::DtFloat as i32,
    };
    let args = attr_value::ListValue {
        r#type: vec![t],
        ..Default::default()
    };
    attr.insert("TArgs".into(), value(Value::List(args)));
    attr.insert("num_host_args".into(), value(Value::I(0)));
    attr.insert("filter_format".into(), value(Value::S(b"HWIO".to_vec())));
    attr.insert("leakyrelu_alpha".into(), value(Value::F(0.2)));
    attr
}
