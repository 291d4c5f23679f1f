//! The config-flash programmer against the model's W25Q128JV: good images
//! alternate slots, bad images are refused before any erase (the flash is
//! checked untouched), interrupted writes leave the old slot booting, and
//! read-back mismatches are caught.

use core::convert::Infallible;

use embedded_hal::delay::DelayNs;
use embedded_hal::spi::{ErrorType, Operation, SpiDevice};
use tensorplug_abi::device::flash::{IMAGE_PAYLOAD_OFFSET, ImageSlot};
use tensorplug_abi::device::{
    AbiVersion, DEVICE_ABI_VERSION, DRIVER_ABI_REQUIREMENT, ImageError, ImageHeader,
    REFERENCE_FEATURES,
};
use tensorplug_device_fpga::driver::DelayClock;
use tensorplug_device_fpga::flash::{
    ConfigFlash, ErrorKind, FlashError, NorTimeouts, Phase, Progress, crc32,
};
use tensorplug_model_fpga::model::TickSource;
use tensorplug_model_fpga::model::nor_flash::{NorFlash, NorTiming};

const FLASH_SIZE: usize = 16 << 20;

/// Model time that moves 100 µs (at 100 MHz) every time it is read, so
/// the flash's BUSY periods pass after a bounded number of status polls.
struct Ticks(u64);
impl TickSource for Ticks {
    fn now_ticks(&mut self) -> u64 {
        self.0 += 10_000;
        self.0
    }
}

/// A delay that only counts: the programmer's timeouts run on virtual time.
struct NoDelay;
impl DelayNs for NoDelay {
    fn delay_ns(&mut self, _: u32) {}
}

type Nor = NorFlash<Vec<u8>, Ticks>;

fn blank_nor() -> Nor {
    NorFlash::new(vec![0xFF; FLASH_SIZE], Ticks(0), NorTiming::W25Q128JV)
}

fn programmer<S: SpiDevice>(spi: S) -> ConfigFlash<S, DelayClock<NoDelay>> {
    ConfigFlash::new(spi, DelayClock::new(NoDelay, 1_000), NorTimeouts::default())
}

/// A sealed image of `payload` implementing ABI `abi`.
fn image(payload: &[u8], abi: AbiVersion) -> Vec<u8> {
    let header = ImageHeader::new(
        abi,
        REFERENCE_FEATURES,
        payload.len() as u32,
        crc32(payload),
        0,
    )
    .sealed(crc32);
    let mut out = header.to_le_bytes().to_vec();
    out.extend_from_slice(payload);
    out
}

