//! Device segments become program nodes: each maximal connected group of
//! nodes on our device that a program holds (`kernels::program::lower`),
//! at least [`MIN_NODES`] of them, is replaced by one
//! `_Tensorplug<DEVICE>Program` node that carries them (its `segment`
//! attribute) and compiles them into a device program at run time.
//! `docs/device-programs.md`, "In TensorFlow".

use super::device::is_ours;
use super::edges::{Input, Uses};
use super::nodes::{attr_of, float_scalar, int_constant, type_attr, unique};
use super::proto::{AttrValue, DataType, GraphDef, NodeDef, attr_value};
use super::{program_native, program_size};
use crate::error::Result;
use crate::kernels::ops::window::gradient_sizes_input;
use crate::kernels::program::fuse::SCALAR_ATTR;
use crate::kernels::program::lower::{
    AXES_ATTR, PERM_ATTR, REDUCE_OPS, SHAPE_ATTR, SIZES_ATTR, input_type, needs_op, node_types,
    output_type, static_op, supported, tf_data_type,
};
use crate::kernels::program::segment::{Segment, canonical};
use crate::settings;
use std::collections::{HashMap, HashSet, VecDeque};
use tensorplug_core::accelerator::{DType, OpKind};

/// The fewest nodes a program holds: one node gains nothing, unless it
/// reads a host weight ([`lone_with_host_weights`]).
pub const MIN_NODES: usize = 2;

/// Producers off the device whose outputs a program takes as host weights
/// (kept on the device, uploaded again only when they change): a CPU
/// variable's read and a CPU constant, and what [`VIEW_OPS`] make of them.
const WEIGHT_OPS: &[&str] = &["ReadVariableOp", "Const"];

/// Ops that only rearrange or retype their inputs: a weight's view (Keras
/// 3 reshapes a convolution's bias before adding it) is a weight too.
const VIEW_OPS: &[&str] = &["Reshape", "Identity", "Cast", "ExpandDims", "Squeeze"];

/// How many views deep a weight is looked for.
const VIEW_DEPTH: usize = 4;

/// What the pass did with one group of nodes, for the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Became program node `program`, holding `nodes` nodes.
    Program { program: String, nodes: usize },
    /// Left op by op: contracting it would close a cycle through `via`.
    Cycle { first: String, via: String },
    /// Left op by op: its first nodes alone need more buffers than a
    /// program has.
    TooLarge { first: String },
    /// A device op no group took, and why.
    OpByOp {
        node: String,
        op: String,
        why: &'static str,
    },
}

/// Replaces every segment with a program node of type `op`, leaving out
/// the nodes `deferred` (work on constants, `program_defer.rs`); returns
/// what it decided, one entry per group of at least [`MIN_NODES`] and per
/// node left op by op.
pub fn form_programs(
    graph: &mut GraphDef,
    preserve: &HashSet<String>,
    device: &str,
    op: &str,
    deferred: &HashSet<String>,
) -> Vec<Decision> {
    let mut decisions: Vec<Decision> = graph
        .node
        .iter()
        .filter(|n| deferred.contains(&n.name))
        .map(|n| Decision::OpByOp {
            node: n.name.clone(),
            op: n.op.clone(),
            why: "it computes from constants only: left to TF's constant folding",
        })
        .collect();
    let mut skipped: HashSet<String> = deferred.clone();
    loop {
        let shapes = reshape_shapes(graph);
        let Some(group) = next_group(graph, preserve, device, &skipped, &shapes) else {
            decisions.extend(op_by_op(graph, preserve, device, op, &skipped, &shapes));
            return decisions;
        };
        match contract_or_split(graph, &group, device, op, &shapes) {
            Ok(decision) => decisions.push(decision),
            Err(decision) => {
                skipped.extend(group.iter().map(|&i| graph.node[i].name.clone()));
                decisions.push(decision);
            }
        }
    }
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Program { program, nodes } => write!(f, "program {program}: {nodes} nodes"),
            Self::Cycle { first, via } => write!(
                f,
                "no program for the group of {first}: it would close a cycle through {via}"
            ),
            Self::TooLarge { first } => write!(
                f,
                "no program for the group of {first}: it needs more buffers than a program has"
            ),
            Self::OpByOp { node, op, why } => write!(f, "no program for {op} '{node}': {why}"),
        }
    }
}

/// Appends the decisions to `TENSORPLUG_FALLBACK_FILE`, beside the
/// fallbacks, when it is set.
///
/// # Errors
/// A setting that does not read.
pub fn report(decisions: &[Decision]) -> Result<()> {
    if let Some(file) = settings::get(settings::FALLBACK_FILE)?
        && !decisions.is_empty()
    {
        crate::report::append(&file, decisions);
    }
    Ok(())
}

/// Why each op of ours on `device` that no program holds stays op by op
/// (the device ops with a kernel of ours; TF's plumbing and the groups
/// already reported, `skipped`, aside).
fn op_by_op(
    graph: &GraphDef,
    preserve: &HashSet<String>,
    device: &str,
    program_op: &str,
    skipped: &HashSet<String>,
    shapes: &Shapes,
) -> Vec<Decision> {
    // Our kernels' ops, and the views a program holds (TF's own kernels
    // run them, but a computed shape splits a group).
    let ours: HashSet<&str> = crate::kernels::ops::builtin()
        .filter_map(|k| k.op().to_str().ok())
        .chain(crate::kernels::program::lower::VIEW_OPS)
        .collect();
    graph
        .node
        .iter()
        .filter(|n| {
            is_ours(&n.device, device)
                && n.op != program_op
                && ours.contains(n.op.as_str())
                && !in_native_segment(n)
                && !skipped.contains(&n.name)
        })
        .map(|n| Decision::OpByOp {
            node: n.name.clone(),
            op: n.op.clone(),
            why: why_op_by_op(n, preserve, shapes),
        })
        .collect()
}

/// The first condition of [`candidate`] `node` fails, in words; a node
/// that passes them all had no neighbour to join.
fn why_op_by_op(node: &NodeDef, preserve: &HashSet<String>, shapes: &Shapes) -> &'static str {
    let held = if shapes.contains_key(&node.name) {
        supported(&in_segment(node, shapes))
    } else {
        supported(node)
    };
    if preserve.contains(&node.name) {
        "TF fetches it"
    } else if node.input.iter().any(|i| i.starts_with('^')) {
        "it waits on a control edge"
    } else if needs_op(node).is_some_and(|k| !every_device_has(k)) {
        "a device lacks the op it lowers to (the BatchMatMul record, Concat, Gather)"
    } else if !held {
        why_not_held(node, shapes)
    } else {
        "no neighbour a program holds"
    }
}

/// Why a program does not hold `node`, as far as the report can say.
fn why_not_held(node: &NodeDef, shapes: &Shapes) -> &'static str {
    let float = type_attr(node, "T") == Some(DataType::DtFloat as i32);
    if static_op(&node.op).is_none() {
        "a program does not hold this op"
    } else if !float && node_types(node).is_none() {
        "a program holds it in float32 only (or as an int8 op)"
    } else if constant_operand(node).is_some() && !shapes.contains_key(&node.name) {
        "its shape, axes, sizes or permutation input is computed, not a constant"
    } else {
        "a program does not hold it with these attributes or inputs"
    }
}

/// A program node's name: its first member's, then this.
const PROGRAM: &str = "tensorplug_program";

/// Whether `node` is a copy in a program's native segment
/// (`program_native.rs`). TF runs the pass again on its own output, where
/// Grappler may have dropped a copy's gate edge as redundant; a program
/// made of such copies would only ever run when the outer one is refused.
fn in_native_segment(node: &NodeDef) -> bool {
    node.name.contains(&format!("/{PROGRAM}/native/"))
}

fn candidate(node: &NodeDef, preserve: &HashSet<String>, device: &str, shapes: &Shapes) -> bool {
    is_ours(&node.device, device)
        && !preserve.contains(&node.name)
        && !in_native_segment(node)
        && needs_op(node).is_none_or(every_device_has)
        && node.input.iter().all(|i| !i.starts_with('^'))
        && if shapes.contains_key(&node.name) {
            supported(&in_segment(node, shapes))
        } else {
            supported(node)
        }
}

