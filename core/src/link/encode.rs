//! Frame encoding: header, postcard payload and CRC, COBS-encoded straight
//! into the caller's buffer (no scratch copy), then the delimiter.

use super::error::LinkError;
use super::framing::{CRC_LEN, CRC32, DELIMITER, MAX_PAYLOAD_LEN};
use super::header::{FrameHeader, HEADER_LEN, NO_REQUEST};
use super::message::Message;
use postcard::ser_flavors::Flavor;

/// Numbers outgoing frames and assigns request ids.
///
/// One per sender. Sequence numbers count every frame (wrapping); request ids
/// count requests and skip 0, which means "no request".
#[derive(Clone, Debug, Default)]
pub struct Encoder {
    pub(super) next_seq: u16,
    pub(super) last_request_id: u16,
}

impl Encoder {
    /// A sender that has sent nothing yet.
    pub const fn new() -> Self {
        Self {
            next_seq: 0,
            last_request_id: NO_REQUEST,
        }
    }

    /// Encodes a request with a fresh request id.
    ///
    /// Returns the frame length written to `out` and the request id the
    /// response will echo.
    ///
    /// # Errors
    /// See [`encode_frame`]; on error no sequence number or id is used up.
    pub fn request(
        &mut self,
        message: &Message<'_>,
        out: &mut [u8],
    ) -> Result<(usize, u16), LinkError> {
        let request_id = self.next_request_id();
        let len = self.frame(request_id, message, out)?;
        self.last_request_id = request_id;
        Ok((len, request_id))
    }

    /// The request id [`Encoder::request`] gives the next request.
    pub const fn next_request_id(&self) -> u16 {
        match self.last_request_id.wrapping_add(1) {
            NO_REQUEST => 1,
            id => id,
        }
    }

    /// Encodes the answer to the request `request_id` (also a `Completion`,
    /// which answers its `Submit`). Returns the frame length.
    ///
    /// # Errors
    /// See [`encode_frame`].
    pub fn response(
        &mut self,
        request_id: u16,
        message: &Message<'_>,
        out: &mut [u8],
    ) -> Result<usize, LinkError> {
        self.frame(request_id, message, out)
    }

    /// Encodes an unsolicited message (an event batch). Returns the frame
    /// length.
    ///
    /// # Errors
    /// See [`encode_frame`].
    pub fn notification(
        &mut self,
        message: &Message<'_>,
        out: &mut [u8],
    ) -> Result<usize, LinkError> {
        self.frame(NO_REQUEST, message, out)
    }

    fn frame(
        &mut self,
        request_id: u16,
        message: &Message<'_>,
        out: &mut [u8],
    ) -> Result<usize, LinkError> {
        let len = encode_frame(self.next_seq, request_id, message, out)?;
        self.next_seq = self.next_seq.wrapping_add(1);
        Ok(len)
    }
}

/// Encodes one complete frame (COBS data and the trailing `0x00`) into `out`.
///
/// Returns the bytes written. `out` must hold the worst case for this
/// message, `cobs::max_encoding_length(frame) + 1`; a buffer of
/// [`MAX_ENCODED_FRAME_LEN`](super::MAX_ENCODED_FRAME_LEN) always does.
///
/// # Errors
/// [`LinkError::PayloadTooLarge`] when the message does not fit in one frame,
/// [`LinkError::BufferTooSmall`] when `out` is too small. Nothing useful is
/// left in `out` on error.
pub fn encode_frame(
    seq: u16,
    request_id: u16,
    message: &Message<'_>,
    out: &mut [u8],
) -> Result<usize, LinkError> {
    let payload_len = message.payload_len();
    let payload_len_u16 = match u16::try_from(payload_len) {
        Ok(len) if payload_len <= MAX_PAYLOAD_LEN => len,
        _ => {
            return Err(LinkError::PayloadTooLarge {
                len: payload_len,
                limit: MAX_PAYLOAD_LEN,
            });
        }
    };
    let needed = cobs::max_encoding_length(HEADER_LEN + payload_len + CRC_LEN) + 1;
    let too_small = LinkError::BufferTooSmall {
        needed,
        available: out.len(),
    };
    if out.len() < needed {
        return Err(too_small);
    }
    let header = FrameHeader {
        message_id: message.id() as u8,
        seq,
        request_id,
        payload_len: payload_len_u16,
    };
    let (body, _) = out.split_at_mut(needed - 1);
    let mut sink = FrameSink {
        cobs: cobs::CobsEncoder::new(body),
        crc: CRC32.digest(),
    };
    sink.write(&header.to_bytes()).map_err(|_| too_small)?;
    message.write_payload(&mut sink).map_err(|_| too_small)?;
    let crc = sink.crc.finalize();
    sink.cobs.push(&crc.to_le_bytes()).map_err(|_| too_small)?;
    let encoded = sink.cobs.finalize();
    *out.get_mut(encoded).ok_or(too_small)? = DELIMITER;
    Ok(encoded + 1)
}

/// Feeds frame bytes to the COBS encoder and the CRC at once.
struct FrameSink<'a> {
    cobs: cobs::CobsEncoder<'a>,
    crc: crc::Digest<'static, u32>,
}

impl FrameSink<'_> {
    fn write(&mut self, bytes: &[u8]) -> Result<(), cobs::DestBufTooSmallError> {
        self.crc.update(bytes);
        self.cobs.push(bytes)
    }
}

impl Flavor for &mut FrameSink<'_> {
    type Output = ();

    fn try_extend(&mut self, data: &[u8]) -> postcard::Result<()> {
        self.write(data)
            .map_err(|_| postcard::Error::SerializeBufferFull)
    }

    fn try_push(&mut self, data: u8) -> postcard::Result<()> {
        self.try_extend(&[data])
    }

    fn finalize(self) -> postcard::Result<()> {
        Ok(())
    }
}
