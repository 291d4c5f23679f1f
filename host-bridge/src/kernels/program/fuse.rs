//! Fusion inside programs (issue 43): a group of a segment's nodes that one
//! catalogue command computes with the same arithmetic, bit for bit,
//! becomes one node before the segment lowers: Keras'
//! `LayerNormalization` (eleven nodes) the `LayerNorm` record, `gelu`
//! (five) the `Gelu` record (`docs/device-programs.md`, "Fusion").

use super::reduce::AXES_ATTR;
use super::segment::canonical;
use crate::graph::nodes::attr_of;
use crate::graph::proto::{AttrValue, DataType, NodeDef, attr_value::Value};
use std::collections::{HashMap, HashSet};
use tensorplug_core::accelerator::{DType, OpKind, Shape, gelu, layer_norm};

/// The fused node's op: inputs `x`, `gamma`, `beta`.
pub const LAYER_NORM_OP: &str = "_TensorplugLayerNorm";
/// The fused `gelu`'s op: input `x`; attributes `c` and `h`.
pub const GELU_OP: &str = "_TensorplugGelu";
/// On a segment's `AddV2` one of whose inputs is a scalar float `Const`
/// (the graph pass writes it): `[slot, the value's f32 bits]`.
pub const SCALAR_ATTR: &str = "_tensorplug_scalar";
const EPSILON_ATTR: &str = "epsilon";
/// The fused node's name on the profiler's plane: its members' common
/// scope (`…/layer_normalization_1`).
const LABEL_ATTR: &str = "_tensorplug_label";
const FORM_ATTR: &str = "form";

/// `TENSORPLUG_PROGRAM_FUSION` (default on), read when a program compiles.
///
/// # Errors
/// A value that is no boolean, naming the variable.
fn enabled() -> Result<bool, String> {
    crate::settings::flag(crate::settings::PROGRAM_FUSION, true).map_err(|e| e.to_string())
}

/// The command of a fused node, or `None` for any other node.
pub fn kind(node: &NodeDef) -> Option<Result<OpKind, String>> {
    if node.op == GELU_OP {
        let float = |key: &str| match attr_of(node, key) {
            Some(&Value::F(v)) => Ok(v),
            _ => Err(format!("no {key}")),
        };
        return Some(float("c").and_then(|c| Ok(gelu(c, float("h")?))));
    }
    (node.op == LAYER_NORM_OP).then(|| {
        let epsilon = match attr_of(node, EPSILON_ATTR) {
            Some(&Value::F(e)) => e,
            _ => return Err("no epsilon".to_string()),
        };
        let form = match attr_of(node, FORM_ATTR) {
            Some(&Value::I(f @ 0..=1)) => f as u8,
            _ => return Err("no form".to_string()),
        };
        Ok(layer_norm(epsilon, form))
    })
}

/// The TF node name a command of `node` carries on the profiler's plane:
/// a fused node's members' common scope, another node's own name.
pub fn label(node: &NodeDef) -> &str {
    match attr_of(node, LABEL_ATTR) {
        Some(Value::S(s)) => std::str::from_utf8(s).unwrap_or(&node.name),
        _ => &node.name,
    }
}

/// The longest scope (`a/b`, whole path components) every one of `names`
/// is in; empty when they share none.
fn common_scope(names: &[&str]) -> String {
    let mut scope: Vec<&str> = names.first().map_or(Vec::new(), |n| n.split('/').collect());
    scope.pop();
    for name in names {
        let parts: Vec<&str> = name.split('/').collect();
        let shared = scope.iter().zip(&parts).take_while(|(a, b)| a == b).count();
        scope.truncate(shared.min(parts.len().saturating_sub(1)));
    }
    scope.join("/")
}

/// Whether every open device declares `kind` (none open, as in unit
/// tests: yes).
fn devices_have(kind: OpKind) -> bool {
    crate::registry::devices()
        .iter()
        .all(|d| d.info().capabilities.supports(kind, DType::F32))
}

/// The commands fusion may make (the program kernel may launch them).
pub const FUSED: [OpKind; 2] = [layer_norm(0.0, 0), gelu(0.0, 0.0)];

