//! How much of a group of nodes one device program can hold: a program
//! has one buffer per input it takes, one per node's output and each
//! node's temporaries, at most the format's [`MAX_BUFFERS`]. A larger group is cut: its first part in
//! the order of its own edges becomes one program, the rest is left for
//! the next ones.

use super::edges::Input;
use super::proto::GraphDef;
use crate::kernels::program::lower::max_temps;
use std::collections::{HashMap, HashSet};
use tensorplug_core::program::MAX_BUFFERS;

/// The buffers of a program holding `part`: its distinct inputs from
/// outside, one output each, and each node's temporaries at most.
pub fn buffers(graph: &GraphDef, part: &[usize]) -> usize {
    let members: HashSet<&str> = part.iter().map(|&i| graph.node[i].name.as_str()).collect();
    let mut inputs = HashSet::new();
    for &i in part {
        for input in &graph.node[i].input {
            if let Input::Data { node, port } = Input::parse(input)
                && !members.contains(node)
            {
                inputs.insert((node, port));
            }
        }
    }
    let temps: usize = part.iter().map(|&i| max_temps(&graph.node[i])).sum();
    inputs.len() + part.len() + temps
}

/// The first nodes of `group`, producers before consumers, that fit one
/// program ([`MAX_BUFFERS`]); all of it when it fits.
pub fn fitting(graph: &GraphDef, group: &[usize]) -> Vec<usize> {
    fitting_within(graph, group, MAX_BUFFERS)
}

fn fitting_within(graph: &GraphDef, group: &[usize], limit: usize) -> Vec<usize> {
    if buffers(graph, group) <= limit {
        return group.to_vec();
    }
    let index: HashMap<&str, usize> = group
        .iter()
        .map(|&i| (graph.node[i].name.as_str(), i))
        .collect();
    // Producers inside the group, per member.
    let producers = |i: usize| -> Vec<usize> {
        graph.node[i]
            .input
            .iter()
            .filter_map(|input| match Input::parse(input) {
                Input::Data { node, .. } => index.get(node).copied(),
                _ => None,
            })
            .collect()
    };
    // Kahn's order over the group's own edges, taken while it fits.
    let mut taken: Vec<usize> = Vec::new();
    let mut done: HashSet<usize> = HashSet::new();
    loop {
        let next = group
            .iter()
            .copied()
            .find(|&i| !done.contains(&i) && producers(i).iter().all(|p| done.contains(p)));
        let Some(i) = next else {
            return taken;
        };
        taken.push(i);
        if buffers(graph, &taken) > limit {
            taken.pop();
            return taken;
        }
        done.insert(i);
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_nodes::node;
    use super::*;

    /// A chain a0 → a1 → … of `n` nodes, each also reading its own `Const`.
    fn chain(n: usize) -> GraphDef {
        let mut nodes = Vec::new();
        for k in 0..n {
            nodes.push(node(&format!("w{k}"), "Const", &[]));
            let prev = if k == 0 {
                "x".to_string()
            } else {
                format!("a{}", k - 1)
            };
            nodes.push(node(&format!("a{k}"), "Add", &[&prev, &format!("w{k}")]));
        }
        GraphDef {
            node: nodes,
            ..Default::default()
        }
    }

    fn adds(g: &GraphDef) -> Vec<usize> {
        (0..g.node.len())
            .filter(|&i| g.node[i].op == "Add")
            .collect()
    }

    #[test]
    fn a_group_that_fits_is_kept_whole() {
        let g = chain(5);
        let group = adds(&g);
        // x and five weights in, five outputs.
        assert_eq!(buffers(&g, &group), 11);
        assert_eq!(fitting_within(&g, &group, 11), group);
    }

    #[test]
    fn a_larger_group_is_cut_after_its_producers_in_order() {
        let g = chain(5);
        // Listed consumers first: the cut still follows the edges.
        let mut group = adds(&g);
        group.reverse();
        let part = fitting_within(&g, &group, 7);
        let names: Vec<&str> = part.iter().map(|&i| g.node[i].name.as_str()).collect();
        // x, w0, w1, w2 in and a0..a2 out: 7.
        assert_eq!(names, ["a0", "a1", "a2"]);
        assert!(buffers(&g, &part) <= 7);
    }

    #[test]
    fn the_formats_limit_cuts_a_long_chain() {
        let g = chain(200);
        let part = fitting(&g, &adds(&g));
        assert!(part.len() < 200 && buffers(&g, &part) <= MAX_BUFFERS);
        assert_eq!(buffers(&g, &part), MAX_BUFFERS - 1, "as many as fit");
    }
}
