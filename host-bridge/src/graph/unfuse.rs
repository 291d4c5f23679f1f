//! The first step of our pass: TF's remapper fuses a batch norm and its
//! activation into `_FusedBatchNormEx` on any device when oneDNN is on, if
//! the CPU has the features it wants (seen on a CI host with AVX-512 BF16
//! and AVX-VNNI: a frozen `Conv2D → FusedBatchNormV3 → Relu` reached us as
//! `Conv2D → _FusedBatchNormEx`; earlier CI hosts never showed it).
//! Our device has no kernel for it, so it would run on the CPU. An
//! inference one without side inputs is split back, exactly, into
//! `FusedBatchNormV3` and the activation; the batch-norm folding and the
//! convolution fusion then apply as on other hosts. Likewise the remapper
//! fuses our `[BiasAdd]` fusion and an activation after it that our fused
//! kernels lack into one node on our device (TF 2.21, a Keras `Conv2D →
//! LeakyReLU`), which is split back the same way ([`unfuse_activations`]). `docs/graph-optimizer.md`,
//! "TF's passes".

use super::device::is_ours;
use super::edges::Input;
use super::kernel_list::takes_attrs;
use super::nodes::{attr_of, type_attr, type_value, unique, value};
use super::proto::{DataType, GraphDef, NodeDef, attr_value};
use std::collections::{HashMap, HashSet};

/// Suffix of the activation node a split adds.
const ACTIVATION: &str = "tensorplug_activation";

/// Splits every `_FusedBatchNormEx` on a `device_type` device that is
/// inference-only, has no side input, a `float` input, an activation we
/// run, and is not in `preserve` (a fetched output 0 must stay activated);
/// returns how many.
pub fn unfuse_batch_norms(
    graph: &mut GraphDef,
    preserve: &HashSet<String>,
    device_type: &str,
) -> usize {
    let mut names: HashSet<String> = graph.node.iter().map(|n| n.name.clone()).collect();
    let mut renamed: HashMap<String, String> = HashMap::new();
    let mut added = Vec::new();
    let mut count = 0;
    for node in &mut graph.node {
        if node.op != "_FusedBatchNormEx"
            || !is_ours(&node.device, device_type)
            || preserve.contains(&node.name)
        {
            continue;
        }
        let Some(activation) = splittable_activation(node) else {
            continue;
        };
        node.op = "FusedBatchNormV3".into();
        node.attr.remove("activation_mode");
        node.attr.remove("num_side_inputs");
        count += 1;
        if activation == "Identity" {
            continue;
        }
        let name = unique(&mut names, &node.name, ACTIVATION);
        added.push(NodeDef {
            name: name.clone(),
            op: activation.into(),
            input: vec![node.name.clone()],
            device: node.device.clone(),
            attr: HashMap::from([("T".into(), type_value(DataType::DtFloat as i32))]),
            ..Default::default()
        });
        renamed.insert(node.name.clone(), name);
    }
    // Readers of output 0 now read the activation.
    if !renamed.is_empty() {
        for node in &mut graph.node {
            for input in &mut node.input {
                if let Input::Data {
                    node: from,
                    port: 0,
                } = Input::parse(input)
                    && let Some(to) = renamed.get(from)
                {
                    *input = to.clone();
                }
            }
        }
    }
    graph.node.extend(added);
    count
}

/// The activation op of a `_FusedBatchNormEx` that splits exactly into ops
/// we run, if it is one.
fn splittable_activation(node: &NodeDef) -> Option<&'static str> {
    let attr = |key: &str| node.attr.get(key).and_then(|v| v.value.as_ref());
    let bool_attr = |key: &str| match attr(key) {
        Some(attr_value::Value::B(b)) => Some(*b),
        _ => None,
    };
    let side_inputs = match attr("num_side_inputs") {
        Some(attr_value::Value::I(n)) => *n,
        _ => 0,
    };
    let float = type_attr(node, "T") == Some(DataType::DtFloat as i32);
    if bool_attr("is_training") != Some(false) || side_inputs != 0 || !float {
        return None;
    }
    match attr("activation_mode") {
        Some(attr_value::Value::S(mode)) => match mode.as_slice() {
            b"Identity" => Some("Identity"),
            b"Relu" => Some("Relu"),
            b"Relu6" => Some("Relu6"),
            _ => None,
        },
        _ => None,
    }
}