/// `nodes` with each `LayerNormalization` the program can run as one
/// command replaced by a [`LAYER_NORM_OP`] node under its last node's
/// name. `outputs` are the segment's outputs, `shape_of` every edge's shape.
///
/// # Errors
/// `TENSORPLUG_PROGRAM_FUSION` is no boolean.
pub fn fuse(
    nodes: &[NodeDef],
    outputs: &[String],
    shape_of: &HashMap<String, Shape>,
) -> Result<Vec<NodeDef>, String> {
    if !enabled()? {
        return Ok(nodes.to_vec());
    }
    let (norms, gelus) = (devices_have(FUSED[0]), devices_have(FUSED[1]));
    let graph = Graph::new(nodes, outputs, shape_of);
    let mut gone: HashSet<&str> = HashSet::new();
    let mut fused: HashMap<&str, NodeDef> = HashMap::new();
    for n in nodes {
        let found = match n.op.as_str() {
            "Rsqrt" if norms => graph.layer_norm(n),
            "Erfc" if gelus => graph.gelu(n),
            _ => None,
        };
        if let Some((group, node)) = found
            && let Some((&last, inner)) = group.split_last()
            && group
                .iter()
                .all(|m| !gone.contains(m) && !fused.contains_key(m))
        {
            gone.extend(inner.iter().copied());
            fused.insert(last, node);
        }
    }
    Ok(nodes
        .iter()
        .filter(|n| !gone.contains(n.name.as_str()))
        .map(|n| fused.remove(n.name.as_str()).unwrap_or_else(|| n.clone()))
        .collect())
}

/// A segment's nodes, by name, with who reads each.
struct Graph<'a> {
    by_name: HashMap<&'a str, &'a NodeDef>,
    readers: HashMap<&'a str, Vec<&'a str>>,
    outputs: HashSet<&'a str>,
    shape_of: &'a HashMap<String, Shape>,
}

impl<'a> Graph<'a> {
    fn new(
        nodes: &'a [NodeDef],
        outputs: &'a [String],
        shape_of: &'a HashMap<String, Shape>,
    ) -> Self {
        let mut readers: HashMap<&str, Vec<&str>> = HashMap::new();
        for n in nodes {
            for text in &n.input {
                if let Some(producer) = data_producer(text) {
                    readers.entry(producer).or_default().push(&n.name);
                }
            }
        }
        Self {
            by_name: nodes.iter().map(|n| (n.name.as_str(), n)).collect(),
            readers,
            outputs: outputs.iter().filter_map(|e| data_producer(e)).collect(),
            shape_of,
        }
    }

