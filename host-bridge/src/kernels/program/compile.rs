//! A segment compiled for one set of input shapes: its nodes lowered to a
//! device program (`tensorplug_core::program`), with the arena planned.

use super::lower::{lower_node, node_types, static_op};
use super::pieces::{Cmd, Lowering, Operand, Piece};
use super::segment::{Segment, canonical};
use crate::graph::proto::NodeDef;
use crate::registry::OpLabel;
use std::collections::HashMap;
use std::sync::Arc;
use tensorplug_core::accelerator::{DType, Shape, VendorOps};
use tensorplug_core::program::{
    BufferKind, BufferSpec, Limits, Program, ProgramBuilder, Step, validate,
};

/// A segment's program for one set of input shapes.
#[derive(Debug)]
pub struct Compiled {
    /// The program's bytes (what a device that keeps programs stores).
    pub bytes: Vec<u8>,
    /// Its buffers, decoded from `bytes`.
    pub buffers: Vec<BufferSpec>,
    /// Its commands, decoded from `bytes`, each with the TF node it came from.
    pub steps: Vec<(Step, OpLabel)>,
    /// The output shapes, in output order.
    pub outputs: Vec<Shape>,
    /// Bytes of scratch arena a run needs.
    pub arena: u64,
    /// Bytes the scratch buffers would take side by side.
    pub scratch_total: u64,
    /// Each device's answer to loading it, by ordinal: its name there, or
    /// `None` for a device that keeps no programs.
    pub loaded: std::sync::Mutex<Vec<(i32, Option<u32>)>>,
}

impl Compiled {
    /// A program of no commands that makes `outputs`, all empty.
    fn nothing(outputs: Vec<Shape>) -> Self {
        Self {
            bytes: Vec::new(),
            buffers: Vec::new(),
            steps: Vec::new(),
            outputs,
            arena: 0,
            scratch_total: 0,
            loaded: Default::default(),
        }
    }

    /// Whether running it does nothing (its outputs are all empty).
    pub fn is_nothing(&self) -> bool {
        self.bytes.is_empty()
    }
}

