//! Fuzz seeds from real traffic: TensorFlow with our plugin running Keras
//! programs (an MLP's `predict` under the profiler, a `fit`, a convnet's
//! `predict`: [`record`]) on the firmware under QEMU, in both link modes:
//! `mcu-tcp:` (op-level) and `tcp:` (remote-bus). A [`Wire`] records both
//! directions.
//!
//! `cargo xtask fuzz` starts `link_decoder` from the frames of both
//! directions, `op_server` from the host's requests, and `spi_frames` from
//! the SPI traffic those op-level requests make when replayed as the
//! firmware serves them: the driver's chip-select windows (device end),
//! and the FPGA model's answers to `spi_frames`' own calls (host end)
//! (`docs/reliability.md`).
//!
//! `record_the_seeds` rewrites the checked-in seeds, so it is ignored:
//! `cargo test -p tensorplug-tests --test fuzz_seeds -- --ignored`. The
//! other test checks the seeds that are checked in.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use tensorplug_core::link::ops::Command as LinkCommand;
use tensorplug_core::link::{Decoder, FeedResult, HEADER_LEN, Message, MessageId, decode_frame};
use tensorplug_tests::qemu::Qemu;
use tensorplug_tests::wire::{Recording, Wire};
use tensorplug_tests::{expect_success, plugin_path, python, scratch_dir, workspace_root};

/// `link_decoder`'s seeds: whole frames as on the wire.
const LINK_SEEDS: &str = "fuzz/seeds/link_decoder";
/// `op_server`'s seeds: the host's requests as `[id, len u16 LE, payload]`.
const OP_SERVER_SEEDS: &str = "fuzz/seeds/op_server";
/// `spi_frames`' seeds, with their first byte (even: device end).
const SPI_SEEDS: &str = "fuzz/seeds/spi_frames";
/// Both targets' `-max_len` (`xtask/src/fuzz.rs`), less `link_decoder`'s
/// first byte (the piece size).
const MAX_SEED: usize = 8191;
/// Seeds kept per direction and mode.
const PER_STREAM: usize = 12;
/// Bytes recorded per direction.
const RECORD_CAP: usize = 4 << 20;

/// One frame on the wire (delimiter included), its message id, and what
/// it carries: its message id, and each op it launches.
struct WireFrame<'a> {
    bytes: &'a [u8],
    id: u8,
    kinds: Vec<u64>,
}

/// A message kind, and for each launch in a `Submit` or `SubmitBatch` its
/// op (namespace and code, above the 256 message ids): a `fit` sends the
/// same messages as a `predict`, with other ops in them.
fn kinds(message: &Message<'_>, id: u8) -> Vec<u64> {
    let op = |command: &LinkCommand<'_>| match command {
        LinkCommand::Launch(launch) => {
            Some((u64::from(launch.op.namespace.0) << 16 | u64::from(launch.op.code)) + 0x100)
        }
        _ => None,
    };
    let mut kinds = vec![u64::from(id)];
    match message {
        Message::Submit(submit) => kinds.extend(op(&submit.command)),
        Message::SubmitBatch(batch) => {
            kinds.extend(
                batch
                    .commands()
                    .filter_map(|c| c.ok().as_ref().and_then(op)),
            );
        }
        _ => {}
    }
    kinds
}

/// The whole frames at the start of `stream`. A recording cut by its cap
/// ends in part of a frame, which is left out.
///
/// # Panics
/// On bytes that do not decode: real traffic is clean.
fn frames(stream: &[u8]) -> Vec<WireFrame<'_>> {
    let mut decoder = Decoder::new();
    let (mut frames, mut start, mut rest) = (Vec::new(), 0, stream);
    loop {
        match decoder.feed(rest) {
            FeedResult::Consumed => return frames,
            FeedResult::Frame { frame, remaining } => {
                let end = stream.len() - remaining.len();
                frames.push(WireFrame {
                    bytes: &stream[start..end],
                    id: frame.header.message_id,
                    kinds: kinds(&frame.message, frame.header.message_id),
                });
                (start, rest) = (end, remaining);
            }
            FeedResult::Error { error, .. } => panic!("a bad frame at byte {start}: {error}"),
        }
    }
}