/// Whether every open device declares `kind` (so a program holding it
/// compiles on whichever of them runs it); none open, as in unit tests:
/// yes.
fn every_device_has(kind: OpKind) -> bool {
    crate::registry::devices()
        .iter()
        .all(|d| d.info().capabilities.supports(kind, DType::F32))
}

/// Each `Reshape`'s shape, each reduction's axes and each window
/// gradient's sizes, where a `Const` gives them: the attribute the
/// segment's copy of the node carries them in, and the input they replace.
type Shapes = HashMap<String, (&'static str, usize, Vec<i64>)>;

/// The attribute `node`'s constant input becomes in a segment, that input's
/// index, and the ranks it may have.
fn constant_operand(node: &NodeDef) -> Option<(&'static str, usize, &'static [usize])> {
    match node.op.as_str() {
        "Reshape" => Some((SHAPE_ATTR, 1, &[1])),
        // The axis, before the value.
        "Split" => Some((AXES_ATTR, 0, &[0])),
        // The axis, after the values.
        "ConcatV2" => match attr_of(node, "N") {
            Some(&attr_value::Value::I(n)) => Some((AXES_ATTR, usize::try_from(n).ok()?, &[0])),
            _ => None,
        },
        "Transpose" => Some((PERM_ATTR, 1, &[1])),
        op if REDUCE_OPS.contains(&op) => Some((AXES_ATTR, 1, &[0, 1])),
        op => gradient_sizes_input(op)
            .flatten()
            .map(|i| (SIZES_ATTR, i, &[1][..])),
    }
}

fn reshape_shapes(graph: &GraphDef) -> Shapes {
    let consts: HashMap<&str, &NodeDef> = graph
        .node
        .iter()
        .filter(|n| n.op == "Const")
        .map(|n| (n.name.as_str(), n))
        .collect();
    graph
        .node
        .iter()
        .filter_map(|n| {
            let (attr, index, ranks) = constant_operand(n)?;
            let Input::Data { node, port: 0 } = Input::parse(n.input.get(index)?) else {
                return None;
            };
            let value = consts.get(node)?;
            let rank = shape_rank(value)?;
            let ints = int_constant(value).filter(|_| ranks.contains(&rank))?;
            Some((n.name.clone(), (attr, index, ints)))
        })
        .collect()
}

/// The rank of a `Const`'s tensor.
fn shape_rank(node: &NodeDef) -> Option<usize> {
    match node.attr.get("value")?.value.as_ref()? {
        attr_value::Value::Tensor(t) => Some(t.tensor_shape.as_ref()?.dim.len()),
        _ => None,
    }
}

/// `node` as its segment holds it: a `Reshape` with a constant shape, a
/// reduction with constant axes or a window gradient with constant sizes
/// carries them as an attribute ([`SHAPE_ATTR`], [`AXES_ATTR`],
/// [`SIZES_ATTR`]) instead of that input.
fn in_segment(node: &NodeDef, shapes: &Shapes) -> NodeDef {
    let mut node = node.clone();
    if let Some((attr, index, dims)) = shapes.get(&node.name) {
        node.input.remove(*index);
        node.attr.insert(
            (*attr).into(),
            AttrValue {
                value: Some(attr_value::Value::List(attr_value::ListValue {
                    i: dims.clone(),
                    ..Default::default()
                })),
            },
        );
    }
    node
}

/// `node` with [`SCALAR_ATTR`] (`[slot, bits]`) when it is an `AddV2`,
/// `Add` or `Mul` one of whose inputs is a scalar float `Const`: a layer
/// norm's `ε`, GELU's factors, which the program's fusion reads
/// (`kernels/program/fuse.rs`).
fn with_scalar(mut node: NodeDef, by_name: &HashMap<&str, &NodeDef>) -> NodeDef {
    if !matches!(node.op.as_str(), "AddV2" | "Add" | "Mul") || node.input.len() != 2 {
        return node;
    }
    let scalar = (0..2).find_map(|slot| {
        let Input::Data { node: p, port: 0 } = Input::parse(&node.input[slot]) else {
            return None;
        };
        float_scalar(by_name.get(p)?).map(|v| (slot, v))
    });
    if let Some((slot, v)) = scalar {
        node.attr.insert(
            SCALAR_ATTR.into(),
            AttrValue {
                value: Some(attr_value::Value::List(attr_value::ListValue {
                    i: vec![slot as i64, i64::from(v.to_bits())],
                    ..Default::default()
                })),
            },
        );
    }
    node
}

/// The first group of at least [`MIN_NODES`] candidates joined by data
/// edges (or a lone one with host weights), none of them in `skipped`, as
/// node indices.
fn next_group(
    graph: &GraphDef,
    preserve: &HashSet<String>,
    device: &str,
    skipped: &HashSet<String>,
    shapes: &Shapes,
) -> Option<Vec<usize>> {
    let nodes = &graph.node;
    let index: HashMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.as_str(), i))
        .collect();
    let by_name: HashMap<&str, &NodeDef> = nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    let ok: Vec<bool> = nodes
        .iter()
        .map(|n| candidate(n, preserve, device, shapes) && !skipped.contains(&n.name))
        .collect();
    let mut parent: Vec<usize> = (0..nodes.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for (c, node) in nodes.iter().enumerate().filter(|&(c, _)| ok[c]) {
        for text in &node.input {
            if let Input::Data { node: p, port: 0 } = Input::parse(text)
                && let Some(&p) = index.get(p)
                && ok[p]
            {
                let (a, b) = (root(&mut parent, c), root(&mut parent, p));
                parent[a] = b;
            }
        }
    }
    let mut groups: HashMap<usize, Vec<usize>> = HashMap::new();
    for i in (0..nodes.len()).filter(|&i| ok[i]) {
        let r = root(&mut parent, i);
        groups.entry(r).or_default().push(i);
    }
    let mut groups: Vec<Vec<usize>> = groups
        .into_values()
        .filter(|g| {
            g.len() >= MIN_NODES || lone_with_host_weights(graph, &by_name, g, device, shapes)
        })
        .collect();
    groups.sort();
    groups.into_iter().next()
}

/// Whether `group` is one node, not a view, that reads a float host weight
/// (a CPU variable's read or constant): as a program the device keeps the
/// weight, op by op it crosses every step.
/// `by_name` indexes `graph`'s nodes.
fn lone_with_host_weights(
    graph: &GraphDef,
    by_name: &HashMap<&str, &NodeDef>,
    group: &[usize],
    device: &str,
    shapes: &Shapes,
) -> bool {
    let &[i] = group else {
        return false;
    };
    let node = &graph.node[i];
    if crate::kernels::program::lower::VIEW_OPS.contains(&node.op.as_str()) {
        return false;
    }
    let held = in_segment(node, shapes);
    let data = held.input.iter().filter(|t| !t.starts_with('^'));
    data.enumerate().any(|(slot, text)| {
        input_type(&held, slot) == DType::F32
            && canonical(text).is_some_and(|edge| host_weight(by_name, &edge, device))
    })
}

/// Contracts `group`, or, where that would close a cycle through a node
/// outside, the part of it that does not depend on that node: the members
/// downstream of it stay candidates for the next groups. Says why not when
/// no part of at least [`MIN_NODES`] can be contracted.
fn contract_or_split(
    graph: &mut GraphDef,
    group: &[usize],
    device: &str,
    op: &str,
    shapes: &Shapes,
) -> Result<Decision, Decision> {
    // A group past one program's buffers: its first part now, the rest
    // stays for the next groups.
    let mut part = program_size::fitting(graph, group);
    let lone_kept = || {
        let by_name = graph.node.iter().map(|n| (n.name.as_str(), n)).collect();
        lone_with_host_weights(graph, &by_name, &part, device, shapes)
    };
    if part.len() < MIN_NODES && !lone_kept() {
        let first = graph.node[group[0]].name.clone();
        return Err(Decision::TooLarge { first });
    }
    loop {
        let (first, via) = match contract(graph, &part, device, op, shapes) {
            Err(Decision::Cycle { first, via }) => (first, via),
            done => return done,
        };
        let downstream = reached_from(graph, &via);
        let rest: Vec<usize> = part
            .iter()
            .copied()
            .filter(|i| !downstream.contains(i))
            .collect();
        if rest.len() < MIN_NODES || rest.len() == part.len() {
            return Err(Decision::Cycle { first, via });
        }
        part = rest;
    }
}

