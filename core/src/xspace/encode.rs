//! The streaming encoder: exact sizes first, then bytes straight into the
//! caller's buffer, each line's events written into their pre-sized region.

use super::layout::{LINE_SLOTS, STAT_BYTES_TRANSFERRED};
use super::message::{UsedMetadata, line_header, plane_header, plane_trailer, streams, warnings};
use super::pairing::{Anomalies, Span, for_each_span};
use super::proto::{XLine, XPlane, XSpace};
use super::{XSpaceBuilder, XSpaceError};
use alloc::string::String;
use alloc::vec::Vec;
use prost::Message;
use prost::encoding::{WireType, encode_key, encode_varint, encoded_len_varint};

/// Field numbers written by hand (the rest goes through prost).
const XSPACE_PLANES: u32 = 1;
const XPLANE_LINES: u32 = 3;
const XLINE_EVENTS: u32 = 4;
const XEVENT_METADATA_ID: u32 = 1;
const XEVENT_OFFSET_PS: u32 = 2;
const XEVENT_DURATION_PS: u32 = 3;
const XEVENT_STATS: u32 = 4;
const XSTAT_METADATA_ID: u32 = 1;
const XSTAT_UINT64: u32 = 3;

/// Every field number above is below 16: its key is one byte.
const KEY_LEN: usize = 1;

/// A line is written as `header` (fields 1-3), the events (field 4), then
/// `footer` (fields 9-11): tag order, byte-identical to prost's encoding.
struct LinePlan {
    id: u16,
    header: XLine,
    footer: XLine,
    events_len: usize,
}

impl LinePlan {
    fn len(&self) -> usize {
        self.header.encoded_len() + self.events_len + self.footer.encoded_len()
    }
}

struct PlanePlan {
    header: XPlane,
    lines: Vec<LinePlan>,
    trailer: XPlane,
    len: usize,
}

/// An XSpace sized exactly, ready to be written (TF's two-call protocol:
/// [`Self::encoded_len`] for the size call, [`Self::encode_into`] for the
/// buffer call). Dropping it releases everything it holds.
pub struct XSpacePlan<'p, 'a> {
    builder: &'p XSpaceBuilder<'a>,
    planes: Vec<PlanePlan>,
    warnings: XSpace,
    anomalies: Anomalies,
    encoded_len: usize,
}

impl<'p, 'a> XSpacePlan<'p, 'a> {
    pub(crate) fn new(builder: &'p XSpaceBuilder<'a>) -> Self {
        let mut planes = Vec::with_capacity(builder.devices.len());
        let mut warning_space = XSpace::default();
        let mut total = Anomalies::default();
        let mut lens = alloc::vec![LineAcc::default(); LINE_SLOTS];
        for device in builder.devices {
            lens.fill(LineAcc::default());
            let mut used = UsedMetadata::default();
            let mut anomalies = Anomalies::default();
            for (events, timebase) in streams(device) {
                let found = for_each_span::<()>(events, timebase, builder.start_host_ns, |span| {
                    used.note(span.metadata_id);
                    if let Some(acc) = lens.get_mut(usize::from(span.line)) {
                        acc.events_len += field_len(event_len(&span));
                        acc.max_end_ps = acc
                            .max_end_ps
                            .max(span.offset_ps.saturating_add(span.duration_ps));
                        acc.count += 1;
                    }
                    Ok(())
                });
                if let Ok(found) = found {
                    anomalies.add(&found);
                }
            }
            let lines: Vec<LinePlan> = lens
                .iter()
                .enumerate()
                .filter(|(_, acc)| acc.count > 0)
                .map(|(id, acc)| {
                    let id = id as u16;
                    let full = line_header(id, builder.start_host_ns, acc.max_end_ps);
                    let footer = XLine {
                        duration_ps: full.duration_ps,
                        display_id: full.display_id,
                        display_name: full.display_name.clone(),
                        ..XLine::default()
                    };
                    let header = XLine {
                        duration_ps: 0,
                        display_id: 0,
                        display_name: String::new(),
                        ..full
                    };
                    LinePlan {
                        id,
                        header,
                        footer,
                        events_len: acc.events_len,
                    }
                })
                .collect();
            let header = plane_header(device);
            let trailer = plane_trailer(device, builder.ops, &used);
            let len = header.encoded_len()
                + lines
                    .iter()
                    .map(|line| field_len(line.len()))
                    .sum::<usize>()
                + trailer.encoded_len();
            planes.push(PlanePlan {
                header,
                lines,
                trailer,
                len,
            });
            warnings(device, &anomalies, &mut warning_space.warnings);
            total.add(&anomalies);
        }
        let encoded_len = planes
            .iter()
            .map(|plane| field_len(plane.len))
            .sum::<usize>()
            + warning_space.encoded_len();
        Self {
            builder,
            planes,
            warnings: warning_space,
            anomalies: total,
            encoded_len,
        }
    }

    /// Exact size of the encoded XSpace in bytes (0 with no devices).
    pub const fn encoded_len(&self) -> usize {
        self.encoded_len
    }