/// Splits every `_FusedConv2D` or `_FusedMatMul` on a `device_type` device
/// whose `fused_ops` are `[BiasAdd, A]` with an activation `A` our fused
/// kernels do not take but our device runs alone (`runs(A)`: `LeakyRelu`,
/// `Elu`, `Sigmoid`, `Tanh`). TF's remapper writes these on our device too,
/// from our `[BiasAdd]` fusion and the activation after it. The split is the
/// `[BiasAdd]` fusion and the activation (`LeakyRelu` with the node's
/// `leakyrelu_alpha`), which keeps the node's name, so its readers and
/// fetches are unchanged; returns how many.
pub fn unfuse_activations(
    graph: &mut GraphDef,
    device_type: &str,
    mut runs: impl FnMut(&str) -> bool,
) -> usize {
    let mut names: HashSet<String> = graph.node.iter().map(|n| n.name.clone()).collect();
    let mut added = Vec::new();
    for node in &mut graph.node {
        let fused = matches!(node.op.as_str(), "_FusedConv2D" | "_FusedMatMul");
        if !fused
            || !is_ours(&node.device, device_type)
            || type_attr(node, "T") != Some(DataType::DtFloat as i32)
            || takes_attrs(node)
        {
            continue;
        }
        let activation = match fused_ops(node).as_slice() {
            [b"BiasAdd", a] => String::from_utf8_lossy(a).into_owned(),
            _ => continue,
        };
        let mut inner = node.clone();
        if let Some(attr_value::Value::List(list)) = inner
            .attr
            .get_mut("fused_ops")
            .and_then(|v| v.value.as_mut())
        {
            list.s.truncate(1);
        }
        inner.attr.remove("leakyrelu_alpha");
        if !takes_attrs(&inner) || !runs(&activation) {
            continue;
        }
        let mut attr = HashMap::from([("T".into(), type_value(DataType::DtFloat as i32))]);
        if activation == "LeakyRelu" {
            let alpha = match attr_of(node, "leakyrelu_alpha") {
                Some(attr_value::Value::F(alpha)) => *alpha,
                _ => 0.2, // TF's default
            };
            attr.insert("alpha".into(), value(attr_value::Value::F(alpha)));
        }
        inner.name = unique(&mut names, &node.name, FUSED);
        // Control inputs stay on the fused node; the activation waits for it.
        added.push(NodeDef {
            name: std::mem::replace(node, inner).name,
            op: activation,
            input: vec![node.name.clone()],
            device: node.device.clone(),
            attr,
            ..Default::default()
        });
    }
    let count = added.len();
    graph.node.extend(added);
    count
}

/// Suffix of the fused node an activation split renames.
const FUSED: &str = "tensorplug_fused";

