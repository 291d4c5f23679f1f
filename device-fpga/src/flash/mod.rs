//! Programming the configuration flash with a bitstream image, safely:
//! the image is validated completely (header, payload CRC, ABI rule)
//! before anything is erased; the slot that does not boot is written,
//! header sector erased first, payload programmed and verified, header
//! programmed last and verified (`docs/device-abi.md`, "Which slot boots,
//! and writing safely"). A cut at any point leaves the other slot booting.
//!
//! An image file is the 64-byte [`ImageHeader`] followed by the payload.
//! Its `sequence` is ignored: the writer sets (and reseals) it.

mod error;
mod nor;

pub use error::{ErrorKind, FlashError, Phase};
pub use nor::{Nor, NorTimeouts};

use crc::{CRC_32_ISO_HDLC, Crc};
use embedded_hal::spi::SpiDevice;
use tensorplug_abi::device::flash::{
    CONFIG_FLASH_PAGE_SIZE, CONFIG_FLASH_SECTOR_SIZE, IMAGE_PAYLOAD_OFFSET, ImageSlot, boot_slot,
    write_target,
};
use tensorplug_abi::device::{AbiRequirement, IMAGE_HEADER_SIZE, ImageError, ImageHeader};

use crate::driver::Clock;

/// CRC-32/ISO-HDLC, the CRC of both image checksums.
pub const CRC32: Crc<u32> = Crc::<u32>::new(&CRC_32_ISO_HDLC);

/// CRC-32/ISO-HDLC of `bytes`.
pub fn crc32(bytes: &[u8]) -> u32 {
    CRC32.checksum(bytes)
}

/// Progress of one phase: `done` of `total` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Progress {
    /// The phase.
    pub phase: Phase,
    /// Bytes done in this phase.
    pub done: u32,
    /// Bytes this phase covers.
    pub total: u32,
}

/// What [`ConfigFlash::program`] wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Programmed {
    /// The slot written (it boots next).
    pub slot: ImageSlot,
    /// Its write generation.
    pub sequence: u32,
}

/// Checks an image file (header + payload) completely: header, payload
/// length and CRC, and the ABI rule. Returns the header and the payload.
pub fn validate_image(
    image: &[u8],
    required: AbiRequirement,
) -> Result<(ImageHeader, &[u8]), FlashError> {
    let (head, payload) = image
        .split_first_chunk::<IMAGE_HEADER_SIZE>()
        .ok_or(FlashError::ImageTooShort { len: image.len() })?;
    let header = ImageHeader::parse(head, crc32)?;
    header.check_payload(payload.len(), crc32(payload))?;
    header.check_abi(required)?;
    Ok((header, payload))
}

/// The configuration flash of the reference board.
#[derive(Debug)]
pub struct ConfigFlash<S, C> {
    nor: Nor<S, C>,
}

impl<S: SpiDevice, C: Clock> ConfigFlash<S, C> {
    /// The flash on `spi`; `clock` times the `BUSY` waits.
    pub const fn new(spi: S, clock: C, timeouts: NorTimeouts) -> Self {
        Self {
            nor: Nor::new(spi, clock, timeouts),
        }
    }

    /// The NOR command layer.
    pub fn nor_mut(&mut self) -> &mut Nor<S, C> {
        &mut self.nor
    }

    /// Gives the SPI device back.
    pub fn into_inner(self) -> S {
        self.nor.into_inner()
    }

    /// The header of `slot`, or why the slot is not usable (erased,
    /// corrupt) — the payload is not checked.
    pub fn slot_header(
        &mut self,
        slot: ImageSlot,
    ) -> Result<Result<ImageHeader, ImageError>, FlashError> {
        let mut head = [0u8; IMAGE_HEADER_SIZE];
        self.nor.read(slot.offset(), &mut head)?;
        Ok(ImageHeader::parse(&head, crc32))
    }

    /// `sequence` of `slot` if its header and payload are valid.
    pub fn valid_sequence(&mut self, slot: ImageSlot) -> Result<Option<u32>, FlashError> {
        let Ok(header) = self.slot_header(slot)? else {
            return Ok(None);
        };
        let length = header.payload_length;
        let mut digest = CRC32.digest();
        let payload_at = slot.offset() + IMAGE_PAYLOAD_OFFSET;
        let ok_length = header
            .check_payload(length as usize, header.payload_crc32)
            .is_ok();
        if !ok_length {
            return Ok(None);
        }
        self.stream(payload_at, length, |bytes| digest.update(bytes))?;
        let valid = header
            .check_payload(length as usize, digest.finalize())
            .is_ok();
        Ok(valid.then_some(header.sequence))
    }

