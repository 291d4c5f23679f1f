//! The streaming encoder: exact sizes first, then bytes straight into the
//! caller's buffer, each line's events written into their pre-sized region.

use super::layout::LINE_SLOTS;
use super::message::{UsedMetadata, line_header, plane_header, plane_trailer, streams, warnings};
use super::pairing::{Anomalies, Span, for_each_span};
use super::proto::{XLine, XPlane, XSpace};
use super::types::{XSpaceBuilder, XSpaceError};
use super::wire::{self, EVENT_SCRATCH, event_field_len, field_len};
use alloc::string::String;
use alloc::vec::Vec;
use prost::Message;
use prost::encoding::{WireType, encode_key, encode_varint, encoded_len_varint};

/// Field numbers written by hand (the rest goes through prost).
const XSPACE_PLANES: u32 = 1;
const XPLANE_LINES: u32 = 3;

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
                        acc.events_len += event_field_len(&span);
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
            let mut scratch = [0; EVENT_SCRATCH];
            for (events, timebase) in streams(device) {
                for_each_span(events, timebase, self.builder.start_host_ns, |span| {
                    let region = regions
                        .get_mut(usize::from(span.line))
                        .ok_or(XSpaceError::Inconsistent)?;
                    put_event(out, region, &span, &mut scratch)
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

/// Writes the span's event field at `region.0`, within the region.
///
/// While the region has room for a whole scratch, the field is encoded
/// straight into the output through a fixed-size window (no bounds check per
/// byte, no copy); only the last few events of a line go through `scratch`
/// and an exact copy.
#[inline]
fn put_event(
    out: &mut [u8],
    region: &mut (usize, usize),
    span: &Span,
    scratch: &mut [u8; EVENT_SCRATCH],
) -> Result<(), XSpaceError> {
    let (start, end) = *region;
    let room = out.get_mut(start..end).ok_or(XSpaceError::Inconsistent)?;
    let len = match room.first_chunk_mut::<EVENT_SCRATCH>() {
        Some(window) => wire::encode_event(span, window),
        None => {
            let len = wire::encode_event(span, scratch);
            match (room.get_mut(..len), scratch.get(..len)) {
                (Some(dst), Some(src)) => dst.copy_from_slice(src),
                _ => return Err(XSpaceError::Inconsistent),
            }
            len
        }
    };
    if len > EVENT_SCRATCH || start + len > end {
        return Err(XSpaceError::Inconsistent);
    }
    region.0 = start + len;
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
