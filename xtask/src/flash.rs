//! `cargo xtask flash`: seals a bitstream into an image, programs it into
//! the reference FPGA's configuration flash (simulated, or over Linux
//! spidev) through `tensorplug_device_fpga::flash`, and shows the slots;
//! `--firmware` builds the MCU firmware for a board and boots it on QEMU or
//! hands it to probe-rs. Commands, formats and wiring: `docs/flashing.md`.

mod bus;
pub mod firmware;
mod progress;

use crate::util::root;
use anyhow::{Context, Result, anyhow, bail};
use bus::{FlashBus, SimFile};
use progress::Reporter;
use std::fmt;
use std::fs::{self, File};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use tensorplug_abi::device::flash::{IMAGE_MAX_PAYLOAD, ImageSlot};
use tensorplug_abi::device::{
    AbiVersion, DEVICE_ABI_VERSION, DRIVER_ABI_REQUIREMENT, Features, IMAGE_HEADER_SIZE,
    ImageError, ImageHeader, REFERENCE_FEATURES, REFERENCE_TIMESTAMP_FREQ_HZ,
};
use tensorplug_device_fpga::driver::StdClock;
use tensorplug_device_fpga::flash::{
    ConfigFlash, FlashError, NorTimeouts, Programmed, Progress, crc32, validate_image,
};
use tensorplug_model_fpga::model::HostClock;
use tensorplug_model_fpga::model::nor_flash::{NorFlash, NorTiming};

/// Where `--device sim` keeps its flash, relative to the workspace root.
const DEFAULT_SIM_FILE: &str = "target/sim-config-flash.bin";

#[derive(clap::Args)]
#[command(
    after_help = "`--firmware [--board <name>] [--device qemu|probe-rs:<chip>]` builds the MCU \
    firmware for a board (firmware/boards/<name>.toml) and boots or programs it; the \
    subcommands handle FPGA bitstreams. Interrupting `program` is \
    safe (two slots, header written last). See docs/flashing.md.",
    subcommand_required = false,
    args_conflicts_with_subcommands = true
)]
pub struct FlashArgs {
    /// Build the MCU firmware (firmware/) and put it on `--device`.
    #[arg(long)]
    pub firmware: bool,
    #[command(flatten)]
    pub firmware_args: firmware::FirmwareArgs,
    #[command(subcommand)]
    pub command: Option<FlashCommand>,
}

#[derive(clap::Subcommand)]
pub enum FlashCommand {
    /// Seal a bitstream payload into an image file (64-byte header + payload).
    Image(ImageArgs),
    /// Validate an image, then program it into the slot that does not boot.
    ///
    /// The image is checked completely (magic, header and payload CRC-32,
    /// ABI compatibility) before the flash is opened. Interrupting the
    /// write (Ctrl-C, power loss, a pulled cable) is safe: that is the
    /// slot protocol's job. The slot being written is not the one that
    /// boots, and its header is programmed last, so the previous image
    /// keeps booting until the new one is complete and verified. Run the
    /// command again to finish.
    Program(ProgramArgs),
    /// Show both slots (valid? sequence, ABI, features, payload) and which boots.
    Status(DeviceArgs),
    /// Build the MCU firmware and boot it on QEMU, or program a board with probe-rs.
    Firmware(firmware::FirmwareArgs),
}

#[derive(clap::Args)]
pub struct ImageArgs {
    /// The raw bitstream (e.g. the vendor tool's `.bin`).
    #[arg(long)]
    pub payload: PathBuf,
    /// The image file to write.
    #[arg(long)]
    pub out: PathBuf,
    /// Device ABI version the bitstream implements (major.minor.patch).
    #[arg(long, default_value_t = DEVICE_ABI_VERSION, value_parser = parse_abi)]
    pub abi: AbiVersion,
    /// FEATURES word the bitstream implements (hex with 0x, or decimal).
    #[arg(long, default_value_t = FeatureWord(REFERENCE_FEATURES.bits()), value_parser = parse_features)]
    pub features: FeatureWord,
}