/// The op that carries a loop's values to its next iteration.
const NEXT_ITERATION: &str = "NextIteration";

/// The nodes `name`'s outputs reach in the same iteration, by index.
fn reached_from(graph: &GraphDef, name: &str) -> HashSet<usize> {
    let uses = Uses::index(&graph.node);
    let next: HashSet<&str> = graph
        .node
        .iter()
        .filter(|n| n.op == NEXT_ITERATION)
        .map(|n| n.name.as_str())
        .collect();
    let mut seen = HashSet::new();
    let mut queue: VecDeque<&str> = VecDeque::from([name]);
    while let Some(n) = queue.pop_front() {
        if next.contains(n) {
            continue;
        }
        for u in uses.of(n) {
            if seen.insert(u.consumer) {
                queue.push_back(&graph.node[u.consumer].name);
            }
        }
    }
    seen
}

/// Replaces `group` with one program node, or says why not.
fn contract(
    graph: &mut GraphDef,
    group: &[usize],
    device: &str,
    op: &str,
    shapes: &Shapes,
) -> Result<Decision, Decision> {
    let members: HashSet<&str> = group.iter().map(|&i| graph.node[i].name.as_str()).collect();
    let uses = Uses::index(&graph.node);
    if let Some(via) = leaves_and_returns(graph, &uses, &members) {
        return Err(Decision::Cycle {
            first: graph.node[group[0]].name.clone(),
            via,
        });
    }
    let order = topological(graph, group, &members);
    let mut inputs: Vec<String> = Vec::new();
    let mut outputs: Vec<String> = Vec::new();
    let by_name: HashMap<&str, &NodeDef> =
        graph.node.iter().map(|n| (n.name.as_str(), n)).collect();
    let held: Vec<NodeDef> = order
        .iter()
        .map(|&i| with_scalar(in_segment(&graph.node[i], shapes), &by_name))
        .collect();
    for (node, &i) in held.iter().zip(&order) {
        let original = &graph.node[i];
        for text in &node.input {
            let input = Input::parse(text);
            if !members.contains(input.node())
                && let Some(edge) = canonical(text)
                && !inputs.contains(&edge)
            {
                inputs.push(edge);
            }
        }
        // Each output read outside, in port order (a `Split`'s pieces).
        let mut ports: Vec<u32> = (uses.of(&original.name).iter())
            .filter(|u| !members.contains(graph.node[u.consumer].name.as_str()))
            .filter_map(|u| u.port)
            .collect();
        ports.sort_unstable();
        ports.dedup();
        outputs.extend(ports.iter().map(|p| format!("{}:{p}", node.name)));
    }
    // Each input's element type: what the first member reading it takes.
    let mut input_types: HashMap<String, DType> = HashMap::new();
    for node in &held {
        let data = node.input.iter().filter(|t| !t.starts_with('^'));
        for (slot, edge) in data.filter_map(|t| canonical(t)).enumerate() {
            input_types
                .entry(edge)
                .or_insert_with(|| input_type(node, slot));
        }
    }
    let float = |edge: &String| input_types.get(edge).is_none_or(|&t| t == DType::F32);
    // Host inputs go last, in host memory: float data made off the device,
    // then float weights.
    let off_device = |edge: &String| {
        float(edge)
            && by_name
                .get(Input::parse(edge).node())
                .is_some_and(|n| !is_ours(&n.device, device))
    };
    let (weights, inputs): (Vec<String>, Vec<String>) = inputs
        .into_iter()
        .partition(|edge| float(edge) && host_weight(&by_name, edge, device));
    let (streamed, mut inputs): (Vec<String>, Vec<String>) =
        inputs.into_iter().partition(off_device);
    let (n_streamed, n_weights) = (streamed.len(), weights.len());
    inputs.extend(streamed);
    inputs.extend(weights);
    let segment = Segment {
        nodes: held,
        inputs,
        streamed: n_streamed,
        weights: n_weights,
        outputs,
    };
    let mut names: HashSet<String> = graph.node.iter().map(|n| n.name.clone()).collect();
    let first = &graph.node[order[0]];
    let name = unique(&mut names, &first.name, PROGRAM);
    let output_types: Vec<DType> = (segment.outputs.iter())
        .map(|edge| {
            let producer = Input::parse(edge).node();
            (segment.nodes.iter())
                .find(|n| n.name == producer)
                .map_or(DType::F32, output_type)
        })
        .collect();
    let types = Types {
        inputs: (segment.inputs.iter())
            .map(|e| input_types.get(e).copied().unwrap_or(DType::F32))
            .collect(),
        outputs: output_types,
    };
    let program = program_node(&name, op, &first.device, &segment, &types);
    let program_device = first.device.clone();
    let originals: Vec<NodeDef> = order.iter().map(|&i| graph.node[i].clone()).collect();
    let output_of: HashMap<String, usize> = segment
        .outputs
        .iter()
        .enumerate()
        .map(|(k, e)| (e.clone(), k))
        .collect();
    let members: HashSet<String> = members.iter().map(|s| s.to_string()).collect();
    graph.node.retain(|n| !members.contains(&n.name));
    for node in &mut graph.node {
        let mut waits_on_program = false;
        node.input.retain_mut(|text| match Input::parse(text) {
            // Port 0 reads the native segment's merge, which takes its
            // member's name (`program_native::attach`): the text stays.
            Input::Data { node: p, port } if members.contains(p) => {
                if port != 0 {
                    let k = canonical(text).and_then(|e| output_of.get(&e).copied());
                    *text = format!("{name}:{}", k.unwrap_or(0));
                }
                true
            }
            Input::Control(p) if members.contains(p) => {
                !std::mem::replace(&mut waits_on_program, true)
            }
            _ => true,
        });
        for text in &mut node.input {
            if let Input::Control(p) = Input::parse(text)
                && members.contains(p)
            {
                *text = format!("^{name}");
            }
        }
    }
    graph.node.push(program);
    program_native::attach(graph, &name, &program_device, &originals, &segment.outputs);
    Ok(Decision::Program {
        program: name,
        nodes: segment.nodes.len(),
    })
}

/// Whether `edge` (`node:port`) is a host weight: output 0 of a node off
/// `device` that is a [`WEIGHT_OPS`] node or a view of such nodes alone.
/// Only a hint: the kernel compares a weight's bytes every step, so a
/// wrong guess costs time, never a wrong answer.
fn host_weight(index: &HashMap<&str, &NodeDef>, edge: &str, device: &str) -> bool {
    fn weight(index: &HashMap<&str, &NodeDef>, edge: &str, device: &str, depth: usize) -> bool {
        let Input::Data { node, port: 0 } = Input::parse(edge) else {
            return false;
        };
        let Some(n) = index.get(node) else {
            return false;
        };
        if is_ours(&n.device, device) {
            return false;
        }
        if WEIGHT_OPS.contains(&n.op.as_str()) {
            return true;
        }
        depth > 0
            && VIEW_OPS.contains(&n.op.as_str())
            && n.input
                .iter()
                .filter(|i| !i.starts_with('^'))
                .all(|i| weight(index, i, device, depth - 1))
    }
    weight(index, edge, device, VIEW_DEPTH)
}

/// A node outside `members` that a member reaches and that reaches a
/// member: contracting the group would close a cycle through it. A path
/// through a loop's `NextIteration` is no such cycle: it reaches the
/// members of the next iteration (a `while` body's group is contracted
/// inside its frame, each iteration one program).
fn leaves_and_returns(
    graph: &GraphDef,
    uses: &Uses<'_>,
    members: &HashSet<&str>,
) -> Option<String> {
    let mut seen: HashSet<usize> = HashSet::new();
    let mut queue: VecDeque<usize> = VecDeque::new();
    for m in members {
        for u in uses.of(m) {
            if !members.contains(graph.node[u.consumer].name.as_str()) && seen.insert(u.consumer) {
                queue.push_back(u.consumer);
            }
        }
    }
    while let Some(i) = queue.pop_front() {
        if graph.node[i].op == NEXT_ITERATION {
            continue;
        }
        let name = graph.node[i].name.as_str();
        for u in uses.of(name) {
            let next = graph.node[u.consumer].name.as_str();
            if members.contains(next) {
                return Some(name.to_string());
            }
            if seen.insert(u.consumer) {
                queue.push_back(u.consumer);
            }
        }
    }
    None
}