/// Runs of consecutive whole frames, each at most [`MAX_SEED`] bytes: the
/// first, then each that carries a kind ([`kinds`]) no earlier one did, up
/// to [`PER_STREAM`].
fn seeds(stream: &[u8]) -> Vec<Vec<u8>> {
    let mut runs: Vec<(Vec<u8>, BTreeSet<u64>)> = vec![Default::default()];
    for frame in frames(stream) {
        if frame.bytes.len() > MAX_SEED {
            continue;
        }
        let last = runs.last_mut().expect("one run at least");
        if last.0.len() + frame.bytes.len() > MAX_SEED {
            runs.push(Default::default());
        }
        let last = runs.last_mut().expect("one run at least");
        last.0.extend_from_slice(frame.bytes);
        last.1.extend(frame.kinds);
    }
    let mut seen = BTreeSet::new();
    let mut kept = Vec::new();
    for (i, (bytes, ids)) in runs.into_iter().enumerate() {
        let new = !ids.is_subset(&seen);
        seen.extend(ids);
        if (i == 0 || new) && !bytes.is_empty() && kept.len() < PER_STREAM {
            kept.push(bytes);
        }
    }
    kept
}

/// `frames`' requests as `op_server`'s chunks: `[id, len u16 LE, payload]`.
///
/// # Panics
/// On a frame that is not a request: the host sends only requests.
fn op_server_chunks(frames_bytes: &[u8]) -> Vec<u8> {
    let mut chunks = Vec::new();
    for frame in frames(frames_bytes) {
        // A `Hello` comes after a lone delimiter (an empty frame).
        let flush = frame.bytes.iter().take_while(|&&b| b == 0).count();
        let mut buf = frame.bytes[flush..frame.bytes.len() - 1].to_vec();
        let header = decode_frame(&mut buf).expect("a whole frame").header;
        let payload = &buf[HEADER_LEN..HEADER_LEN + usize::from(header.payload_len)];
        Message::decode_request(header.message_id, payload).expect("a request");
        chunks.push(header.message_id);
        chunks.extend_from_slice(&header.payload_len.to_le_bytes());
        chunks.extend_from_slice(payload);
    }
    chunks
}

/// The requests in `op_server`'s chunks, or why they are not.
fn parse_chunks(mut input: &[u8]) -> Result<Vec<u8>, String> {
    let mut ids = Vec::new();
    while let [id, lo, hi, tail @ ..] = input {
        let len = usize::from(u16::from_le_bytes([*lo, *hi]));
        let payload = tail.get(..len).ok_or("a chunk runs past the end")?;
        Message::decode_request(*id, payload).map_err(|e| format!("request {id}: {e}"))?;
        ids.push(*id);
        input = &tail[len..];
    }
    if input.is_empty() {
        Ok(ids)
    } else {
        Err(format!("{} bytes after the last chunk", input.len()))
    }
}

/// The traffic of TF programs on a device `scheme` (`mcu-tcp` or `tcp`) on
/// the firmware under QEMU, one process after another on one wire: an
/// MLP's `predict` under the profiler, a Keras `fit` (Adam) for a few
/// seconds, and in op-level mode a convnet's `predict` (the window ops).
fn record(scheme: &str) -> Recording {
    let qemu = Qemu::boot_firmware().expect("QEMU boots the firmware");
    assert!(qemu.wait_for_log("tensorplug firmware", Duration::from_secs(10)));
    let uart = qemu.uart.try_clone().expect("the UART's socket");
    let wire = Wire::start(move || uart.try_clone()).expect("the wire");
    wire.record(RECORD_CAP);
    let scratch = scratch_dir(&format!("fuzz-seeds-{scheme}"));
    let item = format!("{scheme}:127.0.0.1:{}", wire.port);
    let csv = scratch.join("fit.csv").to_string_lossy().into_owned();
    let logdir = scratch.to_string_lossy().into_owned();
    let mut programs = vec![
        ("tf_qemu_mlp.py", vec![logdir.as_str()]),
        ("soak_fit.py", vec!["0.1", csv.as_str(), "3"]),
    ];
    if scheme == "mcu-tcp" {
        programs.push(("tf_qemu_convnet.py", vec![]));
    }
    for (script, args) in programs {
        // `tf_qemu_*` read TF's placement log, which needs log level 0.
        let out = Command::new(python())
            .arg(workspace_root().join("tests/python").join(script))
            .args(args)
            .env("TF_CPP_MIN_LOG_LEVEL", "0")
            .env("TF_PLUGGABLE_DEVICE_LIBRARY_PATH", plugin_path())
            .env("TENSORPLUG_DEVICE", &item)
            .output()
            .expect("cannot start python");
        expect_success(&out, &format!("{script} on {item}"));
    }
    wire.recorded()
}

