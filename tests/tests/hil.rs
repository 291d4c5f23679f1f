//! Hardware in the loop under QEMU: the firmware (`firmware/`) on an
//! emulated Cortex-M4 (`mps2-an386`) answers the link protocol on its UART,
//! with the reference FPGA's behavioural model in the MCU's RAM. The host
//! runs the reference driver over the link (remote-bus mode), as it would
//! for an FPGA behind an MCU's UART.
//!
//! Needs `qemu-system-arm` and the `thumbv7em-none-eabihf` target, which
//! `cargo xtask test` installs.

use std::io::{Read, Write};
use std::time::{Duration, Instant};
use tensorplug_core::accelerator::prelude::*;
use tensorplug_core::accelerator::{Accelerator, ErrorKind};
use tensorplug_core::conformance::{Config, run_all};
use tensorplug_core::link::{
    Decoder, Encoder, FeedResult, Hello, MAX_ENCODED_FRAME_LEN, Message, PROTOCOL_VERSION,
    ProtocolVersion, ReadRegister, RemoteErrorCode, negotiate,
};
use tensorplug_device_fpga::driver::{Driver, DriverConfig, StdClock};
use tensorplug_device_fpga::transport::link::LinkTransport;
use tensorplug_tests::qemu::{Qemu, assert_every_member_ran};

/// Budget for each answer of the firmware under emulation.
const ANSWER_MS: u32 = 5_000;

fn boot() -> Qemu {
    tensorplug_tests::mcu::boot()
}

/// The reference driver over the link to the firmware.
fn driver(qemu: &Qemu) -> Driver<LinkTransport<std::net::TcpStream>, StdClock> {
    let stream = qemu.uart.try_clone().expect("clone the UART socket");
    stream
        .set_read_timeout(Some(Duration::from_millis(u64::from(ANSWER_MS))))
        .unwrap();
    let link = LinkTransport::connect(stream, ANSWER_MS).expect("link handshake");
    let config = DriverConfig {
        ready_timeout_us: 10_000_000,
        submit_timeout_us: 10_000_000,
        idle_timeout_us: 10_000_000,
        ..DriverConfig::default()
    };
    Driver::new(link, StdClock::default(), config).expect("driver bring-up over the link")
}

/// Sends `message` and returns the first answer frame's message, owned.
fn exchange(qemu: &mut Qemu, message: &Message<'_>) -> String {
    let mut out = vec![0u8; MAX_ENCODED_FRAME_LEN];
    let (len, _) = Encoder::new().request(message, &mut out).unwrap();
    qemu.uart.write_all(&out[..len]).unwrap();
    read_answer(qemu, |m| format!("{m:?}"))
}

