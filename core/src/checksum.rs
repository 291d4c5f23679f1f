//! The one CRC-32 (ISO-HDLC) the link's frames and device programs share:
//! one table in flash.

/// CRC-32/ISO-HDLC.
pub(crate) const CRC32: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);
