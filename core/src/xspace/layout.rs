//! The fixed part of the XSpace layout: plane names, line ids, metadata ids
//! and stat names. `docs/xspace-layout.md` documents every value here.

use crate::event::EventKind;

/// Plane name prefix: xprof builds its op tools (overview page, framework op
/// stats, op profile) only from `/device:GPU:` and `/device:TPU:` planes, and
/// its trace viewer shows GPU planes first (see `docs/xspace-layout.md`).
pub const PLANE_PREFIX: &str = "/device:GPU:";
/// A device's plane is `PLANE_PREFIX` + `PLANE_NUMBER_BASE + device_index`,
/// with the same plane id: far above any real GPU's ordinal, so a real GPU's
/// planes in the same profile never share a name or an id with ours.
pub const PLANE_NUMBER_BASE: u32 = 1_000;

/// The plane number (name suffix and plane id) of `device_index`.
pub const fn plane_number(device_index: u32) -> u32 {
    PLANE_NUMBER_BASE.saturating_add(device_index)
}

/// Line ids `0..=255` are the device's hardware queues (`Event::queue`).
pub const MEMCPY_LINE_ID: u16 = 256;
/// The line that holds host-API spans (launch, copy, sync) in host time.
pub const HOST_API_LINE_ID: u16 = 257;
/// Number of possible lines on one plane.
pub const LINE_SLOTS: usize = 258;

/// Line name for queue lines; the queue number follows.
pub const QUEUE_LINE_PREFIX: &str = "Queue ";
/// Name of [`MEMCPY_LINE_ID`].
pub const MEMCPY_LINE_NAME: &str = "Memcpy";
/// Name of [`HOST_API_LINE_ID`].
pub const HOST_API_LINE_NAME: &str = "Host API";

/// Event metadata ids of the fixed (non-op) event names.
pub const FIXED_EVENTS: [(i64, &str); 6] = [
    (1, "MemcpyH2D"),
    (2, "MemcpyD2H"),
    (3, "MemcpyD2D"),
    (4, "HostLaunch"),
    (5, "HostCopy"),
    (6, "HostSync"),
];
/// Ops get event metadata id `OP_METADATA_BASE + op index`, and the stat
/// metadata entry with the same id names their `tf_op` (`name:type`): each op
/// event carries `tf_op` as a `ref_value` to it (xprof's op tools read the
/// event's own stats, not its metadata's).
pub const OP_METADATA_BASE: i64 = 1_000;

/// Stat metadata: (id, name, description). Names are TF's stat type names.
/// `tf_op` of an op (ref to stat metadata `OP_METADATA_BASE + op index`, on
/// the event).
pub const STAT_TF_OP: i64 = 1;
/// `flops` of an op (uint64, on the op's event metadata).
pub const STAT_FLOPS: i64 = 2;
/// `bytes_accessed` of an op (uint64, on the op's event metadata).
pub const STAT_BYTES_ACCESSED: i64 = 3;
/// `bytes_transferred` of one copy (uint64, on the event).
pub const STAT_BYTES_TRANSFERRED: i64 = 4;
/// `dropped_traces` of the plane (uint64, on the plane).
pub const STAT_DROPPED_TRACES: i64 = 5;
/// Every stat metadata entry, emitted on every plane.
pub const STATS: [(i64, &str, &str); 5] = [
    (STAT_TF_OP, "tf_op", "TensorFlow op as name:type"),
    (STAT_FLOPS, "flops", "floating-point operations of the op"),
    (
        STAT_BYTES_ACCESSED,
        "bytes_accessed",
        "bytes read and written by the op",
    ),
    (
        STAT_BYTES_TRANSFERRED,
        "bytes_transferred",
        "bytes moved by the copy",
    ),
    (
        STAT_DROPPED_TRACES,
        "dropped_traces",
        "events lost to full rings",
    ),
];

/// Which stream an event kind belongs to and where its span goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Placement {
    /// A device op: line = queue, metadata = op table entry of `op_id`.
    Op,
    /// A device copy: memcpy line, fixed metadata, `arg` = bytes.
    Copy(i64),
    /// A host API call: host line, fixed metadata; copies carry bytes.
    Host(i64, bool),
}

/// Where the span opened or closed by `kind` goes, and whether `kind` opens.
pub(crate) const fn placement(kind: EventKind) -> (Placement, bool) {
    use EventKind as K;
    match kind {
        K::OpBegin => (Placement::Op, true),
        K::OpEnd => (Placement::Op, false),
        K::CopyH2DBegin => (Placement::Copy(1), true),
        K::CopyH2DEnd => (Placement::Copy(1), false),
        K::CopyD2HBegin => (Placement::Copy(2), true),
        K::CopyD2HEnd => (Placement::Copy(2), false),
        K::CopyD2DBegin => (Placement::Copy(3), true),
        K::CopyD2DEnd => (Placement::Copy(3), false),
        K::HostLaunchBegin => (Placement::Host(4, false), true),
        K::HostLaunchEnd => (Placement::Host(4, false), false),
        K::HostCopyBegin => (Placement::Host(5, true), true),
        K::HostCopyEnd => (Placement::Host(5, true), false),
        K::HostSyncBegin => (Placement::Host(6, false), true),
        K::HostSyncEnd => (Placement::Host(6, false), false),
    }
}
