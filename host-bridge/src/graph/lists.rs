//! What the list passes (`list_dead.rs`, `list_host.rs`) share: the ops
//! that make a list, the ops its handle flows through, and the check that
//! a `Merge` joins one list's handles only.

use super::edges::Input;
use super::proto::NodeDef;
use std::collections::{BTreeSet, HashSet};

/// The ops that make a list.
pub const MAKERS: &[&str] = &["EmptyTensorList", "TensorListReserve"];

/// The ops a list's handle may flow through, and which of their outputs
/// carry it on (`None`: every data output).
pub const CARRIERS: &[(&str, Option<u32>)] = &[
    ("Enter", None),
    ("Merge", Some(0)),
    ("Switch", None),
    ("Identity", None),
    ("NextIteration", None),
    ("Exit", None),
    ("TensorListPushBack", Some(0)),
    ("TensorListPopBack", Some(0)),
    ("TensorListSetItem", Some(0)),
];

/// The indices of the nodes that make a list and pass `keep`.
pub fn makers(nodes: &[NodeDef], keep: impl Fn(&NodeDef) -> bool) -> Vec<usize> {
    (nodes.iter().enumerate())
        .filter(|(_, n)| MAKERS.contains(&n.op.as_str()) && keep(n))
        .map(|(i, _)| i)
        .collect()
}

/// The output of `op` that carries a handle on (`Some(None)`: every data
/// output), or `None` if `op` is not a carrier.
pub fn carried(op: &str) -> Option<Option<u32>> {
    CARRIERS
        .iter()
        .find(|(o, _)| *o == op)
        .map(|&(_, port)| port)
}

/// Whether a `Merge` among `seen` also joins a value from outside them.
pub fn joined_elsewhere(nodes: &[NodeDef], seen: &BTreeSet<usize>) -> bool {
    let names: HashSet<&str> = seen.iter().map(|&i| nodes[i].name.as_str()).collect();
    seen.iter().map(|&i| &nodes[i]).any(|n| {
        n.op == "Merge"
            && n.input.iter().any(|t| match Input::parse(t) {
                Input::Data { node, .. } => !names.contains(node),
                Input::Control(_) => false,
                Input::Unparsed(_) => true,
            })
    })
}