/// Empties `dir` (relative to the workspace root) and returns it.
fn fresh_dir(dir: &str) -> PathBuf {
    let dir = workspace_root().join(dir);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the seed directory");
    dir
}

#[test]
#[ignore = "rewrites the checked-in fuzz seeds: run by hand after a change to the link"]
fn record_the_seeds() {
    let (link, ops, spi) = (
        fresh_dir(LINK_SEEDS),
        fresh_dir(OP_SERVER_SEEDS),
        fresh_dir(SPI_SEEDS),
    );
    for (scheme, mode) in [("mcu-tcp", "op-level"), ("tcp", "remote-bus")] {
        let recording = record(scheme);
        for (side, stream) in [
            ("host", &recording.from_host),
            ("device", &recording.from_device),
        ] {
            for (i, seed) in seeds(stream).iter().enumerate() {
                let name = format!("{mode}-{side}-{i:02}.bin");
                std::fs::write(link.join(&name), seed).expect("write a seed");
                if side == "host" {
                    let chunks = op_server_chunks(seed);
                    std::fs::write(ops.join(format!("{mode}-{i:02}.bin")), chunks)
                        .expect("write a seed");
                }
            }
        }
        if mode == "op-level" {
            for (i, seed) in spi::device_end(&recording.from_host).iter().enumerate() {
                std::fs::write(spi.join(format!("device-{i:02}.bin")), seed).expect("write");
            }
        }
    }
    std::fs::write(spi.join("host.bin"), spi::host_end()).expect("write a seed");
}

/// Every file of `dir`, sorted.
fn files(dir: &str) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(workspace_root().join(dir))
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| {
            let path = e.expect("an entry").path();
            let name = path
                .file_name()
                .expect("a name")
                .to_string_lossy()
                .into_owned();
            (name, std::fs::read(&path).expect("a seed"))
        })
        .collect();
    files.sort();
    files
}

#[test]
fn the_seeds_are_whole_frames_of_both_modes() {
    let mut ids = BTreeSet::new();
    for (name, bytes) in files(LINK_SEEDS) {
        assert!(bytes.len() <= MAX_SEED, "{name}: {} bytes", bytes.len());
        let frames = frames(&bytes);
        let whole: usize = frames.iter().map(|f| f.bytes.len()).sum();
        assert_eq!(whole, bytes.len(), "{name} ends inside a frame");
        assert!(!frames.is_empty(), "{name} holds no frame");
        ids.extend(frames.iter().map(|f| f.id));
    }
    // Both modes, both directions, and the profiler's traffic.
    for id in [
        MessageId::Hello,
        MessageId::Submit,
        MessageId::WriteMemory,
        MessageId::ReadRegister,
        MessageId::SetProfiling,
    ] {
        assert!(ids.contains(&(id as u8)), "no {id:?} in the seeds");
    }
    assert!(ids.iter().any(|&id| id >= 0x80), "no answer in the seeds");

    let spi_seeds = files(SPI_SEEDS);
    assert!(spi_seeds.len() >= 2, "no spi_frames seeds for both ends");
    for (name, bytes) in spi_seeds {
        assert!(bytes.len() <= MAX_SEED + 1, "{name}: {} bytes", bytes.len());
        let (end, rest) = bytes.split_first().expect("not empty");
        if end % 2 == 0 {
            let windows = spi::parse_windows(rest).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(windows > 0, "{name} holds no window");
        }
    }

    let op_seeds = files(OP_SERVER_SEEDS);
    assert!(!op_seeds.is_empty(), "no op_server seed");
    for (name, bytes) in op_seeds {
        assert!(bytes.len() <= MAX_SEED + 1, "{name}: {} bytes", bytes.len());
        let requests = parse_chunks(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!requests.is_empty(), "{name} holds no request");
    }
}

