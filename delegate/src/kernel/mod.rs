//! One delegated partition: built at `init` (device buffers for every
//! tensor it touches, constants uploaded once, the partition compiled into
//! one device program and stored on a device that keeps programs),
//! checked at `prepare`, and run at `invoke`: its inputs in, one program
//! run (or, on a device that keeps none, its commands replayed on one
//! queue), one wait, its outputs out. Intermediate tensors never leave the
//! device.

mod arena;
mod command;
mod float;
mod program;

pub use program::QUEUE;

use command::Command;
use program::{Compiled, Piece, Stored, run_one};

use crate::graph::{Graph, TensorView, int_array};
use crate::ops::{ConcatRows, DeviceOp, MeanInt8, decide};
use crate::options::Fault;
use crate::report::ProgramEntry;
use crate::shared::{DEVICE_TIMEOUT, Shared, lock};
use std::collections::BTreeMap;
use std::sync::Arc;
use tensorplug_abi::tflite::TfLiteDelegateParams;
use tensorplug_core::accelerator::{
    Activation, DType, DeviceAddr, Fence, OpKind, Shape, TensorDesc, VendorOps,
};
use tensorplug_core::event::{Event, EventKind};
use tensorplug_core::program::{BufferKind, MAX_BUFFERS, Program};
use tensorplug_host_bridge::prelude::DynAccelerator;

const ALIGN: u64 = 64;

/// Why a resized partition fails `prepare`, and what to do.
const RESIZE: &str = "with `allow_dynamic_tensors` the runtime does not re-apply the delegate \
                      after a resize (and applies it before one made on a new interpreter): \
                      convert the model with the shape it runs at, or, for a model without \
                      dynamic tensors, leave `allow_dynamic_tensors` off so that the runtime \
                      re-applies the delegate at the new shape";

/// A tensor's device copy.
#[derive(Debug)]
struct Buffer {
    addr: DeviceAddr,
    bytes: usize,
    dims: Vec<usize>,
}

impl Buffer {
    fn new(addr: DeviceAddr, t: &TensorView) -> Self {
        Self {
            addr,
            bytes: t.bytes,
            dims: t.dims.clone(),
        }
    }
}

/// Where an arena slot goes: a tensor, or a temporary of a node (its
/// temporaries in order).
#[derive(Clone, Copy)]
enum Place {
    Tensor(i32),
    Temp(i32),
}

/// The partition's intermediates and temporaries: the arena's bytes, and
/// what they would take one buffer each; its constants' bytes it uploaded,
/// and those another partition had uploaded already.
#[derive(Clone, Copy, Debug, Default)]
struct Memory {
    arena: usize,
    unshared: usize,
    uploaded: usize,
    reused: usize,
}

/// One partition's device plan.
pub struct Kernel {
    shared: Arc<Shared>,
    graph_id: usize,
    nodes: Vec<i32>,
    steps: Vec<(i32, DeviceOp)>,
    buffers: BTreeMap<i32, Buffer>,
    /// A node's device temporaries (pre-activation results), by node.
    temps: BTreeMap<i32, Vec<DeviceAddr>>,
    /// int8 nodes' quantization blocks on the device, by node: address
    /// and length in words.
    blocks: BTreeMap<i32, (DeviceAddr, u64)>,
    /// A node's own constants, uploaded at init: a convolution's filter in
    /// the device's layout (and a float32 one's bias), a `MEAN`'s ones.
    constants: BTreeMap<i32, Vec<DeviceAddr>>,
    /// Non-constant partition inputs, copied in at every invoke.
    inputs: Vec<i32>,
    /// The partition's outputs the device writes, read back at every invoke.
    outputs: Vec<i32>,
    /// The tensors whose shapes the partition's folded values
    /// (`DeviceOp::Folded`) came from, and those shapes.
    folded_from: Vec<(i32, Vec<usize>)>,
    /// The partition's outputs that are folded values, written by the host.
    folded_outputs: Vec<(i32, Vec<i32>)>,
    /// The partition as device programs.
    program: Compiled,
    /// Each node's op, for the trace.
    names: BTreeMap<i32, String>,
    /// Every device allocation the kernel made, freed when it drops.
    owned: Vec<DeviceAddr>,
    /// The constants it binds, kept by content in `Shared::constants`,
    /// released when it drops.
    kept: Vec<DeviceAddr>,
    /// The arena's size against one buffer each.
    memory: Memory,
}