fn fused_ops(node: &NodeDef) -> Vec<&[u8]> {
    match attr_of(node, "fused_ops") {
        Some(attr_value::Value::List(list)) => list.s.iter().map(Vec::as_slice).collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::proto::AttrValue;
    use crate::graph::test_nodes::{find, node};

    /// A `_FusedBatchNormEx` attr set, for the tests.
    fn batch_norm_ex_attrs(activation: &str, training: bool) -> HashMap<String, AttrValue> {
        let value = |v| AttrValue { value: Some(v) };
        HashMap::from([
            ("T".into(), type_value(DataType::DtFloat as i32)),
            ("U".into(), type_value(DataType::DtFloat as i32)),
            (
                "activation_mode".into(),
                value(attr_value::Value::S(activation.into())),
            ),
            ("num_side_inputs".into(), value(attr_value::Value::I(0))),
            ("is_training".into(), value(attr_value::Value::B(training))),
        ])
    }

    fn bn(name: &str, activation: &str, training: bool) -> NodeDef {
        NodeDef {
            attr: batch_norm_ex_attrs(activation, training),
            ..node(name, "_FusedBatchNormEx", &["conv", "s", "o", "m", "v"])
        }
    }

    #[test]
    fn a_batch_norm_with_relu_splits_and_its_readers_read_the_activation() {
        let mut graph = GraphDef {
            node: vec![
                bn("bn", "Relu", false),
                node("next", "DepthwiseConv2dNative", &["bn", "f"]),
                node("stat", "Identity", &["bn:1", "^bn"]),
            ],
            ..Default::default()
        };
        assert_eq!(unfuse_batch_norms(&mut graph, &HashSet::new(), "FPGA"), 1);
        let bn = find(&graph, "bn");
        assert_eq!(bn.op, "FusedBatchNormV3");
        assert!(!bn.attr.contains_key("activation_mode"));
        let relu = find(&graph, "bn/tensorplug_activation");
        assert_eq!(
            (relu.op.as_str(), relu.input.as_slice()),
            ("Relu", &["bn".to_string()][..])
        );
        assert_eq!(
            find(&graph, "next").input,
            ["bn/tensorplug_activation", "f"]
        );
        assert_eq!(
            find(&graph, "stat").input,
            ["bn:1", "^bn"],
            "statistics and order stay"
        );
    }

    #[test]
    fn training_side_inputs_other_activations_and_fetches_stay_fused() {
        let mut side = bn("side", "Relu", false);
        side.attr.insert(
            "num_side_inputs".into(),
            AttrValue {
                value: Some(attr_value::Value::I(1)),
            },
        );
        let mut graph = GraphDef {
            node: vec![
                bn("train", "Relu", true),
                bn("elu", "Elu", false),
                side,
                bn("fetched", "Relu6", false),
            ],
            ..Default::default()
        };
        let before = graph.clone();
        let preserve = HashSet::from(["fetched".to_string()]);
        assert_eq!(unfuse_batch_norms(&mut graph, &preserve, "FPGA"), 0);
        assert_eq!(graph, before);
    }

    #[test]
    fn identity_needs_no_activation_node() {
        let mut graph = GraphDef {
            node: vec![bn("bn", "Identity", false), node("use", "Relu", &["bn:0"])],
            ..Default::default()
        };
        assert_eq!(unfuse_batch_norms(&mut graph, &HashSet::new(), "FPGA"), 1);
        assert_eq!(find(&graph, "bn").op, "FusedBatchNormV3");
        assert_eq!(find(&graph, "use").input, ["bn:0"]);
    }

    fn fused(name: &str, op: &str, ops: &[&str], alpha: Option<f32>) -> NodeDef {
        let list = attr_value::ListValue {
            s: ops.iter().map(|o| o.as_bytes().to_vec()).collect(),
            ..Default::default()
        };
        let mut attr = HashMap::from([
            ("T".into(), type_value(DataType::DtFloat as i32)),
            ("fused_ops".into(), value(attr_value::Value::List(list))),
            ("num_args".into(), value(attr_value::Value::I(1))),
        ]);
        if let Some(alpha) = alpha {
            attr.insert("leakyrelu_alpha".into(), value(attr_value::Value::F(alpha)));
        }
        NodeDef {
            attr,
            ..node(name, op, &["x", "f", "b", "^init"])
        }
    }

    #[test]
    fn a_fused_activation_we_run_alone_splits_and_keeps_its_name() {
        let mut graph = GraphDef {
            node: vec![
                fused("conv", "_FusedConv2D", &["BiasAdd", "LeakyRelu"], Some(0.3)),
                fused("dense", "_FusedMatMul", &["BiasAdd", "LeakyRelu"], None),
                fused("elu", "_FusedConv2D", &["BiasAdd", "Elu"], None),
                fused("gelu", "_FusedMatMul", &["BiasAdd", "GeluExact"], None),
                fused("relu", "_FusedConv2D", &["BiasAdd", "Relu"], None),
                node("next", "Conv2D", &["conv", "f2"]),
            ],
            ..Default::default()
        };
        assert_eq!(unfuse_activations(&mut graph, "FPGA", |_| false), 0);
        let runs = |op: &str| matches!(op, "LeakyRelu" | "Elu" | "Relu");
        assert_eq!(unfuse_activations(&mut graph, "FPGA", runs), 3);
        let leaky = find(&graph, "conv");
        assert_eq!(leaky.op, "LeakyRelu");
        assert_eq!(leaky.input, ["conv/tensorplug_fused"]);
        assert_eq!(leaky.attr["alpha"].value, Some(attr_value::Value::F(0.3)));
        let inner = find(&graph, "conv/tensorplug_fused");
        assert_eq!(inner.op, "_FusedConv2D");
        assert_eq!(fused_ops(inner), [b"BiasAdd".as_slice()]);
        assert_eq!(inner.input, ["x", "f", "b", "^init"]);
        assert!(!inner.attr.contains_key("leakyrelu_alpha"));
        // TF's default slope when the attribute is unset.
        let dense = find(&graph, "dense");
        assert_eq!(dense.attr["alpha"].value, Some(attr_value::Value::F(0.2)));
        let elu = find(&graph, "elu");
        assert_eq!(
            (elu.op.as_str(), elu.input.as_slice()),
            ("Elu", ["elu/tensorplug_fused".to_string()].as_slice())
        );
        assert!(!elu.attr.contains_key("alpha"));
        // No standalone kernel for it, or our fused kernel takes it: kept.
        assert_eq!(find(&graph, "gelu").op, "_FusedMatMul");
        assert_eq!(find(&graph, "relu").op, "_FusedConv2D");
        assert_eq!(find(&graph, "next").input, ["conv", "f2"]);
        // Not on our device: untouched.
        let mut cpu = fused("c", "_FusedConv2D", &["BiasAdd", "LeakyRelu"], None);
        cpu.device = "/device:CPU:0".into();
        let mut graph = GraphDef {
            node: vec![cpu],
            ..Default::default()
        };
        assert_eq!(unfuse_activations(&mut graph, "FPGA", runs), 0);
    }
}
