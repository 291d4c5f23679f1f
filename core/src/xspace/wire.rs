//! One `XLine.events` entry on the wire: its exact length and its bytes,
//! written by hand in prost's field order (the hot path of the encoder).

use super::layout::{STAT_BYTES_TRANSFERRED, STAT_TF_OP};
use super::pairing::Span;
use prost::encoding::encoded_len_varint;

/// Every field number used here is below 16: its key is one byte.
const KEY_LEN: usize = 1;

/// A field key: `field << 3 | wire type` (0 = varint, 2 = length-delimited).
const fn key(field: u8, wire_type: u8) -> u8 {
    field << 3 | wire_type
}
const VARINT: u8 = 0;
const LEN: u8 = 2;
const XLINE_EVENTS: u8 = key(4, LEN);
const XEVENT_METADATA_ID: u8 = key(1, VARINT);
const XEVENT_OFFSET_PS: u8 = key(2, VARINT);
const XEVENT_DURATION_PS: u8 = key(3, VARINT);
const XEVENT_STATS: u8 = key(4, LEN);
const XSTAT_METADATA_ID: u8 = key(1, VARINT);
const XSTAT_UINT64: u8 = key(3, VARINT);
const XSTAT_REF: u8 = key(7, VARINT);

/// Length of a length-delimited field holding `body` bytes.
#[inline]
pub(crate) fn field_len(body: usize) -> usize {
    KEY_LEN + encoded_len_varint(body as u64) + body
}

#[inline]
fn varint_field_len(value: u64) -> usize {
    KEY_LEN + encoded_len_varint(value)
}

/// Body length of the `bytes_transferred` stat.
#[inline]
fn stat_len(bytes: u64) -> usize {
    varint_field_len(STAT_BYTES_TRANSFERRED as u64) + varint_field_len(bytes)
}

/// Body length of the `tf_op` stat (a `ref_value`).
#[inline]
fn ref_stat_len(reference: i64) -> usize {
    varint_field_len(STAT_TF_OP as u64) + varint_field_len(reference as u64)
}

/// Body length of one XEvent, with proto3's rules: zero scalars are omitted,
/// the oneof `offset_ps` is always present.
#[inline]
fn event_len(span: &Span) -> usize {
    let mut len = varint_field_len(span.offset_ps as u64);
    if span.metadata_id != 0 {
        len += varint_field_len(span.metadata_id as u64);
    }
    if span.duration_ps != 0 {
        len += varint_field_len(span.duration_ps as u64);
    }
    if let Some(bytes) = span.bytes {
        len += field_len(stat_len(bytes));
    }
    if let Some(reference) = span.tf_op_ref {
        len += field_len(ref_stat_len(reference));
    }
    len
}

/// Length of the span's whole `XLine.events` field (key, length, body).
#[inline]
pub(crate) fn event_field_len(span: &Span) -> usize {
    field_len(event_len(span))
}

/// Longest body of an XEvent: metadata id, offset and duration (key and up
/// to 10 varint bytes each) and two stats (key, length, two keyed varints).
const MAX_EVENT_BODY: usize = 3 * 11 + 2 * (2 + 2 + 11);

/// Room for one event field (key, one length byte, the body): the size of
/// the window [`encode_event`] writes into.
pub(crate) const EVENT_SCRATCH: usize = 80;
const _: () = assert!(2 + MAX_EVENT_BODY <= EVENT_SCRATCH);
// The body length fits in one varint byte, so it can be patched in after.
const _: () = assert!(MAX_EVENT_BODY < 0x80);

/// Appends bytes to a fixed-size window. The index wraps inside the window,
/// so no write needs a bounds check; `len` counts every byte, and a length
/// above the window's means the bytes are garbage.
struct Window<'b> {
    buf: &'b mut [u8; EVENT_SCRATCH],
    len: usize,
}

impl Window<'_> {
    #[inline(always)]
    fn byte(&mut self, byte: u8) {
        self.buf[self.len % EVENT_SCRATCH] = byte;
        self.len += 1;
    }

    /// Base-128 little-endian, high bit = more bytes follow (as prost).
    #[inline(always)]
    fn varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.byte(value as u8 | 0x80);
            value >>= 7;
        }
        self.byte(value as u8);
    }

    #[inline(always)]
    fn field(&mut self, key: u8, value: u64) {
        self.byte(key);
        self.varint(value);
    }
}

/// Encodes the span's whole `XLine.events` field into `buf[..len]` and
/// returns `len`, which equals [`event_field_len`]. The body is written
/// first and its one-byte length patched in before it.
#[inline]
pub(crate) fn encode_event(span: &Span, buf: &mut [u8; EVENT_SCRATCH]) -> usize {
    let mut w = Window { buf, len: 2 };
    if span.metadata_id != 0 {
        w.field(XEVENT_METADATA_ID, span.metadata_id as u64);
    }
    w.field(XEVENT_OFFSET_PS, span.offset_ps as u64);
    if span.duration_ps != 0 {
        w.field(XEVENT_DURATION_PS, span.duration_ps as u64);
    }
    if let Some(bytes) = span.bytes {
        // The stat's body is at most 13 bytes: its length is one byte.
        w.byte(XEVENT_STATS);
        w.byte(stat_len(bytes) as u8);
        w.field(XSTAT_METADATA_ID, STAT_BYTES_TRANSFERRED as u64);
        w.field(XSTAT_UINT64, bytes);
    }
    if let Some(reference) = span.tf_op_ref {
        // At most 13 bytes, as above.
        w.byte(XEVENT_STATS);
        w.byte(ref_stat_len(reference) as u8);
        w.field(XSTAT_METADATA_ID, STAT_TF_OP as u64);
        w.field(XSTAT_REF, reference as u64);
    }
    let len = w.len;
    w.buf[0] = XLINE_EVENTS;
    // At most MAX_EVENT_BODY (< 0x80) by construction.
    w.buf[1] = (len - 2) as u8;
    len
}