    /// The warnings that go into `XSpace.warnings`.
    pub fn warnings(&self) -> &[String] {
        &self.warnings.warnings
    }

    /// Pairing problems summed over all devices.
    pub const fn anomalies(&self) -> Anomalies {
        self.anomalies
    }

    /// Writes the XSpace into `buf[..encoded_len()]` and returns the length.
    /// A smaller `buf` is an error and nothing is written.
    pub fn encode_into(&self, buf: &mut [u8]) -> Result<usize, XSpaceError> {
        let needed = self.encoded_len;
        let given = buf.len();
        let Some(out) = buf.get_mut(..needed) else {
            return Err(XSpaceError::BufferTooSmall { needed, given });
        };
        let mut pos = 0;
        let mut regions = alloc::vec![(0usize, 0usize); LINE_SLOTS];
        for (plane, device) in self.planes.iter().zip(self.builder.devices) {
            put_len_key(out, &mut pos, XSPACE_PLANES, plane.len)?;
            put_message(out, &mut pos, &plane.header)?;
            regions.fill((0, 0));
            for line in &plane.lines {
                put_len_key(out, &mut pos, XPLANE_LINES, line.len())?;
                put_message(out, &mut pos, &line.header)?;
                let region = regions
                    .get_mut(usize::from(line.id))
                    .ok_or(XSpaceError::Inconsistent)?;
                *region = (pos, pos + line.events_len);
                pos += line.events_len;
                put_message(out, &mut pos, &line.footer)?;
            }
            put_message(out, &mut pos, &plane.trailer)?;
            for (events, timebase) in streams(device) {
                for_each_span(events, timebase, self.builder.start_host_ns, |span| {
                    let region = regions
                        .get_mut(usize::from(span.line))
                        .ok_or(XSpaceError::Inconsistent)?;
                    put_event(out, region, &span)
                })?;
            }
            if regions.iter().any(|(cursor, end)| cursor != end) {
                return Err(XSpaceError::Inconsistent);
            }
        }
        put_message(out, &mut pos, &self.warnings)?;
        if pos != needed {
            return Err(XSpaceError::Inconsistent);
        }
        Ok(needed)
    }
}

#[derive(Clone, Copy, Default)]
struct LineAcc {
    events_len: usize,
    max_end_ps: i64,
    count: u64,
}

/// Length of a length-delimited field holding `body` bytes.
#[inline]
fn field_len(body: usize) -> usize {
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
    len
}

/// Writes one `XLine.events` entry at `region.0`, in tag order like prost.
#[inline]
fn put_event(out: &mut [u8], region: &mut (usize, usize), span: &Span) -> Result<(), XSpaceError> {
    let body = event_len(span);
    let total = field_len(body);
    let (start, end) = *region;
    let next = start + total;
    let mut dst = match out.get_mut(start..next) {
        Some(dst) if next <= end => dst,
        _ => return Err(XSpaceError::Inconsistent),
    };
    encode_key(XLINE_EVENTS, WireType::LengthDelimited, &mut dst);
    encode_varint(body as u64, &mut dst);
    if span.metadata_id != 0 {
        encode_key(XEVENT_METADATA_ID, WireType::Varint, &mut dst);
        encode_varint(span.metadata_id as u64, &mut dst);
    }
    encode_key(XEVENT_OFFSET_PS, WireType::Varint, &mut dst);
    encode_varint(span.offset_ps as u64, &mut dst);
    if span.duration_ps != 0 {
        encode_key(XEVENT_DURATION_PS, WireType::Varint, &mut dst);
        encode_varint(span.duration_ps as u64, &mut dst);
    }
    if let Some(bytes) = span.bytes {
        encode_key(XEVENT_STATS, WireType::LengthDelimited, &mut dst);
        encode_varint(stat_len(bytes) as u64, &mut dst);
        encode_key(XSTAT_METADATA_ID, WireType::Varint, &mut dst);
        encode_varint(STAT_BYTES_TRANSFERRED as u64, &mut dst);
        encode_key(XSTAT_UINT64, WireType::Varint, &mut dst);
        encode_varint(bytes, &mut dst);
    }
    region.0 = next;
    Ok(())
}

fn put_len_key(out: &mut [u8], pos: &mut usize, tag: u32, len: usize) -> Result<(), XSpaceError> {
    let head = KEY_LEN + encoded_len_varint(len as u64);
    let mut dst = out
        .get_mut(*pos..*pos + head)
        .ok_or(XSpaceError::Inconsistent)?;
    encode_key(tag, WireType::LengthDelimited, &mut dst);
    encode_varint(len as u64, &mut dst);
    *pos += head;
    Ok(())
}

fn put_message(out: &mut [u8], pos: &mut usize, message: &impl Message) -> Result<(), XSpaceError> {
    let len = message.encoded_len();
    let mut dst = out
        .get_mut(*pos..*pos + len)
        .ok_or(XSpaceError::Inconsistent)?;
    message
        .encode(&mut dst)
        .map_err(|_| XSpaceError::Inconsistent)?;
    *pos += len;
    Ok(())
}