/// Lowers `segment` for inputs of `shapes`.
///
/// # Errors
/// A node that does not lower, or shapes its op refuses.
pub fn compile(segment: &Segment, shapes: &[Shape]) -> Result<Compiled, String> {
    if shapes.len() != segment.inputs.len() {
        return Err(format!(
            "the program takes {} inputs, got {}",
            segment.inputs.len(),
            shapes.len()
        ));
    }
    // Pass 1: every edge's shape, every node's command; then again when
    // fusion replaced nodes.
    let first = lower_all(&segment.nodes, segment, shapes)?;
    let fused = super::fuse::fuse(&segment.nodes, &segment.outputs, &first.shape_of)?;
    let (
        nodes,
        Lowered {
            shape_of,
            type_of,
            lowered,
            empty_at,
        },
    ) = if fused.len() == segment.nodes.len() {
        (&segment.nodes, first)
    } else {
        let again = lower_all(&fused, segment, shapes)?;
        (&fused, again)
    };
    if let Some(node) = empty_at {
        return Err(format!(
            "'{node}': an empty input to a non-empty output (a program runs no empty tensors)"
        ));
    }
    // An empty batch: nothing to run when every output is empty too (as
    // TF's kernels do).
    let outputs = segment
        .outputs
        .iter()
        .map(|e| {
            shape_of
                .get(e)
                .copied()
                .ok_or(format!("output {e} is not made"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if outputs.iter().all(|s| s.elements() == Some(0)) {
        return Ok(Compiled::nothing(outputs));
    }
    // Pass 2: inputs, then outputs, are the binding slots in order.
    let mut b = ProgramBuilder::new();
    let error = |e: tensorplug_core::program::ProgramError| e.to_string();
    let mut id_of = HashMap::new();
    let type_of = |edge: &String| type_of.get(edge).copied().unwrap_or(DType::F32);
    for (edge, shape) in segment.inputs.iter().zip(shapes) {
        id_of.insert(
            edge.clone(),
            b.buffer(BufferKind::Input, type_of(edge), *shape)
                .map_err(error)?,
        );
    }
    let mut outputs = Vec::with_capacity(segment.outputs.len());
    for edge in &segment.outputs {
        let shape = *shape_of
            .get(edge)
            .ok_or_else(|| format!("output {edge} is not made"))?;
        id_of.insert(
            edge.clone(),
            b.buffer(BufferKind::Output, type_of(edge), shape)
                .map_err(error)?,
        );
        outputs.push(shape);
    }
    // The node each command comes from.
    let mut owners = Vec::new();
    for (n, (node, (ins, in_shapes, low))) in nodes.iter().zip(&lowered).enumerate() {
        // Each output: the program's, or scratch.
        let mut outs = Vec::with_capacity(1 + low.ports.len());
        for (port, shape) in low.outputs().enumerate() {
            let edge = format!("{}:{port}", node.name);
            let id = match id_of.get(&edge) {
                Some(&id) => id,
                None => {
                    let id = b
                        .buffer(BufferKind::Scratch, type_of(&edge), shape)
                        .map_err(error)?;
                    id_of.insert(edge, id);
                    id
                }
            };
            outs.push(id);
        }
        // An empty output (its node had an empty input): a fill of no
        // bytes, so that every buffer is written, and no temporaries.
        let empty_out = low.out.elements() == Some(0);
        let temps = low
            .temps
            .iter()
            .enumerate()
            .filter(|_| !empty_out)
            .map(|(i, &t)| b.buffer(BufferKind::Scratch, low.temp_type(i), t))
            .collect::<Result<Vec<_>, _>>()
            .map_err(error)?;
        let id = |o: Operand| match o {
            Operand::Input(i) => id_of[&ins[i]],
            Operand::Temp(t) => temps[t],
            Operand::Output => outs[0],
            Operand::Port(p) => outs[p],
        };
        let empty: Vec<Piece> = (0..outs.len())
            .map(|p| Piece {
                cmd: Cmd::Fill(0),
                inputs: Vec::new(),
                output: if p == 0 {
                    Operand::Output
                } else {
                    Operand::Port(p)
                },
            })
            .collect();
        let pieces = if empty_out {
            &empty[..]
        } else {
            &low.pieces[..]
        };
        for piece in pieces {
            let dst = id(piece.output);
            match piece.cmd {
                Cmd::Launch(kind) => {
                    let inputs: Vec<_> = piece.inputs.iter().map(|&o| id(o)).collect();
                    let shapes: Vec<Shape> = piece
                        .inputs
                        .iter()
                        .map(|&o| low.shape(o, in_shapes))
                        .collect();
                    let types = node_types(node);
                    let out = (low.shape(piece.output, in_shapes), types.map(|t| t.1));
                    let op_id = tag(node, kind, &shapes, types.map(|t| t.0), out);
                    b.launch(kind, op_id, &inputs, dst).map_err(error)?;
                }
                Cmd::Copy => b.copy(dst, id(piece.inputs[0])).map_err(error)?,
                Cmd::Fill(pattern) => b.fill(dst, pattern).map_err(error)?,
            }
            owners.push(n);
        }
    }
    // Views for the copies of reshapes and of products' results.
    for c in b.elide_copies().into_iter().rev() {
        owners.remove(c);
    }
    let built = b.finish(&VendorOps::NONE).map_err(error)?;
    decode(
        nodes,
        &owners,
        built.bytes,
        outputs,
        built.plan.arena,
        built.plan.total,
    )
}

/// The profiler's id of `node`'s command: what its own kernel's launch
/// would carry, so a device that runs the program reports it by name.
fn tag(
    node: &crate::graph::proto::NodeDef,
    kind: tensorplug_core::accelerator::OpKind,
    inputs: &[Shape],
    types: Option<&[DType]>,
    (out, out_type): (Shape, Option<DType>),
) -> u16 {
    use tensorplug_core::accelerator::{DeviceAddr, OpDesc, TensorDesc};
    let desc =
        |s: Shape, t: Option<DType>| TensorDesc::new(DeviceAddr(0), t.unwrap_or(DType::F32), s);
    let ins: Vec<TensorDesc> = (inputs.iter().enumerate())
        .map(|(i, &s)| desc(s, types.and_then(|t| t.get(i).copied())))
        .collect();
    let op = OpDesc {
        kind,
        inputs: &ins,
        output: desc(out, out_type),
        op_id: 0,
    };
    crate::profiler::op_tag(
        super::fuse::label(node),
        static_op(&node.op).unwrap_or("Program"),
        op.flops(),
        op.bytes_accessed(),
    )
}

/// Reads the built program back through the device's own parser and
/// validator, so what runs is what a device would accept.
fn decode(
    nodes: &[NodeDef],
    owners: &[usize],
    bytes: Vec<u8>,
    outputs: Vec<Shape>,
    arena: u64,
    scratch_total: u64,
) -> Result<Compiled, String> {
    let parsed = Program::parse(&bytes).map_err(|e| e.to_string())?;
    let valid = validate(parsed, &VendorOps::NONE, &Limits::HOST).map_err(|e| e.to_string())?;
    let p = valid.program();
    let buffers = (0..p.buffer_count())
        .map(|i| {
            p.buffer(i)
                .and_then(|r| BufferSpec::decode(&r).ok())
                .ok_or_else(|| format!("buffer {i}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut steps = Vec::with_capacity(p.command_count());
    for (c, record) in p.commands().enumerate() {
        let step =
            Step::decode(&record, &VendorOps::NONE, buffers.len()).map_err(|e| format!("{e:?}"))?;
        let node = &nodes[owners[c]];
        let label = OpLabel {
            op_type: static_op(&node.op).unwrap_or("Program"),
            node: Arc::from(super::fuse::label(node)),
        };
        steps.push((step, label));
    }
    Ok(Compiled {
        bytes,
        buffers,
        steps,
        outputs,
        arena,
        scratch_total,
        loaded: Default::default(),
    })
}

/// Pass 1's results: every edge's shape and element type, every node's
/// lowering with its inputs, and the first node with an empty input.
struct Lowered {
    shape_of: HashMap<String, Shape>,
    type_of: HashMap<String, DType>,
    lowered: Vec<(Vec<String>, Vec<Shape>, Lowering)>,
    empty_at: Option<String>,
}

/// Lowers `nodes` (the segment's, or after fusion) for inputs of `shapes`.
fn lower_all(nodes: &[NodeDef], segment: &Segment, shapes: &[Shape]) -> Result<Lowered, String> {
    let mut shape_of: HashMap<String, Shape> = segment
        .inputs
        .iter()
        .cloned()
        .zip(shapes.iter().copied())
        .collect();
    // Every edge's element type: a node's output its command's, an input
    // the type its readers take (float32 but for the int8 ops').
    let mut type_of: HashMap<String, DType> = HashMap::new();
    let mut lowered = Vec::with_capacity(segment.nodes.len());
    // The first node with an empty input (an empty batch).
    let mut empty_at = None;
    for node in nodes {
        let ins: Vec<String> = node
            .input
            .iter()
            .map(|i| canonical(i).ok_or_else(|| format!("'{}': input {i:?}", node.name)))
            .collect::<Result<_, _>>()?;
        let (operands, out_type) = node_types(node).unwrap_or((&[], DType::F32));
        for (slot, edge) in ins.iter().enumerate() {
            let want = operands.get(slot).copied().unwrap_or(DType::F32);
            let have = *type_of.entry(edge.clone()).or_insert(want);
            if have != want {
                return Err(format!(
                    "'{}': input {slot} ({edge}) is {}, its op takes {}",
                    node.name,
                    have.name(),
                    want.name()
                ));
            }
        }
        let in_shapes: Vec<Shape> = ins
            .iter()
            .map(|e| {
                shape_of
                    .get(e)
                    .copied()
                    .ok_or_else(|| format!("'{}': no edge {e}", node.name))
            })
            .collect::<Result<_, _>>()?;
        let lowering = lower_node(node, &in_shapes)?;
        // An empty input (an empty batch) makes an empty output, which no
        // command writes; an empty input to a non-empty output is refused.
        let empty_in = in_shapes.iter().any(|s| s.elements() == Some(0));
        if empty_in && lowering.out.elements() != Some(0) && empty_at.is_none() {
            empty_at = Some(node.name.clone());
        }
        for (port, shape) in lowering.outputs().enumerate() {
            let edge = format!("{}:{port}", node.name);
            type_of.insert(edge.clone(), out_type);
            shape_of.insert(edge, shape);
        }
        lowered.push((ins, in_shapes, lowering));
    }
    Ok(Lowered {
        shape_of,
        type_of,
        lowered,
        empty_at,
    })
}
