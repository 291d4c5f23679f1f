//! Lists nobody reads, removed with their loop variables.
//!
//! A `while` loop's gradient records values for the backward loop by
//! pushing them onto lists. `list_grads.rs` rewrites the gradient of a
//! `TensorListGetItem` without the fresh list TF made from the input
//! list's length and element shape, so the lists that recorded those two
//! are never popped any more. TF still ran them: a Keras BiLSTM's forward
//! iterations each computed both, pushed them (on the CPU, `list_host.rs`,
//! so each crossed from our device's partition to the CPU's), and carried
//! two more loop variables.
//!
//! A list is dead when its handle (from an `EmptyTensorList` or a
//! `TensorListReserve`, through one of its consumers: TF's common
//! subexpression elimination gives loops' accumulators one shared empty
//! list, which each `Enter`s as a variable of its own) reaches only the
//! loops' plumbing (`Enter`, `Merge`,
//! `Switch`, `Identity`, `NextIteration`, `Exit`) and writes (`PushBack`,
//! `SetItem`, and `PopBack` whose element nobody uses), and no node it
//! reaches is fetched. Its nodes go, edges to them from other nodes too
//! (an `Exit`'s control edge to the loop's "executed" `NoOp`), and then
//! the pushed values' producers that nothing else uses, where they only
//! read shapes (`TensorListElementShape`, `TensorListLength`, `Shape`).

use super::edges::{Input, Uses};
use super::lists::{carried, joined_elsewhere, makers};
use super::proto::{GraphDef, NodeDef};
use std::collections::{BTreeSet, HashSet};

/// Producers of pushed values that go with the list when nothing else
/// uses them: they only read shapes.
const SHAPE_READERS: &[&str] = &["TensorListElementShape", "TensorListLength", "Shape"];

/// Removes every dead list; returns how many nodes went.
pub fn remove_dead_lists(graph: &mut GraphDef, preserve: &HashSet<String>) -> usize {
    let makers = makers(&graph.node, |_| true);
    if makers.is_empty() {
        return 0;
    }
    let mut dead = BTreeSet::new();
    {
        let uses = Uses::index(&graph.node);
        for &maker in &makers {
            let handles = uses.of(&graph.node[maker].name).iter();
            for u in handles.filter(|u| u.port == Some(0)) {
                if let Some(nodes) = reach_unread(&graph.node, &uses, u.consumer, preserve) {
                    dead.extend(nodes);
                }
            }
        }
        // A maker goes when all its consumers do.
        for maker in makers {
            let name = &graph.node[maker].name;
            let used = uses.of(name);
            if !used.is_empty()
                && !preserve.contains(name)
                && used.iter().all(|u| dead.contains(&u.consumer))
            {
                dead.insert(maker);
            }
        }
    }
    if dead.is_empty() {
        return 0;
    }
    let pushed: Vec<String> = (dead.iter().map(|&i| &graph.node[i]))
        .filter(|n| n.op == "TensorListPushBack" || n.op == "TensorListSetItem")
        .flat_map(|n| n.input.iter().skip(1))
        .filter_map(|t| match Input::parse(t) {
            Input::Data { node, .. } => Some(node.to_string()),
            _ => None,
        })
        .collect();
    let mut removed = remove(graph, &dead);
    // The pushed values' shape readers, once nothing else uses them.
    let uses = Uses::index(&graph.node);
    let unused: BTreeSet<usize> = (graph.node.iter().enumerate())
        .filter(|(_, n)| {
            SHAPE_READERS.contains(&n.op.as_str())
                && pushed.contains(&n.name)
                && !preserve.contains(&n.name)
                && uses.of(&n.name).is_empty()
        })
        .map(|(i, _)| i)
        .collect();
    drop(uses);
    removed += remove(graph, &unused);
    removed
}

/// Drops the nodes at `indices`, and every edge to them; returns how many.
fn remove(graph: &mut GraphDef, indices: &BTreeSet<usize>) -> usize {
    let names: HashSet<String> = indices
        .iter()
        .map(|&i| graph.node[i].name.clone())
        .collect();
    let mut index = 0;
    graph.node.retain(|_| {
        index += 1;
        !indices.contains(&(index - 1))
    });
    for node in &mut graph.node {
        node.input.retain(|t| match Input::parse(t) {
            Input::Data { node, .. } | Input::Control(node) => !names.contains(node),
            Input::Unparsed(_) => true,
        });
    }
    names.len()
}