fn payload(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn slot_payload(flash: &[u8], slot: ImageSlot, len: usize) -> &[u8] {
    let at = (slot.offset() + IMAGE_PAYLOAD_OFFSET) as usize;
    &flash[at..at + len]
}

#[test]
fn good_images_alternate_slots_and_boot() {
    let mut flash = programmer(blank_nor());
    assert_eq!(flash.boot_slot().unwrap(), None);
    let first = payload(10_000, 1);
    let mut seen: Vec<Progress> = Vec::new();
    let done = flash
        .program(
            &image(&first, DEVICE_ABI_VERSION),
            DRIVER_ABI_REQUIREMENT,
            |p| seen.push(p),
        )
        .unwrap();
    assert_eq!((done.slot, done.sequence), (ImageSlot::A, 1));
    assert_eq!(flash.boot_slot().unwrap(), Some(ImageSlot::A));

    // Progress: erase, then program, then verify; each counts up to its total.
    let phases: Vec<Phase> = seen.iter().map(|p| p.phase).collect();
    let first_program = phases.iter().position(|&p| p == Phase::Program).unwrap();
    assert!(phases[..first_program].iter().all(|&p| p == Phase::Erase));
    for phase in [Phase::Erase, Phase::Program, Phase::Verify] {
        let steps: Vec<&Progress> = seen.iter().filter(|p| p.phase == phase).collect();
        assert!(
            steps.windows(2).all(|w| w[0].done <= w[1].done),
            "{phase:?} not monotonic"
        );
        let last = steps.last().unwrap();
        assert_eq!(last.done, last.total, "{phase:?} incomplete");
    }
    // 1 header sector + 3 payload sectors; payload + header bytes programmed.
    assert_eq!(seen[0].total, 4 * 4096);
    assert_eq!(
        seen.iter()
            .find(|p| p.phase == Phase::Program)
            .unwrap()
            .total,
        10_064
    );

    let second = payload(5_000, 2);
    let done = flash
        .program(
            &image(&second, DEVICE_ABI_VERSION),
            DRIVER_ABI_REQUIREMENT,
            |_| {},
        )
        .unwrap();
    assert_eq!((done.slot, done.sequence), (ImageSlot::B, 2));
    assert_eq!(flash.boot_slot().unwrap(), Some(ImageSlot::B));
    let third = payload(300, 3);
    let done = flash
        .program(
            &image(&third, DEVICE_ABI_VERSION),
            DRIVER_ABI_REQUIREMENT,
            |_| {},
        )
        .unwrap();
    assert_eq!((done.slot, done.sequence), (ImageSlot::A, 3));

    let nor = flash.into_inner();
    assert_eq!(
        slot_payload(nor.storage(), ImageSlot::A, third.len()),
        third
    );
    assert_eq!(
        slot_payload(nor.storage(), ImageSlot::B, second.len()),
        second
    );
}

/// Programs a first image, then checks `bad` is refused with `expected`
/// and the flash is byte-for-byte what it was.
fn refused_untouched(bad: &[u8], expected: impl Fn(&FlashError) -> bool) {
    let mut flash = programmer(blank_nor());
    flash
        .program(
            &image(&payload(2_000, 9), DEVICE_ABI_VERSION),
            DRIVER_ABI_REQUIREMENT,
            |_| {},
        )
        .unwrap();
    let before = flash.nor_mut().spi_mut().storage().to_vec();
    let mut calls = 0;
    let e = flash
        .program(bad, DRIVER_ABI_REQUIREMENT, |_| calls += 1)
        .unwrap_err();
    assert!(expected(&e), "unexpected error {e:?}");
    assert_eq!(e.kind(), ErrorKind::BadImage);
    assert_eq!(calls, 0, "progress reported for a refused image");
    assert!(
        flash.nor_mut().spi_mut().storage() == before.as_slice(),
        "flash was touched"
    );
    assert_eq!(flash.boot_slot().unwrap(), Some(ImageSlot::A));
}

#[test]
fn bad_payload_crc_is_refused_before_any_erase() {
    let mut bad = image(&payload(3_000, 4), DEVICE_ABI_VERSION);
    bad[64 + 1234] ^= 0x10;
    refused_untouched(&bad, |e| {
        matches!(e, FlashError::Image(ImageError::PayloadCrcMismatch { .. }))
    });
}

#[test]
fn wrong_magic_and_truncated_images_are_refused() {
    let mut bad = image(&payload(100, 5), DEVICE_ABI_VERSION);
    bad[0] = b'X';
    refused_untouched(&bad, |e| {
        matches!(e, FlashError::Image(ImageError::WrongMagic { .. }))
    });
    let good = image(&payload(100, 5), DEVICE_ABI_VERSION);
    refused_untouched(&good[..good.len() - 1], |e| {
        matches!(e, FlashError::Image(ImageError::BadPayloadLength { .. }))
    });
    refused_untouched(&good[..10], |e| {
        matches!(e, FlashError::ImageTooShort { len: 10 })
    });
    let mut header_flip = good.clone();
    header_flip[20] ^= 1;
    refused_untouched(&header_flip, |e| {
        matches!(e, FlashError::Image(ImageError::HeaderCrcMismatch { .. }))
    });
}

#[test]
fn incompatible_abi_is_refused_with_both_versions() {
    let bad = image(&payload(100, 6), AbiVersion::new(2, 0, 1));
    refused_untouched(&bad, |e| {
        matches!(e, FlashError::Image(ImageError::IncompatibleAbi { .. }))
    });
    let message = tensorplug_device_fpga::flash::validate_image(&bad, DRIVER_ABI_REQUIREMENT)
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("2.0.1") && message.contains("1.x"),
        "{message}"
    );
}

