//! `cargo xtask flash` against the simulated flash in a temporary file.

use super::bus::{FlashBus, SIM_FLASH_SIZE};
use super::progress::quarter_lines;
use super::*;
use crate::{Cli, Task};
use clap::{CommandFactory as _, Parser as _};
use std::sync::atomic::{AtomicU32, Ordering};
use tensorplug_device_fpga::flash::Phase;

/// A fresh directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "tensorplug-xtask-flash-{}-{n}-{name}",
            std::process::id()
        ));
        fs::create_dir_all(&dir).expect("create temp dir");
        Self(dir)
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn sim(path: PathBuf) -> DeviceArgs {
    DeviceArgs {
        device: Device::Sim(path),
        spi_hz: 10_000_000,
        sim_timing: SimTiming::Fast,
    }
}

/// Writes a payload of `len` bytes (varied by `seed`) and seals it.
fn make_image(dir: &TempDir, name: &str, len: usize, seed: u8, abi: AbiVersion) -> PathBuf {
    let payload = dir.path(&format!("{name}.bin"));
    let bytes: Vec<u8> = (0..len)
        .map(|i| (i as u8).wrapping_mul(73).wrapping_add(seed))
        .collect();
    fs::write(&payload, bytes).expect("write payload");
    let out = dir.path(&format!("{name}.tpbs"));
    write_image(&ImageArgs {
        payload,
        out: out.clone(),
        abi,
        features: FeatureWord(0x7f),
    })
    .expect("seal image");
    out
}

fn program_args(image: &Path, flash_file: &Path) -> ProgramArgs {
    ProgramArgs {
        image: image.to_path_buf(),
        device: sim(flash_file.to_path_buf()),
    }
}

fn status(flash_file: &Path) -> SlotsReport {
    let mut flash = open(&sim(flash_file.to_path_buf())).expect("open sim flash");
    read_slots(&mut flash).expect("read slots")
}

#[test]
fn cli_parses_every_subcommand() {
    Cli::command().debug_assert();
    let flash_args = |args: &[&str]| -> FlashCommand {
        let argv = ["cargo xtask", "flash"].iter().chain(args);
        match Cli::try_parse_from(argv).expect("parses").command {
            Task::Flash(flash) => flash.command.expect("a subcommand"),
            _ => panic!("not the flash task"),
        }
    };
    let Task::Flash(top) = Cli::try_parse_from([
        "cargo xtask",
        "flash",
        "--firmware",
        "--board",
        "netduinoplus2",
        "--device",
        "probe-rs:STM32F405RGTx",
    ])
    .expect("`flash --firmware` parses")
    .command
    else {
        panic!("not the flash task");
    };
    assert!(top.firmware && top.command.is_none());
    assert_eq!(top.firmware_args.board.as_deref(), Some("netduinoplus2"));
    assert_eq!(
        top.firmware_args.device.as_deref(),
        Some("probe-rs:STM32F405RGTx")
    );

    let FlashCommand::Image(image) = flash_args(&[
        "image",
        "--payload",
        "b.bin",
        "--out",
        "b.tpbs",
        "--abi",
        "1.2.3",
        "--features",
        "0x13",
    ]) else {
        panic!("not `image`");
    };
    assert_eq!(image.abi, AbiVersion::new(1, 2, 3));
    assert_eq!(image.features, FeatureWord(0x13));
    assert_eq!(image.out, PathBuf::from("b.tpbs"));

    let FlashCommand::Image(image) = flash_args(&["image", "--payload", "b", "--out", "o"]) else {
        panic!("not `image`");
    };
    assert_eq!(image.abi, DEVICE_ABI_VERSION);
    assert_eq!(image.features, FeatureWord(REFERENCE_FEATURES.bits()));

    let FlashCommand::Program(program) = flash_args(&["program", "x.tpbs"]) else {
        panic!("not `program`");
    };
    assert_eq!(program.image, PathBuf::from("x.tpbs"));
    assert_eq!(
        program.device.device,
        Device::Sim(root().join("target/sim-config-flash.bin"))
    );
    assert_eq!(program.device.sim_timing, SimTiming::Datasheet);

    let FlashCommand::Status(device) = flash_args(&[
        "status",
        "--device",
        "spidev:/dev/spidev1.0",
        "--spi-hz",
        "1000000",
    ]) else {
        panic!("not `status`");
    };
    assert_eq!(device.device, Device::Spidev("/dev/spidev1.0".into()));
    assert_eq!(device.spi_hz, 1_000_000);

    for bad in [
        &["status", "--device", "pcie:/x"][..],
        &["status", "--device", "spidev:"],
        &["image", "--payload", "p", "--out", "o", "--abi", "1.0"],
        &["image", "--payload", "p", "--out", "o", "--abi", "1.0.256"],
        &["image", "--payload", "p", "--out", "o", "--features", "0xg"],
        &["program"],
    ] {
        let argv = ["cargo xtask", "flash"].iter().chain(bad);
        assert!(Cli::try_parse_from(argv).is_err(), "accepted {bad:?}");
    }
}

