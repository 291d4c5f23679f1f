//! A program's commands run by the host, for a device that keeps no
//! programs: as one enqueue under one device lock, one fence for them all
//! ([`Launcher::enqueue_all_from`]), or under the profiler node by node,
//! each under its TF node's tag.

use super::super::commands::{Commands, Queued};
use super::super::failure::KernelResult;
use super::super::launch::Launcher;
use crate::registry::{OpLabel, Range};
use tensorplug_core::accelerator::TensorDesc;
use tensorplug_core::program::Step;

/// `step` over `descs` (the program's buffers, bound).
fn bound(step: Step, descs: &[TensorDesc]) -> Queued {
    match step {
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
            Queued::Launch {
                kind,
                inputs: ins,
                count,
                output: descs[usize::from(output)],
            }
        }
        Step::Copy { dst, src } => Queued::Copy {
            dst: descs[usize::from(dst)],
            src: descs[usize::from(src)],
        },
        Step::Fill { dst, pattern } => Queued::Fill {
            dst: descs[usize::from(dst)],
            pattern,
        },
    }
}

/// Enqueues `steps` over `descs` as one op. A command the device refuses
/// fails the call, naming the TF node it came from; the commands before it
/// are queued.
pub fn replay(
    run: &mut Launcher<'_>,
    steps: &[(Step, OpLabel)],
    descs: &[TensorDesc],
) -> KernelResult<()> {
    let mut commands = Commands::default();
    commands.covering(
        descs
            .iter()
            .map(|d| Range::new(d.addr, d.byte_len().unwrap_or(0) as u64))
            .collect(),
    );
    for (step, _) in steps {
        commands.push(bound(*step, descs))?;
    }
    run.enqueue_all_from(commands, |c| {
        let (_, label) = &steps[c];
        Some(format!(
            "command {c} of the program, from {} '{}'",
            label.op_type, label.node
        ))
    })
}

/// Launches `steps` over `descs` node by node, each node's commands as one
/// launch under its TF node's tag (the profiler's view of a program, as op
/// by op: one launch per node, which may be several commands).
pub fn one_by_one(
    run: &mut Launcher<'_>,
    steps: &[(Step, OpLabel)],
    descs: &[TensorDesc],
) -> KernelResult<()> {
    for node in steps.chunk_by(|(_, a), (_, b)| a.node == b.node) {
        let label = &node[0].1;
        let mut commands = Commands::default();
        for (step, _) in node {
            commands.push(bound(*step, descs))?;
        }
        run.enqueue_all_as(label, commands, |_| {
            Some(format!("from {} '{}'", label.op_type, label.node))
        })?;
    }
    Ok(())
}