/// The group's nodes, each after its producers in the group.
fn topological(graph: &GraphDef, group: &[usize], members: &HashSet<&str>) -> Vec<usize> {
    let index: HashMap<&str, usize> = group
        .iter()
        .map(|&i| (graph.node[i].name.as_str(), i))
        .collect();
    let mut pending: HashMap<usize, usize> = HashMap::new();
    let mut readers: HashMap<usize, Vec<usize>> = HashMap::new();
    for &i in group {
        let producers: HashSet<usize> = graph.node[i]
            .input
            .iter()
            .map(|t| Input::parse(t).node())
            .filter(|p| members.contains(p))
            .map(|p| index[p])
            .collect();
        pending.insert(i, producers.len());
        for p in producers {
            readers.entry(p).or_default().push(i);
        }
    }
    let mut ready: VecDeque<usize> = group.iter().copied().filter(|i| pending[i] == 0).collect();
    let mut order = Vec::with_capacity(group.len());
    while let Some(i) = ready.pop_front() {
        order.push(i);
        for &r in readers.get(&i).map_or(&[][..], Vec::as_slice) {
            let left = pending.get_mut(&r).expect("a member");
            *left -= 1;
            if *left == 0 {
                ready.push_back(r);
            }
        }
    }
    order
}

/// A program node's element types: of its inputs, of its results.
struct Types {
    inputs: Vec<DType>,
    outputs: Vec<DType>,
}

fn program_node(name: &str, op: &str, device: &str, segment: &Segment, t: &Types) -> NodeDef {
    let types = |of: &[DType]| AttrValue {
        value: Some(attr_value::Value::List(attr_value::ListValue {
            r#type: of.iter().map(|&d| tf_data_type(d) as i32).collect(),
            ..Default::default()
        })),
    };
    let host = segment.streamed + segment.weights;
    let args = segment.inputs.len() - host;
    let (args, host) = t.inputs.split_at(args);
    let mut node = NodeDef {
        name: name.into(),
        op: op.into(),
        device: device.into(),
        input: segment.inputs.clone(),
        ..Default::default()
    };
    node.attr.insert("Tin".into(), types(args));
    node.attr.insert("Th".into(), types(host));
    node.attr.insert("Tout".into(), types(&t.outputs));
    // `ran` (bool) follows the results: false when the device refused.
    node.attr.insert(
        "segment".into(),
        AttrValue {
            value: Some(attr_value::Value::S(segment.encode())),
        },
    );
    node
}

#[cfg(test)]
mod tests {
    use super::super::nodes::{type_value, value};
    use super::super::test_nodes::{CPU, FPGA, find, node, typed};
    use super::*;
    use crate::kernels::program::compile_for_tests as compile;
    use tensorplug_core::accelerator::Shape;
    use tensorplug_core::program::{BufferKind, Step};

    const OP: &str = "_TensorplugFPGAProgram";

    fn float(mut n: NodeDef) -> NodeDef {
        n.attr
            .insert("T".into(), type_value(DataType::DtFloat as i32));
        n
    }

    /// Two dense layers and a softmax on the FPGA, fed from the CPU, read
    /// by a fetched `Identity`.
    fn mlp() -> GraphDef {
        let mut x = node("x", "Placeholder", &[]);
        x.device = CPU.into();
        GraphDef {
            node: vec![
                x,
                node("w1", "Const", &[]),
                node("b1", "Const", &[]),
                node("w2", "Const", &[]),
                node("b2", "Const", &[]),
                float(node("d1/MatMul", "MatMul", &["x", "w1"])),
                float(node("d1/BiasAdd", "BiasAdd", &["d1/MatMul", "b1"])),
                float(node("d1/Relu", "Relu", &["d1/BiasAdd"])),
                float(node("d2/MatMul", "MatMul", &["d1/Relu:0", "w2"])),
                float(node("d2/BiasAdd", "BiasAdd", &["d2/MatMul", "b2"])),
                float(node("d2/Softmax", "Softmax", &["d2/BiasAdd"])),
                float(node("out", "Identity", &["d2/Softmax", "^d1/Relu"])),
            ],
            ..Default::default()
        }
    }

    fn preserve() -> HashSet<String> {
        ["out".to_string()].into()
    }

    /// [`form_programs`] on the FPGA, nothing deferred.
    fn form(g: &mut GraphDef, keep: &HashSet<String>) -> Vec<Decision> {
        form_programs(g, keep, "FPGA", OP, &HashSet::new())
    }

    #[test]
    fn a_dense_stack_becomes_one_program_read_where_its_nodes_were() {
        let mut g = mlp();
        let decisions = form(&mut g, &preserve());
        let name = "d1/MatMul/tensorplug_program";
        assert_eq!(
            decisions,
            [Decision::Program {
                program: name.into(),
                nodes: 6
            }]
        );
        let native = format!("{name}/native/");
        assert!(
            g.node.iter().all(|n| !n.name.starts_with("d1/")
                || n.name == name
                || n.name.starts_with(&native))
        );
        // The native segment: the members as they were, on the device, each
        // gated by `ran` (output 1, after the one result) being false; the
        // result merged.
        let gate = find(&g, &format!("{native}gate"));
        let gate_switch = find(&g, &format!("{native}gate_switch"));
        assert_eq!(
            gate_switch.input,
            [format!("{native}gate_token"), format!("{name}:1")]
        );
        assert_eq!(find(&g, &format!("{native}gate_token")).device, FPGA);
        assert_eq!(
            (gate_switch.op.as_str(), gate_switch.device.as_str()),
            ("Switch", FPGA)
        );
        assert_eq!(gate.input, [format!("{native}gate_switch:0")]);
        let copies: Vec<&NodeDef> = g
            .node
            .iter()
            .filter(|n| n.name.starts_with(&format!("{native}d")))
            .collect();
        assert_eq!(copies.len(), 6);
        for c in &copies {
            assert_eq!(c.device, FPGA, "{}", c.name);
            assert_eq!(c.input.last(), Some(&format!("^{native}gate")));
        }
        let relu = find(&g, &format!("{native}d1/Relu"));
        assert_eq!(relu.input[0], format!("{native}d1/BiasAdd:0"));
        // x, made on the CPU, reaches the copies through a switch there:
        // it crosses to the device only when they run.
        let matmul = find(&g, &format!("{native}d1/MatMul"));
        assert_eq!(matmul.input[0], format!("{native}x_0_switch:0"));
        let x_switch = find(&g, &format!("{native}x_0_switch"));
        assert_eq!(
            (x_switch.device.as_str(), x_switch.input[0].as_str()),
            (CPU, "x:0")
        );
        // The result's merge has the name of the member it is the output
        // of, which its readers still read.
        let merge = find(&g, "d2/Softmax");
        assert_eq!((merge.op.as_str(), merge.device.as_str()), ("Merge", FPGA));
        assert_eq!(
            merge.input,
            [
                format!("{native}result_0_switch:1"),
                format!("{native}d2/Softmax:0")
            ]
        );
        assert_eq!(
            find(&g, &format!("{native}result_0_switch")).input,
            [format!("{name}:0"), format!("{name}:1")]
        );
        let p = find(&g, name);
        assert_eq!((p.op.as_str(), p.device.as_str()), (OP, FPGA));
        // x, from the CPU, is host data: taken last, in host memory.
        assert_eq!(p.input, ["w1:0", "b1:0", "w2:0", "b2:0", "x:0"]);
        // The fetch reads the program; its wait on a member waits on it.
        assert_eq!(
            find(&g, "out").input,
            ["d2/Softmax".to_string(), format!("^{name}")]
        );
        let Some(attr_value::Value::S(bytes)) = p.attr["segment"].value.as_ref() else {
            panic!("no segment");
        };
        let segment = Segment::decode(bytes).unwrap();
        let ops: Vec<&str> = segment.nodes.iter().map(|n| n.op.as_str()).collect();
        assert_eq!(
            ops,
            ["MatMul", "BiasAdd", "Relu", "MatMul", "BiasAdd", "Softmax"]
        );
        assert_eq!(segment.outputs, ["d2/Softmax:0"]);

        // Compiled for a batch of 4: six commands, the arena shared.
        let s = |d: &[u64]| Shape::new(d).unwrap();
        let shapes = [s(&[8, 16]), s(&[16]), s(&[16, 3]), s(&[3]), s(&[4, 8])];
        let c = compile(&segment, &shapes).unwrap();
        assert_eq!(c.steps.len(), 6);
        assert_eq!(c.outputs, [s(&[4, 3])]);
        assert!(
            c.arena < c.scratch_total,
            "{} of {}",
            c.arena,
            c.scratch_total
        );
        let names: Vec<&str> = c.steps.iter().map(|(_, l)| &*l.node).collect();
        assert_eq!(names[5], "d2/Softmax");
        let error = compile(
            &segment,
            &[s(&[8, 16]), s(&[16]), s(&[16, 3]), s(&[3]), s(&[4, 7])],
        );
        assert!(error.unwrap_err().contains("MatMul 'd1/MatMul'"));
        // An empty batch: nothing to run, the output empty too.
        let empty = [s(&[8, 16]), s(&[16]), s(&[16, 3]), s(&[3]), s(&[0, 8])];
        let c = compile(&segment, &empty).unwrap();
        assert!(c.is_nothing() && c.steps.is_empty());
        assert_eq!(c.outputs, [s(&[0, 3])]);
        // An empty contraction makes a non-empty output: refused, named.
        let k0 = [s(&[0, 16]), s(&[16]), s(&[16, 3]), s(&[3]), s(&[4, 0])];
        let error = compile(&segment, &k0).unwrap_err();
        assert!(error.contains("'d1/MatMul': an empty input"), "{error}");
    }