#[test]
fn image_header_describes_the_payload() {
    let dir = TempDir::new("header");
    let image = fs::read(make_image(&dir, "a", 1000, 7, AbiVersion::new(1, 4, 2))).unwrap();
    assert_eq!(image.len(), IMAGE_HEADER_SIZE + 1000);
    let (head, payload) = image.split_first_chunk::<IMAGE_HEADER_SIZE>().unwrap();
    let header = ImageHeader::parse(head, crc32).expect("sealed header parses");
    assert_eq!(header.abi(), AbiVersion::new(1, 4, 2));
    assert_eq!(header.features, 0x7f);
    assert_eq!(header.payload_length, 1000);
    assert_eq!(header.payload_crc32, crc32(payload));
    assert_eq!(header.sequence, 0);
    assert_eq!(&head[..4], b"TPBS");
}

#[test]
fn image_refuses_an_empty_payload() {
    let dir = TempDir::new("empty");
    let payload = dir.path("empty.bin");
    fs::write(&payload, b"").unwrap();
    let out = dir.path("empty.tpbs");
    let error = write_image(&ImageArgs {
        payload,
        out: out.clone(),
        abi: DEVICE_ABI_VERSION,
        features: FeatureWord(0x7f),
    })
    .unwrap_err();
    assert!(error.to_string().contains("is empty"), "{error:#}");
    assert!(!out.exists());
}

#[test]
fn program_boots_the_new_slot_and_a_second_program_alternates() {
    let dir = TempDir::new("alternate");
    let flash_file = dir.path("flash.bin");
    let first = make_image(&dir, "first", 10_000, 1, DEVICE_ABI_VERSION);
    let second = make_image(&dir, "second", 5_000, 2, AbiVersion::new(1, 0, 9));

    let mut finished = Vec::new();
    let (programmed, slots) = program(&program_args(&first, &flash_file), |p| {
        if p.done == p.total {
            finished.push(p.phase);
        }
    })
    .expect("program the first image");
    assert_eq!(
        fs::metadata(&flash_file).unwrap().len(),
        SIM_FLASH_SIZE as u64
    );
    assert_eq!((programmed.slot, programmed.sequence), (ImageSlot::A, 1));
    assert_eq!(finished, [Phase::Erase, Phase::Program, Phase::Verify]);
    assert_eq!(slots, status(&flash_file), "reopening reads the same");
    assert_eq!(slots.boot(), Some(ImageSlot::A));
    let [a, b] = &slots.slots;
    assert_eq!(a.valid_sequence, Some(1));
    let header = a.header.as_ref().expect("slot A header");
    assert_eq!((header.payload_length, header.sequence), (10_000, 1));
    assert_eq!(b.header, Err(ImageError::Erased));
    assert_eq!(b.valid_sequence, None);
    assert!(slots.to_string().ends_with("slot A boots (sequence 1)\n"));

    let (programmed, _) = program(&program_args(&second, &flash_file), |_| {}).unwrap();
    assert_eq!((programmed.slot, programmed.sequence), (ImageSlot::B, 2));
    let slots = status(&flash_file);
    assert_eq!(slots.boot(), Some(ImageSlot::B));
    let [a, b] = &slots.slots;
    assert_eq!(a.valid_sequence, Some(1), "the old image stays valid");
    assert_eq!(b.valid_sequence, Some(2));
    let header = b.header.as_ref().expect("slot B header");
    assert_eq!(header.abi(), AbiVersion::new(1, 0, 9));
    assert_eq!(header.payload_length, 5_000);

    let (programmed, _) = program(&program_args(&first, &flash_file), |_| {}).unwrap();
    assert_eq!((programmed.slot, programmed.sequence), (ImageSlot::A, 3));
    assert_eq!(status(&flash_file).boot(), Some(ImageSlot::A));
}

