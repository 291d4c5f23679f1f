//! The profiling event record shared by rings, sessions, the link protocol and
//! the XSpace export.

use serde::{Deserialize, Serialize};

/// One profiling event: a 16-byte plain-old-data record.
///
/// Every bit pattern is a valid `Event` (the `kind` is kept as a raw `u8`), so
/// records can be copied straight out of device memory or a ring slot.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Event {
    /// Ticks of the producer's clock (device ticks, or host nanoseconds).
    pub timestamp: u64,
    /// Kind-specific argument: byte count for copies, op index for launches.
    pub arg: u32,
    /// Correlates the begin and end of one operation (the command tag).
    pub op_id: u16,
    /// Hardware queue or stream the event belongs to.
    pub queue: u8,
    /// An [`EventKind`] as `u8`; unknown values are kept, not rejected.
    pub kind: u8,
}

const _: () = assert!(core::mem::size_of::<Event>() == 16);
const _: () = assert!(core::mem::align_of::<Event>() == 8);

/// What an [`Event`] marks. Begin/end pairs are matched by `(queue, op_id)`.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum EventKind {
    /// A compute command started on the device.
    OpBegin = 1,
    /// A compute command finished on the device.
    OpEnd = 2,
    /// A host-to-device copy started; `arg` is the byte count.
    CopyH2DBegin = 3,
    /// A host-to-device copy finished.
    CopyH2DEnd = 4,
    /// A device-to-host copy started; `arg` is the byte count.
    CopyD2HBegin = 5,
    /// A device-to-host copy finished.
    CopyD2HEnd = 6,
    /// A device-to-device copy started; `arg` is the byte count.
    CopyD2DBegin = 7,
    /// A device-to-device copy finished.
    CopyD2DEnd = 8,
    /// Host API: a launch call began (host clock).
    HostLaunchBegin = 16,
    /// Host API: a launch call returned (host clock).
    HostLaunchEnd = 17,
    /// Host API: a copy call began (host clock); `arg` is the byte count.
    HostCopyBegin = 18,
    /// Host API: a copy call returned (host clock).
    HostCopyEnd = 19,
    /// Host API: a synchronisation call began (host clock).
    HostSyncBegin = 20,
    /// Host API: a synchronisation call returned (host clock).
    HostSyncEnd = 21,
}

impl EventKind {
    /// Decodes a raw kind byte; `None` for values this version does not know.
    pub const fn from_u8(raw: u8) -> Option<Self> {
        Some(match raw {
            1 => Self::OpBegin,
            2 => Self::OpEnd,
            3 => Self::CopyH2DBegin,
            4 => Self::CopyH2DEnd,
            5 => Self::CopyD2HBegin,
            6 => Self::CopyD2HEnd,
            7 => Self::CopyD2DBegin,
            8 => Self::CopyD2DEnd,
            16 => Self::HostLaunchBegin,
            17 => Self::HostLaunchEnd,
            18 => Self::HostCopyBegin,
            19 => Self::HostCopyEnd,
            20 => Self::HostSyncBegin,
            21 => Self::HostSyncEnd,
            _ => return None,
        })
    }

    /// True for the kinds that open a span.
    pub const fn is_begin(self) -> bool {
        matches!(
            self,
            Self::OpBegin
                | Self::CopyH2DBegin
                | Self::CopyD2HBegin
                | Self::CopyD2DBegin
                | Self::HostLaunchBegin
                | Self::HostCopyBegin
                | Self::HostSyncBegin
        )
    }
}

impl Event {
    /// Builds an event of a known kind.
    pub const fn new(kind: EventKind, timestamp: u64, queue: u8, op_id: u16, arg: u32) -> Self {
        Self {
            timestamp,
            arg,
            op_id,
            queue,
            kind: kind as u8,
        }
    }

    /// The decoded kind, or `None` if this version does not know it.
    pub const fn kind(&self) -> Option<EventKind> {
        EventKind::from_u8(self.kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_kind_round_trips_and_unknown_is_none() {
        let mut known = 0;
        for raw in 0..=u8::MAX {
            if let Some(kind) = EventKind::from_u8(raw) {
                assert_eq!(kind as u8, raw);
                known += 1;
            }
        }
        assert_eq!(known, 14);
        assert_eq!(EventKind::from_u8(0), None);
        assert_eq!(Event::default().kind(), None);
    }

    #[test]
    fn begin_kinds_open_spans() {
        assert!(EventKind::OpBegin.is_begin());
        assert!(!EventKind::OpEnd.is_begin());
        assert!(EventKind::HostSyncBegin.is_begin());
        assert!(!EventKind::HostSyncEnd.is_begin());
    }
}