#[derive(clap::Args)]
pub struct ProgramArgs {
    /// The image file (`cargo xtask flash image` writes one).
    pub image: PathBuf,
    #[command(flatten)]
    pub device: DeviceArgs,
}

#[derive(clap::Args, Clone)]
pub struct DeviceArgs {
    /// `sim[:<flash file>]` (the model's W25Q128JV over a 16 MiB file that
    /// persists between runs; default file target/sim-config-flash.bin) or
    /// `spidev:/dev/spidevB.C` (the flash on a Linux SPI bus).
    #[arg(long, default_value = "sim", value_parser = parse_device)]
    pub device: Device,
    /// SPI clock for `spidev:` (READ_DATA 0x03 is specified up to 50 MHz).
    #[arg(long, default_value_t = 10_000_000)]
    pub spi_hz: u32,
    /// How long the simulated flash stays busy per page program / sector erase.
    #[arg(long, value_enum, default_value_t = SimTiming::Datasheet)]
    pub sim_timing: SimTiming,
}

/// Where the configuration flash is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Device {
    /// The model's NOR flash over this file.
    Sim(PathBuf),
    /// A real flash behind this spidev node.
    Spidev(PathBuf),
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Sim(path) => write!(f, "sim:{}", path.display()),
            Self::Spidev(path) => write!(f, "spidev:{}", path.display()),
        }
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimTiming {
    /// W25Q128JV typicals: 0.4 ms per page, 45 ms per 4 KiB sector.
    Datasheet,
    /// 1000 times faster (for tests and quick tries).
    Fast,
}

impl SimTiming {
    const fn nor_timing(self) -> NorTiming {
        match self {
            Self::Datasheet => NorTiming::W25Q128JV,
            Self::Fast => NorTiming::FAST,
        }
    }
}

/// A `FEATURES` word, shown in hex.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeatureWord(pub u32);

impl fmt::Display for FeatureWord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

fn parse_abi(text: &str) -> Result<AbiVersion, String> {
    let parts: Vec<_> = text.split('.').map(str::parse::<u8>).collect();
    match parts.as_slice() {
        [Ok(major), Ok(minor), Ok(patch)] => Ok(AbiVersion::new(*major, *minor, *patch)),
        _ => Err(format!(
            "`{text}` is not major.minor.patch with each part 0..=255"
        )),
    }
}

fn parse_features(text: &str) -> Result<FeatureWord, String> {
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed
        .map(FeatureWord)
        .map_err(|e| format!("`{text}` is not a 32-bit word: {e}"))
}

fn parse_device(text: &str) -> Result<Device, String> {
    match text.split_once(':') {
        None if text == "sim" => Ok(Device::Sim(root().join(DEFAULT_SIM_FILE))),
        Some(("sim", path)) if !path.is_empty() => Ok(Device::Sim(path.into())),
        Some(("spidev", path)) if !path.is_empty() => Ok(Device::Spidev(path.into())),
        _ => Err(format!(
            "`{text}`: expected `sim`, `sim:<flash file>` or `spidev:/dev/spidevB.C`"
        )),
    }
}

