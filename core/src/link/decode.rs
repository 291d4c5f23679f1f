//! Incremental frame decoding with resynchronisation at the delimiter.

use super::error::LinkError;
use super::framing::{CRC_LEN, CRC32, DELIMITER, MAX_ENCODED_FRAME_LEN, MAX_FRAME_LEN};
use super::header::{FrameHeader, HEADER_LEN};
use super::message::Message;

/// Encoded bytes buffered for one frame (everything but its delimiter).
const CAPACITY: usize = MAX_ENCODED_FRAME_LEN - 1;

/// A decoded frame; bulk data in its message borrows the decoder's buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The frame header.
    pub header: FrameHeader,
    /// The decoded message.
    pub message: Message<'a>,
}

/// What [`Decoder::feed`] found in the input.
#[derive(Debug)]
#[allow(
    clippy::large_enum_variant,
    reason = "no allocator on the MCU to box a launch (about 300 bytes)"
)]
pub enum FeedResult<'d, 'i> {
    /// All input was consumed; no frame ended in it.
    Consumed,
    /// A good frame ended. `remaining` is the input after its delimiter.
    Frame {
        /// The frame.
        frame: Frame<'d>,
        /// Input not consumed yet; feed it next.
        remaining: &'i [u8],
    },
    /// A bad frame was dropped. `remaining` is the input not consumed yet.
    Error {
        /// Why the frame was dropped.
        error: LinkError,
        /// Input not consumed yet; feed it next.
        remaining: &'i [u8],
    },
}

/// Turns a byte stream into frames, whatever the chunking.
///
/// Bytes are buffered until a `0x00` delimiter, then the frame is checked and
/// decoded. A bad frame yields one error and the decoder restarts at the next
/// delimiter, so the frame after it is never lost. Empty frames (`0x00 0x00`)
/// are ignored, so a sender may emit a `0x00` to flush a line.
///
/// The decoder is `MAX_ENCODED_FRAME_LEN` bytes; keep it in a `static` or
/// a long-lived struct on small MCUs.
#[derive(Clone)]
pub struct Decoder {
    buf: [u8; CAPACITY],
    len: usize,
    /// Skipping the rest of an oversized frame (already reported).
    skipping: bool,
    /// Decodes a payload: every message, or requests only.
    decode: PayloadDecoder,
}

/// How a [`Decoder`] turns a frame's id and payload into a [`Message`].
type PayloadDecoder = for<'a> fn(u8, &'a [u8]) -> Result<Message<'a>, LinkError>;

fn any_message(id: u8, payload: &[u8]) -> Result<Message<'_>, LinkError> {
    Message::decode(id, payload)
}

fn request(id: u8, payload: &[u8]) -> Result<Message<'_>, LinkError> {
    Message::decode_request(id, payload)
}

impl Default for Decoder {
    fn default() -> Self {
        Self::new()
    }
}

impl core::fmt::Debug for Decoder {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Decoder")
            .field("buffered", &self.len)
            .field("skipping", &self.skipping)
            .finish()
    }
}

impl Decoder {
    /// An empty decoder.
    pub const fn new() -> Self {
        Self {
            buf: [0; CAPACITY],
            len: 0,
            skipping: false,
            decode: any_message,
        }
    }

    /// A decoder for a device end: it decodes requests only
    /// ([`Message::decode_request`]) and reports an answer or notification
    /// as [`LinkError::UnknownMessage`]. Their decoding code is then not
    /// linked into a device's firmware (about 2 KB).
    pub const fn requests() -> Self {
        Self {
            decode: request,
            ..Self::new()
        }
    }

    /// Bytes of an unfinished frame held from earlier input.
    pub const fn buffered(&self) -> usize {
        self.len
    }

    /// Drops any partial frame (after a reconnect).
    pub fn reset(&mut self) {
        self.len = 0;
        self.skipping = false;
    }

    /// Consumes `input` up to the end of the next frame.
    ///
    /// Call again with `remaining` until it returns [`FeedResult::Consumed`].
    /// An oversized frame is reported as soon as it overflows; its remaining
    /// bytes are then skipped up to the next delimiter.
    pub fn feed<'d, 'i>(&'d mut self, input: &'i [u8]) -> FeedResult<'d, 'i> {
        let mut rest = input;
        loop {
            let (chunk, after) = match rest.iter().position(|&b| b == DELIMITER) {
                Some(at) => (&rest[..at], Some(&rest[at + 1..])),
                None => (rest, None),
            };
            if !self.skipping {
                let room = CAPACITY - self.len;
                if chunk.len() > room {
                    self.len = 0;
                    self.skipping = true;
                    return FeedResult::Error {
                        error: LinkError::Oversized {
                            limit: MAX_ENCODED_FRAME_LEN,
                        },
                        // After the overflowing byte (never a delimiter); the
                        // rest is skipped up to the next delimiter.
                        remaining: &rest[room + 1..],
                    };
                }
                self.buf[self.len..self.len + chunk.len()].copy_from_slice(chunk);
                self.len += chunk.len();
            }
            let Some(after) = after else {
                return FeedResult::Consumed;
            };
            let len = core::mem::take(&mut self.len);
            if core::mem::take(&mut self.skipping) || len == 0 {
                rest = after;
                continue;
            }
            return match decode_frame_with(&mut self.buf[..len], self.decode) {
                Ok(frame) => FeedResult::Frame {
                    frame,
                    remaining: after,
                },
                Err(error) => FeedResult::Error {
                    error,
                    remaining: after,
                },
            };
        }
    }
}