#[test]
fn interrupted_writes_leave_the_old_slot_booting() {
    let old = payload(700, 7);
    let new = payload(1_000, 8);
    let new_image = image(&new, DEVICE_ABI_VERSION);
    let total = (new.len() + 64) as u32;
    let mut cuts: Vec<u32> = (0..total).step_by(37).collect();
    cuts.extend([1, 255, 256, 257, 999, 1_000, 1_001, 1_030, 1_063, total - 1]);
    for cut in cuts {
        let mut flash = programmer(blank_nor());
        flash
            .program(
                &image(&old, DEVICE_ABI_VERSION),
                DRIVER_ABI_REQUIREMENT,
                |_| {},
            )
            .unwrap();
        flash.nor_mut().spi_mut().cut_power_after(cut);
        let e = flash
            .program(&new_image, DRIVER_ABI_REQUIREMENT, |_| {})
            .expect_err("a write cut short must fail");
        assert!(
            matches!(
                e.kind(),
                ErrorKind::Chip | ErrorKind::Timeout | ErrorKind::Verify
            ),
            "cut at {cut}: {e:?}"
        );
        // "Reset": power comes back; the old image still boots, intact.
        flash.nor_mut().spi_mut().power_on();
        assert_eq!(
            flash.boot_slot().unwrap(),
            Some(ImageSlot::A),
            "cut at {cut}"
        );
        let nor = flash.into_inner();
        assert_eq!(slot_payload(nor.storage(), ImageSlot::A, old.len()), old);
    }
    // A cut after the last byte is no cut: the new image boots.
    let mut flash = programmer(blank_nor());
    flash
        .program(
            &image(&old, DEVICE_ABI_VERSION),
            DRIVER_ABI_REQUIREMENT,
            |_| {},
        )
        .unwrap();
    flash.nor_mut().spi_mut().cut_power_after(total);
    flash
        .program(&new_image, DRIVER_ABI_REQUIREMENT, |_| {})
        .unwrap();
    assert_eq!(flash.boot_slot().unwrap(), Some(ImageSlot::B));
}

/// Flips a bit in the first data byte of reads at `addr` (a marginal cell).
struct FlipOnRead {
    nor: Nor,
    addr: u32,
}

impl ErrorType for FlipOnRead {
    type Error = Infallible;
}

impl SpiDevice for FlipOnRead {
    fn transaction(&mut self, ops: &mut [Operation<'_, u8>]) -> Result<(), Infallible> {
        let [_, a2, a1, a0] = self.addr.to_be_bytes();
        let hit = matches!(ops.first(), Some(Operation::Write(cmd)) if *cmd == [0x03, a2, a1, a0]);
        self.nor.transaction(ops)?;
        if hit && let Some(Operation::Read(buf)) = ops.get_mut(1) {
            buf[0] ^= 0x04;
        }
        Ok(())
    }
}

#[test]
fn read_back_mismatch_is_detected_and_the_slot_stays_invalid() {
    let payload_at = ImageSlot::A.offset() + IMAGE_PAYLOAD_OFFSET;
    let mut flash = programmer(FlipOnRead {
        nor: blank_nor(),
        addr: payload_at,
    });
    let e = flash
        .program(
            &image(&payload(600, 10), DEVICE_ABI_VERSION),
            DRIVER_ABI_REQUIREMENT,
            |_| {},
        )
        .unwrap_err();
    assert_eq!(e, FlashError::VerifyMismatch { addr: payload_at });
    assert_eq!(e.kind(), ErrorKind::Verify);
    // The header was never programmed: nothing boots.
    assert_eq!(
        flash.slot_header(ImageSlot::A).unwrap(),
        Err(ImageError::Erased)
    );
    assert_eq!(flash.boot_slot().unwrap(), None);
}

#[test]
fn a_silent_chip_is_refused_after_validation() {
    let mut flash = programmer(blank_nor());
    let good = image(&payload(10, 1), DEVICE_ABI_VERSION);
    // The power fails at the first programmed byte; the chip then answers 0xFF.
    flash.nor_mut().spi_mut().cut_power_after(0);
    flash
        .program(&good, DRIVER_ABI_REQUIREMENT, |_| {})
        .unwrap_err();
    assert!(flash.nor_mut().spi_mut().power_failed());
    let e = flash
        .program(&good, DRIVER_ABI_REQUIREMENT, |_| {})
        .unwrap_err();
    assert_eq!(
        e,
        FlashError::UnsupportedChip {
            jedec_id: [0xFF; 3]
        }
    );
    assert_eq!(e.kind(), ErrorKind::Chip);
}
