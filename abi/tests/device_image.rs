//! The bitstream image header and the two-slot config-flash rules,
//! including interrupted writes.

use crc::{CRC_32_ISO_HDLC, Crc};
use tensorplug_abi::device::flash::{
    IMAGE_MAX_PAYLOAD, ImageSlot, boot_slot, sequence_is_newer, write_target,
};
use tensorplug_abi::device::{
    AbiRequirement, AbiVersion, DRIVER_ABI_REQUIREMENT, ErrorKind, IMAGE_HEADER_SIZE, IMAGE_MAGIC,
    ImageError, ImageHeader, REFERENCE_FEATURES,
};

const CRC32: Crc<u32> = Crc::<u32>::new(&CRC_32_ISO_HDLC);

fn crc32(bytes: &[u8]) -> u32 {
    CRC32.checksum(bytes)
}

fn sealed_header(payload: &[u8], abi: AbiVersion, sequence: u32) -> ImageHeader {
    let length = u32::try_from(payload.len()).unwrap();
    ImageHeader::new(abi, REFERENCE_FEATURES, length, crc32(payload), sequence).sealed(crc32)
}

#[test]
fn crc_is_the_zlib_crc32() {
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
}

#[test]
fn magic_is_tpbs_in_little_endian() {
    assert_eq!(IMAGE_MAGIC, u32::from_le_bytes(*b"TPBS"));
}

#[test]
fn sealed_header_parses_and_payload_checks() {
    let payload = b"bitstream bytes".repeat(100);
    let header = sealed_header(&payload, AbiVersion::new(1, 0, 3), 7);
    let parsed = ImageHeader::parse(&header.to_le_bytes(), crc32).unwrap();
    assert_eq!(parsed, header);
    assert_eq!(parsed.abi(), AbiVersion::new(1, 0, 3));
    assert_eq!(parsed.check_abi(DRIVER_ABI_REQUIREMENT), Ok(()));
    assert_eq!(parsed.check_payload(payload.len(), crc32(&payload)), Ok(()));
}

#[test]
fn erased_header_is_an_empty_slot() {
    let err = ImageHeader::parse(&[0xFF; IMAGE_HEADER_SIZE], crc32).unwrap_err();
    assert_eq!(err, ImageError::Erased);
    assert_eq!(err.kind(), ErrorKind::Empty);
}

#[test]
fn every_interrupted_header_program_is_detected() {
    // NOR programming turns erased 0xFF bytes into data in address order; a
    // power cut after `n` bytes leaves the rest erased.
    let header = sealed_header(b"payload", AbiVersion::new(1, 0, 0), 1).to_le_bytes();
    for n in 0..IMAGE_HEADER_SIZE {
        let mut partial = [0xFF; IMAGE_HEADER_SIZE];
        partial[..n].copy_from_slice(&header[..n]);
        let err = ImageHeader::parse(&partial, crc32).unwrap_err();
        assert!(
            matches!(
                err.kind(),
                ErrorKind::Empty | ErrorKind::Corrupt | ErrorKind::NotTensorplug
            ),
            "{n} bytes programmed: {err:?}"
        );
    }
}

#[test]
fn every_single_bit_flip_is_detected() {
    let header = sealed_header(b"payload", AbiVersion::new(1, 0, 0), 1).to_le_bytes();
    for bit in 0..IMAGE_HEADER_SIZE * 8 {
        let mut bad = header;
        bad[bit / 8] ^= 1 << (bit % 8);
        assert!(ImageHeader::parse(&bad, crc32).is_err(), "bit {bit}");
    }
}

#[test]
fn wrong_magic_and_corrupt_crc_have_specific_errors() {
    let mut header = sealed_header(b"p", AbiVersion::new(1, 0, 0), 1);
    header.magic = 0x1234_5678;
    let err = ImageHeader::parse(&header.sealed(crc32).to_le_bytes(), crc32).unwrap_err();
    assert_eq!(err, ImageError::WrongMagic { found: 0x1234_5678 });

    let mut bytes = sealed_header(b"p", AbiVersion::new(1, 0, 0), 1).to_le_bytes();
    bytes[24] ^= 0x01; // sequence
    assert!(matches!(
        ImageHeader::parse(&bytes, crc32),
        Err(ImageError::HeaderCrcMismatch { .. })
    ));
}

