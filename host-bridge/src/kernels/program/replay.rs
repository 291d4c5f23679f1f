//! A program's commands replayed by the host for a device that keeps no
//! programs: one enqueue under one device lock, one fence for them all.

use super::super::failure::KernelResult;
use super::super::launch::Launcher;
use crate::error::DeviceError;
use crate::registry::{Access, OpLabel, Range, Ranges};
use tensorplug_core::accelerator::{Fence, OpDesc, TensorDesc};
use tensorplug_core::program::Step;

/// Enqueues `steps` over `descs` (the program's buffers, bound) as one op.
/// A command the device refuses fails the call, naming the TF node it came
/// from; the commands before it are queued.
pub fn replay(
    run: &mut Launcher<'_>,
    steps: &[(Step, OpLabel)],
    descs: &[TensorDesc],
) -> KernelResult<()> {
    if steps.is_empty() {
        return Ok(());
    }
    // Which buffer a command reads or writes is the program's own: all of
    // them, both ways (a failed run poisons its inputs too).
    let all: Ranges = descs
        .iter()
        .map(|d| Range::new(d.addr, d.byte_len().unwrap_or(0) as u64))
        .collect();
    let access = Access {
        reads: all.clone(),
        writes: all,
    };
    run.enqueue_batch(access, |accel, queue| {
        let mut last = Fence::default();
        for (c, (step, label)) in steps.iter().enumerate() {
            let issued = match *step {
                Step::Launch {
                    kind,
                    op_id,
                    inputs,
                    count,
                    output,
                } => {
                    let mut ins = [descs[0]; 3];
                    for (slot, &i) in ins.iter_mut().zip(&inputs[..count]) {
                        *slot = descs[usize::from(i)];
                    }
                    let op = OpDesc {
                        kind,
                        inputs: &ins[..count],
                        output: descs[usize::from(output)],
                        op_id,
                    };
                    accel.launch(queue, &op)
                }
                Step::Copy { dst, src } => {
                    let (dst, src) = (descs[usize::from(dst)], descs[usize::from(src)]);
                    accel.copy_on_device(queue, dst.addr, src.addr, dst.byte_len().unwrap_or(0))
                }
                Step::Fill { dst, pattern } => {
                    let dst = descs[usize::from(dst)];
                    accel.fill(queue, dst.addr, dst.byte_len().unwrap_or(0), pattern)
                }
            };
            last = issued.map_err(|e| {
                DeviceError::new(
                    e.kind,
                    format!(
                        "{} (command {c} of the program, from {} '{}')",
                        e.message, label.op_type, label.node
                    ),
                )
            })?;
        }
        Ok(last)
    })
}