impl Kernel {
    /// Builds the plan of the partition `params` describes.
    pub fn new(
        shared: Arc<Shared>,
        graph_id: usize,
        graph: &Graph,
        params: &TfLiteDelegateParams,
    ) -> Result<Self, String> {
        // SAFETY: the runtime's live arrays of this partition.
        let (nodes, inputs, outputs) = unsafe {
            (
                int_array(params.nodes_to_replace),
                int_array(params.input_tensors),
                int_array(params.output_tensors),
            )
        };
        if shared.options.fault == Fault::Init {
            return Err("injected fault: kernel init (option `fault=init`)".into());
        }
        let mut steps = Vec::with_capacity(nodes.len());
        let mut folded = BTreeMap::new();
        let mut folded_from = Vec::new();
        let mut names = BTreeMap::new();
        for &index in &nodes {
            let node = graph.node(index)?;
            names.insert(index, crate::ops::op_name(node.builtin_code));
            let op = decide(graph, &node, &shared.capabilities, shared.fc_rounding)
                .map_err(|why| format!("node {index} cannot run on the device: {why}"))?;
            match op {
                DeviceOp::Folded { out, value, shapes } => {
                    folded_from.extend(shapes);
                    folded.insert(out, value);
                }
                op => steps.push((index, op)),
            }
        }
        let (folded_outputs, outputs): (Vec<i32>, Vec<i32>) =
            outputs.into_iter().partition(|t| folded.contains_key(t));
        let folded_outputs = folded_outputs
            .into_iter()
            .filter_map(|t| folded.remove(&t).map(|v| (t, v)))
            .collect();
        let mut kernel = Self {
            shared,
            graph_id,
            nodes,
            steps,
            buffers: BTreeMap::new(),
            temps: BTreeMap::new(),
            blocks: BTreeMap::new(),
            constants: BTreeMap::new(),
            inputs: Vec::new(),
            outputs,
            folded_from,
            folded_outputs,
            program: Compiled::default(),
            names,
            owned: Vec::new(),
            kept: Vec::new(),
            memory: Memory::default(),
        };
        kernel.allocate(graph, &inputs)?;
        if !kernel.steps.is_empty() {
            kernel.program = kernel.compile(graph)?;
        }
        Ok(kernel)
    }

