//! [`LinkTransport`]: the driver's [`Transport`] over the link protocol on
//! any byte stream (a TCP connection, a serial port).

use std::boxed::Box;
use std::io::{self, Read, Write};
use std::time::{Duration, Instant};
use std::vec;
use std::vec::Vec;

use tensorplug_core::link::{
    Decoder, Encoder, FeedResult, FrameStart, Hello, LinkError, LinkErrorKind, MAX_BULK_CHUNK,
    MAX_ENCODED_FRAME_LEN, Message, NO_REQUEST, ReadMemory, ReadRegister, RemoteErrorCode,
    WriteMemory, WriteRegister, negotiate,
};

use crate::transport::{CrcSide, Error, Transport, check_reg_alignment};

/// The error a device without a session answers with.
const HANDSHAKE_REQUIRED: u16 = RemoteErrorCode::HandshakeRequired as u16;

/// The driver's transport over the link protocol.
///
/// Every call is one request (memory accesses: one per 2 KiB chunk) and
/// waits for its answer. The stream's read timeout bounds that wait
/// (`NoResponse` when it runs out); set one (`TcpStream::set_read_timeout`),
/// or a dead peer blocks the call. A device that restarted (it answers
/// `HandshakeRequired`) lost its memory, which the driver on this side
/// still hands out: every call then fails with [`Error::Restarted`] until
/// [`reopen`](Self::reopen), so no buffer silently reads what the restart
/// left. After a call gets no answer, the calls
/// in the next `timeout_ms` fail at once with the same error, then one
/// tries again: a frozen device fails an op within about one timeout, not
/// one per register the driver would read. Event batches the device
/// streams are ignored: the driver reads the device's event ring itself.
/// So is whatever was read before a request was sent (the rest of a
/// damaged answer), and the tail of a frame cut short: one damaged answer
/// fails one call (`docs/link-protocol.md`).
#[derive(Debug)]
pub struct LinkTransport<S> {
    stream: S,
    timeout_ms: u32,
    /// When a call last got no answer, while that is under `timeout_ms` ago.
    silent_since: Option<Instant>,
    encoder: Encoder,
    decoder: Box<Decoder>,
    /// The first bytes of the frame the decoder is reading.
    start: FrameStart,
    tx: Vec<u8>,
    /// Bytes read but not yet fed to the decoder.
    pending: Vec<u8>,
    /// The last bad frame ended early (`Truncated`: most often a `0x00`
    /// where a byte was): the bad frame its tail makes next is the same
    /// damage, not reported again. Cleared by a good frame.
    cut_short: bool,
    /// The device restarted: every call fails until [`reopen`](Self::reopen).
    restarted: bool,
}

impl<S: Read + Write> LinkTransport<S> {
    /// Opens the link on `stream`: `Hello`, then the device's `HelloAck`
    /// checked with `negotiate` (another major version is refused naming
    /// both). `timeout_ms` is the stream's read timeout, for messages.
    ///
    /// # Errors
    /// The transport error of the handshake, or
    /// [`LinkError::IncompatibleVersion`] turned into [`Error::Remote`].
    pub fn connect(stream: S, timeout_ms: u32) -> Result<Self, LinkOpenError> {
        let mut link = Self {
            stream,
            timeout_ms,
            silent_since: None,
            encoder: Encoder::new(),
            decoder: Box::default(),
            start: FrameStart::default(),
            tx: vec![0; MAX_ENCODED_FRAME_LEN],
            pending: Vec::new(),
            cut_short: false,
            restarted: false,
        };
        let ours = Hello::ours();
        let peer = link
            .call(&Message::Hello(ours), |m| match m {
                Message::HelloAck(peer) => Ok(*peer),
                _ => Err(Error::Rejected),
            })
            .map_err(LinkOpenError::Transport)?;
        negotiate(&ours, &peer).map_err(LinkOpenError::Version)?;
        Ok(link)
    }

    /// Opens a new session after the device restarted ([`Error::Restarted`]).
    /// Only for a caller that no longer uses device memory from before the
    /// restart and brings the device up again (the driver's reset).
    ///
    /// # Errors
    /// The transport error of the handshake; `Remote` with
    /// `IncompatibleVersion` if the device now speaks another major version
    /// (other firmware).
    pub fn reopen(&mut self) -> Result<(), Error> {
        let ours = Hello::ours();
        let peer = self.exchange(&Message::Hello(ours), |m| match m {
            Message::HelloAck(peer) => Ok(*peer),
            _ => Err(Error::Rejected),
        })?;
        negotiate(&ours, &peer).map_err(|_| Error::Remote {
            code: RemoteErrorCode::IncompatibleVersion as u16,
            detail: 0,
        })?;
        self.restarted = false;
        self.silent_since = None;
        Ok(())
    }

