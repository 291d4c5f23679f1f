//! [`InFlight`]: which op each outstanding fence belongs to, so a failure
//! observed later (by a copy, a sync, an event) names the op that caused it.

use super::access::Access;
use crate::devices::DeviceError;
use crate::error::Error;
use std::collections::VecDeque;
use std::sync::Arc;
use tensorplug_core::accelerator::Fence;

/// At most this many fences are remembered per device; older ones lose
/// their label (a failure there is then reported without the op).
pub const MAX_IN_FLIGHT: usize = 4096;

/// The TF op an enqueue belongs to: its type and node name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpLabel {
    /// The op type (`Softmax`).
    pub op_type: &'static str,
    /// The node name (`model/dense_2/Softmax`).
    pub node: Arc<str>,
}

impl OpLabel {
    /// `<TYPE> <op> '<node>'`, the prefix of every kernel error.
    pub fn describe(&self) -> String {
        format!(
            "{} {} '{}'",
            crate::identity::device_type(),
            self.op_type,
            self.node
        )
    }
}

/// The labelled fences not yet seen complete, oldest first, with the
/// device memory their work reads and writes.
#[derive(Default)]
pub struct InFlight {
    fences: VecDeque<(Fence, Option<OpLabel>, Access)>,
}

impl InFlight {
    /// Remembers that `fence` completes the op `label` (`None`: a copy or
    /// fill, not an op), which touches `access`.
    pub fn push(&mut self, fence: Fence, label: Option<OpLabel>, access: Access) {
        if self.fences.len() == MAX_IN_FLIGHT {
            self.fences.pop_front();
        }
        self.fences.push_back((fence, label, access));
    }

    /// The oldest remembered fence, if it is at most `fence`.
    pub fn oldest_up_to(&self, fence: Fence) -> Option<Fence> {
        self.fences
            .front()
            .map(|&(f, ..)| f)
            .filter(|&f| f <= fence)
    }

    /// Forgets the oldest fence; returns its label and access.
    pub fn pop(&mut self) -> (Option<OpLabel>, Access) {
        self.fences
            .pop_front()
            .map(|(_, label, access)| (label, access))
            .unwrap_or_default()
    }

    /// The oldest fence at most `fence` and its label (a wait on `fence`
    /// that times out is stuck there).
    pub fn stuck_up_to(&self, fence: Fence) -> Option<(Fence, Option<OpLabel>)> {
        self.fences
            .front()
            .filter(|&&(f, ..)| f <= fence)
            .map(|(f, label, _)| (*f, label.clone()))
    }

    /// What the remembered work touches, oldest first.
    pub fn accesses(&self) -> impl Iterator<Item = &Access> {
        self.fences.iter().map(|(_, _, access)| access)
    }

    /// Forgets every fence (after a reset they all failed).
    pub fn clear(&mut self) {
        self.fences.clear();
    }

    /// How many fences are remembered.
    #[cfg(feature = "internals")]
    pub fn len(&self) -> usize {
        self.fences.len()
    }
}

/// A device failure and the fences it took down: every wait on a fence
/// in `first..=last` reports `error` (work queued after the failing op was
/// aborted by the recovery reset), fences after `last` are new work.
#[derive(Clone, Debug)]
pub struct Incident {
    /// The fence of the failing op.
    pub first: Fence,
    /// The newest fence handed out when the device was reset.
    pub last: Fence,
    /// Where it failed: `FPGA <op> '<node>': FPGA:<n> (<spec>)`, or the
    /// device alone when the work was not an op.
    pub at: String,
    /// Whether the failing work was an op (`at` names it).
    pub names_op: bool,
    /// What went wrong.
    pub cause: Cause,
}

/// The failure of an [`Incident`], kept so it can be rebuilt as an [`Error`].
#[derive(Clone, Debug)]
pub enum Cause {
    /// The driver reported it.
    Device(DeviceError),
    /// The op did not complete within the budget.
    Timeout {
        /// What was waited for.
        what: &'static str,
        /// The budget in ms.
        timeout_ms: u64,
        /// What happened next ([`crate::error::RESET`], …; empty: not yet).
        then: &'static str,
    },
    /// Failed at once: a reset of the device failed within the last budget.
    Unresponsive {
        /// What was waited for.
        what: &'static str,
        /// The budget in ms.
        timeout_ms: u64,
    },
}

impl Incident {
    /// Whether a wait on `fence` reports this incident.
    pub fn covers(&self, fence: Fence) -> bool {
        self.first <= fence && fence <= self.last
    }

    /// The error a wait reports: `<at>: <cause>`.
    pub fn error(&self) -> Error {
        match &self.cause {
            Cause::Device(source) => Error::Device {
                device: self.at.clone(),
                source: source.clone(),
            },
            &Cause::Timeout {
                what,
                timeout_ms,
                then,
            } => Error::Timeout {
                device: self.at.clone(),
                what,
                timeout_ms,
                then,
            },
            &Cause::Unresponsive { what, timeout_ms } => Error::Unresponsive {
                device: self.at.clone(),
                what,
                timeout_ms,
            },
        }
    }
}