    /// TF runs the pass again on its output; Grappler may have dropped the
    /// copies' gate edges meanwhile. The native segment stays op by op.
    #[test]
    fn a_second_run_makes_no_program_of_a_native_segment() {
        let mut g = mlp();
        form(&mut g, &preserve());
        for n in &mut g.node {
            if n.name.contains("/native/") && n.input.iter().any(|i| !i.starts_with('^')) {
                n.input.retain(|i| !i.starts_with('^'));
            }
        }
        let again = form(&mut g, &preserve());
        assert_eq!(again, []);
        let programs = g.node.iter().filter(|n| n.op == OP).count();
        assert_eq!(programs, 1);
    }

    #[test]
    fn a_group_past_a_programs_buffers_becomes_several_programs() {
        // x → 200 AddV2s in a chain, each adding a constant of its own:
        // 401 buffers as one program, past the format's 256.
        let mut x = node("x", "Placeholder", &[]);
        x.device = CPU.into();
        let mut nodes = vec![x];
        for k in 0..200 {
            nodes.push(node(&format!("w{k}"), "Const", &[]));
            let prev = if k == 0 {
                "x".to_string()
            } else {
                format!("a{}", k - 1)
            };
            let w = format!("w{k}");
            nodes.push(float(node(&format!("a{k}"), "AddV2", &[&prev, &w])));
        }
        nodes.push(float(node("out", "Identity", &["a199"])));
        let mut g = GraphDef {
            node: nodes,
            ..Default::default()
        };
        let decisions = form(&mut g, &preserve());
        let sizes: Vec<usize> = decisions
            .iter()
            .map(|d| match d {
                Decision::Program { nodes, .. } => *nodes,
                other => panic!("{other}"),
            })
            .collect();
        assert_eq!(sizes.iter().sum::<usize>(), 200, "{sizes:?}");
        assert!(sizes.len() >= 2, "{sizes:?}");
        for p in g.node.iter().filter(|n| n.op == OP) {
            let Some(attr_value::Value::S(bytes)) = p.attr["segment"].value.as_ref() else {
                panic!("no segment");
            };
            let segment = Segment::decode(bytes).unwrap();
            let buffers = segment.inputs.len() + segment.nodes.len();
            assert!(
                buffers <= tensorplug_core::program::MAX_BUFFERS,
                "{buffers}"
            );
        }
    }

    #[test]
    fn an_empty_batch_computes_only_the_outputs_it_does_not_empty() {
        // A batch's MatMul plus a weight's Neg, both read outside: with an
        // empty batch the sum is empty and only the Neg runs.
        let mut x = node("x", "Placeholder", &[]);
        x.device = CPU.into();
        let mut g = GraphDef {
            node: vec![
                x,
                node("w", "Const", &[]),
                node("b", "Const", &[]),
                float(node("mm", "MatMul", &["x", "w"])),
                float(node("nb", "Neg", &["b"])),
                float(node("add", "AddV2", &["mm", "nb"])),
                float(node("out", "Identity", &["add"])),
                // A Neg of the empty sum: its −1 is a temporary it skips.
                float(node("neg_add", "Neg", &["add"])),
                float(node("out3", "Identity", &["neg_add"])),
                float(node("out2", "Identity", &["nb"])),
            ],
            ..Default::default()
        };
        let keep: HashSet<String> = ["out", "out2", "out3"].map(String::from).into();
        let decisions = form(&mut g, &keep);
        assert_eq!(decisions.len(), 1, "{decisions:?}");
        let p = g.node.iter().find(|n| n.op == OP).unwrap();
        let Some(attr_value::Value::S(bytes)) = p.attr["segment"].value.as_ref() else {
            panic!("no segment");
        };
        let segment = Segment::decode(bytes).unwrap();
        let s = |d: &[u64]| Shape::new(d).unwrap();
        let shapes: Vec<Shape> = segment
            .inputs
            .iter()
            .map(|e| match e.as_str() {
                "x:0" => s(&[0, 8]),
                "w:0" => s(&[8, 3]),
                _ => s(&[3]),
            })
            .collect();
        let c = compile(&segment, &shapes).unwrap();
        assert!(!c.is_nothing());
        let names: Vec<&str> = c.steps.iter().map(|(_, l)| &*l.node).collect();
        // The Neg's fill and Mul; empty fills for the MatMul, the sum and
        // the sum's Neg.
        assert_eq!(names, ["mm", "nb", "nb", "add", "neg_add"]);
        let writes: Vec<bool> = c
            .steps
            .iter()
            .map(|(step, _)| matches!(step, Step::Fill { pattern: 0, .. }))
            .collect();
        assert_eq!(writes, [true, false, false, true, true]);
        let mut outputs = c.outputs.clone();
        outputs.sort_by_key(|o| o.dims().len());
        assert_eq!(outputs, [s(&[3]), s(&[0, 3]), s(&[0, 3])]);
    }

    fn list(ints: &[i64]) -> AttrValue {
        AttrValue {
            value: Some(attr_value::Value::List(attr_value::ListValue {
                i: ints.to_vec(),
                ..Default::default()
            })),
        }
    }

    fn text(s: &str) -> AttrValue {
        AttrValue {
            value: Some(attr_value::Value::S(s.as_bytes().to_vec())),
        }
    }

    #[test]
    fn a_conv_block_becomes_a_program_with_its_windows() {
        let mut conv = float(node("c/conv", "_FusedConv2D", &["x", "f", "b"]));
        for (k, v) in [
            ("strides", list(&[1, 1, 1, 1])),
            ("dilations", list(&[1, 1, 1, 1])),
            ("padding", text("SAME")),
            ("data_format", text("NHWC")),
            (
                "num_args",
                AttrValue {
                    value: Some(attr_value::Value::I(1)),
                },
            ),
        ] {
            conv.attr.insert(k.into(), v);
        }
        conv.attr.insert(
            "fused_ops".into(),
            AttrValue {
                value: Some(attr_value::Value::List(attr_value::ListValue {
                    s: vec![b"BiasAdd".to_vec(), b"Relu".to_vec()],
                    ..Default::default()
                })),
            },
        );
        let mut pool = float(node("c/pool", "MaxPool", &["c/conv"]));
        for (k, v) in [
            ("ksize", list(&[1, 2, 2, 1])),
            ("strides", list(&[1, 2, 2, 1])),
            ("padding", text("VALID")),
            ("data_format", text("NHWC")),
        ] {
            pool.attr.insert(k.into(), v);
        }
        let mut g = GraphDef {
            node: vec![
                node("x", "Const", &[]),
                node("f", "Const", &[]),
                node("b", "Const", &[]),
                conv,
                pool,
                node("out", "Identity", &["c/pool"]),
            ],
            ..Default::default()
        };
        let decisions = form(&mut g, &["out".to_string()].into());
        assert_eq!(decisions.len(), 1, "{decisions:?}");
        let p = find(&g, "c/conv/tensorplug_program");
        let Some(attr_value::Value::S(bytes)) = p.attr["segment"].value.as_ref() else {
            panic!("no segment");
        };
        let s = |d: &[u64]| Shape::new(d).unwrap();
        let segment = Segment::decode(bytes).unwrap();
        let c = compile(&segment, &[s(&[2, 8, 8, 3]), s(&[3, 3, 3, 4]), s(&[4])]).unwrap();
        assert_eq!(c.outputs, [s(&[2, 4, 4, 4])]);
        assert_eq!(c.steps.len(), 2);
    }

