//! [`Launcher`]: turns TF tensors into device descriptors and enqueues the
//! commands of one kernel call on its stream.
//!
//! Kernels are asynchronous: `Compute` returns once the op is queued. Each
//! command carries the op's [`OpLabel`], so a device error is reported by
//! the wait that observes it (the next device-to-host copy, sync or event)
//! as `FPGA <op> '<node>': <device>: <cause>`. That wait (`DeviceCore`)
//! resets the device after a fault or a timeout so that later ops run;
//! allocations survive a reset.

use super::commands::{Commands, Queued};
use super::failure::{Failure, KernelResult};
use super::tf::Tensor;
use crate::error::{DeviceError, Error};
use crate::host_spans::{HostSpan, SpanKind, arg32};
use crate::profiler::op_tag;
use crate::registry::{Access, OpLabel, Range, Ranges, Stream};
use tensorplug_core::accelerator::{
    Capabilities, DType, DeviceAddr, Fence, OpDesc, OpKind, Shape, TensorDesc,
};

/// The device work of one kernel call.
pub struct Launcher<'a> {
    stream: &'a Stream,
    label: OpLabel,
    last: Option<Fence>,
}

impl<'a> Launcher<'a> {
    /// Work of node `node` (a `op_type`) on `stream`.
    pub(crate) fn new(stream: &'a Stream, op_type: &'static str, node: &str) -> Self {
        Self {
            stream,
            label: OpLabel {
                op_type,
                node: node.into(),
            },
            last: None,
        }
    }

    /// The device the work runs on.
    pub(crate) fn device(&self) -> &std::sync::Arc<crate::registry::Device> {
        self.stream.device()
    }

    /// The device descriptor of f32 `tensor` viewed as `shape` (same element count).
    pub fn desc(&self, tensor: &Tensor, shape: Shape) -> KernelResult<TensorDesc> {
        self.typed_desc(tensor, shape, DType::F32)
    }

    /// [`desc`](Self::desc) for elements of `dtype`.
    pub fn typed_desc(
        &self,
        tensor: &Tensor,
        shape: Shape,
        dtype: DType,
    ) -> KernelResult<TensorDesc> {
        let bytes = shape
            .elements()
            .and_then(|n| n.checked_mul(dtype.size() as u64))
            .ok_or_else(|| Failure::invalid("tensor size overflows"))?;
        if bytes as usize > tensor.byte_size() {
            return Err(Failure::from(Error::Internal(format!(
                "a {bytes}-byte view of a {}-byte tensor",
                tensor.byte_size()
            ))));
        }
        let addr = if bytes == 0 {
            DeviceAddr(0)
        } else {
            self.stream
                .device()
                .device_addr(tensor.data(), bytes, "a kernel tensor")?
        };
        Ok(TensorDesc::new(addr, dtype, shape))
    }

    /// Whether the device declares `kind` (an int8 op on int8, any other
    /// on float32).
    pub fn supports(&self, kind: OpKind) -> bool {
        declares(&self.stream.device().info().capabilities, kind)
    }

    /// Enqueues `kind` over `inputs` into `output`.
    pub fn launch(
        &mut self,
        kind: OpKind,
        inputs: &[TensorDesc],
        output: TensorDesc,
    ) -> KernelResult<()> {
        self.last = Some(enqueue_launch(
            self.stream,
            &self.label,
            kind,
            inputs,
            output,
        )?);
        Ok(())
    }

    /// [`launch`](Self::launch) on behalf of another node (`label`): a
    /// program's command, which the profiler and errors name by the TF
    /// node it came from.
    pub fn launch_as(
        &mut self,
        label: &OpLabel,
        kind: OpKind,
        inputs: &[TensorDesc],
        output: TensorDesc,
    ) -> KernelResult<()> {
        self.last = Some(enqueue_launch(self.stream, label, kind, inputs, output)?);
        Ok(())
    }

