//! The bitstream image header, stored at the start of each config-flash slot.

use super::le::{put, u16_at, u32_at};
use super::version::{AbiRequirement, AbiVersion, ErrorKind, Features};
use core::fmt;

/// `ImageHeader::magic`: the bytes `"TPBS"` read as a little-endian `u32`.
pub const IMAGE_MAGIC: u32 = 0x5342_5054;
/// `ImageHeader::format_version` this module reads and writes.
pub const IMAGE_FORMAT_VERSION: u16 = 1;
/// Size of an [`ImageHeader`] in bytes.
pub const IMAGE_HEADER_SIZE: usize = 64;
/// Bytes `0..IMAGE_HEADER_CRC_COVERED` are covered by `header_crc32`.
pub const IMAGE_HEADER_CRC_COVERED: usize = 60;

/// The header of a bitstream image: 64 bytes, little-endian, 4-byte aligned.
///
/// Both CRCs are CRC-32/ISO-HDLC (the zlib/Ethernet CRC-32: polynomial
/// 0x04C11DB7 reflected, init and xorout 0xFFFFFFFF; `crc::CRC_32_ISO_HDLC`).
/// The header is programmed last, so a slot whose write was interrupted has
/// an erased or CRC-failing header (see `flash` for the slot rules).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ImageHeader {
    /// [`IMAGE_MAGIC`].
    pub magic: u32,
    /// [`IMAGE_FORMAT_VERSION`].
    pub format_version: u16,
    /// [`IMAGE_HEADER_SIZE`].
    pub header_size: u16,
    /// The device ABI the bitstream implements, as the `ABI_VERSION` word.
    pub abi_version: u32,
    /// The `FEATURES` word the bitstream implements.
    pub features: u32,
    /// Bytes of bitstream payload.
    pub payload_length: u32,
    /// CRC-32 of the payload.
    pub payload_crc32: u32,
    /// Write generation: the valid slot with the newer sequence boots.
    pub sequence: u32,
    /// Must be 0.
    pub _reserved0: [u32; 8],
    /// CRC-32 of header bytes `0..60`.
    pub header_crc32: u32,
}

impl ImageHeader {
    /// An unsealed header (`header_crc32` 0) for a payload.
    pub const fn new(
        abi_version: AbiVersion,
        features: Features,
        payload_length: u32,
        payload_crc32: u32,
        sequence: u32,
    ) -> Self {
        Self {
            magic: IMAGE_MAGIC,
            format_version: IMAGE_FORMAT_VERSION,
            header_size: IMAGE_HEADER_SIZE as u16,
            abi_version: abi_version.to_word(),
            features: features.0,
            payload_length,
            payload_crc32,
            sequence,
            _reserved0: [0; 8],
            header_crc32: 0,
        }
    }

    /// The header with `header_crc32` set; `crc32` computes CRC-32/ISO-HDLC.
    pub fn sealed(mut self, crc32: impl FnOnce(&[u8]) -> u32) -> Self {
        let bytes = self.to_le_bytes();
        self.header_crc32 = crc32(&bytes[..IMAGE_HEADER_CRC_COVERED]);
        self
    }

    /// Decodes and checks a header read from flash: erased, magic, format,
    /// size, reserved words and header CRC. `crc32` computes CRC-32/ISO-HDLC.
    pub fn parse(
        b: &[u8; IMAGE_HEADER_SIZE],
        crc32: impl FnOnce(&[u8]) -> u32,
    ) -> Result<Self, ImageError> {
        if b.iter().all(|&byte| byte == 0xFF) {
            return Err(ImageError::Erased);
        }
        let header = Self::from_le_bytes(b);
        if header.magic != IMAGE_MAGIC {
            return Err(ImageError::WrongMagic {
                found: header.magic,
            });
        }
        let computed = crc32(&b[..IMAGE_HEADER_CRC_COVERED]);
        if computed != header.header_crc32 {
            return Err(ImageError::HeaderCrcMismatch {
                stored: header.header_crc32,
                computed,
            });
        }
        if header.format_version != IMAGE_FORMAT_VERSION
            || usize::from(header.header_size) != IMAGE_HEADER_SIZE
            || header._reserved0 != [0; 8]
        {
            return Err(ImageError::UnsupportedFormat {
                format_version: header.format_version,
            });
        }
        Ok(header)
    }

    /// The ABI version the bitstream implements.
    pub const fn abi(&self) -> AbiVersion {
        AbiVersion::from_word(self.abi_version)
    }

    /// Refuses a bitstream whose ABI fails the compatibility rule.
    pub const fn check_abi(&self, required: AbiRequirement) -> Result<(), ImageError> {
        if required.accepts(self.abi()) {
            Ok(())
        } else {
            Err(ImageError::IncompatibleAbi {
                image: self.abi(),
                required,
            })
        }
    }

    /// Checks a payload's length against the header and the slot size, and
    /// its CRC-32 (`computed`) against `payload_crc32`.
    pub const fn check_payload(&self, length: usize, computed: u32) -> Result<(), ImageError> {
        if self.payload_length as usize > super::flash::IMAGE_MAX_PAYLOAD as usize
            || length != self.payload_length as usize
        {
            return Err(ImageError::BadPayloadLength {
                header: self.payload_length,
                actual: length,
            });
        }
        if computed != self.payload_crc32 {
            return Err(ImageError::PayloadCrcMismatch {
                stored: self.payload_crc32,
                computed,
            });
        }
        Ok(())
    }