    /// Device memory for the partition: a buffer for each of its inputs,
    /// outputs and constants (uploaded here), one arena for its
    /// intermediate tensors and temporaries (planned by liveness,
    /// [`arena`]), and each node's own constants and quantization block.
    fn allocate(&mut self, graph: &Graph, partition_inputs: &[i32]) -> Result<(), String> {
        // Each tensor's first write and last read, by step.
        let mut life: BTreeMap<i32, arena::Item> = BTreeMap::new();
        let mut tensors: Vec<i32> = Vec::new();
        for (step, (_, op)) in self.steps.iter().enumerate() {
            let (reads, written) = op.io();
            for t in &reads {
                if let Some(item) = life.get_mut(t) {
                    item.last = step;
                }
            }
            life.entry(written).or_insert(arena::Item {
                bytes: graph.tensor(written)?.bytes,
                first: step,
                last: step,
            });
            tensors.extend(reads);
            tensors.push(written);
        }
        tensors.sort_unstable();
        tensors.dedup();
        let shared = Arc::clone(&self.shared);
        let mut dev = lock(&shared.device);
        let mut constants = lock(&shared.constants);
        let mut keep = |dev: &mut DynAccelerator, bytes: &[u8], what: &dyn Fn() -> String| {
            let b = constants
                .keep(dev, (QUEUE, DEVICE_TIMEOUT), ALIGN, bytes)
                .map_err(|e| format!("{}: {e}", what()))?;
            self.kept.push(b.addr);
            match b.uploaded {
                true => self.memory.uploaded += bytes.len(),
                false => self.memory.reused += bytes.len(),
            }
            Ok::<_, String>(b.addr)
        };
        // Intermediates, then the nodes' temporaries, share the arena.
        let mut items: Vec<(Place, arena::Item)> = Vec::new();
        for &index in &tensors {
            let t = graph.tensor(index)?;
            let inner =
                !t.constant && !partition_inputs.contains(&index) && !self.outputs.contains(&index);
            match life.get(&index) {
                Some(&item) if inner => items.push((Place::Tensor(index), item)),
                _ if t.constant => {
                    let what = || format!("tensor {index} (`{}`)", t.name);
                    let addr = keep(&mut **dev, host_bytes(&t)?, &what)?;
                    self.buffers.insert(index, Buffer::new(addr, &t));
                }
                _ => {
                    let addr = alloc(&mut **dev, t.bytes)?;
                    self.owned.push(addr);
                    if partition_inputs.contains(&index) {
                        self.inputs.push(index);
                    }
                    self.buffers.insert(index, Buffer::new(addr, &t));
                }
            }
        }
        for (step, (node, op)) in self.steps.iter().enumerate() {
            let out = op.io().1;
            let temps: Vec<usize> = match op {
                DeviceOp::FullyConnected { .. }
                | DeviceOp::Binary { .. }
                | DeviceOp::ConvF32 { .. }
                | DeviceOp::PoolF32 { .. }
                | DeviceOp::MeanLastF32 { .. }
                | DeviceOp::HardSwishF32 { .. } => {
                    vec![graph.tensor(out)?.bytes; float::temps(op)]
                }
                DeviceOp::Concat(c) => c.temps(),
                _ => Vec::new(),
            };
            for bytes in temps {
                let item = arena::Item {
                    bytes,
                    first: step,
                    last: step,
                };
                items.push((Place::Temp(*node), item));
            }
        }
        let (offsets, size) = arena::plan(
            &items.iter().map(|(_, i)| *i).collect::<Vec<_>>(),
            ALIGN as usize,
        );
        let base = match size {
            0 => DeviceAddr(0),
            _ => {
                let base = alloc(&mut **dev, size)?;
                self.owned.push(base);
                base
            }
        };
        self.memory.arena = size;
        self.memory.unshared = items
            .iter()
            .map(|(_, i)| i.bytes.next_multiple_of(ALIGN as usize))
            .sum();
        for ((place, _), offset) in items.iter().zip(offsets) {
            let addr = DeviceAddr(base.0 + offset as u64);
            match *place {
                Place::Tensor(index) => {
                    let t = graph.tensor(index)?;
                    self.buffers.insert(index, Buffer::new(addr, &t));
                }
                Place::Temp(node) => self.temps.entry(node).or_default().push(addr),
            }
        }
        for (node, op) in &self.steps {
            let node_constants: Vec<Vec<u8>> = match op {
                DeviceOp::ConvInt8 { filter, .. } => vec![filter.clone()],
                DeviceOp::ConvF32 { filter, bias, .. } => [Some(filter.clone()), bias.clone()]
                    .into_iter()
                    .flatten()
                    .collect(),
                DeviceOp::MeanInt8(m) => vec![m.ones()],
                DeviceOp::ScaleF32 { factor, .. } => vec![factor.to_le_bytes().to_vec()],
                DeviceOp::MeanLastF32 { n, .. } => vec![(*n as f32).to_le_bytes().to_vec()],
                DeviceOp::HardSwishF32 { .. } => {
                    vec![3f32.to_le_bytes().to_vec(), 6f32.to_le_bytes().to_vec()]
                }
                _ => Vec::new(),
            };
            for bytes in node_constants {
                let addr = keep(&mut **dev, &bytes, &|| format!("node {node}'s constants"))?;
                self.constants.entry(*node).or_default().push(addr);
            }
            if let DeviceOp::FullyConnectedInt8 { block, .. }
            | DeviceOp::AddInt8 { block, .. }
            | DeviceOp::ConvInt8 { block, .. }
            | DeviceOp::PoolInt8 { block, .. }
            | DeviceOp::Requantize { block, .. }
            | DeviceOp::MeanInt8(MeanInt8 { block, .. })
            | DeviceOp::SoftmaxInt8 { block, .. }
            | DeviceOp::LookupInt8 { block, .. }
            | DeviceOp::MulInt8 { block, .. } = op
            {
                let bytes: Vec<u8> = block.iter().flat_map(|w| w.to_le_bytes()).collect();
                let what = || format!("node {node}'s quantization block");
                let addr = keep(&mut **dev, &bytes, &what)?;
                self.blocks.insert(*node, (addr, block.len() as u64));
            }
        }
        Ok(())
    }

    fn buffer(&self, tensor: i32) -> Result<&Buffer, String> {
        self.buffers
            .get(&tensor)
            .ok_or_else(|| format!("tensor {tensor} has no device buffer"))
    }

