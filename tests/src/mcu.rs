//! The firmware under QEMU driven by a host process (TensorFlow, a TFLite
//! interpreter) through a recording wire, and what the host sent it: the
//! HIL tests' and the firmware bench's common ground.

use crate::qemu::Qemu;
use std::time::Duration;
use tensorplug_core::accelerator::OpKind;

/// How long the wire holds the firmware's answers once programs run, so
/// that only the host's real waits count as round trips
/// ([`Wire::hold_answers_after_first_run`](crate::wire::Wire::hold_answers_after_first_run)).
const HOLD: Duration = Duration::from_millis(25);

/// Boots the firmware and waits for its boot line.
///
/// # Panics
/// When QEMU does not boot it, naming its logs.
pub fn boot() -> Qemu {
    let qemu = Qemu::boot_firmware().expect("QEMU boots the firmware");
    assert!(
        qemu.wait_for_log("tensorplug firmware", Duration::from_secs(10)),
        "no boot log line; logs:\n{}",
        qemu.logs().join("\n")
    );
    qemu
}

/// What the host sent the firmware, read from a recording of the wire.
#[derive(Debug, Default)]
pub struct Sent {
    /// Programs stored: `LoadProgram`s of a first chunk (a program past
    /// 2 KiB crosses in several).
    pub loads: usize,
    pub runs: usize,
    /// Launches of the ops a test counts.
    pub launches: usize,
    /// Every byte the host sent.
    pub bytes: usize,
    /// The bytes sent between each `RunProgram` and the next (inclusive
    /// of the next): a step's inputs, its start and its fetches.
    pub between_runs: Vec<usize>,
    /// The round trips in the same windows: the times the host sent again
    /// after waiting for every answer (`Recording::round_trips`).
    pub round_trips_between_runs: Vec<usize>,
    /// Frames and bytes by message.
    pub by_message: std::collections::BTreeMap<String, (usize, usize)>,
}

/// Runs the command `python(work dir)` makes, with `TENSORPLUG_DEVICE` on
/// the firmware through a recording wire; returns its stdout and what the
/// host sent, counting the launches of ops `counts`.
pub fn on_the_mcu(
    name: &str,
    python: impl Fn(&std::path::Path) -> std::process::Command,
    counts: impl Fn(&OpKind) -> bool,
) -> (String, Sent) {
    on_board(&boot(), name, python, counts)
}

/// [`on_the_mcu`] on a booted board's firmware (another board's).
pub fn on_board(
    qemu: &Qemu,
    name: &str,
    python: impl Fn(&std::path::Path) -> std::process::Command,
    counts: impl Fn(&OpKind) -> bool,
) -> (String, Sent) {
    use tensorplug_core::link::{Decoder, FeedResult, Message, ops::Command};
    let uart = qemu.uart.try_clone().expect("the UART's socket");
    let wire = crate::wire::Wire::start(move || uart.try_clone()).expect("the wire");
    wire.record(1 << 22);
    wire.hold_answers_after_first_run(HOLD);
    let work = crate::scratch_dir(name);
    let out = python(&work)
        .env("TF_CPP_MIN_LOG_LEVEL", "2")
        .env(
            "TENSORPLUG_DEVICE",
            format!("mcu-tcp:127.0.0.1:{}", wire.port),
        )
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{name} on mcu-tcp failed:\n{stdout}\n{}\nfirmware logs:\n{}",
        &stderr[stderr.len().saturating_sub(4000)..],
        qemu.logs().join("\n")
    );
    let launch_counts = |c: &Command<'_>| match c {
        Command::Launch(op) => op.kind().is_ok_and(|k| counts(&k)),
        _ => false,
    };
    let recording = wire.recorded();
    let sent = &recording.from_host;
    let mut run_offsets = Vec::new();
    let mut decoder = Decoder::requests();
    let mut seen = Sent {
        bytes: sent.len(),
        ..Sent::default()
    };
    let mut since_run: Option<usize> = None;
    let mut rest: &[u8] = sent;
    while !rest.is_empty() {
        match decoder.feed(rest) {
            FeedResult::Consumed => break,
            FeedResult::Error { remaining, .. } => rest = remaining,
            FeedResult::Frame { frame, remaining } => {
                let len = rest.len() - remaining.len();
                let kind = seen
                    .by_message
                    .entry(format!("{:?}", frame.message.id()))
                    .or_default();
                *kind = (kind.0 + 1, kind.1 + len);
                if let Some(gap) = since_run.as_mut() {
                    *gap += len;
                }
                match &frame.message {
                    Message::LoadProgram(l) => seen.loads += usize::from(l.offset == 0),
                    Message::RunProgram(_) => {
                        seen.runs += 1;
                        run_offsets.push(sent.len() - rest.len());
                        if let Some(gap) = since_run.replace(0) {
                            seen.between_runs.push(gap);
                        }
                    }
                    Message::Submit(s) => seen.launches += usize::from(launch_counts(&s.command)),
                    Message::SubmitBatch(b) => {
                        seen.launches += b.commands().flatten().filter(launch_counts).count();
                    }
                    _ => {}
                }
                rest = remaining;
            }
        }
    }
    let round_trips = recording.round_trips();
    seen.round_trips_between_runs = run_offsets
        .windows(2)
        .map(|w| {
            round_trips
                .iter()
                .filter(|&&t| t > w[0] && t <= w[1])
                .count()
        })
        .collect();
    println!("{stdout}\nover the link: {seen:?}");
    (stdout, seen)
}