    #[test]
    fn an_int8_chain_becomes_a_program_of_typed_buffers() {
        let mut conv = node(
            "q/conv",
            "_TensorplugFPGAConv2DInt8",
            &["q/quant", "weights", "conv_block"],
        );
        for (k, v) in [
            ("strides", list(&[1, 1, 1, 1])),
            ("dilations", list(&[1, 1, 1, 1])),
            ("padding", text("SAME")),
            ("data_format", text("NHWC")),
        ] {
            conv.attr.insert(k.into(), v);
        }
        let mut g = GraphDef {
            node: vec![
                node("x", "Const", &[]),
                node("quant_block", "_TensorplugFPGAQatTensorBlockPacked", &[]),
                node("weights", "_TensorplugFPGAQatWeightsPacked", &[]),
                node("conv_block", "_TensorplugFPGAQatConvBlockPacked", &[]),
                node("dequant_block", "_TensorplugFPGAQatTensorBlockPacked", &[]),
                super::super::nodes::constant(
                    "flat_shape",
                    FPGA,
                    DataType::DtInt32,
                    &[2],
                    [1i32, 32].iter().flat_map(|v| v.to_le_bytes()).collect(),
                ),
                node("q/quant", "_TensorplugFPGAQuantize", &["x", "quant_block"]),
                conv,
                // A quantized `Flatten`: a view of int8 bytes.
                typed(
                    node("q/flat", "Reshape", &["q/conv", "flat_shape"]),
                    "T",
                    DataType::DtInt8,
                ),
                node(
                    "q/dequant",
                    "_TensorplugFPGADequantize",
                    &["q/flat", "dequant_block"],
                ),
                node("out", "Identity", &["q/dequant"]),
                node("raw", "Identity", &["q/conv"]),
            ],
            ..Default::default()
        };
        let fetched = ["out".to_string(), "raw".to_string()].into();
        let decisions = form(&mut g, &fetched);
        assert!(
            matches!(&decisions[..], [Decision::Program { nodes: 4, .. }, ..]),
            "{decisions:?}"
        );
        let p = find(&g, "q/quant/tensorplug_program");
        let types = |key: &str| match p.attr[key].value.as_ref() {
            Some(attr_value::Value::List(l)) => l.r#type.clone(),
            _ => panic!("no {key}"),
        };
        let (f32, i8, i32) = (
            DataType::DtFloat as i32,
            DataType::DtInt8 as i32,
            DataType::DtInt32 as i32,
        );
        // Inputs in the order the members read them; results: the
        // dequantized floats and the convolution's int8 (both read outside).
        assert_eq!(
            p.input,
            [
                "x:0",
                "quant_block:0",
                "weights:0",
                "conv_block:0",
                "dequant_block:0"
            ]
        );
        assert_eq!(types("Tin"), [f32, i32, i8, i32, i32]);
        assert_eq!(types("Tout"), [i8, f32]);
        // The native segment's gates of the results have their types.
        let native = "q/quant/tensorplug_program/native";
        for (k, t) in [(0, i8), (1, f32)] {
            let merge = ["q/conv", "q/dequant"][k].to_string();
            for gate in [format!("{native}/result_{k}_switch"), merge] {
                assert_eq!(type_attr(find(&g, &gate), "T"), Some(t), "{gate}");
            }
        }
        let Some(attr_value::Value::S(bytes)) = p.attr["segment"].value.as_ref() else {
            panic!("no segment");
        };
        let segment = Segment::decode(bytes).unwrap();
        let s = |d: &[u64]| Shape::new(d).unwrap();
        // One scale and zero point (a header and a word), and the
        // convolution's three words per output channel after the header.
        let (one, conv_block) = (s(&[9]), s(&[8 + 3 * 2]));
        let shapes = [s(&[1, 4, 4, 3]), one, s(&[3, 3, 3, 2]), conv_block, one];
        let c = compile(&segment, &shapes).unwrap();
        assert_eq!(c.outputs, [s(&[1, 4, 4, 2]), s(&[1, 32])]);
        let kinds: Vec<&str> = (c.steps.iter())
            .map(|(step, _)| match step {
                Step::Launch { kind, .. } => kind.name(),
                Step::Copy { .. } => "Copy",
                other => panic!("{other:?}"),
            })
            .collect();
        // The quantized `Flatten` is a view of the convolution's output.
        assert_eq!(kinds, ["Quantize", "Conv2DInt8", "Dequantize"]);
        let views: Vec<DType> = (c.buffers.iter())
            .filter(|b| b.kind == BufferKind::View)
            .map(|b| b.dtype)
            .collect();
        assert_eq!(views, [DType::I8]);
        let dtypes: Vec<DType> = c.buffers.iter().map(|b| b.dtype).collect();
        assert!(dtypes.contains(&DType::I8) && dtypes.contains(&DType::I32));
        // An input two members read as different types is refused, not run.
        let mut wrong = segment.clone();
        wrong.nodes[0].input[0] = "weights:0".into();
        let error = compile(&wrong, &shapes).unwrap_err();
        assert!(error.contains("is f32, its op takes i8"), "{error}");
    }

    #[test]
    fn host_data_then_host_weights_are_taken_last() {
        let mut g = mlp();
        for n in &mut g.node {
            match n.name.as_str() {
                "w1" => (n.op, n.device) = ("ReadVariableOp".into(), CPU.into()),
                "b2" => n.device = CPU.into(),
                _ => {}
            }
        }
        form(&mut g, &preserve());
        let p = find(&g, "d1/MatMul/tensorplug_program");
        // b1 and w2 are on the FPGA already; x is data from the CPU (a
        // Placeholder), uploaded each step; w1 and b2 are weights, kept.
        assert_eq!(p.input, ["b1:0", "w2:0", "x:0", "w1:0", "b2:0"]);
        let count = |attr: &str| match p.attr[attr].value.as_ref() {
            Some(attr_value::Value::List(l)) => l.r#type.len(),
            other => panic!("{attr}: {other:?}"),
        };
        assert_eq!((count("Tin"), count("Th")), (2, 3));
        let Some(attr_value::Value::S(bytes)) = p.attr["segment"].value.as_ref() else {
            panic!("no segment");
        };
        let segment = Segment::decode(bytes).unwrap();
        assert_eq!(
            (segment.inputs.len(), segment.streamed, segment.weights),
            (5, 1, 2)
        );
        assert_eq!(segment.inputs, p.input);
    }

    /// Forms `g`'s programs (`out` fetched) and expects exactly one, of
    /// `nodes` nodes, named after `first`: its node and its segment.
    fn the_one_program(g: &mut GraphDef, first: &str, nodes: usize) -> (NodeDef, Segment) {
        let decisions = form(g, &["out".to_string()].into());
        let program = format!("{first}/tensorplug_program");
        let programs: Vec<&Decision> = decisions
            .iter()
            .filter(|d| !matches!(d, Decision::OpByOp { .. }))
            .collect();
        assert_eq!(
            programs,
            [&Decision::Program {
                program: program.clone(),
                nodes
            }]
        );
        let p = find(g, &program).clone();
        let Some(attr_value::Value::S(bytes)) = p.attr["segment"].value.as_ref() else {
            panic!("no segment");
        };
        let segment = Segment::decode(bytes).unwrap();
        (p, segment)
    }

