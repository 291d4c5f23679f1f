//! A segment as the program node carries it (its `segment` attribute): a
//! `GraphDef` of the segment's nodes in topological order, then two marker
//! nodes whose inputs list the program's input and output edges (the
//! inputs' marker counts the host inputs in its `streamed` and `weights`
//! attributes).

use crate::graph::edges::Input;
use crate::graph::proto::{AttrValue, GraphDef, NodeDef, attr_value};
use prost::Message as _;

const INPUTS: &str = "_tensorplug_program_inputs";
const OUTPUTS: &str = "_tensorplug_program_outputs";
const WEIGHTS: &str = "weights";
const STREAMED: &str = "streamed";

/// A program's TF nodes and its edges to the rest of the graph.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Segment {
    /// The nodes, each after its producers in the segment.
    pub nodes: Vec<NodeDef>,
    /// Input `i` of the program node: the edge (`node:port`) the segment's
    /// nodes name it by.
    pub inputs: Vec<String>,
    /// How many of `inputs`, after the device's, are host data: tensors
    /// made on the CPU (a batch from `tf.data`, a feed) that the kernel
    /// takes in host memory and uploads each step without waiting.
    pub streamed: usize,
    /// How many of `inputs`, at their end, are host weights: tensors in
    /// host memory (a CPU variable's read, a CPU constant) that the kernel
    /// keeps on the device and uploads again only when they change.
    pub weights: usize,
    /// Output `k`: a segment node's edge (`node:port`).
    pub outputs: Vec<String>,
}

/// `node` or `node:0` → `node:0`; `None` for a control or unparsable input.
pub fn canonical(input: &str) -> Option<String> {
    match Input::parse(input) {
        Input::Data { node, port } => Some(format!("{node}:{port}")),
        _ => None,
    }
}

impl Segment {
    /// The attribute's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let marker = |name: &str, edges: &[String]| NodeDef {
            name: name.into(),
            op: "NoOp".into(),
            input: edges.to_vec(),
            ..Default::default()
        };
        let mut node = self.nodes.clone();
        let mut inputs = marker(INPUTS, &self.inputs);
        for (key, n) in [(STREAMED, self.streamed), (WEIGHTS, self.weights)] {
            inputs.attr.insert(
                key.into(),
                AttrValue {
                    value: Some(attr_value::Value::I(n as i64)),
                },
            );
        }
        node.push(inputs);
        node.push(marker(OUTPUTS, &self.outputs));
        GraphDef {
            node,
            ..Default::default()
        }
        .encode_to_vec()
    }

    /// Reads the attribute.
    ///
    /// # Errors
    /// Bytes that are not a segment.
    pub fn decode(bytes: &[u8]) -> Result<Self, String> {
        let mut graph = GraphDef::decode(bytes).map_err(|e| format!("segment: {e}"))?;
        let outputs = graph.node.pop().filter(|n| n.name == OUTPUTS);
        let inputs = graph.node.pop().filter(|n| n.name == INPUTS);
        let (Some(inputs), Some(outputs)) = (inputs, outputs) else {
            return Err("segment: no input and output lists".into());
        };
        if outputs.input.is_empty() {
            return Err("segment: no outputs".into());
        }
        let count = |key: &str| match inputs.attr.get(key).and_then(|a| a.value.as_ref()) {
            Some(attr_value::Value::I(n)) => {
                usize::try_from(*n).map_err(|_| format!("segment: {n} {key} inputs"))
            }
            _ => Ok(0),
        };
        let (streamed, weights) = (count(STREAMED)?, count(WEIGHTS)?);
        if streamed.saturating_add(weights) > inputs.input.len() {
            return Err(format!(
                "segment: {streamed} streamed and {weights} weights of {} inputs",
                inputs.input.len()
            ));
        }
        Ok(Self {
            nodes: graph.node,
            inputs: inputs.input,
            streamed,
            weights,
            outputs: outputs.input,
        })
    }
}
