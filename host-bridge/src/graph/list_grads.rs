//! The pass that accumulates a `while` loop's list gradients in place.
//!
//! The gradient of `TensorListGetItem(list, i)` inside a loop is, per
//! iteration, `acc = AddN(TensorListSetItem(TensorListReserve(..), i, g),
//! acc)`: a fresh list holding `g` at `i`, added to the accumulator list.
//! TF adds two lists element by element with its `variant` `AddN`, which
//! has no kernel on a pluggable device's type on TF 2.19 and later (and
//! before only through `TF_AddNVariant`, `kernels/ops/variant.rs`). So the
//! `AddN` ran on the CPU, and every iteration copied each element of the
//! accumulator to the host and back: a Keras BiLSTM's `fit` step made
//! 5 284 copies of 4 KiB.
//!
//! Rewritten here, on our device, as the one element that changes:
//! `TensorListSetItem(acc, i, AddV2(TensorListGetItem(acc, i, Shape(g)), g))`.
//! Equal to TF's sum: its `AddN` adds `acc[i] + g` where `acc[i]` is set,
//! and passes `g` through where it is not, where the rewrite adds `g` to
//! zeros (the same value; a `g` of −0 gives +0 there).

use super::device::is_ours;
use super::edges::{Input, Uses};
use super::nodes::{type_attr, type_value};
use super::proto::{DataType, GraphDef, NodeDef};
use std::collections::{HashMap, HashSet};

/// One `AddN` to rewrite and what its pieces come from.
struct Found {
    addn: usize,
    /// The `TensorListSetItem` on the fresh list, and that list's `TensorListReserve`.
    set_item: String,
    reserve: Option<String>,
    acc: String,
    index: String,
    item: String,
    device: String,
}

/// Rewrites each such `AddN` whose list lives on a `device_type` device
/// when `runs(node)`, our device has a kernel for each new node. Returns
/// how many it rewrote.
pub fn accumulate_in_place(
    graph: &mut GraphDef,
    preserve: &HashSet<String>,
    device_type: &str,
    mut runs: impl FnMut(&NodeDef) -> bool,
) -> usize {
    if !graph.node.iter().any(|n| n.op == "AddN") {
        return 0;
    }
    let found = find(graph, preserve, device_type);
    let mut rewritten = 0;
    let mut names: HashSet<String> = graph.node.iter().map(|n| n.name.clone()).collect();
    let mut removed = HashSet::new();
    for f in &found {
        let addn = graph.node[f.addn].name.clone();
        let new = |name: &str, op: &str, input: Vec<String>, attrs: &[(&str, i32)]| NodeDef {
            name: name.into(),
            op: op.into(),
            input,
            device: f.device.clone(),
            attr: attrs
                .iter()
                .map(|&(k, t)| (k.to_string(), type_value(t)))
                .collect(),
            ..Default::default()
        };
        let float = DataType::DtFloat as i32;
        let unique =
            |names: &mut HashSet<String>, suffix| super::nodes::unique(names, &addn, suffix);
        let (shape, get, sum) = (
            unique(&mut names, "item_shape"),
            unique(&mut names, "acc_item"),
            unique(&mut names, "sum"),
        );
        let controls: Vec<String> = graph.node[f.addn]
            .input
            .iter()
            .filter(|t| t.starts_with('^'))
            .cloned()
            .collect();
        let added = [
            new(
                &shape,
                "Shape",
                vec![f.item.clone()],
                &[("T", float), ("out_type", DataType::DtInt32 as i32)],
            ),
            new(
                &get,
                "TensorListGetItem",
                vec![f.acc.clone(), f.index.clone(), shape.clone()],
                &[("element_dtype", float)],
            ),
            new(
                &sum,
                "AddV2",
                vec![get.clone(), f.item.clone()],
                &[("T", float)],
            ),
        ];
        let mut input = vec![f.acc.clone(), f.index.clone(), sum];
        input.extend(controls);
        // The AddN's name stays, so its consumers read the new list.
        let set = new(
            &addn,
            "TensorListSetItem",
            input,
            &[("element_dtype", float)],
        );
        if !added.iter().chain([&set]).all(&mut runs) {
            continue;
        }
        graph.node[f.addn] = set;
        graph.node.extend(added);
        removed.insert(f.set_item.clone());
        removed.extend(f.reserve.clone());
        rewritten += 1;
    }
    graph.node.retain(|n| !removed.contains(&n.name));
    rewritten
}