    /// The byte stream (e.g. to change its timeout).
    pub fn stream_mut(&mut self) -> &mut S {
        &mut self.stream
    }

    /// Sends `request` and hands its answer to `take`.
    fn call<R>(
        &mut self,
        request: &Message<'_>,
        take: impl FnOnce(&Message<'_>) -> Result<R, Error>,
    ) -> Result<R, Error> {
        if self.restarted {
            return Err(Error::Restarted);
        }
        let silent = Error::NoResponse {
            after_ms: self.timeout_ms,
        };
        if let Some(since) = self.silent_since {
            if since.elapsed() < Duration::from_millis(self.timeout_ms.into()) {
                return Err(silent);
            }
            self.silent_since = None;
        }
        let result = self.exchange(request, take);
        match &result {
            Err(e) if *e == silent => self.silent_since = Some(Instant::now()),
            Err(Error::Remote { code, .. })
                if *code == HANDSHAKE_REQUIRED && !matches!(request, Message::Hello(_)) =>
            {
                self.restarted = true;
                return Err(Error::Restarted);
            }
            _ => {}
        }
        result
    }

    /// One request and its answer.
    fn exchange<R>(
        &mut self,
        request: &Message<'_>,
        take: impl FnOnce(&Message<'_>) -> Result<R, Error>,
    ) -> Result<R, Error> {
        let (len, id) = self
            .encoder
            .request(request, &mut self.tx)
            .map_err(|_| Error::Unsupported)?;
        let hello = matches!(request, Message::Hello(_));
        // A `Hello` starts with a lone delimiter: it ends whatever part of a
        // frame the device's decoder still holds from before (a cable
        // plugged in again), which it drops; an idle decoder ignores it.
        let flush: &[u8] = if hello { &[0] } else { &[] };
        self.stream
            .write_all(flush)
            .and_then(|()| self.stream.write_all(&self.tx[..len]))
            .map_err(io_error(self.timeout_ms))?;
        self.stream.flush().map_err(io_error(self.timeout_ms))?;
        let mut take = Some(take);
        // A frame begun before the request went out is not its answer.
        let mut skip_begun_frame = self.drop_stale_input();
        let mut chunk = [0u8; 4096];
        loop {
            let mut input = core::mem::take(&mut self.pending);
            if input.is_empty() {
                let n = self
                    .stream
                    .read(&mut chunk)
                    .map_err(io_error(self.timeout_ms))?;
                if n == 0 {
                    return Err(Error::Disconnected);
                }
                input.extend_from_slice(&chunk[..n]);
            }
            let mut rest: &[u8] = &input;
            while !rest.is_empty() {
                let (fed, fresh) = (rest, self.decoder.buffered() == 0);
                match self.decoder.feed(rest) {
                    FeedResult::Consumed => {
                        self.start.note(fresh, fed);
                        rest = &[];
                    }
                    FeedResult::Frame { remaining, .. } | FeedResult::Error { remaining, .. }
                        if core::mem::take(&mut skip_begun_frame) =>
                    {
                        rest = remaining;
                    }
                    FeedResult::Frame { frame, remaining } => {
                        self.cut_short = false;
                        rest = remaining;
                        if frame.header.request_id == NO_REQUEST
                            && let Message::Error(e) = &frame.message
                        {
                            if hello {
                                // The boot announcement of the MCU we open, or
                                // its word on bytes sent before it restarted.
                                continue;
                            }
                            // The device dropped a frame of ours (e.g. a CRC
                            // error on the wire): the request is lost.
                            self.pending = rest.to_vec();
                            return Err(Error::Remote {
                                code: e.code,
                                detail: e.detail,
                            });
                        }
                        if frame.header.request_id != id {
                            continue; // a notification, or a stale answer
                        }
                        self.pending = rest.to_vec();
                        return match &frame.message {
                            Message::Error(e) => Err(Error::Remote {
                                code: e.code,
                                detail: e.detail,
                            }),
                            message => take.take().map_or(Err(Error::Rejected), |t| t(message)),
                        };
                    }
                    FeedResult::Error { error, remaining } => {
                        // Opening: bytes from before this session; or the
                        // tail of a frame cut short, unless its first bytes
                        // name this request: its answer, damaged on the wire.
                        self.start.note(fresh, &fed[..fed.len() - remaining.len()]);
                        let answers_us = self.start.request_id() == Some(id);
                        if hello || (core::mem::take(&mut self.cut_short) && !answers_us) {
                            rest = remaining;
                            continue;
                        }
                        self.cut_short = error.kind() == LinkErrorKind::Truncated;
                        self.pending = remaining.to_vec();
                        return Err(frame_error(&error));
                    }
                }
            }
        }
    }

    /// Feeds the bytes read before this request to the decoder and drops
    /// what they make (the rest of a damaged answer, a stale one, a
    /// notification): none of it answers the request. True when a frame
    /// is left half read, whose end is not the answer either.
    fn drop_stale_input(&mut self) -> bool {
        let stale = core::mem::take(&mut self.pending);
        let mut rest: &[u8] = &stale;
        while !rest.is_empty() {
            rest = match self.decoder.feed(rest) {
                FeedResult::Consumed => &[],
                FeedResult::Frame { remaining, .. } | FeedResult::Error { remaining, .. } => {
                    self.cut_short = false;
                    remaining
                }
            };
        }
        let begun = self.decoder.buffered() > 0;
        // A cut frame's tail, if begun, is that frame: skipped once.
        self.cut_short &= !begun;
        begun
    }
}

/// Why [`LinkTransport::connect`] failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkOpenError {
    /// The handshake's request failed on the transport.
    Transport(Error),
    /// The device speaks another major version of the link protocol.
    Version(LinkError),
}

impl core::fmt::Display for LinkOpenError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Transport(e) => write!(f, "link handshake failed: {e}"),
            Self::Version(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for LinkOpenError {}

/// A frame we received was bad: CRC → `Crc(Response)`; anything else
/// (cut short, run together, out of protocol) → `BadFrame`. Not
/// `Rejected`: the device rejected nothing.
fn frame_error(error: &LinkError) -> Error {
    match error.kind() {
        LinkErrorKind::Corrupt => Error::Crc(CrcSide::Response),
        kind => Error::BadFrame(kind),
    }
}

fn io_error(timeout_ms: u32) -> impl Fn(io::Error) -> Error {
    move |e| match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Error::NoResponse {
            after_ms: timeout_ms,
        },
        _ => Error::Disconnected,
    }
}

impl<S: Read + Write> Transport for LinkTransport<S> {
    fn read_reg(&mut self, offset: u32) -> Result<u32, Error> {
        check_reg_alignment(offset)?;
        self.call(
            &Message::ReadRegister(ReadRegister { offset }),
            |m| match m {
                Message::RegisterValue(v) if v.offset == offset => Ok(v.value),
                _ => Err(Error::Rejected),
            },
        )
    }

