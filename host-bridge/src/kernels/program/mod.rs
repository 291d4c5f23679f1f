//! `_Tensorplug<DEVICE>Program`: a segment of the graph as one TF op (the
//! graph pass's `programs.rs` writes it). It compiles its segment into a
//! device program once per input shapes, then each call binds the inputs,
//! the outputs and a scratch arena and runs the program's commands, each
//! under the name of the TF node it came from; its last output, `ran`,
//! says false when the device refused, and the segment's own nodes run
//! instead (`graph/program_native.rs`). `docs/device-programs.md`.

mod batched;
mod compile;
pub mod fuse;
mod host_inputs;
pub mod lower;
mod pieces;
pub mod reduce;
mod replay;
mod rows;
pub mod segment;

use super::failure::{Failure, KernelResult};
use super::launch::Launcher;
use super::op_def::{define, op_name};
use super::ops::Op;
use super::ops::cast::device_type;
use super::tf::{Construction, Context, Tensor};
use crate::graph::fallback::Mode;
use crate::{identity, log};
use compile::{Compiled, compile};
use host_inputs::HostInputs;
use segment::Segment;
use std::ffi::CStr;
use std::sync::{Arc, Mutex, OnceLock};
use tensorplug_core::accelerator::{DeviceAddr, OpKind, Shape, TensorDesc};
use tensorplug_core::program::{BufferKind, BufferSpec, Step};

#[cfg(test)]
pub(crate) use compile::compile as compile_for_tests;

/// The program op's name after `_Tensorplug<DEVICE>`.
pub const SUFFIX: &str = "Program";

/// Programs a node keeps, one per set of input shapes; past this many the
/// oldest is dropped (and said so: a cache that thrashes is a finding).
const CACHED: usize = 8;

/// The program kernel.
pub struct ProgramKernel;

/// The one program kernel.
pub static PROGRAM: ProgramKernel = ProgramKernel;

/// A program node's segment and its compiled programs.
#[derive(Default)]
pub struct ProgramAttrs {
    segment: Segment,
    compiled: Mutex<Vec<(Vec<Shape>, Arc<Compiled>)>>,
    /// The host inputs' uploads: the weights kept, the data's staging.
    host: HostInputs,
    /// `TENSORPLUG_FALLBACK=error`: a program the device refuses fails the
    /// step (read once, at construction).
    refusal_fails: bool,
    /// The input shapes the device refused (said once each; not compiled
    /// again).
    refused: Mutex<Vec<Vec<Shape>>>,
}

/// Defines the program op of the installed device type, once per process.
pub fn define_op() -> KernelResult<()> {
    static DEFINED: OnceLock<Result<(), String>> = OnceLock::new();
    DEFINED
        .get_or_init(|| {
            define(
                op_name(identity::device_type(), SUFFIX),
                &[c"args: Tin", c"host: Th"],
                &[c"results: Tout", c"ran: bool"],
                &[
                    c"Tin: list(type) >= 0",
                    c"Th: list(type) >= 0",
                    c"Tout: list(type) >= 1",
                    c"segment: string",
                ],
            )
            .map_err(|f| f.cause)
        })
        .clone()
        .map_err(Failure::invalid)
}

impl ProgramAttrs {
    /// The program for inputs of `shapes`, compiled on first use, for a
    /// device that `supports` the op kinds it declares (a kernel instance
    /// runs on one device, so this is checked once per program).
    fn program(
        &self,
        node: &str,
        shapes: &[Shape],
        supports: impl Fn(OpKind) -> bool,
    ) -> KernelResult<Arc<Compiled>> {
        let mut cache = self
            .compiled
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((_, c)) = cache.iter().find(|(s, _)| s.as_slice() == shapes) {
            return Ok(c.clone());
        }
        let compiled = Arc::new(
            compile(&self.segment, shapes)
                .map_err(|e| Failure::invalid(format!("program '{node}': {e}")))?,
        );
        // A node's lowering may launch ops its own kernel does not (a
        // reduction's `Transpose`): each must be one the device declares.
        for (step, label) in &compiled.steps {
            if let Step::Launch { kind, .. } = step
                && !supports(*kind)
            {
                return Err(Failure::unimplemented(format!(
                    "program '{node}': {} '{}' needs {}, which the device does not declare",
                    label.op_type,
                    label.node,
                    kind.name()
                )));
            }
        }
        if cache.len() == CACHED {
            log::warn(format_args!(
                "program '{node}': more than {CACHED} input shapes; the oldest program is \
                 dropped and compiled again when it comes back"
            ));
            cache.remove(0);
        }
        dump(node, &compiled);
        cache.push((shapes.to_vec(), compiled.clone()));
        Ok(compiled)
    }
}

