//! One delegated partition: built at `init` (device buffers for every
//! tensor it touches, constants uploaded once), checked at `prepare`, and
//! run at `invoke`: its inputs in, every launch enqueued on one queue, one
//! wait, its outputs out. Intermediate tensors never leave the device.

use crate::graph::{Graph, TensorView, int_array};
use crate::ops::{DeviceOp, decide};
use crate::options::Fault;
use crate::shared::{DEVICE_TIMEOUT, Shared, lock};
use std::collections::BTreeMap;
use std::sync::Arc;
use tensorplug_abi::tflite::TfLiteDelegateParams;
use tensorplug_core::accelerator::{
    Binary, DType, DeviceAddr, Fence, OpDesc, OpKind, QueueId, Shape, TensorDesc, Unary,
};
use tensorplug_host_bridge::prelude::DynAccelerator;

const QUEUE: QueueId = QueueId(0);
const ALIGN: u64 = 64;

/// A tensor's device copy.
#[derive(Debug)]
struct Buffer {
    addr: DeviceAddr,
    bytes: usize,
    dims: Vec<usize>,
}

/// One partition's device plan.
pub struct Kernel {
    shared: Arc<Shared>,
    graph_id: usize,
    nodes: Vec<i32>,
    steps: Vec<(i32, DeviceOp)>,
    buffers: BTreeMap<i32, Buffer>,
    /// Pre-activation results, by node.
    temps: BTreeMap<i32, DeviceAddr>,
    /// int8 nodes' quantization blocks on the device, by node: address
    /// and length in words.
    blocks: BTreeMap<i32, (DeviceAddr, u64)>,
    /// int8 convolutions' filters in the device's layout, by node.
    filters: BTreeMap<i32, DeviceAddr>,
    /// Non-constant partition inputs, copied in at every invoke.
    inputs: Vec<i32>,
    outputs: Vec<i32>,
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
        for &index in &nodes {
            let node = graph.node(index)?;
            let op = decide(
                graph,
                &node,
                &shared.capabilities,
                shared.options.fc_rounding,
            )
            .map_err(|why| format!("node {index} cannot run on the device: {why}"))?;
            steps.push((index, op));
        }
        let mut kernel = Self {
            shared,
            graph_id,
            nodes,
            steps,
            buffers: BTreeMap::new(),
            temps: BTreeMap::new(),
            blocks: BTreeMap::new(),
            filters: BTreeMap::new(),
            inputs: Vec::new(),
            outputs,
        };
        let result = kernel.allocate(graph, &inputs);
        result.map(|()| kernel)
    }

    fn allocate(&mut self, graph: &Graph, partition_inputs: &[i32]) -> Result<(), String> {
        let mut tensors: Vec<i32> = Vec::new();
        for (_, op) in &self.steps {
            match *op {
                DeviceOp::FullyConnected {
                    x, w, bias, out, ..
                } => {
                    tensors.extend([x, w, out]);
                    tensors.extend(bias);
                }
                DeviceOp::Add { a, b, out, .. } => tensors.extend([a, b, out]),
                DeviceOp::Relu { x, out } => tensors.extend([x, out]),
                DeviceOp::FullyConnectedInt8 { x, w, out, .. } => tensors.extend([x, w, out]),
                DeviceOp::AddInt8 { a, b, out, .. } => tensors.extend([a, b, out]),
                DeviceOp::ConvInt8 { x, out, .. }
                | DeviceOp::PoolInt8 { x, out, .. }
                | DeviceOp::Requantize { x, out, .. }
                | DeviceOp::Reshape { x, out, .. } => {
                    tensors.extend([x, out]);
                }
            }
        }
        tensors.sort_unstable();
        tensors.dedup();
        let shared = Arc::clone(&self.shared);
        let mut dev = lock(&shared.device);
        for index in tensors {
            let t = graph.tensor(index)?;
            let addr = alloc(&mut **dev, t.bytes)?;
            if t.constant {
                upload(&mut **dev, addr, &t)?;
            } else if partition_inputs.contains(&index) {
                self.inputs.push(index);
            }
            self.buffers.insert(
                index,
                Buffer {
                    addr,
                    bytes: t.bytes,
                    dims: t.dims.clone(),
                },
            );
        }
        for (node, op) in &self.steps {
            let needs_temp = match *op {
                DeviceOp::FullyConnected {
                    bias: None,
                    relu: true,
                    out,
                    ..
                }
                | DeviceOp::Add {
                    relu: true, out, ..
                } => Some(out),
                _ => None,
            };
            if let Some(out) = needs_temp {
                let bytes = self.buffer(out)?.bytes;
                self.temps.insert(*node, alloc(&mut **dev, bytes)?);
            }
            if let DeviceOp::ConvInt8 { filter, .. } = op {
                let addr = alloc(&mut **dev, filter.len())?;
                self.filters.insert(*node, addr);
                dev.write_blocking(QUEUE, addr, filter, DEVICE_TIMEOUT)
                    .map_err(|e| format!("writing node {node}'s filter: {e}"))?;
            }
            if let DeviceOp::FullyConnectedInt8 { block, .. }
            | DeviceOp::AddInt8 { block, .. }
            | DeviceOp::ConvInt8 { block, .. }
            | DeviceOp::PoolInt8 { block, .. }
            | DeviceOp::Requantize { block, .. } = op
            {
                let bytes: Vec<u8> = block.iter().flat_map(|w| w.to_le_bytes()).collect();
                let addr = alloc(&mut **dev, bytes.len())?;
                self.blocks.insert(*node, (addr, block.len() as u64));
                dev.write_blocking(QUEUE, addr, &bytes, DEVICE_TIMEOUT)
                    .map_err(|e| format!("writing node {node}'s quantization block: {e}"))?;
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
    /// was built for (resizing is refused, with the reason).
    pub fn prepare(&self, graph: &Graph) -> Result<(), String> {
        for (&index, buffer) in &self.buffers {
            let t = graph.tensor(index)?;
            if t.dims != buffer.dims || t.bytes != buffer.bytes {
                return Err(format!(
                    "tensor {index} (`{}`) is now {:?}, the delegated partition was built for \
                     {:?}: resizing a delegated partition is not supported yet; create the \
                     interpreter again for the new shape",
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
            for &index in &self.inputs {
                let t = graph.tensor(index)?;
                upload(dev, self.buffer(index)?.addr, &t)?;
            }
            let mut last: Option<Fence> = None;
            for (node, op) in &self.steps {
                last = Some(self.launch(dev, *node, op)?);
            }
            if let Some(fence) = last {
                dev.wait_or_reset(fence, DEVICE_TIMEOUT)
                    .map_err(|e| format!("the device failed the partition: {e}"))?;
            }
            for &index in &self.outputs {
                let t = graph.tensor(index)?;
                let b = self.buffer(index)?;
                if t.data.is_null() || t.bytes != b.bytes {
                    return Err(format!(
                        "output tensor {index} has no buffer of {} bytes",
                        b.bytes
                    ));
                }
                // SAFETY: the runtime's output buffer of `bytes` bytes, not
                // read by anyone during our invoke.
                let host = unsafe { std::slice::from_raw_parts_mut(t.data, t.bytes) };
                dev.read_blocking(QUEUE, host, b.addr, DEVICE_TIMEOUT)
                    .map_err(|e| format!("reading tensor {index} from the device: {e}"))?;
            }
        }
        lock(&shared.report).count_runs(self.graph_id, &self.nodes);
        shared.write_report();
        Ok(())
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

    fn launch(&self, dev: &mut DynAccelerator, node: i32, op: &DeviceOp) -> Result<Fence, String> {
        let op_id = u16::try_from(node).unwrap_or(u16::MAX);
        let temp = self.temps.get(&node).copied();
        let mut run = |kind: OpKind, inputs: &[TensorDesc], output: TensorDesc| {
            dev.launch(
                QUEUE,
                &OpDesc {
                    kind,
                    inputs,
                    output,
                    op_id,
                },
            )
            .map_err(|e| format!("node {node}: the device refused {kind:?}: {e}"))
        };
        match *op {
            DeviceOp::FullyConnected {
                x,
                w,
                bias,
                out,
                m,
                k,
                n,
                relu,
            } => {
                let (xd, wd, od) = (
                    self.desc(x, &[m, k])?,
                    self.desc(w, &[n, k])?,
                    self.desc(out, &[m, n])?,
                );
                match (bias, temp) {
                    (Some(b), _) => run(
                        OpKind::FusedMatMul {
                            transpose_a: false,
                            transpose_b: true,
                            relu,
                        },
                        &[xd, wd, self.desc(b, &[n])?],
                        od,
                    ),
                    (None, None) => run(
                        OpKind::MatMul {
                            transpose_a: false,
                            transpose_b: true,
                        },
                        &[xd, wd],
                        od,
                    ),
                    (None, Some(t)) => {
                        let td = TensorDesc { addr: t, ..od };
                        run(
                            OpKind::MatMul {
                                transpose_a: false,
                                transpose_b: true,
                            },
                            &[xd, wd],
                            td,
                        )?;
                        run(OpKind::Unary(Unary::RELU), &[td], od)
                    }
                }
            }
            DeviceOp::Add { a, b, out, .. } => {
                let (ad, bd, od) = (self.full_desc(a)?, self.full_desc(b)?, self.full_desc(out)?);
                match temp {
                    None => run(OpKind::Binary(Binary::ADD), &[ad, bd], od),
                    Some(t) => {
                        let td = TensorDesc { addr: t, ..od };
                        run(OpKind::Binary(Binary::ADD), &[ad, bd], td)?;
                        run(OpKind::Unary(Unary::RELU), &[td], od)
                    }
                }
            }
            DeviceOp::FullyConnectedInt8 {
                x, w, out, m, k, n, ..
            } => {
                let i8d = |t, dims: &[u64]| self.typed_desc(t, dims, DType::I8);
                let inputs = [i8d(x, &[m, k])?, i8d(w, &[n, k])?, self.block_desc(node)?];
                run(
                    OpKind::MatMulInt8 { transpose_b: true },
                    &inputs,
                    i8d(out, &[m, n])?,
                )
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
                let filter = *self
                    .filters
                    .get(&node)
                    .ok_or_else(|| format!("node {node} has no filter"))?;
                let shape =
                    |d: [u64; 4]| Shape::new(&d).ok_or_else(|| format!("node {node}: shape {d:?}"));
                let inputs = [
                    self.typed_desc(x, &x_dims, DType::I8)?,
                    TensorDesc::new(filter, DType::I8, shape(filter_dims)?),
                    self.block_desc(node)?,
                ];
                run(kind, &inputs, self.typed_desc(out, &out_dims, DType::I8)?)
            }
            DeviceOp::PoolInt8 {
                x,
                out,
                kind,
                x_dims,
                out_dims,
                ..
            } => {
                let inputs = [
                    self.typed_desc(x, &x_dims, DType::I8)?,
                    self.block_desc(node)?,
                ];
                run(kind, &inputs, self.typed_desc(out, &out_dims, DType::I8)?)
            }
            DeviceOp::AddInt8 { a, b, out, .. } => {
                let i8d = |t| self.full_typed_desc(t, DType::I8);
                let inputs = [i8d(a)?, i8d(b)?, self.block_desc(node)?];
                run(OpKind::AddInt8, &inputs, i8d(out)?)
            }
            DeviceOp::Relu { x, out } => run(
                OpKind::Unary(Unary::RELU),
                &[self.full_desc(x)?],
                self.full_desc(out)?,
            ),
            DeviceOp::Requantize { x, out, kind, .. } => {
                let (from, to) = match kind {
                    OpKind::Quantize => (DType::F32, DType::I8),
                    _ => (DType::I8, DType::F32),
                };
                let inputs = [self.full_typed_desc(x, from)?, self.block_desc(node)?];
                run(kind, &inputs, self.full_typed_desc(out, to)?)
            }
            DeviceOp::Reshape { x, out, bytes } => {
                let (src, dst) = (self.buffer(x)?.addr, self.buffer(out)?.addr);
                dev.copy_on_device_tagged(QUEUE, dst, src, bytes, op_id)
                    .map_err(|e| {
                        format!("node {node}: the device refused a {bytes}-byte copy: {e}")
                    })
            }
        }
    }
}

impl Drop for Kernel {
    fn drop(&mut self) {
        let mut dev = lock(&self.shared.device);
        let buffers = self.buffers.values().map(|b| b.addr);
        let temps = self.temps.values().copied();
        let blocks = self.blocks.values().map(|&(addr, _)| addr);
        let filters = self.filters.values().copied();
        for addr in buffers.chain(temps).chain(blocks).chain(filters) {
            // A failed free leaks device memory only; nothing to report it to.
            let _ = dev.deallocate(addr);
        }
    }
}

fn alloc(dev: &mut DynAccelerator, bytes: usize) -> Result<DeviceAddr, String> {
    dev.allocate(bytes.max(1) as u64, ALIGN)
        .map_err(|e| format!("allocating {bytes} bytes on the device: {e}"))
}

fn upload(dev: &mut DynAccelerator, addr: DeviceAddr, t: &TensorView) -> Result<(), String> {
    if t.data.is_null() {
        return Err(format!("tensor {} (`{}`) has no data", t.index, t.name));
    }
    // SAFETY: the runtime's buffer of `bytes` bytes, alive during the call.
    let host = unsafe { std::slice::from_raw_parts(t.data, t.bytes) };
    dev.write_blocking(QUEUE, addr, host, DEVICE_TIMEOUT)
        .map_err(|e| format!("writing tensor {} to the device: {e}", t.index))
}