    /// `prepare`: the partition's tensors must still have the shapes it
    /// was built for, and its folded values their values (resizing is
    /// refused, with the reason).
    pub fn prepare(&self, graph: &Graph) -> Result<(), String> {
        for (index, dims) in &self.folded_from {
            let t = graph.tensor(*index)?;
            if &t.dims != dims {
                return Err(format!(
                    "tensor {index} (`{}`) is now {:?}; the partition folded its shape {dims:?} \
                     when it was built: {RESIZE}",
                    t.name, t.dims
                ));
            }
        }
        for (&index, buffer) in &self.buffers {
            let t = graph.tensor(index)?;
            if t.dims != buffer.dims || t.bytes != buffer.bytes {
                return Err(format!(
                    "tensor {index} (`{}`) is now {:?}, the delegated partition was built for \
                     {:?}: {RESIZE}",
                    t.name, t.dims, buffer.dims
                ));
            }
        }
        Ok(())
    }

    /// `invoke`: inputs in, every launch, one wait, outputs out.
    pub fn invoke(&self, graph: &Graph) -> Result<(), String> {
        let shared = Arc::clone(&self.shared);
        if shared.options.fault == Fault::Invoke {
            return Err("injected fault: invoke (option `fault=invoke`)".into());
        }
        {
            let mut dev = lock(&shared.device);
            let dev: &mut DynAccelerator = &mut **dev;
            // Inputs in, the run, the outputs' reads, all on one queue,
            // then one wait: on a link the reads' answers come as the run
            // ends, one round trip; a failed run fails the wait. Anything
            // enqueued before a failure is ended by a reset.
            let last = match self.enqueue(graph, dev) {
                Ok(last) => last,
                Err(e) => {
                    let _ = dev.reset();
                    return Err(e);
                }
            };
            if let Some(fence) = last {
                dev.wait_or_reset(fence, DEVICE_TIMEOUT)
                    .map_err(|e| format!("the device failed the partition: {e}"))?;
            }
            if shared.options.profile_file.is_some() {
                self.trace(dev)?;
            }
        }
        for (index, value) in &self.folded_outputs {
            let t = graph.tensor(*index)?;
            let bytes: Vec<u8> = value.iter().flat_map(|v| v.to_le_bytes()).collect();
            if t.data.is_null() || t.bytes != bytes.len() {
                return Err(format!(
                    "tensor {index} has no buffer of {} bytes",
                    bytes.len()
                ));
            }
            // SAFETY: the runtime's output buffer of `t.bytes` bytes, which
            // no one else touches during our invoke.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), t.data, bytes.len()) };
        }
        lock(&shared.report).count_runs(self.graph_id, &self.nodes);
        shared.write_report();
        Ok(())
    }

    /// Drains the device's events into the trace, each named by its node.
    fn trace(&self, dev: &mut DynAccelerator) -> Result<(), String> {
        let mut events = [Event::new(EventKind::OpBegin, 0, 0, 0, 0); 64];
        let name = |op_id: u16| {
            let node = i32::from(op_id);
            match self.names.get(&node) {
                Some(op) => format!("{op} (node {node})"),
                None => format!("tag {op_id}"),
            }
        };
        loop {
            let drained = dev
                .drain_events(&mut events)
                .map_err(|e| format!("reading the device's events: {e}"))?;
            let mut trace = lock(&self.shared.trace);
            trace.dropped += drained.dropped;
            for e in &events[..drained.events] {
                trace.add(e, name);
            }
            if drained.events < events.len() {
                break;
            }
        }
        self.shared.write_trace();
        Ok(())
    }

    /// Enqueues an invoke's copies in, its run and its copies out; the
    /// last fence.
    fn enqueue(&self, graph: &Graph, dev: &mut DynAccelerator) -> Result<Option<Fence>, String> {
        let host = |index: i32| -> Result<(*mut u8, usize), String> {
            let t = graph.tensor(index)?;
            let bytes = self.buffer(index)?.bytes;
            if t.data.is_null() || t.bytes != bytes {
                return Err(format!("tensor {index} has no buffer of {bytes} bytes"));
            }
            Ok((t.data, t.bytes))
        };
        for &index in &self.inputs {
            let (data, bytes) = host(index)?;
            // SAFETY: the runtime's input buffer, unchanged during our
            // invoke, which waits for the copy or resets the device.
            unsafe { dev.copy_to_device(QUEUE, self.buffer(index)?.addr, data, bytes) }
                .map_err(|e| format!("writing tensor {index} to the device: {e}"))?;
        }
        let mut last = self.run(dev)?;
        for &index in &self.outputs {
            let (data, bytes) = host(index)?;
            // SAFETY: the runtime's output buffer, not read by anyone during
            // our invoke, which waits for the copy or resets the device.
            let read =
                unsafe { dev.copy_from_device(QUEUE, data, self.buffer(index)?.addr, bytes) };
            last = Some(read.map_err(|e| format!("reading tensor {index} from the device: {e}"))?);
        }
        Ok(last)
    }