impl ProgramAttrs {
    /// Whether the device refused the program for these shapes before.
    fn refused_before(&self, shapes: &[Shape]) -> bool {
        let refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        refused.iter().any(|s| s.as_slice() == shapes)
    }

    /// The device refused the program for these shapes (`refusal`, or
    /// before): `ran` false and empty results, so the graph's native
    /// segment (the segment's nodes, `graph/program_native.rs`) computes
    /// them op by op; said once per shapes, on stderr and in the report.
    fn fall_back(
        &self,
        ctx: &Context,
        shapes: &[Shape],
        refusal: Option<Failure>,
    ) -> KernelResult<()> {
        if let Some(refusal) = refusal {
            let mut refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
            refused.push(shapes.to_vec());
            // The cause names the program node already.
            let said = format!(
                "{}; its native segment runs op by op for these input shapes \
                 (TENSORPLUG_FALLBACK=error fails instead)",
                refusal.cause
            );
            log::warn(format_args!("{said}"));
            crate::report::say(&[said]);
        }
        let empty = Shape::new(&[0]).ok_or_else(|| Failure::invalid("shape"))?;
        for k in 0..self.segment.outputs.len() {
            ctx.output_at(k as i32, &empty, &[])?;
        }
        set_ran(ctx, self.segment.outputs.len(), false)
    }
}

/// Writes the `ran` output (after the `n_results` results, in host memory).
fn set_ran(ctx: &Context, n_results: usize, ran: bool) -> KernelResult<()> {
    let out = ctx.output_at(n_results as i32, &Shape::SCALAR, &[])?;
    if out.byte_size() != 1 || out.data().is_null() {
        return Err(Failure::invalid(
            "the program's `ran` output is not one bool",
        ));
    }
    // SAFETY: TF allocated this host-memory bool output of one byte.
    unsafe { out.data().cast::<u8>().write(u8::from(ran)) };
    Ok(())
}

/// With `TENSORPLUG_GRAPH_DUMP_DIR` set, writes each compiled program there
/// (`program_<node>_<n>.tppg`) with a line about it (`.txt`).
fn dump(node: &str, program: &Compiled) {
    // Numbered in the process, not per kernel: two functions' program
    // nodes of one name (a model traced twice) each keep their files.
    static DUMPED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let Ok(Some(dir)) = crate::settings::get(crate::settings::GRAPH_DUMP_DIR) else {
        return;
    };
    if program.is_nothing() {
        return;
    }
    let n = DUMPED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let stem = format!("program_{}_{n}", node.replace('/', "_"));
    let dir = std::path::Path::new(&dir.text);
    let summary = format!(
        "{node}: {} commands, {} buffers, outputs {:?}, arena {} B ({} B side by side), {} B\n",
        program.steps.len(),
        program.buffers.len(),
        program.outputs.iter().map(Shape::dims).collect::<Vec<_>>(),
        program.arena,
        program.scratch_total,
        program.bytes.len()
    );
    let written = std::fs::write(dir.join(format!("{stem}.tppg")), &program.bytes)
        .and_then(|()| std::fs::write(dir.join(format!("{stem}.txt")), summary));
    if let Err(e) = written {
        log::warn(format_args!(
            "program '{node}': cannot dump it to {}: {e}",
            dir.display()
        ));
    }
}

impl Op for ProgramKernel {
    type Attrs = ProgramAttrs;

