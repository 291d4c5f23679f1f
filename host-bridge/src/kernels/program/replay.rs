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
/// by op: one launch per node, which may be several commands). A node that
/// only copies or fills (a `Reshape`, a `Squeeze`) launches no op by op:
/// its commands join the next node's launch, or the last one's.
pub fn one_by_one(
    run: &mut Launcher<'_>,
    steps: &[(Step, OpLabel)],
    descs: &[TensorDesc],
) -> KernelResult<()> {
    for (range, named) in launches(steps) {
        let label = &steps[named].1;
        let mut commands = Commands::default();
        for (step, _) in &steps[range] {
            commands.push(bound(*step, descs))?;
        }
        run.enqueue_all_as(label, commands, |_| {
            Some(format!("from {} '{}'", label.op_type, label.node))
        })?;
    }
    Ok(())
}

/// The launches of [`one_by_one`]: each node's run of steps, those without
/// a device op joined to the next (the last ones to the one before), and
/// the step whose label the launch takes.
fn launches<L: PartialEq>(steps: &[(Step, L)]) -> Vec<(std::ops::Range<usize>, usize)> {
    let mut out: Vec<(std::ops::Range<usize>, usize)> = Vec::new();
    let mut start = 0;
    let mut pending = None;
    for node in steps.chunk_by(|(_, a), (_, b)| a == b) {
        let range = start..start + node.len();
        start = range.end;
        let launches = node.iter().any(|(s, _)| matches!(s, Step::Launch { .. }));
        let from = pending.take().unwrap_or(range.start);
        match launches {
            true => out.push((from..range.end, range.start)),
            false => pending = Some(from),
        }
    }
    if let Some(from) = pending {
        match out.last_mut() {
            Some(last) => last.0.end = steps.len(),
            None => out.push((from..steps.len(), from)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tensorplug_core::accelerator::{OpKind, Unary};

    fn launch() -> Step {
        Step::Launch {
            kind: OpKind::Unary(Unary::RELU),
            op_id: 0,
            inputs: [0; 3],
            count: 1,
            output: 1,
        }
    }

    const COPY: Step = Step::Copy { dst: 1, src: 0 };

    #[test]
    fn a_node_that_only_copies_joins_the_next_launch_or_the_last() {
        // reshape (copy), dense (two launches), flatten (copy), relu, squeeze (copy)
        let steps = [
            (COPY, "reshape"),
            (launch(), "dense"),
            (launch(), "dense"),
            (COPY, "flatten"),
            (launch(), "relu"),
            (COPY, "squeeze"),
        ];
        assert_eq!(launches(&steps), [(0..3, 1), (3..6, 4)]);
        // A node of copies alone is one launch under its own name.
        assert_eq!(launches(&[(COPY, "a"), (COPY, "a")]), [(0..2, 0)]);
        // Every node launching: one launch each.
        let plain = [(launch(), "a"), (COPY, "b"), (launch(), "b")];
        assert_eq!(launches(&plain), [(0..1, 0), (1..3, 1)]);
    }
}