fn read_answer<R>(qemu: &mut Qemu, take: impl Fn(&Message<'_>) -> R) -> R {
    read_answers(qemu, 1, take).remove(0)
}

/// The next `count` answer frames, read with one decoder (several answers
/// may arrive in one read).
fn read_answers<R>(qemu: &mut Qemu, count: usize, take: impl Fn(&Message<'_>) -> R) -> Vec<R> {
    qemu.uart
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut decoder = Decoder::new();
    let mut answers = Vec::new();
    let mut chunk = [0u8; 512];
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        let n = qemu.uart.read(&mut chunk).expect("an answer within 5 s");
        let mut rest = &chunk[..n];
        while !rest.is_empty() {
            match decoder.feed(rest) {
                FeedResult::Consumed => break,
                FeedResult::Frame { frame, remaining } => {
                    answers.push(take(&frame.message));
                    rest = remaining;
                }
                FeedResult::Error { remaining, .. } => rest = remaining,
            }
        }
        if answers.len() >= count {
            assert_eq!(answers.len(), count, "more answers than requests");
            return answers;
        }
    }
    panic!(
        "{} of {count} answer frames; logs:\n{}",
        answers.len(),
        qemu.logs().join("\n")
    );
}

#[test]
fn a_panic_prints_its_message_and_exits_qemu_with_failure() {
    let mut qemu = Qemu::boot(&tensorplug_tests::qemu::panicking_firmware_elf())
        .expect("QEMU boots the panicking firmware");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = qemu.try_exit() {
            break status;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "QEMU did not exit"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!status.success(), "QEMU exited with {status}");
    assert!(
        qemu.wait_for_log("panic at src/main.rs:", Duration::from_secs(5))
            && qemu.wait_for_log("this build panics on purpose", Duration::from_secs(1)),
        "no panic message; logs:\n{}",
        qemu.logs().join("\n")
    );
}

/// The int8 requantization (`tensorplug_core::quant`) gives the golden
/// vectors' answers on the Cortex-M4 too, every line of them.
#[test]
fn the_requantize_golden_vectors_pass_on_the_mcu() {
    let golden = std::fs::read_to_string(
        tensorplug_tests::workspace_root().join("core/tests/data/requantize_golden.txt"),
    )
    .unwrap();
    let lines = golden.lines().filter(|l| !l.starts_with('#')).count();
    let mut qemu = Qemu::boot(&tensorplug_tests::qemu::requantize_selftest_elf())
        .expect("QEMU boots the requantize self-test");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = qemu.try_exit() {
            break status;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "QEMU did not exit; logs:\n{}",
            qemu.logs().join("\n")
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let want = format!("requantize golden: {lines} checked, 0 failed");
    assert!(
        qemu.wait_for_log(&want, Duration::from_secs(5)),
        "no `{want}`; logs:\n{}",
        qemu.logs().join("\n")
    );
    assert!(status.success(), "QEMU exited with {status}");
}

#[test]
fn the_firmware_boots_and_says_so_in_defmt() {
    let qemu = boot();
    let logs = qemu.logs().join("\n");
    assert!(logs.contains("FPGA model with 3072 KiB"), "{logs}");
}

#[test]
fn an_incompatible_host_is_refused_and_the_message_names_both_versions() {
    let mut qemu = boot();
    let theirs = Hello {
        version: ProtocolVersion { major: 9, minor: 0 },
        ..Hello::ours()
    };
    let peer = {
        let mut out = vec![0u8; MAX_ENCODED_FRAME_LEN];
        let (len, _) = Encoder::new()
            .request(&Message::Hello(theirs), &mut out)
            .unwrap();
        qemu.uart.write_all(&out[..len]).unwrap();
        read_answer(&mut qemu, |m| match m {
            Message::HelloAck(peer) => *peer,
            other => panic!("expected HelloAck, got {other:?}"),
        })
    };
    let error = negotiate(&theirs, &peer).unwrap_err().to_string();
    let ours = PROTOCOL_VERSION.to_string();
    assert!(error.contains("9.0") && error.contains(&ours), "{error}");
    // Until a compatible hello, the firmware refuses every request.
    let answer = exchange(
        &mut qemu,
        &Message::ReadRegister(ReadRegister { offset: 0 }),
    );
    let code = RemoteErrorCode::IncompatibleVersion as u16;
    assert!(answer.contains(&format!("code: {code}")), "{answer}");
}

#[test]
fn the_reference_driver_passes_the_conformance_suite_over_the_uart() {
    let qemu = boot();
    let mut dev = driver(&qemu);
    let config = Config {
        // The emulated UART moves a few KiB/s: keep the suite short.
        large_copy: 4 << 10,
        // 67 elements, not 1 000: past 64, so unrolled loops end on a
        // remainder, at a fifteenth of the UART's bytes.
        long_vector: 67,
        ..Config::default()
    };
    let report = run_all(&mut dev, &config);
    println!("{report}");
    assert!(
        report.failures().next().is_none(),
        "{report}\nfirmware logs:\n{}",
        qemu.logs().join("\n")
    );
    // The MCU's model ran every int8 op, bit for bit (not refused).
    assert_every_member_ran(&report, "op_int8");
}

#[test]
fn garbage_and_truncated_frames_are_recovered_from() {
    let mut qemu = boot();
    // A truncated frame, then noise, then the delimiter.
    let mut out = vec![0u8; MAX_ENCODED_FRAME_LEN];
    let (len, _) = Encoder::new()
        .request(&Message::Hello(Hello::ours()), &mut out)
        .unwrap();
    let mut junk = out[..len / 2].to_vec();
    junk.extend_from_slice(&[0x13, 0x37, 0xff, 0x00, 0x55, 0xaa, 0x00]);
    qemu.uart.write_all(&junk).unwrap();
    // The firmware answers each bad frame (request id 0: "a frame of yours
    // was dropped"), then a good request works.
    let code = RemoteErrorCode::BadFrame as u16;
    for answer in read_answers(&mut qemu, 2, |m| format!("{m:?}")) {
        assert!(answer.contains(&format!("code: {code}")), "{answer}");
    }
    let mut dev = driver(&qemu);
    let addr = dev.allocate(64, 64).unwrap();
    let data: Vec<u8> = (0..64).collect();
    dev.write_blocking(Default::default(), addr, &data, Duration::from_secs(10))
        .unwrap();
    let mut back = [0u8; 64];
    dev.read_blocking(Default::default(), &mut back, addr, Duration::from_secs(10))
        .unwrap();
    assert_eq!(back.as_slice(), data.as_slice());
    assert!(
        qemu.wait_for_log("bad frame from the host", Duration::from_secs(5)),
        "{}",
        qemu.logs().join("\n")
    );
}

#[test]
fn a_firmware_that_stops_answering_is_a_clear_timeout_not_a_hang() {
    let qemu = boot();
    let mut dev = driver(&qemu);
    qemu.freeze(true);
    let start = Instant::now();
    let error = dev.timestamp().unwrap_err();
    let took = start.elapsed();
    qemu.freeze(false);
    assert!(
        matches!(error.kind(), ErrorKind::Timeout | ErrorKind::Transport),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("5000 ms") || error.to_string().contains("time"),
        "{error}"
    );
    assert!(took < Duration::from_secs(15), "took {took:?}");
}

/// TensorFlow over QEMU: the FPGA plugin's `tcp:` device on the firmware's
/// UART (remote-bus mode, the model in the MCU's RAM) runs a small Keras
/// MLP's `predict` under the profiler, equal to the CPU, with the device
/// ops the firmware's model stamped in the profile.
#[test]
fn tensorflow_predicts_on_the_fpga_behind_the_firmware() {
    let qemu = boot();
    let stdout = tensorplug_tests::qemu::tf_mlp_scenario(&qemu, "tcp:");
    println!("{stdout}");
}

/// `cargo xtask qemu --board mps2-an386 --serve tcp:0`, as a person runs
/// it to try TF against the firmware: it prints where the link UART is
/// served, and a TF process started apart from it predicts a Keras MLP
/// over `mcu-tcp:` on that address, equal to the CPU, with the firmware's
/// device ops in its profile. The task then stops with its QEMU when its
/// standard input closes (`--until-stdin-closes`).
#[test]
fn xtask_qemu_keeps_a_board_running_that_tf_reaches_over_mcu_tcp() {
    use std::io::BufRead;
    use std::process::Stdio;
    let mut task = tensorplug_tests::xtask()
        .args(["qemu", "--board", "mps2-an386", "--serve", "tcp:0"])
        .args(["--seconds", "600", "--until-stdin-closes"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("cargo xtask qemu starts");
    let mut lines = std::io::BufReader::new(task.stdout.take().expect("piped")).lines();
    let served = lines.by_ref().map_while(Result::ok).find_map(|l| {
        let rest = l.split("TENSORPLUG_DEVICE=mcu-tcp:").nth(1)?;
        Some(rest.split(';').next()?.trim().to_owned())
    });
    // Keep reading its log, so that its pipe never fills.
    let log = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>());
    let out = served.map(|addr| {
        let logdir = tensorplug_tests::scratch_dir("hil-xtask-qemu");
        let out = std::process::Command::new(tensorplug_tests::python())
            .arg(tensorplug_tests::workspace_root().join("tests/python/tf_qemu_mlp.py"))
            .arg(&logdir)
            .env("TF_CPP_MIN_LOG_LEVEL", "0")
            .env(
                "TF_PLUGGABLE_DEVICE_LIBRARY_PATH",
                tensorplug_tests::plugin_path(),
            )
            .env("TENSORPLUG_DEVICE", format!("mcu-tcp:{addr}"))
            .output()
            .expect("python runs");
        (addr, out)
    });
    drop(task.stdin.take());
    let status = task.wait().expect("cargo xtask qemu ends");
    let log = log.join().unwrap_or_default().join("\n");
    let Some((addr, out)) = out else {
        panic!("cargo xtask qemu printed no mcu-tcp: address ({status}):\n{log}");
    };
    assert!(status.success(), "cargo xtask qemu: {status}\n{log}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "TF over mcu-tcp:{addr} failed:\n{stdout}\n{}\nfirmware log:\n{log}",
        &stderr[stderr.len().saturating_sub(4000)..]
    );
    for marker in [
        "predict on the firmware's FPGA",
        "profile: /device:GPU:1000 device ops",
    ] {
        assert!(stdout.contains(marker), "no `{marker}` in:\n{stdout}");
    }
}