    #[test]
    fn views_with_a_constant_shape_join_a_program_as_views_of_their_input() {
        let shape: Vec<u8> = [-1i32, 1, 16]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let mut computed = node("computed", "Shape", &["x"]);
        computed.device = CPU.into();
        let mut squeeze = float(node("sq", "Squeeze", &["r"]));
        squeeze.attr.insert("squeeze_dims".into(), list(&[1]));
        let mut g = GraphDef {
            node: vec![
                node("x", "Const", &[]),
                node("w", "Const", &[]),
                super::super::nodes::constant("s", FPGA, DataType::DtInt32, &[3], shape),
                float(node("mm", "MatMul", &["x", "w"])),
                float(node("r", "Reshape", &["mm", "s"])),
                squeeze,
                float(node("relu", "Relu", &["sq"])),
                // A shape computed at run time stays a TF Reshape.
                float(node("r2", "Reshape", &["relu", "computed"])),
                node("out", "Identity", &["r2"]),
            ],
            ..Default::default()
        };
        let (p, segment) = the_one_program(&mut g, "mm", 4);
        assert_eq!(p.input, ["x:0", "w:0"], "the shape is no input");
        assert_eq!(find(&g, "r2").input, ["relu", "computed"]);
        let s = |d: &[u64]| Shape::new(d).unwrap();
        let c = compile(&segment, &[s(&[4, 8]), s(&[8, 16])]).unwrap();
        assert_eq!(c.outputs, [s(&[4, 16])]);
        let copies = c
            .steps
            .iter()
            .filter(|(step, _)| matches!(step, Step::Copy { .. }))
            .count();
        // The reshape and the squeeze copy nothing: both view the product..
        let views = (c.buffers.iter())
            .filter(|b| b.kind == BufferKind::View)
            .count();
        assert_eq!((c.steps.len(), copies, views), (2, 0, 2));
        // 60 elements do not reshape to (-1, 1, 16).
        let error = compile(&segment, &[s(&[4, 8]), s(&[8, 15])]).unwrap_err();
        assert!(error.contains("Reshape 'r'"), "{error}");
    }

    /// An LSTM cell's `Split` joins its program: its pieces are outputs of
    /// their own (ports 1, 2, … read outside are the program's), its axis
    /// a constant moved into the node.
    #[test]
    fn a_split_joins_a_program_with_each_piece_an_output() {
        let axis = (1i32).to_le_bytes().to_vec();
        let mut split = float(node("split", "Split", &["axis", "mm"]));
        split
            .attr
            .insert("num_split".into(), value(attr_value::Value::I(2)));
        let mut g = GraphDef {
            node: vec![
                node("x", "Const", &[]),
                node("w", "Const", &[]),
                super::super::nodes::constant("axis", FPGA, DataType::DtInt32, &[], axis),
                float(node("mm", "MatMul", &["x", "w"])),
                split,
                float(node("tanh", "Tanh", &["split"])),
                float(node("mul", "Mul", &["tanh", "split:1"])),
                node("out", "Identity", &["mul"]),
                node("out2", "Identity", &["split:1"]),
            ],
            ..Default::default()
        };
        let (p, segment) = the_one_program(&mut g, "mm", 4);
        assert_eq!(p.input, ["x:0", "w:0"], "the axis is no input");
        assert_eq!(segment.outputs, ["split:1", "mul:0"]);
        let name = "mm/tensorplug_program";
        assert_eq!(
            find(&g, "out2").input,
            [format!("{name}/native/result_0:0")]
        );
        assert_eq!(find(&g, "out").input, ["mul"]);
        let s = |d: &[u64]| Shape::new(d).unwrap();
        let c = compile(&segment, &[s(&[3, 5]), s(&[5, 8])]).unwrap();
        assert_eq!(c.outputs, [s(&[3, 4]), s(&[3, 4])]);
        let gathers = (c.steps.iter())
            .filter(|(step, _)| {
                matches!(
                    step,
                    Step::Launch {
                        kind: OpKind::Gather(_),
                        ..
                    }
                )
            })
            .count();
        assert_eq!(gathers, 2);
    }