    fn write_reg(&mut self, offset: u32, value: u32) -> Result<(), Error> {
        check_reg_alignment(offset)?;
        let request = Message::WriteRegister(WriteRegister { offset, value });
        self.call(&request, |m| match m {
            Message::Ack(_) => Ok(()),
            _ => Err(Error::Rejected),
        })
    }

    fn read_mem(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), Error> {
        for (i, chunk) in buf.chunks_mut(MAX_BULK_CHUNK).enumerate() {
            let address = addr.wrapping_add((i * MAX_BULK_CHUNK) as u64);
            let len = chunk.len();
            let request = Message::ReadMemory(ReadMemory {
                address,
                len: chunk.len() as u32,
            });
            self.call(&request, |m| match m {
                Message::MemoryData(d) if d.address == address && d.data.len() == chunk.len() => {
                    chunk.copy_from_slice(d.data);
                    Ok(())
                }
                _ => Err(Error::Rejected),
            })
            .map_err(|e| out_of_range(e, address, len))?;
        }
        Ok(())
    }

    fn write_mem(&mut self, addr: u64, data: &[u8]) -> Result<(), Error> {
        for chunk in WriteMemory::chunks(addr, data) {
            self.call(&Message::WriteMemory(chunk), |m| match m {
                Message::Ack(_) => Ok(()),
                _ => Err(Error::Rejected),
            })
            .map_err(|e| out_of_range(e, chunk.address, chunk.data.len()))?;
        }
        Ok(())
    }
}

/// The device's `OutOfRange` answer as the transport's own error.
fn out_of_range(error: Error, addr: u64, len: usize) -> Error {
    match error {
        Error::Remote { code, .. }
            if code == tensorplug_core::link::RemoteErrorCode::OutOfRange as u16 =>
        {
            Error::out_of_range(addr, len)
        }
        other => other,
    }
}
