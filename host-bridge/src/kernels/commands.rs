//! [`Commands`]: device commands collected to go as one enqueue
//! ([`Launcher::enqueue_all`](super::launch::Launcher::enqueue_all)): a
//! kernel's loop of per-matrix GEMMs or of block copies, or a program the
//! host replays for a device that keeps none, takes the device lock, the
//! in-flight record and the profiler's launch span once, not per command.

use super::failure::{Failure, KernelResult};
use crate::registry::{Access, Range, Ranges};
use tensorplug_core::accelerator::{OpDesc, OpKind, TensorDesc};

/// One collected command.
#[derive(Clone, Copy, Debug)]
pub enum Queued {
    /// A launch of `kind` over `inputs[..count]`.
    Launch {
        kind: OpKind,
        inputs: [TensorDesc; 3],
        count: usize,
        output: TensorDesc,
    },
    /// A device-to-device copy of `src` into `dst` (`dst`'s length).
    Copy { dst: TensorDesc, src: TensorDesc },
    /// A fill of `dst` with the 32-bit `pattern`.
    Fill { dst: TensorDesc, pattern: u32 },
}

/// The commands, in order, with their cost for the profiler.
#[derive(Debug, Default)]
pub struct Commands {
    pub(super) list: Vec<Queued>,
    pub(super) flops: u64,
    pub(super) bytes: u64,
    /// What they read and write, when the caller knows it better
    /// ([`covering`](Self::covering)).
    covered: Option<Access>,
}

impl Commands {
    /// Adds a launch of `kind` over `inputs` (at most 3) into `output`.
    pub fn launch(
        &mut self,
        kind: OpKind,
        inputs: &[TensorDesc],
        output: TensorDesc,
    ) -> KernelResult<()> {
        let mut held = [output; 3];
        held.get_mut(..inputs.len())
            .ok_or_else(|| Failure::invalid("a launch of more than 3 inputs"))?
            .copy_from_slice(inputs);
        let op = OpDesc {
            kind,
            inputs,
            output,
            op_id: 0,
        };
        self.flops += op.flops();
        self.bytes += op.bytes_accessed();
        self.list.push(Queued::Launch {
            kind,
            inputs: held,
            count: inputs.len(),
            output,
        });
        Ok(())
    }

    /// Adds a copy of `src` into `dst` (of `dst`'s length).
    pub fn copy(&mut self, dst: TensorDesc, src: TensorDesc) {
        self.bytes += 2 * dst.byte_len().unwrap_or(0) as u64;
        self.list.push(Queued::Copy { dst, src });
    }

    /// Adds a fill of `dst` with the 32-bit `pattern`.
    pub fn fill(&mut self, dst: TensorDesc, pattern: u32) {
        self.bytes += dst.byte_len().unwrap_or(0) as u64;
        self.list.push(Queued::Fill { dst, pattern });
    }

    /// Adds `command`.
    pub fn push(&mut self, command: Queued) -> KernelResult<()> {
        match command {
            Queued::Launch {
                kind,
                inputs,
                count,
                output,
            } => self.launch(kind, &inputs[..count], output),
            Queued::Copy { dst, src } => {
                self.copy(dst, src);
                Ok(())
            }
            Queued::Fill { dst, pattern } => {
                self.fill(dst, pattern);
                Ok(())
            }
        }
    }

    /// Says that the commands read and write `ranges`, both ways, instead
    /// of working it out command by command (a program's buffers: a failed
    /// program poisons its inputs too, as a stored one does, and no sort
    /// per step).
    pub fn covering(&mut self, ranges: Ranges) {
        self.covered = Some(Access {
            reads: ranges.clone(),
            writes: ranges,
        });
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// What the commands read and write, as few ranges as cover them
    /// (touching and overlapping ranges merged).
    pub(super) fn access(&mut self) -> Access {
        if let Some(access) = self.covered.take() {
            return access;
        }
        let (mut reads, mut writes) = (Vec::new(), Vec::new());
        let range = |t: &TensorDesc| Range::new(t.addr, t.byte_len().unwrap_or(0) as u64);
        for q in &self.list {
            match q {
                Queued::Launch {
                    inputs,
                    count,
                    output,
                    ..
                } => {
                    reads.extend(inputs[..*count].iter().map(range));
                    writes.push(range(output));
                }
                Queued::Copy { dst, src } => {
                    reads.push(range(src));
                    writes.push(range(dst));
                }
                Queued::Fill { dst, .. } => writes.push(range(dst)),
            }
        }
        Access {
            reads: merged(reads),
            writes: merged(writes),
        }
    }
}

/// `ranges` sorted, the touching and overlapping ones joined.
fn merged(mut ranges: Vec<Range>) -> Ranges {
    ranges.retain(|r| r.end > r.start);
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<Range> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tensorplug_core::accelerator::{DType, DeviceAddr, Shape};

    fn t(addr: u64, n: u64) -> TensorDesc {
        TensorDesc::new(DeviceAddr(addr), DType::F32, Shape::new(&[n]).unwrap())
    }

    #[test]
    fn a_loop_over_the_rows_of_one_tensor_reads_and_writes_it_whole() {
        let mut c = Commands::default();
        for i in 0..4 {
            c.copy(t(1000 + 16 * i, 4), t(16 * i, 4));
        }
        c.copy(t(5000, 1), t(9000, 1));
        c.fill(t(5004, 2), 0);
        let a = c.access();
        let reads: Vec<(u64, u64)> = a.reads.iter().map(|r| (r.start, r.end)).collect();
        let writes: Vec<(u64, u64)> = a.writes.iter().map(|r| (r.start, r.end)).collect();
        assert_eq!(reads, [(0, 64), (9000, 9004)]);
        assert_eq!(writes, [(1000, 1064), (5000, 5012)]);
        assert_eq!(c.bytes, 2 * (4 * 16 + 4) + 8);
    }

    #[test]
    fn a_launch_takes_at_most_three_inputs() {
        let mut c = Commands::default();
        let kind = OpKind::Unary(tensorplug_core::accelerator::Unary::RELU);
        assert!(c.launch(kind, &[t(0, 4); 4], t(64, 4)).is_err());
        c.launch(kind, &[t(0, 4)], t(64, 4)).unwrap();
        assert!(!c.is_empty());
    }

    #[test]
    fn a_program_covers_all_its_buffers_both_ways() {
        let mut c = Commands::default();
        c.copy(t(1000, 4), t(0, 4));
        let at = |a: u64| Range::new(DeviceAddr(a), 16);
        c.covering([at(0), at(1000)].into_iter().collect());
        let a = c.access();
        let both = |r: &Ranges| r.iter().map(|r| (r.start, r.end)).collect::<Vec<_>>();
        assert_eq!(both(&a.reads), [(0, 16), (1000, 1016)]);
        assert_eq!(both(&a.writes), both(&a.reads));
    }
}