    /// A convnet's backward chain: `MaxPoolGrad`, then the convolution's
    /// two gradients, their sizes given by `Const`s (as TF's constant
    /// folding leaves them), join one program with one command each; a
    /// sizes input computed at run time keeps its node out.
    #[test]
    fn window_gradients_with_constant_sizes_join_a_program() {
        let ints = |v: &[i32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
        let window = |mut n: NodeDef, k: i64, padding: &str| {
            n.attr.insert("strides".into(), list(&[1, k, k, 1]));
            n.attr.insert("padding".into(), text(padding));
            n.attr.insert("data_format".into(), text("NHWC"));
            if k == 2 {
                n.attr.insert("ksize".into(), list(&[1, 2, 2, 1]));
            } else {
                n.attr.insert("dilations".into(), list(&[1, 1, 1, 1]));
            }
            n
        };
        let constant = super::super::nodes::constant;
        let mut computed = node("computed", "Shape", &["x"]);
        computed.device = CPU.into();
        let mut g = GraphDef {
            node: vec![
                node("x", "Const", &[]),
                node("y", "Const", &[]),
                node("dy", "Const", &[]),
                node("f", "Const", &[]),
                constant("fs", FPGA, DataType::DtInt32, &[4], ints(&[3, 3, 3, 3])),
                constant("is", FPGA, DataType::DtInt32, &[4], ints(&[2, 8, 8, 3])),
                window(
                    float(node("pg", "MaxPoolGrad", &["x", "y", "dy"])),
                    2,
                    "VALID",
                ),
                window(
                    float(node("fg", "Conv2DBackpropFilter", &["x", "fs", "pg"])),
                    1,
                    "SAME",
                ),
                window(
                    float(node("ig", "Conv2DBackpropInput", &["is", "f", "pg"])),
                    1,
                    "SAME",
                ),
                window(
                    float(node(
                        "late",
                        "Conv2DBackpropInput",
                        &["computed", "f", "pg"],
                    )),
                    1,
                    "SAME",
                ),
                node("out", "Identity", &["fg", "ig", "late"]),
            ],
            ..Default::default()
        };
        let (p, segment) = the_one_program(&mut g, "pg", 3);
        assert_eq!(
            p.input,
            ["x:0", "y:0", "dy:0", "f:0"],
            "the sizes are no inputs"
        );
        assert_eq!(find(&g, "late").input[0], "computed");
        let s = |d: &[u64]| Shape::new(d).unwrap();
        let (x, pooled) = (s(&[2, 8, 8, 3]), s(&[2, 4, 4, 3]));
        let c = compile(&segment, &[x, pooled, pooled, s(&[3, 3, 3, 3])]).unwrap();
        let mut outputs = c.outputs.clone();
        outputs.sort_by_key(|o| o.dims().to_vec());
        assert_eq!(outputs, [x, x, s(&[3, 3, 3, 3])]);
        let kinds: Vec<&str> = c
            .steps
            .iter()
            .filter_map(|(step, _)| match step {
                Step::Launch { kind, .. } => Some(kind.name()),
                _ => None,
            })
            .collect();
        assert_eq!(kinds.len(), 3, "{kinds:?}");
        // A gradient of the wrong shape is refused, naming the node.
        let error =
            compile(&segment, &[x, pooled, s(&[2, 4, 4, 2]), s(&[3, 3, 3, 3])]).unwrap_err();
        assert!(error.contains("MaxPoolGrad 'pg'"), "{error}");
    }

    #[test]
    fn an_op_of_a_family_with_other_types_inputs_or_commands_stays_out() {
        // Keras 2's sparse cross-entropy: a softmax by its kernel's family,
        // but with int64 labels and two outputs.
        let mut loss = float(node(
            "xent",
            "SparseSoftmaxCrossEntropyWithLogits",
            &["d2", "labels"],
        ));
        loss.attr
            .insert("Tlabels".into(), type_value(DataType::DtInt64 as i32));
        let mut g = GraphDef {
            node: vec![
                node("x", "Const", &[]),
                node("w", "Const", &[]),
                node("labels", "Const", &[]),
                float(node("d1", "MatMul", &["x", "w"])),
                float(node("d2", "Relu", &["d1"])),
                loss,
                // A comparison: a binary op by family, but its kernel casts
                // the mask to bool, a second command and another type.
                float(node("gt", "Greater", &["d2", "x"])),
                node("out", "Identity", &["xent"]),
                node("out2", "Identity", &["gt"]),
            ],
            ..Default::default()
        };
        let preserve = ["out".to_string(), "out2".to_string()].into();
        form(&mut g, &preserve);
        let p = find(&g, "d1/tensorplug_program");
        assert_eq!(p.input, ["x:0", "w:0"]);
        assert_eq!(find(&g, "xent").input, ["d2", "labels"]);
        assert_eq!(find(&g, "gt").input, ["d2", "x"]);
    }

    #[test]
    fn a_group_whose_contraction_would_close_a_cycle_stays_op_by_op() {
        // a → (CPU) host → b, and a → b: one program would read its own output.
        let mut host = node("host", "Identity", &["a"]);
        host.device = CPU.into();
        let mut g = GraphDef {
            node: vec![
                node("x", "Const", &[]),
                float(node("a", "Relu", &["x"])),
                host,
                float(node("b", "AddV2", &["a", "host"])),
                node("out", "Identity", &["b"]),
            ],
            ..Default::default()
        };
        let before = g.clone();
        let decisions = form(&mut g, &["out".to_string()].into());
        assert_eq!(
            decisions,
            [Decision::Cycle {
                first: "a".into(),
                via: "host".into()
            }]
        );
        assert_eq!(g, before);
    }

    #[test]
    fn a_while_body_becomes_a_program_inside_its_frame() {
        // A loop: Enter → Merge → Switch → Identity → a → b → NextIteration
        // → Merge. The path from b back to a runs through NextIteration:
        // the next iteration, no cycle; {a, b} is one program per
        // iteration, and the gate's constant waits on it (its frame).
        let mut g = GraphDef {
            node: vec![
                node("x", "Const", &[]),
                node("enter", "Enter", &["x"]),
                node("merge", "Merge", &["enter", "next"]),
                node("pred", "Const", &[]),
                node("switch", "Switch", &["merge", "pred"]),
                node("body", "Identity", &["switch:1"]),
                float(node("a", "Relu", &["body"])),
                float(node("b", "Tanh", &["a"])),
                node("next", "NextIteration", &["b"]),
                node("exit", "Exit", &["switch:0"]),
                node("out", "Identity", &["exit"]),
            ],
            ..Default::default()
        };
        let decisions = form(&mut g, &["out".to_string()].into());
        let name = "a/tensorplug_program";
        assert_eq!(
            decisions,
            [Decision::Program {
                program: name.into(),
                nodes: 2
            }]
        );
        assert_eq!(find(&g, "next").input, ["b"]);
        let token = find(&g, &format!("{name}/native/gate_token"));
        assert_eq!(token.input, [format!("^{name}")]);
    }

    #[test]
    fn a_group_that_would_close_a_cycle_is_split_before_the_node_outside() {
        // a → c, and a → (CPU) host → b ← c, b → d: one program would read
        // its own output through `host`; {a, c} and {b, d} do not.
        let mut host = node("host", "Identity", &["a"]);
        host.device = CPU.into();
        let mut g = GraphDef {
            node: vec![
                node("x", "Const", &[]),
                float(node("a", "Relu", &["x"])),
                float(node("c", "Tanh", &["a"])),
                host,
                float(node("b", "AddV2", &["c", "host"])),
                float(node("d", "Relu", &["b"])),
                node("out", "Identity", &["d"]),
            ],
            ..Default::default()
        };
        let decisions = form(&mut g, &["out".to_string()].into());
        assert_eq!(
            decisions,
            [
                Decision::Program {
                    program: "a/tensorplug_program".into(),
                    nodes: 2
                },
                Decision::Program {
                    program: "b/tensorplug_program".into(),
                    nodes: 2
                }
            ]
        );
        // The second program reads the first's output and the host's.
        let second = find(&g, "b/tensorplug_program");
        assert_eq!(second.input, ["c:0", "host:0"]);
        assert_eq!(find(&g, "host").input, ["a"]);
    }

    /// The report's reasons for ops left alone: a `Reshape` whose shape
    /// is computed, an op of ours a program does not hold.
    #[test]
    fn the_report_says_why_an_op_stays_op_by_op() {
        let preserve = preserve();
        let mut g = mlp();
        g.node.push(float(node("shape", "Shape", &["d1/Relu"])));
        g.node
            .push(float(node("flat", "Reshape", &["d1/Relu", "shape"])));
        g.node.push(float(node("sum", "Cumsum", &["flat", "axis"])));
        let why_of = |d: &[Decision], name: &str| {
            d.iter().find_map(|d| match d {
                Decision::OpByOp { node, why, .. } if node == name => Some(*why),
                _ => None,
            })
        };
        let decisions = form(&mut g, &preserve);
        assert_eq!(
            why_of(&decisions, "flat"),
            Some("its shape, axes, sizes or permutation input is computed, not a constant")
        );
        assert_eq!(
            why_of(&decisions, "sum"),
            Some("a program does not hold this op")
        );
    }

    #[test]
    fn a_lone_node_becomes_a_program_only_when_it_reads_a_host_weight() {
        // d2's MatMul alone (its neighbours half and fetched), its weight a
        // CPU variable's read: a program keeps the weight on the device.
        let mut g = mlp();
        for n in &mut g.node {
            match n.name.as_str() {
                "d1/Relu" => {
                    n.attr
                        .insert("T".into(), type_value(DataType::DtHalf as i32));
                }
                "w2" => (n.op, n.device) = ("ReadVariableOp".into(), CPU.into()),
                _ => {}
            }
        }
        let keep: HashSet<String> = ["out".into(), "d2/BiasAdd".into()].into();
        let decisions = form(&mut g, &keep);
        let lone = Decision::Program {
            program: "d2/MatMul/tensorplug_program".into(),
            nodes: 1,
        };
        assert!(decisions.contains(&lone), "{decisions:?}");
        let p = find(&g, "d2/MatMul/tensorplug_program");
        assert_eq!(p.input, ["d1/Relu:0", "w2:0"]);
        // Its weight on the device: the MatMul stays op by op.
        let mut g = mlp();
        for n in &mut g.node {
            if n.name == "d1/Relu" {
                n.attr
                    .insert("T".into(), type_value(DataType::DtHalf as i32));
            }
        }
        assert!(!form(&mut g, &keep).contains(&Decision::Program {
            program: "d2/MatMul/tensorplug_program".into(),
            nodes: 1,
        }));
    }

    #[test]
    fn fetched_nodes_other_devices_and_other_types_stay() {
        let mut g = mlp();
        for n in &mut g.node {
            if n.name == "d1/Relu" {
                n.attr
                    .insert("T".into(), type_value(DataType::DtHalf as i32));
            }
        }
        let mut preserve = preserve();
        preserve.insert("d2/BiasAdd".into());
        let decisions = form(&mut g, &preserve);
        // d1's MatMul and BiasAdd; d2's MatMul alone is too small; the
        // softmax alone too. Each op left says why, in the report.
        let why = |node: &str, op: &str, why: &'static str| Decision::OpByOp {
            node: node.into(),
            op: op.into(),
            why,
        };
        assert_eq!(
            decisions,
            [
                Decision::Program {
                    program: "d1/MatMul/tensorplug_program".into(),
                    nodes: 2
                },
                why(
                    "d1/Relu",
                    "Relu",
                    "a program holds it in float32 only (or as an int8 op)"
                ),
                why("d2/MatMul", "MatMul", "no neighbour a program holds"),
                why("d2/BiasAdd", "BiasAdd", "TF fetches it"),
                why("d2/Softmax", "Softmax", "no neighbour a program holds"),
            ]
        );
        assert_eq!(
            decisions[3].to_string(),
            "no program for BiasAdd 'd2/BiasAdd': TF fetches it"
        );

        assert_eq!(find(&g, "d1/Relu").input, ["d1/BiasAdd"]);
        assert_eq!(
            form_programs(&mut g, &preserve, "NPU", OP, &HashSet::new()),
            []
        );
    }
}
