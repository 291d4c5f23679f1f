//! The export's inputs ([`XSpaceBuilder`] and what it borrows) and its
//! error. A leaf the encoders import.

use crate::clock::ClockMap;
use crate::event::Event;

/// What the op table knows about one op. The table is indexed by the op
/// events' `op_id`: the command tag the host bridge chose when it launched
/// the op (one tag per distinct TF op in a session; the device echoes it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpInfo<'a> {
    /// Event name: the TF op (node) name, e.g. `dense/MatMul`.
    pub name: &'a str,
    /// `tf_op` stat, `name:type`, e.g. `dense/MatMul:MatMul`; empty = none.
    pub tf_op: &'a str,
    /// `flops` stat; 0 = none.
    pub flops: u64,
    /// `bytes_accessed` stat; 0 = none.
    pub bytes_accessed: u64,
}

/// One device's drained events for one session.
#[derive(Clone, Copy, Debug)]
pub struct DeviceTrace<'a> {
    /// Plane `/device:GPU:<1000 + device_index>`, plane id the same number
    /// ([`layout::plane_number`](super::layout::plane_number)).
    pub device_index: u32,
    /// Maps this device's tick timestamps to host time.
    pub clock: ClockMap,
    /// Device events (ops and copies), timestamps in device ticks.
    pub device_events: &'a [Event],
    /// Host-API events for this device, timestamps in host ns.
    pub host_events: &'a [Event],
    /// Events the device ring dropped.
    pub dropped_device_events: u64,
    /// Events the host ring dropped.
    pub dropped_host_events: u64,
}

/// Why encoding failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum XSpaceError {
    /// The output buffer is smaller than
    /// [`XSpacePlan::encoded_len`](super::XSpacePlan::encoded_len); nothing
    /// was written past its end.
    BufferTooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes given.
        given: usize,
    },
    /// The events changed between planning and encoding (a bug in the
    /// caller); the output is incomplete.
    Inconsistent,
}

/// Category of an [`XSpaceError`], in the embedded-hal style.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum XSpaceErrorKind {
    /// The caller's buffer cannot hold the output.
    BufferTooSmall,
    /// Internal inconsistency.
    Internal,
}

impl XSpaceError {
    /// The error's category.
    pub const fn kind(&self) -> XSpaceErrorKind {
        match self {
            Self::BufferTooSmall { .. } => XSpaceErrorKind::BufferTooSmall,
            Self::Inconsistent => XSpaceErrorKind::Internal,
        }
    }
}

impl core::fmt::Display for XSpaceError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::BufferTooSmall { needed, given } => write!(
                f,
                "the XSpace needs {needed} bytes but the buffer holds {given}"
            ),
            Self::Inconsistent => f.write_str("profiling events changed while encoding"),
        }
    }
}

/// Builds one XSpace from one session's drained events.
#[derive(Clone, Copy, Debug)]
pub struct XSpaceBuilder<'a> {
    pub(super) start_host_ns: u64,
    pub(super) ops: &'a [OpInfo<'a>],
    pub(super) devices: &'a [DeviceTrace<'a>],
}

impl<'a> XSpaceBuilder<'a> {
    /// `start_host_ns` (the session start) becomes every line's
    /// `timestamp_ns`; `ops[i]` describes op index `i`.
    pub const fn new(
        start_host_ns: u64,
        ops: &'a [OpInfo<'a>],
        devices: &'a [DeviceTrace<'a>],
    ) -> Self {
        Self {
            start_host_ns,
            ops,
            devices,
        }
    }
}