    /// The slot the device boots from, if any.
    pub fn boot_slot(&mut self) -> Result<Option<ImageSlot>, FlashError> {
        let a = self.valid_sequence(ImageSlot::A)?;
        let b = self.valid_sequence(ImageSlot::B)?;
        Ok(boot_slot(a, b))
    }

    /// Writes `image` (header + payload) into the slot that does not boot.
    /// The image is refused, with the flash untouched, unless it is valid
    /// and its ABI satisfies `required`. `progress` is called after every
    /// sector, page and verified chunk.
    pub fn program(
        &mut self,
        image: &[u8],
        required: AbiRequirement,
        mut progress: impl FnMut(Progress),
    ) -> Result<Programmed, FlashError> {
        let (header, payload) = validate_image(image, required)?;
        let jedec_id = self.nor.jedec_id()?;
        let [_, _, capacity] = jedec_id;
        // Capacity code = log2(bytes); the layout needs 16 MiB (0x18).
        if !(0x18..0x20).contains(&capacity) {
            return Err(FlashError::UnsupportedChip { jedec_id });
        }
        let a = self.valid_sequence(ImageSlot::A)?;
        let b = self.valid_sequence(ImageSlot::B)?;
        let (slot, sequence) = write_target(a, b);
        let base = slot.offset();
        let payload_at = base + IMAGE_PAYLOAD_OFFSET;
        // `validate_image` bounded the payload to IMAGE_MAX_PAYLOAD.
        let length = payload.len() as u32;

        // Header sector first, so the slot is invalid from the first erase on.
        let sectors = 1 + length.div_ceil(CONFIG_FLASH_SECTOR_SIZE);
        let total = sectors * CONFIG_FLASH_SECTOR_SIZE;
        for i in 0..sectors {
            self.nor.erase_sector(base + i * CONFIG_FLASH_SECTOR_SIZE)?;
            progress(Progress {
                phase: Phase::Erase,
                done: (i + 1) * CONFIG_FLASH_SECTOR_SIZE,
                total,
            });
        }

        self.program_bytes(
            payload_at,
            payload,
            length + IMAGE_HEADER_SIZE as u32,
            &mut progress,
        )?;
        self.verify(
            payload_at,
            payload,
            0,
            length + IMAGE_HEADER_SIZE as u32,
            &mut progress,
        )?;

        let sealed = ImageHeader { sequence, ..header }
            .sealed(crc32)
            .to_le_bytes();
        self.nor.program_page(base, &sealed)?;
        let total = length + IMAGE_HEADER_SIZE as u32;
        progress(Progress {
            phase: Phase::Program,
            done: total,
            total,
        });
        self.verify(base, &sealed, length, total, &mut progress)?;
        Ok(Programmed { slot, sequence })
    }

    /// Programs `data` at page-aligned `addr`, page by page.
    fn program_bytes(
        &mut self,
        addr: u32,
        data: &[u8],
        total: u32,
        progress: &mut impl FnMut(Progress),
    ) -> Result<(), FlashError> {
        let mut done = 0u32;
        for page in data.chunks(CONFIG_FLASH_PAGE_SIZE as usize) {
            self.nor.program_page(addr + done, page)?;
            done += page.len() as u32;
            progress(Progress {
                phase: Phase::Program,
                done,
                total,
            });
        }
        Ok(())
    }

    /// Reads back `expected` at `addr`; `before` bytes of `total` were
    /// verified earlier (for the progress count).
    fn verify(
        &mut self,
        addr: u32,
        expected: &[u8],
        before: u32,
        total: u32,
        progress: &mut impl FnMut(Progress),
    ) -> Result<(), FlashError> {
        let mut done = 0u32;
        let mut buf = [0u8; CONFIG_FLASH_PAGE_SIZE as usize];
        for want in expected.chunks(buf.len()) {
            let got = &mut buf[..want.len()];
            self.nor.read(addr + done, got)?;
            if let Some(i) = got.iter().zip(want).position(|(g, w)| g != w) {
                return Err(FlashError::VerifyMismatch {
                    addr: addr + done + i as u32,
                });
            }
            done += want.len() as u32;
            progress(Progress {
                phase: Phase::Verify,
                done: before + done,
                total,
            });
        }
        Ok(())
    }

    /// Reads `len` bytes from `addr` in page-sized chunks into `sink`.
    fn stream(
        &mut self,
        addr: u32,
        len: u32,
        mut sink: impl FnMut(&[u8]),
    ) -> Result<(), FlashError> {
        let mut buf = [0u8; CONFIG_FLASH_PAGE_SIZE as usize];
        let mut done = 0u32;
        while done < len {
            let n = (len - done).min(buf.len() as u32) as usize;
            self.nor.read(addr + done, &mut buf[..n])?;
            sink(&buf[..n]);
            done += n as u32;
        }
        Ok(())
    }
}
