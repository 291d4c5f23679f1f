//! Event records on the wire: fixed 16-byte little-endian records, borrowed
//! straight from the frame buffer when decoding (no copy, no large enum).

use super::error::LinkError;
use super::framing::MAX_BULK_CHUNK;
use crate::event::Event;
use core::fmt;
use serde::de::{Deserialize, Deserializer, Error as _};
use serde::ser::{Serialize, SerializeSeq, Serializer};

/// Bytes of one event record: timestamp u64, arg u32, op_id u16, queue u8,
/// kind u8, all little-endian (the field order of [`Event`]).
pub const EVENT_RECORD_LEN: usize = 16;

/// Events one [`EventBatch`](super::EventBatch) carries at most (16 bytes each on the wire).
pub const MAX_EVENTS_PER_BATCH: usize = MAX_BULK_CHUNK / EVENT_RECORD_LEN;

/// The events of an [`EventBatch`](super::EventBatch): either a slice being
/// sent or the received records.
///
/// On the wire: a postcard byte string (varint length, then the bytes) of
/// `len × 16` record bytes.
#[derive(Clone, Copy)]
pub struct EventRecords<'a>(Repr<'a>);

#[derive(Clone, Copy)]
enum Repr<'a> {
    Events(&'a [Event]),
    Wire(&'a [u8]),
}

impl<'a> EventRecords<'a> {
    /// Wraps events to send.
    ///
    /// # Errors
    /// [`LinkError::PayloadTooLarge`] for more than [`MAX_EVENTS_PER_BATCH`].
    pub fn new(events: &'a [Event]) -> Result<Self, LinkError> {
        if events.len() > MAX_EVENTS_PER_BATCH {
            return Err(LinkError::PayloadTooLarge {
                len: events.len() * EVENT_RECORD_LEN,
                limit: MAX_EVENTS_PER_BATCH * EVENT_RECORD_LEN,
            });
        }
        Ok(Self(Repr::Events(events)))
    }

    /// No events.
    pub const fn empty() -> Self {
        Self(Repr::Events(&[]))
    }

    /// Number of events.
    pub const fn len(&self) -> usize {
        match self.0 {
            Repr::Events(events) => events.len(),
            Repr::Wire(bytes) => bytes.len() / EVENT_RECORD_LEN,
        }
    }

    /// True when there are no events.
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The events, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = Event> + 'a {
        let (events, bytes): (&'a [Event], &'a [u8]) = match self.0 {
            Repr::Events(events) => (events, &[]),
            Repr::Wire(bytes) => (&[], bytes),
        };
        events
            .iter()
            .copied()
            .chain(bytes.chunks_exact(EVENT_RECORD_LEN).map(from_record))
    }
}

fn to_record(event: &Event) -> [u8; EVENT_RECORD_LEN] {
    let mut record = [0; EVENT_RECORD_LEN];
    record[..8].copy_from_slice(&event.timestamp.to_le_bytes());
    record[8..12].copy_from_slice(&event.arg.to_le_bytes());
    record[12..14].copy_from_slice(&event.op_id.to_le_bytes());
    record[14] = event.queue;
    record[15] = event.kind;
    record
}

/// Reads one record; `chunk` is always `EVENT_RECORD_LEN` bytes.
fn from_record(chunk: &[u8]) -> Event {
    let mut record = [0; EVENT_RECORD_LEN];
    record.copy_from_slice(chunk);
    let [
        t0,
        t1,
        t2,
        t3,
        t4,
        t5,
        t6,
        t7,
        a0,
        a1,
        a2,
        a3,
        o0,
        o1,
        queue,
        kind,
    ] = record;
    Event {
        timestamp: u64::from_le_bytes([t0, t1, t2, t3, t4, t5, t6, t7]),
        arg: u32::from_le_bytes([a0, a1, a2, a3]),
        op_id: u16::from_le_bytes([o0, o1]),
        queue,
        kind,
    }
}

impl PartialEq for EventRecords<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for EventRecords<'_> {}

impl fmt::Debug for EventRecords<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for EventRecords<'_> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "EventRecords({=usize} events)", self.len());
    }
}

impl Serialize for EventRecords<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Repr::Wire(bytes) => serializer.serialize_bytes(bytes),
            // postcard writes a byte string as varint length + bytes, exactly
            // like a sequence of u8: stream the records with no scratch copy.
            Repr::Events(events) => {
                let mut out = serializer.serialize_seq(Some(events.len() * EVENT_RECORD_LEN))?;
                for event in events {
                    for byte in &to_record(event) {
                        out.serialize_element(byte)?;
                    }
                }
                out.end()
            }
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for EventRecords<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let bytes = <&'de [u8]>::deserialize(deserializer)?;
        if bytes.len() % EVENT_RECORD_LEN != 0
            || bytes.len() / EVENT_RECORD_LEN > MAX_EVENTS_PER_BATCH
        {
            return Err(D::Error::invalid_length(
                bytes.len(),
                &"whole event records, at most MAX_EVENTS_PER_BATCH",
            ));
        }
        Ok(Self(Repr::Wire(bytes)))
    }
}
