//! Fuzzes a bitstream image and the config flash's two slots, as
//! `cargo xtask flash` and the driver's boot-slot choice see them: the
//! programmer (`ConfigFlash`) against the model's W25Q128JV.
//!
//! Input: `flags`, slot A's header (64 bytes), slot B's header (64
//! bytes), then an image file (header + payload, at most 16 KiB of
//! payload). Flag bits seal CRCs and set lengths, so that the fuzzer
//! reaches past the CRC checks: bit 0 the image header's CRC, bit 1 its
//! payload length and CRC, bit 2 slot A's header CRC, bit 3 slot B's
//! (a sealed slot's payload length is cut to 16 KiB); bit 4 writes the
//! fixed fields (magic, format, size, this ABI, reserved zeros) into the
//! image's header, bit 5 into both slots' (before sealing).
//!
//! Oracles: no panic; a header that parses re-encodes to the same bytes;
//! a refused image leaves the flash untouched; a programmed image boots
//! next, reads back whole, and leaves the other slot's bytes as they were.

#![no_main]

use std::sync::Mutex;

use embedded_hal::delay::DelayNs;
use libfuzzer_sys::fuzz_target;
use tensorplug_abi::device::flash::{IMAGE_PAYLOAD_OFFSET, ImageSlot};
use tensorplug_abi::device::{
    DEVICE_ABI_VERSION, DRIVER_ABI_REQUIREMENT, IMAGE_FORMAT_VERSION, IMAGE_HEADER_SIZE,
    IMAGE_MAGIC, ImageHeader,
};
use tensorplug_device_fpga::driver::DelayClock;
use tensorplug_device_fpga::flash::{ConfigFlash, NorTimeouts, crc32, validate_image};
use tensorplug_model_fpga::model::TickSource;
use tensorplug_model_fpga::model::nor_flash::{NorFlash, NorTiming};

const FLASH_SIZE: usize = 16 << 20;
const MAX_PAYLOAD: usize = 16 << 10;
/// Bytes of each slot the target touches: the header sector and payload.
const SLOT_SPAN: usize = IMAGE_PAYLOAD_OFFSET as usize + MAX_PAYLOAD;

/// Model time that moves 100 µs at every read, so BUSY periods pass.
struct Ticks(u64);
impl TickSource for Ticks {
    fn now_ticks(&mut self) -> u64 {
        self.0 += 10_000;
        self.0
    }
}

struct NoDelay;
impl DelayNs for NoDelay {
    fn delay_ns(&mut self, _: u32) {}
}

/// One erased flash for the process; each input restores the slot spans.
static FLASH: Mutex<Vec<u8>> = Mutex::new(Vec::new());

fn span(slot: ImageSlot) -> std::ops::Range<usize> {
    let at = slot.offset() as usize;
    at..at + SLOT_SPAN
}

/// Magic, format version, header size, this driver's ABI, reserved zeros.
fn well_formed(head: &mut [u8]) {
    head[0..4].copy_from_slice(&IMAGE_MAGIC.to_le_bytes());
    head[4..6].copy_from_slice(&IMAGE_FORMAT_VERSION.to_le_bytes());
    head[6..8].copy_from_slice(&(IMAGE_HEADER_SIZE as u16).to_le_bytes());
    head[8..12].copy_from_slice(&DEVICE_ABI_VERSION.to_word().to_le_bytes());
    head[28..60].fill(0);
}

fn seal(head: &mut [u8]) {
    let crc = crc32(&head[..60]);
    head[60..64].copy_from_slice(&crc.to_le_bytes());
}

