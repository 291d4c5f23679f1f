//! The device end of the link: answers the host's requests on any
//! [`SpiTarget`] (the model, or firmware driving the FPGA). `no_std`, no
//! allocation; the caller moves bytes (UART, TCP) and feeds a
//! [`Decoder`](tensorplug_core::link::Decoder).

use tensorplug_core::link::{
    Ack, Encoder, ErrorResponse, Frame, Hello, LinkError, MAX_BULK_CHUNK, MemoryData, Message,
    MessageClass, NO_REQUEST, RegisterValue, RemoteErrorCode, negotiate,
};

use crate::transport::spi::slave::{SpiTarget, TargetError};

/// Where the handshake stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Opened {
    /// No `Hello` yet.
    No,
    /// The last `Hello` spoke another major version.
    Incompatible,
    /// A compatible `Hello` was seen.
    Yes,
}

/// Answers link requests with register and memory accesses on a target.
///
/// `Hello` is always answered with `HelloAck` (our version); until a
/// compatible one arrives every other request gets `Error {
/// HandshakeRequired }` (or `IncompatibleVersion`). `Submit` and
/// `SetProfiling` are `Unsupported`: the reference driver drives the
/// device's own rings through register and memory accesses.
#[derive(Debug)]
pub struct LinkServer {
    encoder: Encoder,
    opened: Opened,
    scratch: [u8; MAX_BULK_CHUNK],
}

impl Default for LinkServer {
    fn default() -> Self {
        Self::new()
    }
}

impl LinkServer {
    /// A server before the handshake.
    pub const fn new() -> Self {
        Self {
            encoder: Encoder::new(),
            opened: Opened::No,
            scratch: [0; MAX_BULK_CHUNK],
        }
    }

    /// Forgets the handshake (a new connection).
    pub fn reset(&mut self) {
        *self = Self::new();
    }

    /// Answers one good frame: encodes the response into `out` (which must
    /// hold [`MAX_ENCODED_FRAME_LEN`](tensorplug_core::link::MAX_ENCODED_FRAME_LEN)
    /// bytes) and returns its length; 0 when the frame needs no answer (a
    /// response or notification sent to us).
    ///
    /// # Errors
    /// Encoding errors only (`out` too small).
    pub fn answer<T: SpiTarget>(
        &mut self,
        target: &mut T,
        frame: &Frame<'_>,
        out: &mut [u8],
    ) -> Result<usize, LinkError> {
        let id = frame.header.request_id;
        if frame.message.id().class() != MessageClass::Request {
            return Ok(0);
        }
        if let Message::Hello(peer) = &frame.message {
            let ours = Hello::ours();
            self.opened = match negotiate(&ours, peer) {
                Ok(_) => Opened::Yes,
                Err(_) => Opened::Incompatible,
            };
            return self.encoder.response(id, &Message::HelloAck(ours), out);
        }
        let refused = match self.opened {
            Opened::Yes => None,
            Opened::No => Some(RemoteErrorCode::HandshakeRequired),
            Opened::Incompatible => Some(RemoteErrorCode::IncompatibleVersion),
        };
        if let Some(code) = refused {
            return self.error(id, code, 0, out);
        }
        let outcome = match &frame.message {
            Message::Ping(ping) => Ok(Message::Pong(*ping)),
            Message::ReadRegister(r) => target.read_reg(r.offset).map(|value| {
                Message::RegisterValue(RegisterValue {
                    offset: r.offset,
                    value,
                })
            }),
            Message::WriteRegister(w) => target
                .write_reg(w.offset, w.value)
                .map(|()| Message::Ack(Ack)),
            Message::ReadMemory(r) => {
                let len = r.len as usize;
                match self.scratch.get_mut(..len) {
                    None => Err(TargetError::OutOfRange),
                    Some(buf) => target.read_mem(r.address, buf).map(|()| {
                        Message::MemoryData(MemoryData {
                            address: r.address,
                            data: &self.scratch[..len],
                        })
                    }),
                }
            }
            Message::WriteMemory(w) => target
                .write_mem(w.address, w.data)
                .map(|()| Message::Ack(Ack)),
            _ => return self.error(id, RemoteErrorCode::Unsupported, 0, out),
        };
        match outcome {
            Ok(message) => self.encoder.response(id, &message, out),
            Err(TargetError::OutOfRange) => self.error(id, RemoteErrorCode::OutOfRange, 0, out),
        }
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
        self.error(
            NO_REQUEST,
            RemoteErrorCode::BadFrame,
            error.kind() as u32,
            out,
        )
    }

    fn error(
        &mut self,
        id: u16,
        code: RemoteErrorCode,
        detail: u32,
        out: &mut [u8],
    ) -> Result<usize, LinkError> {
        let body = ErrorResponse {
            code: code as u16,
            detail,
        };
        self.encoder.response(id, &Message::Error(body), out)
    }
}
