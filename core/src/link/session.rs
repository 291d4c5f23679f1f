//! The device end's side of one link session: the handshake gate and the
//! one encoder that numbers every frame the device sends.

use super::decode::Frame;
use super::encode::Encoder;
use super::error::LinkError;
use super::handshake::negotiate;
use super::header::NO_REQUEST;
use super::message::{ErrorResponse, Hello, Message, MessageClass, RemoteErrorCode};

/// Where the handshake stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
enum Opened {
    No,
    Incompatible,
    Yes,
}

/// The device end of a link: answers `Hello` and `Ping`, refuses everything
/// else until a compatible `Hello`, and encodes every frame it sends (one
/// sequence counter, whichever server builds the answer).
#[derive(Debug)]
pub struct Session {
    encoder: Encoder,
    opened: Opened,
}

impl Default for Session {
    fn default() -> Self {
        Self::new()
    }
}

impl Session {
    /// A session before the handshake.
    pub const fn new() -> Self {
        Self {
            encoder: Encoder::new(),
            opened: Opened::No,
        }
    }

    /// Whether a compatible `Hello` has been seen.
    pub fn is_open(&self) -> bool {
        self.opened == Opened::Yes
    }

    /// Answers what the session itself answers: a frame that is no request
    /// (nothing to send: `Some(0)`), `Hello`, `Ping`, and any request before a
    /// compatible `Hello`. `None`: the request is the caller's to answer.
    ///
    /// # Errors
    /// Encoding errors only (`out` smaller than `MAX_ENCODED_FRAME_LEN`).
    pub fn gate(&mut self, frame: &Frame<'_>, out: &mut [u8]) -> Result<Option<usize>, LinkError> {
        let id = frame.header.request_id;
        if frame.message.id().class() != MessageClass::Request {
            return Ok(Some(0));
        }
        if let Message::Hello(peer) = &frame.message {
            let ours = Hello::ours();
            self.opened = match negotiate(&ours, peer) {
                Ok(_) => Opened::Yes,
                Err(_) => Opened::Incompatible,
            };
            return self.respond(id, &Message::HelloAck(ours), out).map(Some);
        }
        let code = match self.opened {
            Opened::Yes => {
                if let Message::Ping(ping) = &frame.message {
                    return self.respond(id, &Message::Pong(*ping), out).map(Some);
                }
                return Ok(None);
            }
            Opened::No => RemoteErrorCode::HandshakeRequired,
            Opened::Incompatible => RemoteErrorCode::IncompatibleVersion,
        };
        self.error(id, code as u16, 0, out).map(Some)
    }

    /// Encodes the answer to request `id`.
    ///
    /// # Errors
    /// Encoding errors only.
    pub fn respond(
        &mut self,
        id: u16,
        message: &Message<'_>,
        out: &mut [u8],
    ) -> Result<usize, LinkError> {
        self.encoder.response(id, message, out)
    }

    /// Encodes `Error { code, detail }` answering request `id`.
    ///
    /// # Errors
    /// Encoding errors only.
    pub fn error(
        &mut self,
        id: u16,
        code: u16,
        detail: u32,
        out: &mut [u8],
    ) -> Result<usize, LinkError> {
        let body = ErrorResponse { code, detail };
        self.encoder.response(id, &Message::Error(body), out)
    }

    /// Encodes an unsolicited message (request id 0).
    ///
    /// # Errors
    /// Encoding errors only.
    pub fn notify(&mut self, message: &Message<'_>, out: &mut [u8]) -> Result<usize, LinkError> {
        self.encoder.notification(message, out)
    }

    /// Answers a frame the decoder dropped: `Error { BadFrame }` with the
    /// error's kind as detail and request id 0 (the frame's id is unknown).
    ///
    /// # Errors
    /// Encoding errors only.
    pub fn answer_bad_frame(
        &mut self,
        error: &LinkError,
        out: &mut [u8],
    ) -> Result<usize, LinkError> {
        let code = RemoteErrorCode::BadFrame as u16;
        self.error(NO_REQUEST, code, error.kind() as u32, out)
    }
}