/// `spi_frames`' seeds.
mod spi {
    use embedded_hal::spi::{ErrorType, Operation, SpiDevice};
    use tensorplug_core::link::server::DriverEvents;
    use tensorplug_core::link::{
        Decoder, FeedResult, MAX_ENCODED_FRAME_LEN, Message, OpServer, Session,
    };
    use tensorplug_device_fpga::driver::{Driver, DriverConfig, StdClock};
    use tensorplug_device_fpga::transport::Transport as _;
    use tensorplug_device_fpga::transport::link::LinkServer;
    use tensorplug_device_fpga::transport::spi::slave::SpiSlave;
    use tensorplug_device_fpga::transport::spi::{SpiConfig, SpiTransport};
    use tensorplug_model_fpga::model::{HostModel, ModelConfig};

    use super::MAX_SEED;

    /// The model as `spi_frames` and `op_server` build it (64 KiB).
    fn model() -> HostModel {
        HostModel::on_host(1 << 16, ModelConfig::default()).expect("the model takes 64 KiB")
    }

    /// An SPI device in front of `inner` that keeps every chip-select
    /// window as `spi_frames`' device-end chunks (`[op, len, bytes]`, bit
    /// 7 of `op`: the window goes on), and every byte the device sent.
    struct Recorder<D> {
        inner: D,
        windows: Vec<Vec<u8>>,
        miso: Vec<u8>,
    }

    impl<D: SpiDevice> ErrorType for Recorder<D> {
        type Error = D::Error;
    }

    impl<D: SpiDevice> SpiDevice for Recorder<D> {
        fn transaction(&mut self, ops: &mut [Operation<'_, u8>]) -> Result<(), D::Error> {
            let mut chunks: Vec<(u8, Vec<u8>)> = Vec::new();
            for op in ops.iter() {
                let (code, data) = match op {
                    Operation::Write(d) => (0, d.to_vec()),
                    Operation::Read(b) => (1, vec![0; b.len()]),
                    Operation::Transfer(r, w) => {
                        let mut d = w.to_vec();
                        d.resize(r.len().max(w.len()), 0);
                        (2, d)
                    }
                    Operation::TransferInPlace(b) => (3, b.to_vec()),
                    Operation::DelayNs(_) => continue,
                };
                // The slave takes a window's bytes as one stream, so a long
                // operation may be cut into pieces of up to 255 bytes.
                chunks.extend(data.chunks(255).map(|piece| (code, piece.to_vec())));
            }
            self.inner.transaction(ops)?;
            for op in ops.iter() {
                match op {
                    Operation::Read(b) | Operation::TransferInPlace(b) => {
                        self.miso.extend_from_slice(b);
                    }
                    Operation::Transfer(r, _) => self.miso.extend_from_slice(r),
                    Operation::Write(_) | Operation::DelayNs(_) => {}
                }
            }
            let last = chunks.len().saturating_sub(1);
            let mut window = Vec::new();
            for (i, (code, piece)) in chunks.into_iter().enumerate() {
                let len = u8::try_from(piece.len()).expect("pieces of 255 at most");
                window.extend([if i < last { code | 0x80 } else { code }, len]);
                window.extend_from_slice(&piece);
            }
            self.windows.push(window);
            Ok(())
        }
    }