    fn desc(&self, tensor: i32, dims: &[u64]) -> Result<TensorDesc, String> {
        self.typed_desc(tensor, dims, DType::F32)
    }

    fn typed_desc(&self, tensor: i32, dims: &[u64], dtype: DType) -> Result<TensorDesc, String> {
        let shape =
            Shape::new(dims).ok_or_else(|| format!("tensor {tensor}: rank {}", dims.len()))?;
        Ok(TensorDesc::new(self.buffer(tensor)?.addr, dtype, shape))
    }

    fn full_desc(&self, tensor: i32) -> Result<TensorDesc, String> {
        self.full_typed_desc(tensor, DType::F32)
    }

    fn full_typed_desc(&self, tensor: i32, dtype: DType) -> Result<TensorDesc, String> {
        let dims: Vec<u64> = self
            .buffer(tensor)?
            .dims
            .iter()
            .map(|&d| d as u64)
            .collect();
        self.typed_desc(tensor, &dims, dtype)
    }

    /// Node `node`'s quantization block as an int32 operand.
    fn block_desc(&self, node: i32) -> Result<TensorDesc, String> {
        let (addr, words) = *self
            .blocks
            .get(&node)
            .ok_or_else(|| format!("node {node} has no quantization block"))?;
        let shape = Shape::new(&[words]).ok_or("block shape")?;
        Ok(TensorDesc::new(addr, DType::I32, shape))
    }