    /// The node of output 0 `edge` reads, if a member of `op`s, float.
    fn producer(&self, edge: &str, ops: &[&str]) -> Option<&'a NodeDef> {
        let e = canonical(edge)?;
        let name = e.strip_suffix(":0")?;
        let n = *self.by_name.get(name)?;
        let float = attr_of(n, "T")
            .is_none_or(|t| matches!(t, Value::Type(t) if *t == DataType::DtFloat as i32));
        (ops.contains(&n.op.as_str()) && float).then_some(n)
    }

    /// The one node reading output 0 of `name` with op in `ops` whose
    /// other inputs satisfy `other` (two-input nodes).
    fn reader(
        &self,
        name: &str,
        ops: &[&str],
        other: impl Fn(&str) -> bool,
    ) -> Option<&'a NodeDef> {
        let found: Vec<&NodeDef> = (self.readers.get(name)?.iter())
            .filter_map(|r| self.by_name.get(r).copied())
            .filter(|r| ops.contains(&r.op.as_str()) && r.input.len() == 2)
            .filter(|r| {
                let ins: Vec<String> = r.input.iter().filter_map(|i| canonical(i)).collect();
                let me = format!("{name}:0");
                match ins.iter().position(|i| *i == me) {
                    Some(at) => other(&ins[1 - at]),
                    None => false,
                }
            })
            .collect();
        (found.len() == 1).then(|| found[0])
    }

    fn shape(&self, edge: &str) -> Option<Shape> {
        self.shape_of.get(&canonical(edge)?).copied()
    }

    /// A `Mean` of `x` over its last axis, keeping it.
    fn row_mean(&self, mean: &NodeDef) -> Option<String> {
        let x = canonical(mean.input.first()?)?;
        let rank = self.shape(&x)?.dims().len() as i64;
        let axes = match attr_of(mean, AXES_ATTR) {
            Some(Value::List(l)) => l.i.clone(),
            _ => return None,
        };
        let keep = matches!(attr_of(mean, "keep_dims"), Some(Value::B(true)));
        (keep && rank > 0 && (axes == [rank - 1] || axes == [-1])).then_some(x)
    }

    /// The `LayerNormalization` whose `Rsqrt` is `rsqrt`: its members'
    /// names and the fused node, when it matches whole.
    fn layer_norm(&self, rsqrt: &'a NodeDef) -> Option<(Vec<&'a str>, NodeDef)> {
        let plus = self.producer(rsqrt.input.first()?, &["AddV2", "Add"])?;
        let (epsilon, slot) = scalar(plus)?;
        let variance = self.producer(plus.input.get(1 - slot)?, &["Mean"])?;
        let squares = self.producer(variance.input.first()?, &["SquaredDifference"])?;
        self.row_mean(variance)?;
        // `SquaredDifference(x, mean)`, either way round.
        let (mean, x) = (0..2).find_map(|i| {
            let mean = self.producer(&squares.input[i], &["Mean"])?;
            let x = self.row_mean(mean)?;
            (canonical(&squares.input[1 - i])? == x).then_some((mean, x))
        })?;
        let m = self.reader(&rsqrt.name, &["Mul"], |_| true)?;
        let gamma = other_input(m, &rsqrt.name)?;
        let neg = self.single_reader(&mean.name, "Neg")?;
        let a = self.reader(&neg.name, &["Mul"], |o| o == format!("{}:0", m.name))?;
        let b = self.reader(&m.name, &["Mul"], |o| o == x)?;
        let adds = ["AddV2", "Add", "AddN"];
        let (form, sum, last, beta) = if let Some(s) =
            self.reader(&a.name, &adds, |o| o == format!("{}:0", b.name))
        {
            // `β + (a + b)`: TF's arithmetic optimizer's `AddN`.
            let last = self.reader(&s.name, &["AddV2", "Add"], |_| true)?;
            (0, s, last, other_input(last, &s.name)?)
        } else {
            // `b + (a + β)`: as Keras writes it.
            let c = self.reader(&a.name, &["AddV2", "Add"], |o| o != format!("{}:0", b.name))?;
            let last = self.reader(&b.name, &["AddV2", "Add"], |o| o == format!("{}:0", c.name))?;
            (1, c, last, other_input(c, &a.name)?)
        };
        let n = *self.shape(&x)?.dims().last()?;
        let parameter = |e: &str| {
            self.shape(e)
                .is_some_and(|s| s.elements() == Some(n) && s.dims().last() == Some(&n))
        };
        if !parameter(&gamma)
            || !parameter(&beta)
            || self.shape(&format!("{}:0", last.name)) != self.shape(&x)
        {
            return None;
        }
        let inner = [mean, squares, variance, plus, rsqrt, m, neg, a, b, sum];
        let members: Vec<&str> = (inner.iter().map(|n| n.name.as_str()))
            .chain([last.name.as_str()])
            .collect();
        if !self.closed(&inner, &members) {
            return None;
        }
        let attrs = [
            (EPSILON_ATTR, Value::F(epsilon)),
            (FORM_ATTR, Value::I(form)),
        ];
        let node = fused_node(last, LAYER_NORM_OP, vec![x, gamma, beta], &attrs, &members);
        Some((members, node))
    }

    /// The `tf.nn.gelu` whose `Erfc` is `erfc`: `(h · erfc(c · (−x))) · x`,
    /// its members' names and the fused node, when it matches whole.
    fn gelu(&self, erfc: &'a NodeDef) -> Option<(Vec<&'a str>, NodeDef)> {
        let scaled = self.producer(erfc.input.first()?, &["Mul"])?;
        let (c, slot) = scalar(scaled)?;
        let neg = self.producer(scaled.input.get(1 - slot)?, &["Neg"])?;
        let x = canonical(neg.input.first()?)?;
        let half = self.reader(&erfc.name, &["Mul"], |_| true)?;
        let (h, _) = scalar(half)?;
        let last = self.reader(&half.name, &["Mul"], |o| o == x)?;
        if self.shape(&format!("{}:0", last.name)) != self.shape(&x) {
            return None;
        }
        let inner = [neg, scaled, erfc, half];
        let members: Vec<&str> = (inner.iter().map(|n| n.name.as_str()))
            .chain([last.name.as_str()])
            .collect();
        if !self.closed(&inner, &members) {
            return None;
        }
        let attrs = [("c", Value::F(c)), ("h", Value::F(h))];
        Some((
            members.clone(),
            fused_node(last, GELU_OP, vec![x], &attrs, &members),
        ))
    }

    /// Nothing outside `members` reads what `inner` makes, and no output is
    /// theirs.
    fn closed(&self, inner: &[&NodeDef], members: &[&str]) -> bool {
        inner.iter().all(|n| {
            !self.outputs.contains(n.name.as_str())
                && (self.readers.get(n.name.as_str()))
                    .is_some_and(|r| r.iter().all(|r| members.contains(r)))
        })
    }

    /// The only reader of `name`, if it is an `op`.
    fn single_reader(&self, name: &str, op: &str) -> Option<&'a NodeDef> {
        let readers = self.readers.get(name)?;
        let ops: Vec<&NodeDef> = readers
            .iter()
            .filter_map(|r| self.by_name.get(r).copied())
            .filter(|r| r.op == op)
            .collect();
        (ops.len() == 1).then(|| ops[0])
    }
}