    /// The chip-select windows the firmware's driver makes serving the
    /// op-level requests of `from_host`, as `OpServer` on the reference
    /// driver over SPI to the model (`op_server`'s setup), cut into seeds
    /// of whole windows: the device end (first byte 0).
    pub fn device_end(from_host: &[u8]) -> Vec<Vec<u8>> {
        let spi = Recorder {
            inner: SpiSlave::new(model()),
            windows: Vec::new(),
            miso: Vec::new(),
        };
        let transport = SpiTransport::new(spi, SpiConfig::default());
        let Ok(mut driver) =
            Driver::<_, _>::new(transport, StdClock::default(), DriverConfig::default())
        else {
            panic!("the driver brings the model up");
        };
        // Each seed runs on a model just out of reset, so each starts with
        // the bring-up: a seed from the middle of a session reaches the
        // commands only on a device that is up.
        let start: Vec<u8> = [0u8]
            .into_iter()
            .chain(std::mem::take(&mut driver.transport_mut().device_mut().windows).concat())
            .collect();
        let (mut session, mut port) = (Session::new(), model());
        let mut ops = Box::new(OpServer::<16>::new().with_window(8));
        let mut bus = LinkServer::new();
        let mut decoder = Box::new(Decoder::requests());
        let mut out = vec![0u8; MAX_ENCODED_FRAME_LEN];
        let mut send = |_: &[u8]| {};
        let mut rest = from_host;
        loop {
            match decoder.feed(rest) {
                FeedResult::Consumed => break,
                FeedResult::Frame { frame, remaining } => {
                    rest = remaining;
                    // Routed as the firmware routes them (firmware/src/main.rs).
                    if frame.message.is_remote_bus()
                        || matches!(frame.message, Message::Hello(_) | Message::Ping(_))
                    {
                        bus.answer_in(&mut session, &mut port, &frame, &mut out)
                            .expect("an answer encodes");
                    } else {
                        ops.answer(
                            &mut session,
                            &mut driver,
                            &mut DriverEvents,
                            &frame,
                            &mut send,
                        )
                        .expect("an answer encodes");
                    }
                }
                FeedResult::Error { error, .. } => panic!("a recorded request: {error}"),
            }
            ops.poll(&mut session, &mut driver, &mut DriverEvents, &mut send)
                .expect("a completion encodes");
        }
        let windows = std::mem::take(&mut driver.transport_mut().device_mut().windows);
        let mut seeds = vec![start.clone()];
        // A poll repeats one of the last few windows: how many polls a
        // command takes depends on the host's load, and without them the
        // seeds reach the commands, not only the waits.
        let mut recent: std::collections::VecDeque<Vec<u8>> = Default::default();
        for window in windows {
            if recent.contains(&window) {
                continue;
            }
            recent.push_back(window.clone());
            if recent.len() > 4 {
                recent.pop_front();
            }
            let last = seeds.last_mut().expect("one seed at least");
            if last.len() + window.len() > MAX_SEED + 1 {
                seeds.push(start.clone());
            }
            seeds.last_mut().expect("one seed at least").extend(window);
        }
        seeds.retain(|s| s.len() > start.len());
        seeds.truncate(super::PER_STREAM);
        seeds
    }

    /// What the model answers to `spi_frames`' host-end calls (its
    /// `host_end`), as the MISO bytes of that end's seed (first byte 1).
    pub fn host_end() -> Vec<u8> {
        let spi = Recorder {
            inner: SpiSlave::new(model()),
            windows: Vec::new(),
            miso: Vec::new(),
        };
        let config = SpiConfig {
            max_busy_polls: 64,
            ..SpiConfig::default()
        };
        let mut host = SpiTransport::new(spi, config);
        host.read_reg(0x10).expect("a register reads");
        host.write_reg(0x14, 7).expect("a register writes");
        let mut buf = [0u8; 2100];
        host.read_mem(0x40, &mut buf).expect("memory reads");
        host.write_mem(0x40, &[0x5A; 1500]).expect("memory writes");
        let mut seed = vec![1u8];
        seed.extend_from_slice(&host.device_mut().miso);
        seed.truncate(MAX_SEED + 1);
        seed
    }

    /// The device-end windows in `input`, or why it is not whole chunks.
    pub fn parse_windows(mut input: &[u8]) -> Result<usize, String> {
        let mut windows = 0;
        while let [op, len, rest @ ..] = input {
            let len = usize::from(*len);
            if rest.len() < len {
                return Err("a chunk runs past the end".into());
            }
            input = &rest[len..];
            if op & 0x80 == 0 {
                windows += 1;
            } else if input.is_empty() {
                return Err("the last window is left open".into());
            }
        }
        if input.is_empty() {
            Ok(windows)
        } else {
            Err(format!("{} bytes after the last chunk", input.len()))
        }
    }
}
