//! The per-node report (`report_file`): every node of every graph the
//! delegate was asked about, its op, the decision, its partition, the
//! reason when it stays on the CPU, and how often the device ran it.
//! Format: `docs/delegate.md`, "The report".

use serde_json::{Value, json};
use std::path::Path;

/// Where one node runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// In partition `partition` on the device.
    Device { partition: usize },
    /// On the runtime's CPU kernels, and why.
    Cpu { reason: String },
}

/// One node.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeEntry {
    pub index: i32,
    pub op: String,
    pub version: i32,
    pub decision: Decision,
    /// Completed device runs of this node (its partition's invokes).
    pub device_runs: u64,
    /// Its int32 output, when the delegate evaluated it at prepare
    /// (`SHAPE`, `STRIDED_SLICE`, `PACK`): no device work.
    pub folded: Option<Vec<i32>>,
}

/// One tensor, as the delegate read it through its mirrors (so the report
/// can be checked against the runtime's own view).
#[derive(Clone, Debug, PartialEq)]
pub struct TensorEntry {
    pub index: i32,
    pub name: String,
    pub dtype: i32,
    pub dims: Vec<usize>,
    pub bytes: usize,
    pub constant: bool,
    pub scale: f32,
    pub zero_point: i32,
}

/// One graph (one `Prepare` call).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GraphReport {
    pub nodes: Vec<NodeEntry>,
    /// The node indices of each delegated partition.
    pub partitions: Vec<Vec<i32>>,
    pub tensors: Vec<TensorEntry>,
    /// Each partition's device program, as its kernel built it.
    pub programs: Vec<ProgramEntry>,
    /// The cost model's estimate of each partition it judged (`cost.rs`).
    pub partition_costs: Vec<Value>,
}

/// A partition's device program.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProgramEntry {
    /// The partition's nodes.
    pub nodes: Vec<i32>,
    pub commands: usize,
    pub bytes: usize,
    /// `stored` (the device keeps it: one request per invoke) or
    /// `replayed` (its commands enqueued one by one each invoke).
    pub runs: &'static str,
    /// Why it is replayed on a device that keeps programs.
    pub reason: Option<String>,
    /// The partition's arena for its intermediate tensors and
    /// temporaries, and what they would take one buffer each (the same
    /// for every program of a partition).
    pub arena_bytes: usize,
    pub unshared_bytes: usize,
    /// The partition's constant bytes it uploaded, and those it bound from
    /// an earlier partition's upload (the same bytes: `constants.rs`).
    pub constants_uploaded: usize,
    pub constants_reused: usize,
}

/// The whole report.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    pub device: String,
    /// Where `device` came from (the option, a setting, the default).
    pub device_source: String,
    pub device_name: String,
    pub min_nodes: usize,
    /// How int8 `FULLY_CONNECTED` requantizes, and why (the option, or
    /// the runtime recognized).
    pub fc_rounding: &'static str,
    pub fc_rounding_source: String,
    /// The cost model's figures (`cost.rs`), `"off"`, or null until a
    /// graph needed them.
    pub cost_model: Value,
    pub graphs: Vec<GraphReport>,
}

impl Report {
    /// Counts one completed device run of `nodes` of graph `graph`.
    pub fn count_runs(&mut self, graph: usize, nodes: &[i32]) {
        if let Some(g) = self.graphs.get_mut(graph) {
            for n in g.nodes.iter_mut().filter(|n| nodes.contains(&n.index)) {
                n.device_runs += 1;
            }
        }
    }

