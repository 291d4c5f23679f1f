//! The pass: `MatMul → BiasAdd (→ Relu)` on an FPGA becomes one
//! `_FusedMatMul`, with the attributes TF's remapper writes
//! (`remapper.cc`: `CopyMatMulAttributes` + `SetFusedOpAttributes`).

use super::device;
use super::edges::{Input, Uses};
use super::proto::{AttrValue, DataType, GraphDef, NodeDef, attr_value};
use crate::error::{Error, Result};
use std::collections::HashSet;

/// The op the chains are rewritten into.
pub const FUSED_OP: &str = "_FusedMatMul";

/// What one run of the pass rewrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fusions {
    /// `MatMul → BiasAdd → Relu` chains (`fused_ops = [BiasAdd, Relu]`).
    pub with_relu: usize,
    /// `MatMul → BiasAdd` chains (`fused_ops = [BiasAdd]`).
    pub bias_only: usize,
}

impl Fusions {
    /// Whether the graph changed.
    pub fn any(self) -> bool {
        self.with_relu + self.bias_only > 0
    }
}

/// One matched chain (indices into `GraphDef.node`).
#[derive(Clone, Copy, Debug)]
struct Chain {
    matmul: usize,
    bias_add: usize,
    relu: Option<usize>,
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
/// Fuses the f32 `MatMul → BiasAdd (→ Relu)` chains placed on devices of
/// `device_type` (the plugin's, e.g. `FPGA`).
pub fn fuse_matmul_chains(
    graph: &mut GraphDef,
    preserve: &HashSet<String>,
    device_type: &str,
) -> Result<Fusions> {
    check_unique_names(&graph.node)?;
    let chains = {
        let uses = Uses::index(&graph.node);
        find_chains(&graph.node, &uses, preserve, device_type)
    };
    let mut fusions = Fusions::default();
    let mut removed = vec![false; graph.node.len()];
    for chain in &chains {
        let fused = fused_node(&graph.node, *chain);
        graph.node[chain.root()] = fused;
        removed[chain.matmul] = true;
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
) -> Vec<Chain> {
    let removable = |node: &NodeDef| !preserve.contains(&node.name);
    let mut chains = Vec::new();
    for (matmul, node) in nodes.iter().enumerate() {
        if node.op != "MatMul" || !is_f32_on(node, device_type) || !removable(node) {
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
                relu_node.op == "Relu"
                    && follows(relu_node, node)
                    && data_inputs(relu_node).count() == 1
            });
        chains.push(Chain {
            matmul,
            bias_add,
            relu,
        });
    }
    chains
}

/// `next` may join `matmul`'s chain: same device, same `T`.
fn follows(next: &NodeDef, matmul: &NodeDef) -> bool {
    next.device == matmul.device && next.attr.get("T") == matmul.attr.get("T")
}

fn is_f32_on(node: &NodeDef, device_type: &str) -> bool {
    device::is_ours(&node.device, device_type)
        && matches!(
            node.attr.get("T").and_then(|t| t.value.as_ref()),
            Some(attr_value::Value::Type(t)) if *t == DataType::DtFloat as i32
        )
}

/// `BiasAdd` adds along the last axis only for NHWC (its default); MatMul
/// outputs are 2-D, but other layouts are left alone rather than reasoned about.
fn is_nhwc(bias_add: &NodeDef) -> bool {
    match bias_add
        .attr
        .get("data_format")
        .and_then(|f| f.value.as_ref())
    {
        None => true,
        Some(attr_value::Value::S(format)) => format == b"NHWC",
        Some(_) => false,
    }
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
    if chain.relu.is_some() {
        fused_ops.push(b"Relu".to_vec());
    }
    let mut attr = std::collections::HashMap::new();
    for key in ["T", "transpose_a", "transpose_b"] {
        let value = matmul
            .attr
            .get(key)
            .cloned()
            .unwrap_or_else(|| value(attr_value::Value::B(false)));
        attr.insert(key.to_owned(), value);
    }
    let list = attr_value::ListValue {
        s: fused_ops,
        ..Default::default()
    };
    attr.insert("fused_ops".into(), value(attr_value::Value::List(list)));
    attr.insert("num_args".into(), value(attr_value::Value::I(1)));
    attr.insert("epsilon".into(), value(attr_value::Value::F(0.0)));
    NodeDef {
        name: root.name.clone(),
        op: FUSED_OP.into(),
        input,
        device: matmul.device.clone(),
        attr,
        experimental_debug_info: root.experimental_debug_info.clone(),
        experimental_type: None,
    }
}

fn value(value: attr_value::Value) -> AttrValue {
    AttrValue { value: Some(value) }
}