/// Decodes one COBS-encoded frame (without its delimiter), in place.
///
/// # Errors
/// The specific [`LinkError`] for a truncated, oversized, corrupt, unknown or
/// malformed frame.
pub fn decode_frame(encoded: &mut [u8]) -> Result<Frame<'_>, LinkError> {
    decode_frame_with(encoded, any_message)
}

fn decode_frame_with(encoded: &mut [u8], decode: PayloadDecoder) -> Result<Frame<'_>, LinkError> {
    let len = match cobs::decode_in_place_report(encoded) {
        Ok(report) => report.dst_used,
        // A COBS block running past the end means the delimiter came early.
        Err(cobs::DecodeError::InvalidFrame { decoded_bytes }) => {
            return Err(LinkError::Truncated {
                received: decoded_bytes,
            });
        }
        Err(_) => return Err(LinkError::Truncated { received: 0 }),
    };
    if len > MAX_FRAME_LEN {
        return Err(LinkError::Oversized {
            limit: MAX_ENCODED_FRAME_LEN,
        });
    }
    if len < HEADER_LEN + CRC_LEN {
        return Err(LinkError::Truncated { received: len });
    }
    let (covered, crc_bytes) = encoded[..len].split_at(len - CRC_LEN);
    let (header_bytes, payload) = covered.split_at(HEADER_LEN);
    let mut header_array = [0; HEADER_LEN];
    header_array.copy_from_slice(header_bytes);
    let header = FrameHeader::from_bytes(&header_array);
    let mut crc_array = [0; CRC_LEN];
    crc_array.copy_from_slice(crc_bytes);
    let received = u32::from_le_bytes(crc_array);
    let computed = CRC32.checksum(covered);
    let declared = usize::from(header.payload_len);
    if computed != received {
        return Err(if declared > payload.len() {
            LinkError::Truncated { received: len }
        } else {
            LinkError::CrcMismatch { computed, received }
        });
    }
    if declared != payload.len() {
        return Err(LinkError::LengthMismatch {
            declared,
            received: payload.len(),
        });
    }
    Ok(Frame {
        header,
        message: decode(header.message_id, payload)?,
    })
}

/// The request id at the front of a bad frame, from its raw bytes on the
/// wire (COBS-encoded, from its first byte; its end may be missing, and
/// what [`Decoder::feed`] consumed for it will do): `None` when too little
/// of the header decodes to hold it. Unchecked (the frame is bad), but an
/// id a request in flight has tells that request's answer damaged on the
/// wire from the tail of a frame cut short, whose first bytes are from
/// mid-frame. For hosts.
pub fn bad_frame_request_id(raw: &[u8]) -> Option<u16> {
    // Empty frames (lone delimiters) in front are skipped, as `feed` does.
    let raw = &raw[raw.iter().position(|&b| b != DELIMITER)?..];
    // Enough for the blocks that hold its first five bytes: each starts
    // within them and is at most 255 bytes long.
    let mut prefix = [0u8; PREFIX_LEN];
    let n = raw.len().min(prefix.len());
    prefix[..n].copy_from_slice(&raw[..n]);
    let decoded = match cobs::decode_in_place_report(&mut prefix[..n]) {
        Ok(report) => report.dst_used,
        Err(cobs::DecodeError::InvalidFrame { decoded_bytes }) => decoded_bytes,
        Err(_) => 0,
    };
    // The header's message id (1 byte) and sequence number (2) come first.
    (decoded >= 5).then(|| u16::from_le_bytes([prefix[3], prefix[4]]))
}

/// The raw bytes of a frame's start that [`bad_frame_request_id`] reads.
const PREFIX_LEN: usize = 5 + 255 + 1;

/// The first bytes of the frame a [`Decoder`] is reading, kept beside it
/// by a host (a frame may span reads) for [`bad_frame_request_id`].
#[derive(Clone, Debug)]
pub struct FrameStart {
    bytes: [u8; PREFIX_LEN],
    len: usize,
}

impl Default for FrameStart {
    fn default() -> Self {
        Self {
            bytes: [0; PREFIX_LEN],
            len: 0,
        }
    }
}

impl FrameStart {
    /// Notes what one [`Decoder::feed`] consumed; `fresh`: the decoder held
    /// no unfinished frame before it ([`Decoder::buffered`] was 0).
    pub fn note(&mut self, fresh: bool, consumed: &[u8]) {
        if fresh {
            self.len = 0;
        }
        let take = consumed.len().min(self.bytes.len() - self.len);
        self.bytes[self.len..self.len + take].copy_from_slice(&consumed[..take]);
        self.len += take;
    }

    /// [`bad_frame_request_id`] of the bytes noted since the frame began.
    pub fn request_id(&self) -> Option<u16> {
        bad_frame_request_id(&self.bytes[..self.len])
    }
}