#[test]
fn unknown_format_or_nonzero_reserved_is_unsupported() {
    let mut header = sealed_header(b"p", AbiVersion::new(1, 0, 0), 1);
    header.format_version = 2;
    let err = ImageHeader::parse(&header.sealed(crc32).to_le_bytes(), crc32).unwrap_err();
    assert_eq!(err, ImageError::UnsupportedFormat { format_version: 2 });

    let mut header = sealed_header(b"p", AbiVersion::new(1, 0, 0), 1);
    header._reserved0[3] = 1;
    let err = ImageHeader::parse(&header.sealed(crc32).to_le_bytes(), crc32).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt);
}

#[test]
fn incompatible_image_is_refused_with_both_versions() {
    let header = sealed_header(b"p", AbiVersion::new(2, 0, 1), 1);
    let needs = AbiRequirement {
        major: 1,
        min_minor: 3,
    };
    let err = header.check_abi(needs).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Incompatible);
    assert_eq!(
        err.to_string(),
        "bitstream image ABI 2.0.1 is incompatible with this driver (needs 1.x, x \u{2265} 3)"
    );
}

#[test]
fn payload_length_and_crc_mismatches_are_reported() {
    let header = sealed_header(b"abcd", AbiVersion::new(1, 0, 0), 1);
    assert_eq!(
        header.check_payload(3, crc32(b"abc")),
        Err(ImageError::BadPayloadLength {
            header: 4,
            actual: 3
        })
    );
    assert_eq!(
        header.check_payload(4, crc32(b"abce")),
        Err(ImageError::PayloadCrcMismatch {
            stored: crc32(b"abcd"),
            computed: crc32(b"abce")
        })
    );
    let too_big = ImageHeader::new(
        AbiVersion::new(1, 0, 0),
        REFERENCE_FEATURES,
        IMAGE_MAX_PAYLOAD + 1,
        0,
        1,
    );
    assert!(matches!(
        too_big.check_payload(IMAGE_MAX_PAYLOAD as usize + 1, 0),
        Err(ImageError::BadPayloadLength { .. })
    ));
}

#[test]
fn newest_valid_slot_boots_and_writes_go_to_the_other() {
    assert_eq!(boot_slot(None, None), None);
    assert_eq!(boot_slot(Some(3), None), Some(ImageSlot::A));
    assert_eq!(boot_slot(None, Some(3)), Some(ImageSlot::B));
    assert_eq!(boot_slot(Some(3), Some(4)), Some(ImageSlot::B));
    assert_eq!(boot_slot(Some(5), Some(4)), Some(ImageSlot::A));
    assert_eq!(boot_slot(Some(4), Some(4)), Some(ImageSlot::A));

    assert_eq!(write_target(None, None), (ImageSlot::A, 1));
    assert_eq!(write_target(Some(1), None), (ImageSlot::B, 2));
    assert_eq!(write_target(Some(1), Some(2)), (ImageSlot::A, 3));
    assert_eq!(ImageSlot::B.offset(), 0x0080_0000);
    assert_eq!(ImageSlot::A.other(), ImageSlot::B);
}

#[test]
fn an_interrupted_update_keeps_booting_the_old_image() {
    // Slot A holds generation 5; an update to B is cut short, so B is invalid.
    let (target, sequence) = write_target(Some(5), None);
    assert_eq!((target, sequence), (ImageSlot::B, 6));
    assert_eq!(boot_slot(Some(5), None), Some(ImageSlot::A));
    // Once B's header is programmed and valid, B boots.
    assert_eq!(boot_slot(Some(5), Some(sequence)), Some(ImageSlot::B));
}

#[test]
fn sequence_comparison_survives_wrapping() {
    assert!(sequence_is_newer(1, 0));
    assert!(sequence_is_newer(0, u32::MAX));
    assert!(!sequence_is_newer(u32::MAX, 0));
    assert!(!sequence_is_newer(7, 7));
    assert_eq!(write_target(Some(u32::MAX), None), (ImageSlot::B, 0));
    assert_eq!(boot_slot(Some(u32::MAX), Some(0)), Some(ImageSlot::B));
}
