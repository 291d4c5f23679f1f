//! The one error type every [`Transport`](super::Transport) returns.

use tensorplug_core::link::LinkErrorKind;

/// Which side of an SPI exchange a CRC failure was seen on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum CrcSide {
    /// The device received a request whose CRC did not match (it reported so).
    Request,
    /// The host received a response whose CRC did not match.
    Response,
}

/// A bus-level fault reported by the underlying peripheral (SPI controller,
/// ...). Mirrors `embedded_hal::spi::ErrorKind` so it can derive `defmt`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum BusFault {
    /// Received data was lost because it was not read in time.
    Overrun,
    /// Multi-master mode fault.
    ModeFault,
    /// The controller reported a frame-format error.
    FrameFormat,
    /// The chip select could not be asserted or released.
    ChipSelectFault,
    /// Any other peripheral error.
    Other,
}

impl From<embedded_hal::spi::ErrorKind> for BusFault {
    fn from(kind: embedded_hal::spi::ErrorKind) -> Self {
        use embedded_hal::spi::ErrorKind as K;
        match kind {
            K::Overrun => Self::Overrun,
            K::ModeFault => Self::ModeFault,
            K::FrameFormat => Self::FrameFormat,
            K::ChipSelectFault => Self::ChipSelectFault,
            _ => Self::Other,
        }
    }
}

/// What went wrong in a transport operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Error {
    /// A frame failed its CRC check.
    Crc(CrcSide),
    /// A response was not a well-formed frame: unknown status byte, or it
    /// answers a different request (sequence number mismatch).
    Framing {
        /// The status byte received.
        status: u8,
        /// The sequence number expected in the response.
        expected_seq: u8,
        /// The sequence number received.
        seq: u8,
    },
    /// The device rejected the request as malformed (unknown command, bad
    /// length).
    Rejected,
    /// The device stayed busy for every one of `polls` status polls.
    Timeout {
        /// How many polls were made before giving up.
        polls: u32,
    },
    /// `addr..addr + len` is outside the register space, memory or window.
    OutOfRange {
        /// Start of the offending access.
        addr: u64,
        /// Its length in bytes.
        len: u64,
    },
    /// A register offset (or a region base) is not 4-byte aligned.
    Misaligned {
        /// The offending offset or address.
        addr: u64,
    },
    /// The underlying bus reported a fault.
    Bus(BusFault),
    /// The transport cannot do this (e.g. DMA over SPI).
    Unsupported,
    /// No answer within the transport's read timeout (link transport).
    NoResponse {
        /// The timeout that ran out, in milliseconds.
        after_ms: u32,
    },
    /// The connection to the device closed or failed (link transport).
    Disconnected,
    /// The device answered with an error (link protocol
    /// `RemoteErrorCode` and its detail).
    Remote {
        /// The `RemoteErrorCode` as sent.
        code: u16,
        /// Code-specific detail.
        detail: u32,
    },
    /// The device restarted (link transport): its memory and state are
    /// gone, so the link fails every call until it is reopened.
    Restarted,
    /// A frame from the device did not decode, for a reason other than its
    /// CRC (that is [`Crc`](Self::Crc)) (link transport): cut short or run
    /// together on the wire, or the device out of protocol.
    BadFrame(LinkErrorKind),
}

/// Category of an [`Error`], in the embedded-hal style.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ErrorKind {
    /// Data was damaged on the wire (a CRC mismatch, or a frame cut
    /// short or run into the next).
    Crc,
    /// The peer spoke out of protocol, or rejected a malformed request.
    Framing,
    /// A bounded wait ran out.
    Timeout,
    /// An address or length is outside what the device or window has.
    OutOfRange,
    /// An address is not suitably aligned.
    Misaligned,
    /// The bus peripheral failed.
    Bus,
    /// The operation is not available on this transport.
    Unsupported,
}

