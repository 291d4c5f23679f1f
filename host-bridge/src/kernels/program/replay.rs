//! A program's commands replayed by the host for a device that keeps no
//! programs: one enqueue under one device lock, one fence for them all
//! ([`Launcher::enqueue_all_from`]).

use super::super::commands::Commands;
use super::super::failure::KernelResult;
use super::super::launch::Launcher;
use crate::registry::OpLabel;
use tensorplug_core::accelerator::TensorDesc;
use tensorplug_core::program::Step;

/// Enqueues `steps` over `descs` (the program's buffers, bound) as one op.
/// A command the device refuses fails the call, naming the TF node it came
/// from; the commands before it are queued.
pub fn replay(
    run: &mut Launcher<'_>,
    steps: &[(Step, OpLabel)],
    descs: &[TensorDesc],
) -> KernelResult<()> {
    let mut commands = Commands::default();
    for (step, _) in steps {
        match *step {
            Step::Launch {
                kind,
                inputs,
                count,
                output,
                ..
            } => {
                let mut ins = [descs[0]; 3];
                for (slot, &i) in ins.iter_mut().zip(&inputs[..count]) {
                    *slot = descs[usize::from(i)];
                }
                commands.launch(kind, &ins[..count], descs[usize::from(output)])?;
            }
            Step::Copy { dst, src } => {
                commands.copy(descs[usize::from(dst)], descs[usize::from(src)]);
            }
            Step::Fill { dst, pattern } => commands.fill(descs[usize::from(dst)], pattern),
        }
    }
    run.enqueue_all_from(commands, |c| {
        let (_, label) = &steps[c];
        Some(format!(
            "command {c} of the program, from {} '{}'",
            label.op_type, label.node
        ))
    })
}