/// `cargo xtask flash …`.
pub fn run_task(args: &FlashArgs) -> Result<()> {
    let Some(command) = &args.command else {
        if args.firmware {
            return firmware::run_task(&args.firmware_args);
        }
        bail!("nothing to flash: give `--firmware`, or a subcommand (see --help)");
    };
    match command {
        FlashCommand::Image(args) => {
            let header = write_image(args)?;
            eprintln!(
                "wrote {}: {IMAGE_HEADER_SIZE}-byte header + {} payload bytes \
                 (ABI {}, features {:#x}, payload CRC-32 {:#010x})",
                args.out.display(),
                header.payload_length,
                header.abi(),
                header.features,
                header.payload_crc32
            );
            if let Err(refusal) = header.check_abi(DRIVER_ABI_REQUIREMENT) {
                eprintln!("warning: `flash program` will refuse it: {refusal}");
            }
            Ok(())
        }
        FlashCommand::Program(args) => {
            let mut reporter = Reporter::new();
            let outcome = program(args, |p| reporter.update(p));
            reporter.finish();
            let (programmed, slots) = outcome?;
            println!(
                "programmed slot {:?} (sequence {})",
                programmed.slot, programmed.sequence
            );
            print!("{slots}");
            Ok(())
        }
        FlashCommand::Status(device) => {
            let mut flash = open(device)?;
            print!("{}", read_slots(&mut flash)?);
            Ok(())
        }
        FlashCommand::Firmware(args) => firmware::run_task(args),
    }
}

/// Seals `args.payload` into `args.out`; returns the header written.
pub fn write_image(args: &ImageArgs) -> Result<ImageHeader> {
    let payload = fs::read(&args.payload)
        .with_context(|| format!("reading payload {}", args.payload.display()))?;
    if payload.is_empty() {
        bail!("payload {} is empty", args.payload.display());
    }
    let length = u32::try_from(payload.len())
        .ok()
        .filter(|&len| len <= IMAGE_MAX_PAYLOAD)
        .ok_or_else(|| {
            anyhow!(
                "payload {} is {} bytes; a slot holds at most {IMAGE_MAX_PAYLOAD}",
                args.payload.display(),
                payload.len()
            )
        })?;
    let features = Features(args.features.0);
    if features.known() != features {
        eprintln!(
            "warning: features {:#x} has bits ABI {DEVICE_ABI_VERSION} does not define",
            features.bits()
        );
    }
    // `sequence` stays 0: `flash program` sets it when it writes a slot.
    let header = ImageHeader::new(args.abi, features, length, crc32(&payload), 0).sealed(crc32);
    let mut image = header.to_le_bytes().to_vec();
    image.extend_from_slice(&payload);
    write_atomically(&args.out, &image)?;
    Ok(header)
}

/// Writes via a temporary file and a rename, so `path` is never half-written.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".part");
    let tmp = PathBuf::from(tmp);
    let mut file = File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing {}", tmp.display()))?;
    fs::rename(&tmp, path).with_context(|| format!("renaming {} into place", tmp.display()))
}

/// Validates the image file, then programs it; returns what was written
/// and the slots as read back afterwards.
pub fn program(
    args: &ProgramArgs,
    progress: impl FnMut(Progress),
) -> Result<(Programmed, SlotsReport)> {
    let path = &args.image;
    let image = fs::read(path).with_context(|| format!("reading image {}", path.display()))?;
    // Checked here, before the flash is even opened; `ConfigFlash::program`
    // checks again before its first erase.
    let (header, _) = validate_image(&image, DRIVER_ABI_REQUIREMENT)
        .map_err(|refusal| anyhow!("{}: {refusal}", path.display()))?;
    eprintln!(
        "image {}: ABI {}, features {:#x}, {} payload bytes, CRC-32 {:#010x}",
        path.display(),
        header.abi(),
        header.features,
        header.payload_length,
        header.payload_crc32
    );
    let mut flash = open(&args.device)?;
    eprintln!("programming {}", args.device.device);
    let programmed = flash
        .program(&image, DRIVER_ABI_REQUIREMENT, progress)
        .map_err(|e| flash_error(e, &mut flash))?;
    let slots = read_slots(&mut flash)?;
    if slots.boot() != Some(programmed.slot) {
        bail!(
            "programmed slot {:?}, but reading back the flash says {}",
            programmed.slot,
            slots.boot_line()
        );
    }
    Ok((programmed, slots))
}

/// The programmer over whichever bus `--device` names.
pub type Flash = ConfigFlash<FlashBus, StdClock>;