impl Error {
    /// The error's category.
    pub const fn kind(&self) -> ErrorKind {
        match self {
            Self::Crc(_) => ErrorKind::Crc,
            Self::Framing { .. } | Self::Rejected | Self::Remote { .. } => ErrorKind::Framing,
            Self::Timeout { .. } | Self::NoResponse { .. } => ErrorKind::Timeout,
            Self::Disconnected | Self::Restarted => ErrorKind::Bus,
            Self::OutOfRange { .. } => ErrorKind::OutOfRange,
            Self::Misaligned { .. } => ErrorKind::Misaligned,
            Self::Bus(_) => ErrorKind::Bus,
            Self::Unsupported => ErrorKind::Unsupported,
            Self::BadFrame(
                LinkErrorKind::Truncated | LinkErrorKind::Oversized | LinkErrorKind::Corrupt,
            ) => ErrorKind::Crc,
            Self::BadFrame(_) => ErrorKind::Framing,
        }
    }

    /// `OutOfRange` for `addr..addr + len`.
    pub(crate) fn out_of_range(addr: u64, len: usize) -> Self {
        Self::OutOfRange {
            addr,
            len: len as u64,
        }
    }
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Crc(CrcSide::Request) => {
                f.write_str("the device saw a CRC mismatch in our request")
            }
            Self::Crc(CrcSide::Response) => f.write_str("CRC mismatch in the device's response"),
            Self::Framing {
                status,
                expected_seq,
                seq,
            } => write!(
                f,
                "malformed response: status {status:#04x}, sequence {seq} (expected {expected_seq})"
            ),
            Self::Rejected => f.write_str("the device rejected the request as malformed"),
            Self::Timeout { polls } => write!(f, "device still busy after {polls} status polls"),
            Self::OutOfRange { addr, len } => {
                write!(f, "access of {len} bytes at {addr:#x} is out of range")
            }
            Self::Misaligned { addr } => write!(f, "address {addr:#x} is not 4-byte aligned"),
            Self::Bus(fault) => write!(f, "bus fault: {fault:?}"),
            Self::Unsupported => f.write_str("operation not supported by this transport"),
            Self::NoResponse { after_ms } => {
                write!(f, "no answer from the device within {after_ms} ms")
            }
            Self::Disconnected => f.write_str("the connection to the device closed"),
            Self::Restarted => f.write_str(
                "the device restarted, and its memory with it: the link stays failed until \
                 it is reopened (in TF: restart the process)",
            ),
            Self::BadFrame(kind) => write!(
                f,
                "a frame from the device did not decode: {}",
                bad_frame_reason(*kind)
            ),
            Self::Remote { code, detail } => write!(
                f,
                "the device answered with error {code} ({}), detail {detail:#x}",
                remote_code_name(*code)
            ),
        }
    }
}

impl core::error::Error for Error {}

/// Why a frame from the device did not decode, for people.
const fn bad_frame_reason(kind: LinkErrorKind) -> &'static str {
    match kind {
        LinkErrorKind::Truncated => "it ended early (bytes lost or damaged on the wire)",
        LinkErrorKind::Oversized => {
            "no delimiter within the size limit (bytes lost or damaged on the wire)"
        }
        LinkErrorKind::Corrupt => "CRC mismatch",
        LinkErrorKind::UnknownMessage => "a message this host does not know",
        LinkErrorKind::Malformed => "its payload is malformed",
        LinkErrorKind::Incompatible => "an incompatible protocol version",
        _ => "it is not a frame of this protocol",
    }
}

/// The name of a link-protocol `RemoteErrorCode`.
fn remote_code_name(code: u16) -> &'static str {
    use tensorplug_core::link::RemoteErrorCode as C;
    match C::from_u16(code) {
        Some(C::HandshakeRequired) => "handshake required",
        Some(C::IncompatibleVersion) => "incompatible protocol version",
        Some(C::Unsupported) => "unsupported request",
        Some(C::OutOfRange) => "out of range",
        Some(C::Busy) => "busy",
        Some(C::DeviceFault) => "device fault",
        Some(C::BadFrame) => "bad frame",
        _ => "unknown code",
    }
}