/// The `AddN`s of the pattern, with their pieces.
fn find(graph: &GraphDef, preserve: &HashSet<String>, device_type: &str) -> Vec<Found> {
    let uses = Uses::index(&graph.node);
    let by_name: HashMap<&str, &NodeDef> =
        graph.node.iter().map(|n| (n.name.as_str(), n)).collect();
    let variant = DataType::DtVariant as i32;
    let mut found = Vec::new();
    for (addn, node) in graph.node.iter().enumerate() {
        if node.op != "AddN"
            || type_attr(node, "T") != Some(variant)
            || preserve.contains(&node.name)
        {
            continue;
        }
        let data: Vec<&String> = node.input.iter().filter(|t| !t.starts_with('^')).collect();
        let [a, b] = data[..] else { continue };
        for (fresh, acc) in [(a, b), (b, a)] {
            let Input::Data {
                node: name,
                port: 0,
            } = Input::parse(fresh)
            else {
                continue;
            };
            let Some(set) = by_name.get(name) else {
                continue;
            };
            let [list, index, item] = &set.input[..] else {
                continue;
            };
            if set.op != "TensorListSetItem"
                || !is_ours(&set.device, device_type)
                || type_attr(set, "element_dtype") != Some(DataType::DtFloat as i32)
                || uses.of(name).len() != 1
                || preserve.contains(name)
            {
                continue;
            }
            let Input::Data {
                node: reserve,
                port: 0,
            } = Input::parse(list)
            else {
                continue;
            };
            if by_name
                .get(reserve)
                .is_none_or(|r| r.op != "TensorListReserve")
            {
                continue;
            }
            let reserve_dead = uses.of(reserve).len() == 1 && !preserve.contains(reserve);
            found.push(Found {
                addn,
                set_item: name.to_string(),
                reserve: reserve_dead.then(|| reserve.to_string()),
                acc: acc.clone(),
                index: index.clone(),
                item: item.clone(),
                device: set.device.clone(),
            });
            break;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::proto::attr_value::Value;
    use crate::graph::test_nodes::{CPU, find as node_named, node, typed};

    /// The body of a Keras LSTM's gradient loop, cut down.
    fn loop_body() -> GraphDef {
        let mut addn = typed(
            node("AddN_3", "AddN", &["set", "acc", "^ctl"]),
            "T",
            DataType::DtVariant,
        );
        addn.device = CPU.into();
        GraphDef {
            node: vec![
                node("acc", "Identity", &["switch:1"]),
                node("reserve", "TensorListReserve", &["pop_shape:1", "pop_n:1"]),
                typed(
                    node(
                        "set",
                        "TensorListSetItem",
                        &["reserve", "pop_index:1", "grad"],
                    ),
                    "element_dtype",
                    DataType::DtFloat,
                ),
                node("grad", "MatMul", &["a", "b"]),
                addn,
                node("next", "NextIteration", &["AddN_3"]),
            ],
            ..Default::default()
        }
    }

    fn all_ops(_: &NodeDef) -> bool {
        true
    }

    #[test]
    fn the_sum_of_two_lists_becomes_one_element_updated_on_our_device() {
        let mut graph = loop_body();
        assert_eq!(
            accumulate_in_place(&mut graph, &HashSet::new(), "FPGA", all_ops),
            1
        );
        let set = node_named(&graph, "AddN_3");
        assert_eq!(set.op, "TensorListSetItem");
        assert_eq!(set.device, crate::graph::test_nodes::FPGA);
        assert_eq!(set.input, ["acc", "pop_index:1", "AddN_3/sum", "^ctl"]);
        let sum = node_named(&graph, "AddN_3/sum");
        assert_eq!(
            (sum.op.as_str(), &sum.input[..]),
            ("AddV2", &["AddN_3/acc_item".to_string(), "grad".into()][..])
        );
        let get = node_named(&graph, "AddN_3/acc_item");
        assert_eq!(get.input, ["acc", "pop_index:1", "AddN_3/item_shape"]);
        assert_eq!(
            get.attr["element_dtype"].value,
            Some(Value::Type(DataType::DtFloat as i32))
        );
        assert_eq!(node_named(&graph, "AddN_3/item_shape").input, ["grad"]);
        // The fresh list and its SetItem are gone; the consumer is unchanged.
        assert!(
            graph
                .node
                .iter()
                .all(|n| n.name != "set" && n.name != "reserve")
        );
        assert_eq!(node_named(&graph, "next").input, ["AddN_3"]);
    }

    #[test]
    fn other_sums_of_lists_are_left_alone() {
        let fetched = HashSet::from(["AddN_3".to_string()]);
        let mut graph = loop_body();
        assert_eq!(
            accumulate_in_place(&mut graph, &fetched, "FPGA", all_ops),
            0
        );
        // Without our AddV2 kernel, nothing changes either.
        let mut graph = loop_body();
        let before = graph.clone();
        assert_eq!(
            accumulate_in_place(&mut graph, &HashSet::new(), "FPGA", |n| n.op != "AddV2"),
            0
        );
        assert_eq!(graph, before);
        // A list of int32 elements, or one the SetItem's list is read elsewhere.
        for change in [
            |g: &mut GraphDef| {
                let set = g.node.iter_mut().find(|n| n.name == "set").unwrap();
                set.attr
                    .insert("element_dtype".into(), type_value(DataType::DtInt32 as i32));
            },
            |g: &mut GraphDef| g.node.push(node("reader", "TensorListLength", &["set"])),
        ] {
            let mut graph = loop_body();
            change(&mut graph);
            let before = graph.clone();
            assert_eq!(
                accumulate_in_place(&mut graph, &HashSet::new(), "FPGA", all_ops),
                0
            );
            assert_eq!(graph, before);
        }
    }
}