fuzz_target!(|input: &[u8]| {
    let Some((&flags, rest)) = input.split_first() else {
        return;
    };
    let Some((slot_a, rest)) = rest.split_first_chunk::<IMAGE_HEADER_SIZE>() else {
        return;
    };
    let Some((slot_b, image)) = rest.split_first_chunk::<IMAGE_HEADER_SIZE>() else {
        return;
    };
    let mut image = image.to_vec();
    if image.len() >= IMAGE_HEADER_SIZE {
        image.truncate(IMAGE_HEADER_SIZE + MAX_PAYLOAD);
        if flags & 0x10 != 0 {
            well_formed(&mut image[..IMAGE_HEADER_SIZE]);
        }
        if flags & 2 != 0 {
            let payload = &image[IMAGE_HEADER_SIZE..];
            let (len, crc) = (payload.len() as u32, crc32(payload));
            image[16..20].copy_from_slice(&len.to_le_bytes());
            image[20..24].copy_from_slice(&crc.to_le_bytes());
        }
        if flags & 1 != 0 {
            seal(&mut image[..IMAGE_HEADER_SIZE]);
        }
    }
    let mut heads = [*slot_a, *slot_b];
    for (i, head) in heads.iter_mut().enumerate() {
        if flags & 0x20 != 0 {
            well_formed(head);
        }
        if flags & (4 << i) != 0 {
            // A sealed slot stays within the span this target restores.
            let len = u32::from_le_bytes(head[16..20].try_into().expect("4 bytes"));
            let len = len % (MAX_PAYLOAD as u32 + 1);
            head[16..20].copy_from_slice(&len.to_le_bytes());
            seal(head);
        }
        if let Ok(header) = ImageHeader::parse(head, crc32) {
            assert_eq!(&header.to_le_bytes(), head, "a parsed header re-encodes");
        }
    }

    let mut storage = FLASH.lock().unwrap_or_else(|e| e.into_inner());
    if storage.is_empty() {
        storage.resize(FLASH_SIZE, 0xFF);
    }
    for (slot, head) in [ImageSlot::A, ImageSlot::B].into_iter().zip(heads) {
        let span = span(slot);
        storage[span.clone()].fill(0xFF);
        storage[span.start..span.start + IMAGE_HEADER_SIZE].copy_from_slice(&head);
    }
    let before: Vec<Vec<u8>> = [ImageSlot::A, ImageSlot::B]
        .iter()
        .map(|&s| storage[span(s)].to_vec())
        .collect();

    let nor = NorFlash::new(&mut storage[..], Ticks(0), NorTiming::W25Q128JV);
    let mut flash = ConfigFlash::new(nor, DelayClock::new(NoDelay, 1_000), NorTimeouts::default());
    let booting = flash.boot_slot().expect("the model flash answers");
    let valid = validate_image(&image, DRIVER_ABI_REQUIREMENT);
    if let Ok((header, _)) = &valid {
        let bytes = header.to_le_bytes();
        assert_eq!(&bytes[..], &image[..IMAGE_HEADER_SIZE]);
    }
    let programmed = flash.program(&image, DRIVER_ABI_REQUIREMENT, |_| {});
    assert_eq!(
        programmed.is_ok(),
        valid.is_ok(),
        "{programmed:?} vs {valid:?}"
    );
    let after_boot = flash.boot_slot().expect("the model flash answers");
    drop(flash);
    match programmed {
        Err(_) => {
            assert_eq!(after_boot, booting, "a refused image changes nothing");
            for (slot, old) in [ImageSlot::A, ImageSlot::B].into_iter().zip(&before) {
                assert!(
                    storage[span(slot)] == old[..],
                    "a refused image left the flash touched"
                );
            }
        }
        Ok(done) => {
            assert_eq!(after_boot, Some(done.slot), "the new image boots");
            let payload = &image[IMAGE_HEADER_SIZE..];
            let at = done.slot.offset() as usize + IMAGE_PAYLOAD_OFFSET as usize;
            assert!(
                storage[at..at + payload.len()] == *payload,
                "the payload reads back"
            );
            let other = done.slot.other();
            let index = usize::from(other == ImageSlot::B);
            assert!(
                storage[span(other)] == before[index][..],
                "the other slot is untouched"
            );
        }
    }
});