/// Every node a list's handle reaches from `start`, a consumer of its
/// maker, or `None` if something reads the list (see the module's docs).
fn reach_unread(
    nodes: &[NodeDef],
    uses: &Uses<'_>,
    start: usize,
    preserve: &HashSet<String>,
) -> Option<BTreeSet<usize>> {
    let mut seen = BTreeSet::from([start]);
    let mut todo = vec![start];
    while let Some(index) = todo.pop() {
        let node = &nodes[index];
        if preserve.contains(&node.name) {
            return None;
        }
        let carried = carried(&node.op)?;
        for u in uses.of(&node.name) {
            // A control edge from a list node orders; it reads nothing.
            let Some(port) = u.port else { continue };
            if carried.is_some_and(|p| p != port) {
                // Another output used (a popped element): the list is read.
                return None;
            }
            if seen.insert(u.consumer) {
                todo.push(u.consumer);
            }
        }
    }
    // A `Merge` joins only this list's handles.
    (!joined_elsewhere(nodes, &seen)).then_some(seen)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::test_nodes::{find, node};

    /// A forward loop that pushes a shape onto a list, and the backward
    /// loop that pops it, where `reader` (if any) reads the popped shape.
    fn shape_list(reader: Option<&str>) -> GraphDef {
        let mut nodes = vec![
            node("acc", "EmptyTensorList", &["shape", "max"]),
            node("enter", "Enter", &["acc"]),
            node("merge", "Merge", &["enter", "next"]),
            node("switch", "Switch", &["merge", "cond"]),
            node("body", "Identity", &["switch:1"]),
            node("element_shape", "TensorListElementShape", &["xs"]),
            node("push", "TensorListPushBack", &["body", "element_shape"]),
            node("next", "NextIteration", &["push", "^body_control"]),
            node("exit", "Exit", &["switch"]),
            node("executed", "NoOp", &["^exit", "^other_exit"]),
            node("b_enter", "Enter", &["exit"]),
            node("b_merge", "Merge", &["b_enter", "b_next"]),
            node("b_switch", "Switch", &["b_merge", "b_cond"]),
            node("pop", "TensorListPopBack", &["b_switch:1", "shape"]),
            node("b_next", "NextIteration", &["pop"]),
            node("b_exit", "Exit", &["b_switch"]),
            node("body_control", "NoOp", &[]),
        ];
        if let Some(reader) = reader {
            nodes.push(node(reader, "Reshape", &["g", "pop:1"]));
        }
        GraphDef {
            node: nodes,
            ..Default::default()
        }
    }

    #[test]
    fn a_list_pushed_and_popped_but_never_read_goes_with_its_loop_nodes() {
        let mut graph = shape_list(None);
        // 14 list nodes and the shape it pushed.
        assert_eq!(remove_dead_lists(&mut graph, &HashSet::new()), 15);
        let left: Vec<&str> = graph.node.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(left, ["executed", "body_control"]);
        // The loop's "executed" node waits for the loop's other exits.
        assert_eq!(find(&graph, "executed").input, ["^other_exit"]);
    }

    #[test]
    fn a_list_read_fetched_or_joined_stays() {
        let read = shape_list(Some("reshape"));
        let mut graph = read.clone();
        assert_eq!(remove_dead_lists(&mut graph, &HashSet::new()), 0);
        assert_eq!(graph, read);

        let mut fetched = shape_list(None);
        let preserve = HashSet::from(["b_exit".to_string()]);
        assert_eq!(remove_dead_lists(&mut fetched, &preserve), 0);

        // Stacked after the loop: a reader of the whole list.
        let mut stacked = shape_list(None);
        stacked
            .node
            .push(node("stack", "TensorListStack", &["exit", "shape"]));
        assert_eq!(remove_dead_lists(&mut stacked, &HashSet::new()), 0);

        let mut joined = shape_list(None);
        joined.node[2].input.push("other_list".into());
        assert_eq!(remove_dead_lists(&mut joined, &HashSet::new()), 0);
    }

    #[test]
    fn of_two_loop_variables_from_one_empty_list_the_unread_one_goes() {
        // The read list's variable, from the same `EmptyTensorList`.
        let mut graph = shape_list(None);
        graph.node.extend([
            node("enter_2", "Enter", &["acc"]),
            node("merge_2", "Merge", &["enter_2", "next_2"]),
            node("switch_2", "Switch", &["merge_2", "cond"]),
            node("push_2", "TensorListPushBack", &["switch_2:1", "i"]),
            node("next_2", "NextIteration", &["push_2"]),
            node("exit_2", "Exit", &["switch_2"]),
            node("stack", "TensorListStack", &["exit_2", "shape"]),
        ]);
        // The unread variable's 13 nodes and its shape; the maker stays.
        assert_eq!(remove_dead_lists(&mut graph, &HashSet::new()), 14);
        assert_eq!(find(&graph, "acc").op, "EmptyTensorList");
        assert_eq!(find(&graph, "push_2").input, ["switch_2:1", "i"]);
        assert!(!graph.node.iter().any(|n| n.name == "push"));
    }

    #[test]
    fn a_pushed_shape_another_node_uses_stays() {
        let mut graph = shape_list(None);
        graph
            .node
            .push(node("user", "Reshape", &["g", "element_shape"]));
        // The 14 list nodes only.
        assert_eq!(remove_dead_lists(&mut graph, &HashSet::new()), 14);
        assert_eq!(find(&graph, "element_shape").op, "TensorListElementShape");
    }
}