    /// The report as JSON.
    pub fn to_json(&self) -> Value {
        let graphs: Vec<Value> = self
            .graphs
            .iter()
            .map(|g| {
                let nodes: Vec<Value> = g
                    .nodes
                    .iter()
                    .map(|n| {
                        let (decision, partition, reason) = match &n.decision {
                            Decision::Device { partition } => {
                                ("device", json!(partition), Value::Null)
                            }
                            Decision::Cpu { reason } => ("cpu", Value::Null, json!(reason)),
                        };
                        json!({
                            "index": n.index,
                            "op": n.op,
                            "version": n.version,
                            "decision": decision,
                            "partition": partition,
                            "reason": reason,
                            "device_runs": n.device_runs,
                            "folded": n.folded,
                        })
                    })
                    .collect();
                let tensors: Vec<Value> = g
                    .tensors
                    .iter()
                    .map(|t| {
                        json!({
                            "index": t.index,
                            "name": t.name,
                            "type": t.dtype,
                            "dims": t.dims,
                            "bytes": t.bytes,
                            "constant": t.constant,
                            "scale": t.scale,
                            "zero_point": t.zero_point,
                        })
                    })
                    .collect();
                let programs: Vec<Value> = g
                    .programs
                    .iter()
                    .map(|p| {
                        json!({
                            "nodes": p.nodes,
                            "commands": p.commands,
                            "bytes": p.bytes,
                            "runs": p.runs,
                            "reason": p.reason,
                            "arena_bytes": p.arena_bytes,
                            "unshared_bytes": p.unshared_bytes,
                            "constants_uploaded": p.constants_uploaded,
                            "constants_reused": p.constants_reused,
                        })
                    })
                    .collect();
                json!({
                    "nodes": nodes,
                    "partitions": g.partitions,
                    "tensors": tensors,
                    "programs": programs,
                    "partition_costs": g.partition_costs,
                })
            })
            .collect();
        json!({
            "delegate": "tensorplug",
            "device": self.device,
            "device_source": self.device_source,
            "device_name": self.device_name,
            "min_nodes": self.min_nodes,
            "fc_rounding": self.fc_rounding,
            "fc_rounding_source": self.fc_rounding_source,
            "cost_model": self.cost_model,
            "op_set": crate::ops::OP_SET,
            "graphs": graphs,
        })
    }

    /// Writes the JSON to `path` (through a temporary file, so a reader
    /// never sees half a report).
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(&self.to_json())?)?;
        std::fs::rename(&tmp, path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_names_decision_partition_and_reason() {
        let mut r = Report {
            device: "sim".into(),
            min_nodes: 1,
            ..Report::default()
        };
        r.graphs.push(GraphReport {
            nodes: vec![
                NodeEntry {
                    index: 0,
                    op: "FULLY_CONNECTED".into(),
                    version: 1,
                    decision: Decision::Device { partition: 0 },
                    device_runs: 0,
                    folded: None,
                },
                NodeEntry {
                    index: 1,
                    op: "TANH".into(),
                    version: 1,
                    decision: Decision::Cpu {
                        reason: "not in the op set".into(),
                    },
                    device_runs: 0,
                    folded: None,
                },
            ],
            partitions: vec![vec![0]],
            tensors: vec![],
            programs: vec![ProgramEntry {
                nodes: vec![0],
                commands: 1,
                bytes: 200,
                runs: "replayed",
                reason: None,
                arena_bytes: 128,
                unshared_bytes: 192,
                constants_uploaded: 64,
                constants_reused: 0,
            }],
            partition_costs: vec![json!({"nodes": [0], "decision": "cpu"})],
        });
        r.count_runs(0, &[0]);
        let j = r.to_json();
        let n = &j["graphs"][0]["nodes"];
        assert_eq!(n[0]["decision"], "device");
        assert_eq!(n[0]["partition"], 0);
        assert_eq!(n[0]["device_runs"], 1);
        assert_eq!(n[1]["decision"], "cpu");
        assert_eq!(n[1]["reason"], "not in the op set");
        assert_eq!(n[1]["device_runs"], 0);
        assert_eq!(j["graphs"][0]["partition_costs"][0]["decision"], "cpu");
        assert_eq!(j["cost_model"], Value::Null);
        let p = &j["graphs"][0]["programs"][0];
        assert_eq!(
            (p["runs"].as_str(), p["commands"].as_u64()),
            (Some("replayed"), Some(1))
        );
        assert_eq!(
            (p["arena_bytes"].as_u64(), p["unshared_bytes"].as_u64()),
            (Some(128), Some(192))
        );
    }
}