/// The scalar constant the graph pass found on one input of `node`
/// ([`SCALAR_ATTR`]) and that input's slot (0 or 1).
fn scalar(node: &NodeDef) -> Option<(f32, usize)> {
    match attr_of(node, SCALAR_ATTR) {
        Some(Value::List(l)) if l.i.len() == 2 && l.i[0] <= 1 && node.input.len() == 2 => {
            let slot = usize::try_from(l.i[0]).ok()?;
            Some((f32::from_bits(u32::try_from(l.i[1]).ok()?), slot))
        }
        _ => None,
    }
}

/// The node that replaces a group ending at `last`: `last`'s name and
/// device, `op`, `inputs`, `attrs`, and the members' common scope as its
/// label on the profiler's plane.
fn fused_node(
    last: &NodeDef,
    op: &str,
    inputs: Vec<String>,
    attrs: &[(&str, Value)],
    members: &[&str],
) -> NodeDef {
    let scope = match common_scope(members) {
        s if s.is_empty() => last.name.clone(),
        s => s,
    };
    let value = |v: Value| AttrValue { value: Some(v) };
    let attr = (attrs.iter())
        .map(|(k, v)| (k.to_string(), value(v.clone())))
        .chain([(LABEL_ATTR.to_string(), value(Value::S(scope.into_bytes())))])
        .collect();
    NodeDef {
        name: last.name.clone(),
        op: op.into(),
        input: inputs,
        device: last.device.clone(),
        attr,
        ..Default::default()
    }
}

/// The producer's name of a data input.
fn data_producer(text: &str) -> Option<&str> {
    if text.starts_with('^') {
        return None;
    }
    Some(text.split(':').next().unwrap_or(text))
}