    /// Node `node`'s commands: one or two launches, or a copy.
    fn plan(&self, node: i32, op: &DeviceOp) -> Result<Vec<Command>, String> {
        let temp = self.temps.get(&node).and_then(|t| t.first().copied());
        let launch = |kind: OpKind, inputs: Vec<TensorDesc>, output: TensorDesc| Command::Launch {
            node,
            kind,
            inputs,
            output,
        };
        Ok(match *op {
            DeviceOp::FullyConnected {
                x,
                w,
                bias,
                out,
                m,
                k,
                n,
                activation,
            } => {
                let (xd, wd, od) = (
                    self.desc(x, &[m, k])?,
                    self.desc(w, &[n, k])?,
                    self.desc(out, &[m, n])?,
                );
                let relu = activation == Activation::Relu && bias.is_some();
                let (kind, inputs) = match bias {
                    Some(b) => {
                        let fused = OpKind::FusedMatMul {
                            transpose_a: false,
                            transpose_b: true,
                            relu,
                        };
                        (fused, vec![xd, wd, self.desc(b, &[n])?])
                    }
                    None => {
                        let matmul = OpKind::MatMul {
                            transpose_a: false,
                            transpose_b: true,
                        };
                        (matmul, vec![xd, wd])
                    }
                };
                match (
                    crate::ops::activation_op(activation).filter(|_| !relu),
                    temp,
                ) {
                    (None, _) => vec![launch(kind, inputs, od)],
                    (Some(op), Some(t)) => {
                        let td = TensorDesc { addr: t, ..od };
                        vec![
                            launch(kind, inputs, td),
                            launch(OpKind::Unary(op), vec![td], od),
                        ]
                    }
                    (Some(_), None) => return Err(format!("node {node}: a missing temporary")),
                }
            }
            DeviceOp::Binary { .. }
            | DeviceOp::Unary { .. }
            | DeviceOp::ViewF32 { .. }
            | DeviceOp::ConvF32 { .. }
            | DeviceOp::PoolF32 { .. }
            | DeviceOp::SoftmaxF32 { .. }
            | DeviceOp::ScaleF32 { .. }
            | DeviceOp::HardSwishF32 { .. }
            | DeviceOp::MeanLastF32 { .. }
            | DeviceOp::TransposeF32 { .. }
            | DeviceOp::BatchMatMulF32 { .. } => {
                let views = float::Views {
                    temps: self.temps.get(&node).map_or(&[][..], Vec::as_slice),
                    desc: &|t, dims| self.desc(t, dims),
                    full_desc: &|t| self.full_desc(t),
                    constant: &|i| self.constant(node, i),
                };
                float::plan(node, op, &views)?
            }
            DeviceOp::FullyConnectedInt8 {
                x, w, out, m, k, n, ..
            } => {
                let i8d = |t, dims: &[u64]| self.typed_desc(t, dims, DType::I8);
                let inputs = vec![i8d(x, &[m, k])?, i8d(w, &[n, k])?, self.block_desc(node)?];
                let kind = OpKind::MatMulInt8 { transpose_b: true };
                vec![launch(kind, inputs, i8d(out, &[m, n])?)]
            }
            DeviceOp::ConvInt8 {
                x,
                out,
                kind,
                x_dims,
                filter_dims,
                out_dims,
                ..
            } => {
                let filter = self.constant(node, 0)?;
                let shape =
                    |d: [u64; 4]| Shape::new(&d).ok_or_else(|| format!("node {node}: shape {d:?}"));
                let inputs = vec![
                    self.typed_desc(x, &x_dims, DType::I8)?,
                    TensorDesc::new(filter, DType::I8, shape(filter_dims)?),
                    self.block_desc(node)?,
                ];
                vec![launch(
                    kind,
                    inputs,
                    self.typed_desc(out, &out_dims, DType::I8)?,
                )]
            }
            DeviceOp::PoolInt8 {
                x,
                out,
                kind,
                x_dims,
                out_dims,
                ..
            } => {
                let inputs = vec![
                    self.typed_desc(x, &x_dims, DType::I8)?,
                    self.block_desc(node)?,
                ];
                vec![launch(
                    kind,
                    inputs,
                    self.typed_desc(out, &out_dims, DType::I8)?,
                )]
            }
            DeviceOp::AddInt8 { a, b, out, .. } => {
                let i8d = |t| self.full_typed_desc(t, DType::I8);
                let inputs = vec![i8d(a)?, i8d(b)?, self.block_desc(node)?];
                vec![launch(OpKind::AddInt8, inputs, i8d(out)?)]
            }
            DeviceOp::Requantize { x, out, kind, .. } => {
                let (from, to) = match kind {
                    OpKind::Quantize => (DType::F32, DType::I8),
                    _ => (DType::I8, DType::F32),
                };
                let inputs = vec![self.full_typed_desc(x, from)?, self.block_desc(node)?];
                vec![launch(kind, inputs, self.full_typed_desc(out, to)?)]
            }
            DeviceOp::Reshape { x, out, bytes } => {
                let flat = |t| self.typed_desc(t, &[bytes as u64], DType::I8);
                vec![Command::Copy {
                    dst: flat(out)?,
                    src: flat(x)?,
                }]
            }
            DeviceOp::MeanInt8(ref m) => self.mean_plan(node, m)?,
            // Evaluated at prepare: no device work (`Kernel::new` keeps
            // them out of the steps).
            DeviceOp::Folded { .. } => Vec::new(),
            DeviceOp::Concat(ref c) => self.concat_plan(node, c)?,
            DeviceOp::SoftmaxInt8 {
                x,
                out,
                rows,
                depth,
                ..
            } => {
                let i8d = |t| self.typed_desc(t, &[rows, depth], DType::I8);
                let inputs = vec![i8d(x)?, self.block_desc(node)?];
                vec![launch(OpKind::SoftmaxInt8, inputs, i8d(out)?)]
            }
            DeviceOp::MulInt8 {
                a,
                b,
                out,
                len,
                b_len,
                ..
            } => {
                // `a` as rows of `b`: `b` repeats along them.
                let rows = [len / b_len, b_len];
                let i8d = |t, dims: &[u64]| self.typed_desc(t, dims, DType::I8);
                let inputs = vec![i8d(a, &rows)?, i8d(b, &[b_len])?, self.block_desc(node)?];
                vec![launch(OpKind::MulInt8, inputs, i8d(out, &rows)?)]
            }
            DeviceOp::LookupInt8 { x, out, len, .. } => {
                let i8d = |t| self.typed_desc(t, &[len], DType::I8);
                let inputs = vec![i8d(x)?, self.block_desc(node)?];
                vec![launch(OpKind::LookupInt8, inputs, i8d(out)?)]
            }
        })
    }