    fn op(&self) -> &'static CStr {
        op_name(identity::device_type(), SUFFIX)
    }

    fn family(&self) -> Option<tensorplug_core::accelerator::OpKind> {
        None
    }

    fn may_launch(&self) -> &'static [OpKind] {
        // The ops fusion makes; the others are their nodes' kernels'.
        &fuse::FUSED
    }

    fn type_attr(&self) -> Option<&'static CStr> {
        None
    }

    fn host_memory(&self) -> &'static [&'static CStr] {
        &[c"host", c"ran"]
    }

    fn registers_async(&self) -> bool {
        true
    }

    fn construct(&self, ctx: &Construction) -> KernelResult<ProgramAttrs> {
        let segment = Segment::decode(&ctx.bytes_attr(c"segment")?).map_err(Failure::invalid)?;
        Ok(ProgramAttrs {
            segment,
            compiled: Mutex::default(),
            host: HostInputs::default(),
            refusal_fails: Mode::from_env()? == Mode::Error,
            refused: Mutex::default(),
        })
    }

    fn compute(&self, a: &ProgramAttrs, ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        // Any element type: each is checked against its buffer's below.
        let inputs = (0..ctx.num_inputs())
            .map(|i| {
                let t = ctx.input(i, true)?;
                let shape = t.shape()?;
                Ok((t, shape))
            })
            .collect::<KernelResult<Vec<_>>>()?;
        let shapes: Vec<Shape> = inputs.iter().map(|(_, s)| *s).collect();
        if a.refused_before(&shapes) {
            return a.fall_back(ctx, &shapes, None);
        }
        let program = match a.program(ctx.node_name(), &shapes, |kind| run.supports(kind)) {
            Ok(program) => program,
            Err(refusal) if !a.refusal_fails => return a.fall_back(ctx, &shapes, Some(refusal)),
            Err(refusal) => return Err(refusal),
        };
        set_ran(ctx, a.segment.outputs.len(), true)?;
        let outputs = program
            .outputs
            .iter()
            .enumerate()
            .map(|(k, s)| ctx.output_at(k as i32, s, &[]))
            .collect::<KernelResult<Vec<_>>>()?;
        if program.is_nothing() {
            return Ok(());
        }
        // The arena's temporary lives to the end of the call: freed sooner,
        // a later temporary of this call (a host input's) could reuse it.
        let (arena, _arena) = if program.arena == 0 {
            (DeviceAddr(0), None)
        } else {
            let words =
                Shape::new(&[program.arena / 4]).ok_or_else(|| Failure::invalid("arena"))?;
            let temp = ctx.temp(&words)?;
            (run.desc(&temp, words)?.addr, Some(temp))
        };
        let n_in = inputs.len();
        // Host inputs (the last ones): the data is uploaded, the weights
        // bound to the copies the node keeps; the lock holds both through
        // the step.
        let (streamed, weights) = (a.segment.streamed, a.segment.weights);
        let first_host = n_in.saturating_sub(streamed + weights);
        let mut kept = a.host.lock();
        let host = inputs[first_host..]
            .iter()
            .enumerate()
            .map(|(k, (t, shape))| match k.checked_sub(streamed) {
                None => kept.stream(k, t, *shape, ctx, run),
                Some(w) => kept.bind(w, t, *shape, ctx, run),
            })
            .collect::<KernelResult<Vec<_>>>()?;
        // TF's tensor of a binding slot, checked against the buffer's type.
        let typed = |t: &Tensor, b: &BufferSpec| {
            if device_type(t.dtype()) != Some(b.dtype) {
                return Err(Failure::invalid(format!(
                    "program '{}': a {:?} tensor bound to a {} buffer",
                    ctx.node_name(),
                    t.dtype(),
                    b.dtype.name()
                )));
            }
            run.typed_desc(t, b.shape, b.dtype)
        };
        let mut descs = program
            .buffers
            .iter()
            .map(|b| match b.kind {
                BufferKind::Scratch | BufferKind::View => {
                    Ok(b.at(DeviceAddr(arena.0 + u64::from(b.place))))
                }
                BufferKind::Input => match (b.place as usize).checked_sub(first_host) {
                    Some(k) => Ok(host[k].desc),
                    None => typed(&inputs[b.place as usize].0, b),
                },
                _ => typed(&outputs[b.place as usize - n_in], b),
            })
            .collect::<KernelResult<Vec<TensorDesc>>>()?;
        // A view is at the buffer it views (validated: no view).
        for (i, b) in program.buffers.iter().enumerate() {
            if b.kind == BufferKind::View {
                descs[i].addr = descs[b.place as usize].addr;
            }
        }
        // A device that keeps programs runs it with one submit: one
        // address per binding slot.
        let slots = || {
            let mut bound: Vec<(u32, DeviceAddr)> = program
                .buffers
                .iter()
                .zip(&descs)
                .filter(|(b, _)| b.kind.bound())
                .map(|(b, d)| (b.place, d.addr))
                .collect();
            bound.sort_by_key(|(slot, _)| *slot);
            bound.into_iter().map(|(_, addr)| addr).collect::<Vec<_>>()
        };
        // A device that keeps none has them replayed as one enqueue. Under
        // the profiler they are launched one by one instead, each under its
        // TF node's tag of this session (a stored program's ids are those of
        // the session it was compiled in).
        let profiling = crate::host_spans::RECORDING.is_enabled();
        if !profiling
            && run.run_program(
                &program.bytes,
                &program.loaded,
                slots,
                arena,
                a.refusal_fails,
            )?
        {
            return Ok(());
        }
        if profiling {
            replay::one_by_one(run, &program.steps, &descs)
        } else {
            replay::replay(run, &program.steps, &descs)
        }
    }
}