    /// Runs device program `program` with one submit, if the device keeps
    /// programs ([`Launch::load_program`](tensorplug_core::accelerator::Launch::load_program)):
    /// it is loaded once per device (`loaded` remembers each device's
    /// answer by ordinal). Returns false, with nothing enqueued, for a
    /// device that keeps none, or that refuses this program (said once;
    /// an error instead if `refusal_fails`): the caller then launches the
    /// commands.
    pub fn run_program(
        &mut self,
        program: &[u8],
        loaded: &std::sync::Mutex<Vec<(i32, Option<u32>)>>,
        slots: impl FnOnce() -> Vec<DeviceAddr>,
        arena: DeviceAddr,
        refusal_fails: bool,
    ) -> KernelResult<bool> {
        let device = self.stream.device();
        let ordinal = device.ordinal();
        let known = {
            let loaded = loaded.lock().unwrap_or_else(|e| e.into_inner());
            loaded
                .iter()
                .find(|(o, _)| *o == ordinal)
                .map(|(_, id)| *id)
        };
        let id = match known {
            Some(id) => id,
            None => {
                let core = device.core();
                let loading = core.lock().accel().load_program(program);
                let id = match loading {
                    Ok(id) => id,
                    Err(source) => {
                        // A program the device refuses (a full store, a
                        // limit) runs its commands one by one, said once;
                        // `TENSORPLUG_FALLBACK=error` fails instead.
                        let error = Failure::from(core.error(source));
                        if refusal_fails {
                            return Err(error);
                        }
                        let said = format!(
                            "program '{}': the device did not store it ({}); its commands run one \
                             by one (TENSORPLUG_FALLBACK=error fails instead)",
                            self.label.node, error.cause
                        );
                        crate::log::warn(format_args!("{said}"));
                        // The report says it beside the pass's decisions.
                        crate::report::say(&[said]);
                        None
                    }
                };
                let mut loaded = loaded.lock().unwrap_or_else(|e| e.into_inner());
                loaded.push((ordinal, id));
                id
            }
        };
        let Some(id) = id else {
            return Ok(false);
        };
        let queue = self.stream.queue();
        let slots = slots();
        // Which slots a program reads or writes is its own: all of them,
        // both ways (a failed program poisons its inputs too).
        let all: Ranges = slots.iter().map(|&a| Range::new(a, 1)).collect();
        let access = Access {
            reads: all.clone(),
            writes: all,
        };
        let fence = self
            .stream
            .enqueue_op(Some(self.label.clone()), access, |accel| {
                accel
                    .run_program(queue, id, &slots, arena)
                    .unwrap_or_else(|| {
                        Err(crate::error::DeviceError::new(
                            tensorplug_core::accelerator::ErrorKind::Unsupported,
                            "the device stored a program but runs none",
                        ))
                    })
            })?;
        self.last = Some(fence);
        Ok(true)
    }

    /// The Host API span of enqueuing a device command tagged `tag` (a
    /// fill or copy on the device is launched as an op is).
    fn launch_span(&self, tag: u16) -> HostSpan {
        let ordinal = self.stream.device().ordinal();
        HostSpan::begin(SpanKind::Launch, ordinal, u32::from(tag))
    }

    /// Enqueues `commands` as one op of this kernel's: one device lock, one
    /// in-flight record and launch span, each command tagged with this node.
    /// A command the device refuses fails the call; those before it are
    /// queued.
    pub fn enqueue_all(&mut self, commands: Commands) -> KernelResult<()> {
        self.enqueue_all_from(commands, |_| None)
    }

    /// [`enqueue_all`](Self::enqueue_all), where a refused command's error
    /// also says where command `c` came from (`origin(c)`): a program's
    /// commands, each from a TF node of its own.
    pub(crate) fn enqueue_all_from(
        &mut self,
        commands: Commands,
        origin: impl Fn(usize) -> Option<String>,
    ) -> KernelResult<()> {
        let label = self.label.clone();
        self.enqueue_labelled(label, commands, origin)
    }

    /// [`enqueue_all_from`](Self::enqueue_all_from) on behalf of another
    /// node (`label`): a program's commands of one TF node, which the
    /// profiler shows as one launch of that node's.
    pub(crate) fn enqueue_all_as(
        &mut self,
        label: &OpLabel,
        commands: Commands,
        origin: impl Fn(usize) -> Option<String>,
    ) -> KernelResult<()> {
        self.enqueue_labelled(label.clone(), commands, origin)
    }

