//! The device end of the link: answers the host's requests on any
//! [`SpiTarget`] (the model, or firmware driving the FPGA). `no_std`, no
//! allocation; the caller moves bytes (UART, TCP) and feeds a
//! [`Decoder`](tensorplug_core::link::Decoder).

use tensorplug_core::link::{
    Ack, Frame, LinkError, MAX_BULK_CHUNK, MemoryData, Message, RegisterValue, RemoteErrorCode,
    Session,
};

use crate::transport::spi::slave::{SpiTarget, TargetError};

/// Answers remote-bus requests (register and memory accesses) on a target.
///
/// `Hello` is always answered with `HelloAck` (our version); until a
/// compatible one arrives every other request gets `Error {
/// HandshakeRequired }` (or `IncompatibleVersion`). Op-level requests are
/// `Unsupported` here: [`tensorplug_core::link::OpServer`] answers them on
/// an MCU that runs the driver.
#[derive(Debug)]
pub struct LinkServer {
    session: Session,
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
            session: Session::new(),
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
        let mut session = core::mem::take(&mut self.session);
        let answered = self.answer_in(&mut session, target, frame, out);
        self.session = session;
        answered
    }

    /// [`LinkServer::answer`] in a session shared with other servers (the
    /// firmware's op-level server), which numbers all frames sent.
    ///
    /// # Errors
    /// Encoding errors only (`out` too small).
    pub fn answer_in<T: SpiTarget>(
        &mut self,
        session: &mut Session,
        target: &mut T,
        frame: &Frame<'_>,
        out: &mut [u8],
    ) -> Result<usize, LinkError> {
        if let Some(len) = session.gate(frame, out)? {
            return Ok(len);
        }
        let id = frame.header.request_id;
        let outcome = match &frame.message {
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
            _ => return session.error(id, RemoteErrorCode::Unsupported as u16, 0, out),
        };
        match outcome {
            Ok(message) => session.respond(id, &message, out),
            Err(TargetError::OutOfRange) => {
                session.error(id, RemoteErrorCode::OutOfRange as u16, 0, out)
            }
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
        self.session.answer_bad_frame(error, out)
    }
}