/// `node`'s input that is not output 0 of `name` (two-input nodes).
fn other_input(node: &NodeDef, name: &str) -> Option<String> {
    let me = format!("{name}:0");
    let ins: Vec<String> = node.input.iter().filter_map(|i| canonical(i)).collect();
    match ins.as_slice() {
        [a, b] if *a == me => Some(b.clone()),
        [a, b] if *b == me => Some(a.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::proto::attr_value;
    use crate::graph::test_nodes::float_node as node;
    use crate::kernels::program::compile_for_tests as compile;
    use crate::kernels::program::segment::Segment;
    use tensorplug_core::program::Step;

    fn ints(i: &[i64]) -> Value {
        Value::List(attr_value::ListValue {
            i: i.to_vec(),
            ..Default::default()
        })
    }

    /// Keras 3's LayerNormalization over the last of three axes, as TF's
    /// optimizer leaves it (`AddN`, then `β`), or as Keras writes it.
    fn layer_norm(grappler: bool, outputs: &[&str]) -> Segment {
        let mean = |name: &str, x: &str| {
            node(
                name,
                "Mean",
                &[x],
                &[("keep_dims", Value::B(true)), (AXES_ATTR, ints(&[2]))],
            )
        };
        let eps = ints(&[0, i64::from(1e-3f32.to_bits())]);
        let mut nodes = vec![
            mean("ln/mean", "x:0"),
            node("ln/neg", "Neg", &["ln/mean"], &[]),
            node("ln/sqd", "SquaredDifference", &["x:0", "ln/mean"], &[]),
            mean("ln/var", "ln/sqd"),
            node(
                "ln/plus",
                "AddV2",
                &["eps:0", "ln/var"],
                &[(SCALAR_ATTR, eps)],
            ),
            node("ln/rsqrt", "Rsqrt", &["ln/plus"], &[]),
            node("ln/m", "Mul", &["gamma:0", "ln/rsqrt"], &[]),
            node("ln/a", "Mul", &["ln/neg", "ln/m"], &[]),
            node("ln/b", "Mul", &["x:0", "ln/m"], &[]),
        ];
        if grappler {
            nodes.push(node(
                "ln/s",
                "AddN",
                &["ln/a", "ln/b"],
                &[("N", Value::I(2))],
            ));
            nodes.push(node("ln/out", "AddV2", &["beta:0", "ln/s"], &[]));
        } else {
            nodes.push(node("ln/c", "AddV2", &["ln/a", "beta:0"], &[]));
            nodes.push(node("ln/out", "AddV2", &["ln/b", "ln/c"], &[]));
        }
        Segment {
            nodes,
            inputs: ["x:0", "eps:0", "gamma:0", "beta:0"]
                .map(String::from)
                .to_vec(),
            streamed: 0,
            weights: 0,
            outputs: outputs.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn s(d: &[u64]) -> Shape {
        Shape::new(d).unwrap()
    }

    /// The program's launches: (op name, the node its label names).
    fn launches(segment: &Segment) -> Vec<(&'static str, String)> {
        launches_for(segment, &[s(&[2, 3, 4]), s(&[]), s(&[4]), s(&[4])])
    }

    fn launches_for(segment: &Segment, shapes: &[Shape]) -> Vec<(&'static str, String)> {
        let c = compile(segment, shapes).unwrap();
        (c.steps.iter())
            .filter_map(|(step, label)| match step {
                Step::Launch { kind, .. } => Some((kind.name(), label.node.to_string())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_layer_norm_in_either_form_is_one_command_under_its_scope() {
        for grappler in [true, false] {
            let got = launches(&layer_norm(grappler, &["ln/out:0"]));
            assert_eq!(
                got,
                [("LayerNorm", "ln".to_string())],
                "grappler: {grappler}"
            );
        }
    }

    #[test]
    fn a_layer_norm_whose_inner_value_is_read_outside_is_not_fused() {
        // The program also returns the `Rsqrt`: its eleven nodes stay.
        let got = launches(&layer_norm(true, &["ln/out:0", "ln/rsqrt:0"]));
        assert!(got.iter().all(|(op, _)| *op != "LayerNorm"), "{got:?}");
        assert!(got.iter().any(|(op, _)| *op == "Rsqrt"), "{got:?}");
    }

    /// `tf.nn.gelu(x)` as TF 2.21 leaves it: `(½ · erfc(1/√2 · (−x))) · x`.
    fn gelu_segment(outputs: &[&str]) -> Segment {
        let c = ints(&[0, i64::from(std::f32::consts::FRAC_1_SQRT_2.to_bits())]);
        let h = ints(&[0, i64::from(0.5f32.to_bits())]);
        Segment {
            nodes: vec![
                node("d/Gelu/Neg", "Neg", &["x:0"], &[]),
                node(
                    "d/Gelu/mul_1",
                    "Mul",
                    &["c:0", "d/Gelu/Neg"],
                    &[(SCALAR_ATTR, c)],
                ),
                node("d/Gelu/Erfc", "Erfc", &["d/Gelu/mul_1"], &[]),
                node(
                    "d/Gelu/mul",
                    "Mul",
                    &["h:0", "d/Gelu/Erfc"],
                    &[(SCALAR_ATTR, h)],
                ),
                node("d/Gelu/mul_2", "Mul", &["d/Gelu/mul", "x:0"], &[]),
            ],
            inputs: ["x:0", "c:0", "h:0"].map(String::from).to_vec(),
            streamed: 0,
            weights: 0,
            outputs: outputs.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn a_gelu_is_one_command_unless_its_erfc_is_read_outside() {
        let shapes = [s(&[4, 8]), s(&[]), s(&[])];
        let got = launches_for(&gelu_segment(&["d/Gelu/mul_2:0"]), &shapes);
        assert_eq!(got, [("Gelu", "d/Gelu".to_string())]);
        let got = launches_for(&gelu_segment(&["d/Gelu/mul_2:0", "d/Gelu/Erfc:0"]), &shapes);
        assert!(got.iter().any(|(op, _)| *op == "Erfc"), "{got:?}");
        assert!(got.iter().all(|(op, _)| *op != "Gelu"), "{got:?}");
    }

    #[test]
    fn common_scopes_are_whole_components() {
        assert_eq!(common_scope(&["a/b/c", "a/b/d/e", "a/b"]), "a");
        assert_eq!(common_scope(&["a/bc/x", "a/bd/y"]), "a");
        assert_eq!(common_scope(&["x", "y"]), "");
    }
}