    fn enqueue_labelled(
        &mut self,
        label: OpLabel,
        mut commands: Commands,
        origin: impl Fn(usize) -> Option<String>,
    ) -> KernelResult<()> {
        if commands.is_empty() {
            return Ok(());
        }
        let access = commands.access();
        let tag = op_tag(&label.node, label.op_type, commands.flops, commands.bytes);
        let _span = self.launch_span(tag);
        let queue = self.stream.queue();
        let fence = self.stream.enqueue_op(Some(label), access, |accel| {
            let mut last = Fence::default();
            for (c, q) in commands.list.iter().enumerate() {
                let issued = match *q {
                    Queued::Launch {
                        kind,
                        inputs,
                        count,
                        output,
                    } => {
                        let op = OpDesc {
                            kind,
                            inputs: &inputs[..count],
                            output,
                            op_id: tag,
                        };
                        accel.launch(queue, &op)
                    }
                    Queued::Copy { dst, src } => {
                        let len = dst.byte_len().unwrap_or(0);
                        accel.copy_on_device_tagged(queue, dst.addr, src.addr, len, tag)
                    }
                    Queued::Fill { dst, pattern } => {
                        let len = dst.byte_len().unwrap_or(0);
                        accel.fill_tagged(queue, dst.addr, len, pattern, tag)
                    }
                };
                last = issued.map_err(|e| match origin(c) {
                    Some(from) => DeviceError::new(e.kind, format!("{} ({from})", e.message)),
                    None => e,
                })?;
            }
            Ok(last)
        })?;
        self.last = Some(fence);
        Ok(())
    }

    /// Enqueues a fill of `dst` with the 32-bit `pattern`.
    pub fn fill(&mut self, dst: TensorDesc, pattern: u32) -> KernelResult<()> {
        let label = self.label.clone();
        self.fill_as(&label, dst, pattern)
    }

    /// [`fill`](Self::fill) on behalf of another node (`label`): a
    /// program's command, as [`launch_as`](Self::launch_as).
    pub fn fill_as(&mut self, label: &OpLabel, dst: TensorDesc, pattern: u32) -> KernelResult<()> {
        let len = dst.byte_len().unwrap_or(0);
        let queue = self.stream.queue();
        let access = touches(&[], dst);
        let tag = op_tag(&label.node, label.op_type, 0, len as u64);
        let _span = self.launch_span(tag);
        let fence = self
            .stream
            .enqueue_op(Some(label.clone()), access, |accel| {
                accel.fill_tagged(queue, dst.addr, len, pattern, tag)
            })?;
        self.last = Some(fence);
        Ok(())
    }

    /// Enqueues a device-side copy of `src` into `dst` (same size).
    pub fn copy(&mut self, dst: TensorDesc, src: TensorDesc) -> KernelResult<()> {
        let label = self.label.clone();
        self.copy_as(&label, dst, src)
    }

    /// [`copy`](Self::copy) on behalf of another node (`label`).
    pub fn copy_as(
        &mut self,
        label: &OpLabel,
        dst: TensorDesc,
        src: TensorDesc,
    ) -> KernelResult<()> {
        let len = dst.byte_len().unwrap_or(0);
        let queue = self.stream.queue();
        let access = touches(&[src], dst);
        let tag = op_tag(&label.node, label.op_type, 0, 2 * len as u64);
        let _span = self.launch_span(tag);
        let fence = self
            .stream
            .enqueue_op(Some(label.clone()), access, |accel| {
                accel.copy_on_device_tagged(queue, dst.addr, src.addr, len, tag)
            })?;
        self.last = Some(fence);
        Ok(())
    }