    /// Encodes in the flash format.
    pub const fn to_le_bytes(&self) -> [u8; IMAGE_HEADER_SIZE] {
        let mut b = [0u8; IMAGE_HEADER_SIZE];
        put(&mut b, 0, &self.magic.to_le_bytes());
        put(&mut b, 4, &self.format_version.to_le_bytes());
        put(&mut b, 6, &self.header_size.to_le_bytes());
        put(&mut b, 8, &self.abi_version.to_le_bytes());
        put(&mut b, 12, &self.features.to_le_bytes());
        put(&mut b, 16, &self.payload_length.to_le_bytes());
        put(&mut b, 20, &self.payload_crc32.to_le_bytes());
        put(&mut b, 24, &self.sequence.to_le_bytes());
        let mut i = 0;
        while i < 8 {
            put(&mut b, 28 + 4 * i, &self._reserved0[i].to_le_bytes());
            i += 1;
        }
        put(&mut b, 60, &self.header_crc32.to_le_bytes());
        b
    }

    /// Decodes the flash format without checking it (see [`parse`](Self::parse)).
    pub const fn from_le_bytes(b: &[u8; IMAGE_HEADER_SIZE]) -> Self {
        let mut reserved = [0u32; 8];
        let mut i = 0;
        while i < 8 {
            reserved[i] = u32_at(b, 28 + 4 * i);
            i += 1;
        }
        Self {
            magic: u32_at(b, 0),
            format_version: u16_at(b, 4),
            header_size: u16_at(b, 6),
            abi_version: u32_at(b, 8),
            features: u32_at(b, 12),
            payload_length: u32_at(b, 16),
            payload_crc32: u32_at(b, 20),
            sequence: u32_at(b, 24),
            _reserved0: reserved,
            header_crc32: u32_at(b, 60),
        }
    }
}

/// Why a bitstream image (or a flash slot) cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ImageError {
    /// The header bytes are all 0xFF: the slot was erased and never completed.
    Erased,
    /// `magic` is not [`IMAGE_MAGIC`].
    WrongMagic {
        /// The word that was read.
        found: u32,
    },
    /// The header CRC fails: corrupt, or its programming was interrupted.
    HeaderCrcMismatch {
        /// `header_crc32` as stored.
        stored: u32,
        /// CRC-32 of bytes `0..60`.
        computed: u32,
    },
    /// A header format this module does not read.
    UnsupportedFormat {
        /// `format_version` as stored.
        format_version: u16,
    },
    /// The payload length disagrees with the header or exceeds a slot.
    BadPayloadLength {
        /// `payload_length` as stored.
        header: u32,
        /// The payload's actual length.
        actual: usize,
    },
    /// The payload CRC fails.
    PayloadCrcMismatch {
        /// `payload_crc32` as stored.
        stored: u32,
        /// CRC-32 of the payload.
        computed: u32,
    },
    /// The bitstream implements an ABI the driver cannot use.
    IncompatibleAbi {
        /// The image's ABI version.
        image: AbiVersion,
        /// What the driver needs.
        required: AbiRequirement,
    },
}

impl ImageError {
    /// The coarse kind of this error.
    pub const fn kind(&self) -> ErrorKind {
        match self {
            Self::Erased => ErrorKind::Empty,
            Self::WrongMagic { .. } => ErrorKind::NotTensorplug,
            Self::IncompatibleAbi { .. } => ErrorKind::Incompatible,
            Self::HeaderCrcMismatch { .. }
            | Self::UnsupportedFormat { .. }
            | Self::BadPayloadLength { .. }
            | Self::PayloadCrcMismatch { .. } => ErrorKind::Corrupt,
        }
    }
}

impl fmt::Display for ImageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Erased => f.write_str("no bitstream image: the header is erased"),
            Self::WrongMagic { found } => write!(
                f,
                "not a tensorplug bitstream image: magic {found:#010x}, expected {IMAGE_MAGIC:#010x}"
            ),
            Self::HeaderCrcMismatch { stored, computed } => write!(
                f,
                "bitstream image header is corrupt: CRC-32 {computed:#010x}, header says {stored:#010x}"
            ),
            Self::UnsupportedFormat { format_version } => write!(
                f,
                "bitstream image header format {format_version} is not supported (expected {IMAGE_FORMAT_VERSION})"
            ),
            Self::BadPayloadLength { header, actual } => write!(
                f,
                "bitstream payload is {actual} bytes but the header says {header} (slot limit {})",
                super::flash::IMAGE_MAX_PAYLOAD
            ),
            Self::PayloadCrcMismatch { stored, computed } => write!(
                f,
                "bitstream payload is corrupt: CRC-32 {computed:#010x}, header says {stored:#010x}"
            ),
            Self::IncompatibleAbi { image, required } => write!(
                f,
                "bitstream image ABI {image} is incompatible with this driver (needs {}.x, x \u{2265} {})",
                required.major, required.min_minor
            ),
        }
    }
}

impl core::error::Error for ImageError {}