/// Opens the flash `args` names.
pub fn open(args: &DeviceArgs) -> Result<Flash> {
    let bus = match &args.device {
        Device::Sim(path) => FlashBus::Sim(Box::new(NorFlash::new(
            SimFile::open(path)?,
            HostClock::new(REFERENCE_TIMESTAMP_FREQ_HZ),
            args.sim_timing.nor_timing(),
        ))),
        Device::Spidev(path) => FlashBus::spidev(path, args.spi_hz)?,
    };
    let mut flash = ConfigFlash::new(bus, StdClock::default(), NorTimeouts::default());
    // A missing or unpowered chip reads as all-ones or all-zeros.
    let jedec_id = flash
        .nor_mut()
        .jedec_id()
        .map_err(|e| flash_error(e, &mut flash))?;
    if matches!(jedec_id, [0xFF, 0xFF, 0xFF] | [0, 0, 0]) {
        bail!(
            "no flash answers on {} (JEDEC ID {jedec_id:02x?}); check wiring and power",
            args.device
        );
    }
    Ok(flash)
}

/// Adds the bus's own error (e.g. the spidev errno) to a flash error.
fn flash_error(error: FlashError, flash: &mut Flash) -> anyhow::Error {
    match flash.nor_mut().spi_mut().take_last_error() {
        Some(detail) => anyhow!("{error} ({detail})"),
        None => anyhow!("{error}"),
    }
}

/// One slot as read from the flash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotReport {
    pub slot: ImageSlot,
    /// The header, or why it is unusable.
    pub header: Result<ImageHeader, ImageError>,
    /// `sequence` if header and payload are valid.
    pub valid_sequence: Option<u32>,
}

/// Both slots, and which one boots.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotsReport {
    pub slots: [SlotReport; 2],
}

impl SlotsReport {
    /// The slot the device boots from (the driver's rule, `boot_slot`).
    pub fn boot(&self) -> Option<ImageSlot> {
        let [a, b] = &self.slots;
        tensorplug_abi::device::flash::boot_slot(a.valid_sequence, b.valid_sequence)
    }

    fn boot_line(&self) -> String {
        match self.boot() {
            None => "nothing boots: neither slot holds a valid image".into(),
            Some(slot) => {
                let sequence = self.slots[slot as usize].valid_sequence.unwrap_or(0);
                format!("slot {slot:?} boots (sequence {sequence})")
            }
        }
    }
}

impl fmt::Display for SlotsReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for report in &self.slots {
            write!(
                f,
                "slot {:?} @ {:#08x}: ",
                report.slot,
                report.slot.offset()
            )?;
            match (&report.header, report.valid_sequence) {
                (Err(why), _) => writeln!(f, "invalid: {why}")?,
                (Ok(h), valid) => writeln!(
                    f,
                    "{}, sequence {}, ABI {}, features {:#x}, payload {} bytes, CRC-32 {:#010x}",
                    match valid {
                        Some(_) => "valid",
                        None => "invalid: the payload does not match its header",
                    },
                    h.sequence,
                    h.abi(),
                    h.features,
                    h.payload_length,
                    h.payload_crc32
                )?,
            }
        }
        writeln!(f, "{}", self.boot_line())
    }
}

/// Reads both slots (headers, and the payloads' CRC-32 through the driver).
pub fn read_slots(flash: &mut Flash) -> Result<SlotsReport> {
    let mut read = |slot| -> Result<SlotReport> {
        let header = flash.slot_header(slot);
        let header = header.map_err(|e| flash_error(e, flash))?;
        let valid_sequence = flash.valid_sequence(slot);
        let valid_sequence = valid_sequence.map_err(|e| flash_error(e, flash))?;
        Ok(SlotReport {
            slot,
            header,
            valid_sequence,
        })
    };
    Ok(SlotsReport {
        slots: [read(ImageSlot::A)?, read(ImageSlot::B)?],
    })
}

#[cfg(test)]
mod tests;