#[test]
fn refused_images_leave_the_flash_byte_identical() {
    let dir = TempDir::new("refused");
    let flash_file = dir.path("flash.bin");
    let good = make_image(&dir, "good", 3_000, 3, DEVICE_ABI_VERSION);
    program(&program_args(&good, &flash_file), |_| {}).unwrap();
    let before = fs::read(&flash_file).unwrap();
    let good_bytes = fs::read(&good).unwrap();

    let mut wrong_magic = good_bytes.clone();
    wrong_magic[0] ^= 0xFF;
    let mut bad_crc = good_bytes.clone();
    bad_crc[IMAGE_HEADER_SIZE + 100] ^= 0x01;
    let cases: [(&str, Vec<u8>, &[&str]); 4] = [
        ("magic", wrong_magic, &["not a tensorplug bitstream image"]),
        ("crc", bad_crc, &["payload is corrupt", "CRC-32"]),
        (
            "short",
            good_bytes[..40].to_vec(),
            &["shorter than a header"],
        ),
        (
            "abi",
            fs::read(make_image(&dir, "v2", 3_000, 3, AbiVersion::new(2, 1, 0))).unwrap(),
            &["ABI 2.1.0 is incompatible", "needs 1.x"],
        ),
    ];
    for (name, bytes, expected) in cases {
        let image = dir.path(&format!("{name}.tpbs"));
        fs::write(&image, bytes).unwrap();
        let mut progress_calls = 0;
        let error = program(&program_args(&image, &flash_file), |_| progress_calls += 1)
            .expect_err(name)
            .to_string();
        assert!(error.contains("flash untouched"), "{name}: {error}");
        for text in expected {
            assert!(error.contains(text), "{name}: {error}");
        }
        assert_eq!(progress_calls, 0, "{name}");
        assert!(
            fs::read(&flash_file).unwrap() == before,
            "{name} changed the flash"
        );
    }
}

#[test]
fn an_interrupted_program_leaves_the_old_slot_booting() {
    let dir = TempDir::new("interrupted");
    let flash_file = dir.path("flash.bin");
    let old = make_image(&dir, "old", 2_000, 4, DEVICE_ABI_VERSION);
    let new = make_image(&dir, "new", 2_000, 5, DEVICE_ABI_VERSION);
    program(&program_args(&old, &flash_file), |_| {}).unwrap();

    let mut flash = open(&sim(flash_file.clone())).unwrap();
    let FlashBus::Sim(nor) = flash.nor_mut().spi_mut() else {
        panic!("sim device is not the model");
    };
    nor.cut_power_after(1_000); // mid-payload
    let image = fs::read(&new).unwrap();
    let result = flash.program(&image, DRIVER_ABI_REQUIREMENT, |_| {});
    assert!(result.is_err(), "the power cut went unnoticed");
    drop(flash);

    // The cut-off write is in the file, yet slot A still boots.
    let slots = status(&flash_file);
    assert_eq!(slots.boot(), Some(ImageSlot::A));
    assert_eq!(slots.slots[1].valid_sequence, None);
    let (programmed, _) = program(&program_args(&new, &flash_file), |_| {}).unwrap();
    assert_eq!((programmed.slot, programmed.sequence), (ImageSlot::B, 2));
}

#[test]
fn a_sim_file_of_the_wrong_size_is_refused_unchanged() {
    let dir = TempDir::new("size");
    let flash_file = dir.path("small.bin");
    fs::write(&flash_file, [0xFFu8; 4096]).unwrap();
    let error = open(&sim(flash_file.clone())).err().expect("refused");
    assert!(error.to_string().contains("4096 bytes"), "{error:#}");
    assert_eq!(fs::read(&flash_file).unwrap(), [0xFF; 4096]);
}

#[test]
fn a_sim_file_in_use_is_refused() {
    let dir = TempDir::new("locked");
    let flash_file = dir.path("flash.bin");
    let _first = open(&sim(flash_file.clone())).unwrap();
    let error = open(&sim(flash_file)).err().expect("second open refused");
    assert!(error.to_string().contains("in use"), "{error:#}");
}

#[test]
fn a_missing_spidev_node_is_named() {
    let args = DeviceArgs {
        device: Device::Spidev("/dev/spidev-tensorplug-missing".into()),
        spi_hz: 1_000_000,
        sim_timing: SimTiming::Fast,
    };
    let error = open(&args).err().expect("no such device").to_string();
    assert!(error.contains("/dev/spidev-tensorplug-missing"), "{error}");
}

#[test]
fn plain_progress_prints_each_quarter_once() {
    let mut next = 0;
    let mut lines = Vec::new();
    for done in (0..=1000).step_by(10) {
        lines.extend(quarter_lines(
            Progress {
                phase: Phase::Verify,
                done,
                total: 1000,
            },
            &mut next,
        ));
    }
    let percents: Vec<_> = lines
        .iter()
        .map(|l| l.split_whitespace().nth(1).unwrap().to_string())
        .collect();
    assert_eq!(percents, ["0%", "25%", "50%", "75%", "100%"]);
    assert!(lines[4].contains("1000 of 1000 bytes"), "{}", lines[4]);

    // A phase that jumps straight to the end still prints every quarter.
    let mut next = 0;
    let end = Progress {
        phase: Phase::Erase,
        done: 4096,
        total: 4096,
    };
    assert_eq!(quarter_lines(end, &mut next).len(), 5);
    assert!(quarter_lines(end, &mut next).is_empty());
}