    /// Reads `src` into `dst` (its byte length) on the host: waits for the
    /// device's earlier work, then for the copy. For the few kernels that
    /// compute on the host (integer merges of TF's collectives).
    pub fn read(&mut self, src: TensorDesc, dst: &mut [u8]) -> KernelResult<()> {
        let core = self.stream.device().core();
        core.wait_until_idle("work before a kernel's host read")?;
        if let Some(error) = core.poisoned(src.addr, dst.len() as u64) {
            return Err(error.into());
        }
        let (queue, ptr, len) = (self.stream.queue(), dst.as_mut_ptr(), dst.len());
        let _span = copy_span(self.stream, len);
        let access = Access::default();
        let fence = self
            .stream
            .enqueue_op(Some(self.label.clone()), access, |accel| {
                // SAFETY: `dst` outlives the wait below (or its reset).
                unsafe { accel.copy_from_device(queue, ptr, src.addr, len) }
            })?;
        Ok(core.wait(fence, "a kernel's host read")?)
    }

    /// Writes `src` (its byte length) into `dst` and waits for the copy.
    pub fn write(&mut self, dst: TensorDesc, src: &[u8]) -> KernelResult<()> {
        let stream = self.stream;
        let core = stream.device().core();
        core.wait_until_idle("work before a kernel's host write")?;
        // SAFETY: `src` outlives the wait below (or its reset).
        let fence = unsafe { self.write_async(dst, src.as_ptr(), src.len()) }?;
        Ok(core.wait(fence, "a kernel's host write")?)
    }

    /// Enqueues a write of `len` bytes at `src` into `dst`; returns its
    /// fence without waiting.
    ///
    /// # Safety
    /// `src` stays readable for `len` bytes until the fence is done.
    pub(crate) unsafe fn write_async(
        &mut self,
        dst: TensorDesc,
        src: *const u8,
        len: usize,
    ) -> KernelResult<Fence> {
        let queue = self.stream.queue();
        let _span = copy_span(self.stream, len);
        let access = touches(&[], dst);
        let fence = self
            .stream
            .enqueue_op(Some(self.label.clone()), access, |accel| {
                // SAFETY: the caller keeps `src` readable until the fence.
                unsafe { accel.copy_to_device(queue, dst.addr, src, len) }
            })?;
        self.last = Some(fence);
        Ok(fence)
    }

    /// Ends the kernel call without waiting, also while profiling: the
    /// op's fence is remembered by the device with its label; a failure
    /// surfaces at a later wait.
    pub fn finish(self) -> KernelResult<Option<Fence>> {
        Ok(self.last)
    }
}

/// A kernel's own copy on the profile's host line, as TF's copies are.
fn copy_span(stream: &Stream, len: usize) -> HostSpan {
    HostSpan::begin(SpanKind::Copy, stream.device().ordinal(), arg32(len as u64))
}

/// Enqueues one op on `stream` for node `label`, tagged for the profiler.
fn enqueue_launch(
    stream: &Stream,
    label: &OpLabel,
    kind: OpKind,
    inputs: &[TensorDesc],
    output: TensorDesc,
) -> KernelResult<Fence> {
    let mut op = OpDesc {
        kind,
        inputs,
        output,
        op_id: 0,
    };
    op.op_id = op_tag(&label.node, label.op_type, op.flops(), op.bytes_accessed());
    let queue = stream.queue();
    let _span = HostSpan::begin(
        SpanKind::Launch,
        stream.device().ordinal(),
        u32::from(op.op_id),
    );
    let access = touches(inputs, output);
    Ok(stream.enqueue_op(Some(label.clone()), access, |accel| {
        accel.launch(queue, &op)
    })?)
}

/// The device memory of a command that reads `inputs` into `output`.
fn touches(inputs: &[TensorDesc], output: TensorDesc) -> Access {
    let range = |t: &TensorDesc| Range::new(t.addr, t.byte_len().unwrap_or(0) as u64);
    Access {
        reads: inputs.iter().map(range).collect(),
        writes: [range(&output)].into(),
    }
}

/// Whether `caps` declare `kind`: an int8 op on i8, any other on f32 (the
/// kernels' registration and the programs' check both ask this).
pub(crate) fn declares(caps: &Capabilities, kind: OpKind) -> bool {
    let dtype = if kind.is_int8() {
        DType::I8
    } else {
        DType::F32
    };
    caps.supports(kind, dtype)
}