    /// A `MEAN`'s one command ([`crate::ops::MeanInt8`]): the ones
    /// times `x`, requantized by its block.
    fn mean_plan(&self, node: i32, m: &MeanInt8) -> Result<Vec<Command>, String> {
        let (outer, reduced, inner) = (m.outer, m.reduced, m.inner);
        let ones = Shape::new(&[outer, outer * reduced]).ok_or("shape")?;
        let inputs = vec![
            TensorDesc::new(self.constant(node, 0)?, DType::I8, ones),
            self.typed_desc(m.x, &[outer * reduced, inner], DType::I8)?,
            self.block_desc(node)?,
        ];
        Ok(vec![Command::Launch {
            node,
            kind: crate::ops::mean::KIND,
            inputs,
            output: self.typed_desc(m.out, &[outer, inner], DType::I8)?,
        }])
    }

    /// A `CONCATENATION`'s commands ([`ConcatRows`]): one input is a
    /// copy; more are joined left to right, each join into a temporary
    /// but the last, into the output.
    fn concat_plan(&self, node: i32, c: &ConcatRows) -> Result<Vec<Command>, String> {
        let n = c.inputs.len();
        if n == 1 {
            let bytes = self.buffer(c.out)?.bytes as u64;
            let flat = |t| self.typed_desc(t, &[bytes], DType::I8);
            return Ok(vec![Command::Copy {
                dst: flat(c.out)?,
                src: flat(c.inputs[0])?,
            }]);
        }
        let temps = self.temps.get(&node).map_or(&[][..], Vec::as_slice);
        let view = |addr: DeviceAddr, width: u64| -> Result<TensorDesc, String> {
            let shape = Shape::new(&[c.outer, width]).ok_or("concat shape")?;
            Ok(TensorDesc::new(addr, c.dtype, shape))
        };
        let mut acc = view(self.buffer(c.inputs[0])?.addr, c.widths[0])?;
        let mut commands = Vec::with_capacity(n - 1);
        for i in 1..n {
            let width = acc.shape.last() + c.widths[i];
            let dst = match i + 1 == n {
                true => self.buffer(c.out)?.addr,
                false => *temps
                    .get(i - 1)
                    .ok_or_else(|| format!("node {node} has no temporary {i}"))?,
            };
            let output = view(dst, width)?;
            commands.push(Command::Launch {
                node,
                kind: OpKind::Concat(c.dtype),
                inputs: vec![acc, view(self.buffer(c.inputs[i])?.addr, c.widths[i])?],
                output,
            });
            acc = output;
        }
        Ok(commands)
    }

    /// Node `node`'s `i`th own constant.
    fn constant(&self, node: i32, i: usize) -> Result<DeviceAddr, String> {
        self.constants
            .get(&node)
            .and_then(|c| c.get(i).copied())
            .ok_or_else(|| format!("node {node} has no constant {i}"))
    }

    /// The partition as device programs: a buffer per device tensor view
    /// (the partition's inputs `Input`, constants, weights, blocks and node
    /// constants `Constant`, the rest `Variable`: read and written), bound
    /// to the buffers `allocate` made, and its commands in the nodes'
    /// order. One program while the format's buffers last ([`MAX_BUFFERS`]),
    /// then the next (a large partition, e.g. MobileNetV3's 80 nodes, is a
    /// few). Each is stored on a device that keeps programs.
    fn compile(&self, graph: &Graph) -> Result<Compiled, String> {
        let mut constant: Vec<DeviceAddr> = Vec::new();
        for (&index, buffer) in &self.buffers {
            if graph.tensor(index)?.constant {
                constant.push(buffer.addr);
            }
        }
        constant.extend(self.blocks.values().map(|&(addr, _)| addr));
        constant.extend(self.constants.values().flatten().copied());
        let input: Vec<DeviceAddr> = self
            .inputs
            .iter()
            .map(|&t| self.buffer(t).map(|b| b.addr))
            .collect::<Result<_, _>>()?;
        let kind_of = |addr: DeviceAddr| {
            if input.contains(&addr) {
                BufferKind::Input
            } else if constant.contains(&addr) {
                BufferKind::Constant
            } else {
                BufferKind::Variable
            }
        };
        let mut pieces = Vec::new();
        let mut piece = Piece::default();
        for (node, op) in &self.steps {
            for command in self.plan(*node, op)? {
                let views = match &command {
                    Command::Launch { inputs, output, .. } => {
                        inputs.iter().chain([output]).copied().collect::<Vec<_>>()
                    }
                    Command::Copy { dst, src } => vec![*dst, *src],
                };
                if piece.buffers() + piece.unbound(&views) > MAX_BUFFERS {
                    pieces.push(std::mem::take(&mut piece));
                }
                let mut bind = |d: TensorDesc| piece.bind(d, kind_of(d.addr));
                let built = match command {
                    Command::Launch {
                        node,
                        kind,
                        inputs,
                        output,
                    } => {
                        let ins = inputs
                            .into_iter()
                            .map(&mut bind)
                            .collect::<Result<Vec<_>, _>>()?;
                        let out = bind(output)?;
                        let op_id = u16::try_from(node).unwrap_or(u16::MAX);
                        piece.builder.launch(kind, op_id, &ins, out)
                    }
                    Command::Copy { dst, src } => {
                        let (d, s) = (bind(dst)?, bind(src)?);
                        piece.builder.copy(d, s)
                    }
                };
                built.map_err(|e| format!("node {node} in the partition's program: {e}"))?;
            }
        }
        pieces.push(piece);
        let mut compiled = Compiled::default();
        let count = pieces.len();
        for (i, piece) in pieces.into_iter().enumerate() {
            let bytes = piece
                .builder
                .finish(&VendorOps::NONE)
                .map_err(|e| format!("the partition's program: {e}"))?
                .bytes;
            // A device that cannot store it (its store is full, the program
            // too large) has its commands replayed: the report says why.
            let (stored, reason) = match lock(&self.shared.device).load_program(&bytes) {
                Ok(stored) => (stored, None),
                Err(e) => (None, Some(format!("the device did not store it: {e}"))),
            };
            let commands = Program::parse(&bytes).map_or(0, |p| p.command_count());
            let entry = ProgramEntry {
                nodes: self.nodes.clone(),
                commands,
                bytes: bytes.len(),
                arena_bytes: self.memory.arena,
                unshared_bytes: self.memory.unshared,
                constants_uploaded: self.memory.uploaded,
                constants_reused: self.memory.reused,
                runs: if stored.is_some() {
                    "stored"
                } else {
                    "replayed"
                },
                reason: match count {
                    1 => reason,
                    _ => Some(format!(
                        "program {} of {count} of the partition (past {MAX_BUFFERS} buffers){}",
                        i + 1,
                        reason.map(|r| format!("; {r}")).unwrap_or_default()
                    )),
                },
            };
            if let Some(g) = lock(&self.shared.report).graphs.get_mut(self.graph_id) {
                g.programs.push(entry);
            }
            compiled.programs.push(Stored {
                bytes,
                stored,
                slots: piece.slots,
            });
        }
        Ok(compiled)
    }

    /// One run of the partition's programs, in order on one queue: one
    /// request each on a device that stores them, else their commands
    /// enqueued. The last fence.
    fn run(&self, dev: &mut DynAccelerator) -> Result<Option<Fence>, String> {
        let mut last = None;
        for p in &self.program.programs {
            last = Some(run_one(dev, p)?);
        }
        Ok(last.flatten())
    }
}

impl Drop for Kernel {
    fn drop(&mut self) {
        let mut dev = lock(&self.shared.device);
        for &addr in &self.owned {
            // A failed free leaks device memory only; nothing to report it to.
            let _ = dev.deallocate(addr);
        }
        let mut constants = lock(&self.shared.constants);
        for &addr in &self.kept {
            constants.release(&mut **dev, addr);
        }
    }
}

fn alloc(dev: &mut DynAccelerator, bytes: usize) -> Result<DeviceAddr, String> {
    dev.allocate(bytes.max(1) as u64, ALIGN)
        .map_err(|e| format!("allocating {bytes} bytes on the device: {e}"))
}

/// A constant tensor's bytes in the runtime's read-only buffer.
fn host_bytes(t: &TensorView) -> Result<&[u8], String> {
    if t.data.is_null() {
        return Err(format!("tensor {} (`{}`) has no data", t.index, t.name));
    }
    // SAFETY: the runtime's buffer of `bytes` bytes, alive with the model
    // (the view borrows it for less).
    Ok(unsafe { std::slice::from_raw_parts(t.data, t.bytes) })
}
