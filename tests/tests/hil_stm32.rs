//! Hardware in the loop under QEMU on a second chip (`docs/boards.md`):
//! the `netduinoplus2-qemu` board (`firmware/boards/netduinoplus2-qemu.toml`,
//! QEMU's STM32F405), the firmware on its `stm32f4xx-hal` glue, the link on
//! the STM32's USART6 model, the FPGA's behavioural model in the MCU's
//! 128 KiB of RAM. The host drives it in op-level mode (`RemoteAccelerator`).
//!
//! Needs `qemu-system-arm` and the `thumbv7em-none-eabihf` target, which
//! `cargo xtask test` installs.

use std::net::TcpStream;
use std::sync::OnceLock;
use std::time::Duration;
use tensorplug_boards::Board;
use tensorplug_core::accelerator::prelude::*;
use tensorplug_core::accelerator::{
    Accelerator, DType, OpDesc, OpKind, QueueId, Shape, TensorDesc, Unary,
};
use tensorplug_core::event::{Event, EventKind};
use tensorplug_link_host::RemoteAccelerator;
use tensorplug_tests::mcu::on_board;
use tensorplug_tests::qemu::{BOOT_TIMEOUT, Qemu, build_in_variants};

/// Budget for each answer of the firmware under emulation.
const ANSWER: Duration = Duration::from_secs(10);

const BOARD: &str = "netduinoplus2-qemu";

fn board() -> Board {
    let dir = tensorplug_tests::workspace_root().join(tensorplug_boards::BOARDS_DIR);
    tensorplug_boards::load(&dir, BOARD).unwrap_or_else(|e| panic!("{e}"))
}

/// The board's image, built once per process.
fn elf(board: &Board) -> std::path::PathBuf {
    static ELF: OnceLock<std::path::PathBuf> = OnceLock::new();
    ELF.get_or_init(|| {
        let feature = board.feature();
        let args = ["--no-default-features", "--features", &feature];
        build_in_variants(&args, &board.target, &board.name).unwrap_or_else(|e| panic!("{e}"))
    })
    .clone()
}

fn boot() -> Qemu {
    let board = board();
    let emulator = board.emulator().expect("an emulated board");
    let mut qemu = Qemu::boot_machine(
        &emulator.qemu_machine,
        &emulator.qemu_cpu,
        emulator.serial,
        &elf(&board),
        &[],
    )
    .expect("QEMU boots the firmware");
    qemu.await_announcement(BOOT_TIMEOUT).unwrap_or_else(|e| {
        panic!(
            "no boot announcement on USART6: {e}\nlogs:\n{}",
            qemu.logs().join("\n")
        )
    });
    qemu
}

fn connect(qemu: &Qemu) -> RemoteAccelerator<TcpStream> {
    let stream = qemu.uart.try_clone().expect("clone the UART socket");
    RemoteAccelerator::connect(stream, ANSWER)
        .unwrap_or_else(|e| panic!("op-level link: {e}\nlogs:\n{}", qemu.logs().join("\n")))
}

/// The value, or a panic that shows the firmware's log.
fn ok<T, E: std::fmt::Debug>(result: Result<T, E>, qemu: &Qemu) -> T {
    result.unwrap_or_else(|e| panic!("{e:?}\nlogs:\n{}", qemu.logs().join("\n")))
}

fn f32s(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[test]
fn the_stm32_board_boots_and_logs_its_link_and_model() {
    let qemu = boot();
    // The log arrives on its own channel, possibly after the announcement.
    assert!(
        qemu.wait_for_log(
            "link protocol on USART6, FPGA model with 48 KiB",
            Duration::from_secs(10)
        ),
        "{}",
        qemu.logs().join("\n")
    );
}

#[test]
fn a_relu_runs_on_the_fpga_model_behind_the_stm32_usart_with_device_events() {
    let qemu = boot();
    let mut dev = connect(&qemu);
    let q = QueueId(0);
    let input: Vec<f32> = (0..16).map(|i| i as f32 - 7.5).collect();
    let x = ok(dev.allocate(64, 64), &qemu);
    let y = ok(dev.allocate(64, 64), &qemu);
    ok(dev.write_blocking(q, x, &f32s(&input), ANSWER), &qemu);
    ok(dev.set_profiling(true), &qemu);
    let t = TensorDesc::new(x, DType::F32, Shape::new(&[16]).unwrap());
    let out = TensorDesc::new(y, DType::F32, Shape::new(&[16]).unwrap());
    let op = OpDesc {
        kind: OpKind::Unary(Unary::RELU),
        inputs: &[t],
        output: out,
        op_id: 7,
    };
    let fence = ok(dev.launch(q, &op), &qemu);
    ok(dev.wait(fence, ANSWER), &qemu);
    let mut bytes = vec![0u8; 64];
    ok(dev.read_blocking(q, &mut bytes, y, ANSWER), &qemu);
    let got: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let want: Vec<f32> = input.iter().map(|v| v.max(0.0)).collect();
    assert_eq!(got, want);
    // The SysTick handler drains the FPGA's ring every millisecond.
    std::thread::sleep(Duration::from_millis(50));
    let mut events = [Event::new(EventKind::OpBegin, 0, 0, 0, 0); 16];
    let drained = ok(dev.drain_events(&mut events), &qemu);
    let events = &events[..drained.events];
    for kind in [EventKind::OpBegin, EventKind::OpEnd] {
        assert!(
            events.iter().any(|e| e.op_id == 7 && e.kind == kind as u8),
            "no {kind:?} of op 7 in {events:?}"
        );
    }
}

/// The bar for this board: TF runs a Keras MLP `predict` over
/// `mcu-tcp:` on the STM32's firmware, equal to the CPU, with device ops in
/// the profile (`tests/python/tf_qemu_mlp.py`).
#[test]
fn tensorflow_predicts_with_the_driver_on_the_stm32_board() {
    let qemu = boot();
    let stdout = tensorplug_tests::qemu::tf_mlp_scenario(&qemu, "mcu-tcp:");
    assert!(
        qemu.wait_for_log("driver up: the FPGA over SPI", Duration::from_secs(1)),
        "TF did not use the firmware's driver; logs:\n{}",
        qemu.logs().join("\n")
    );
    println!("{stdout}");
}

/// Issue 43: what happens when host weights exceed the device's memory, on
/// the board with the least of it (`tests/python/tf_program_big_weights.py`).
/// A small MLP built under a CPU scope runs, equal to the CPU, its 13 kB
/// of weights kept on the device: a later step sends no weight (within
/// 512 B: the start and the fetch); so does one of 18 kB, which needs the
/// board's smaller event ring (`[driver] event_entries`: the driver's
/// heap is 36 KB of the model's 48, not 24). One whose weights the device cannot
/// hold fails each step with a `ResourceExhaustedError` naming its program
/// node, neither crashing nor hanging; and the device still serves the
/// small one after it.
#[test]
fn weights_past_the_devices_memory_fail_the_step_clearly_and_the_device_goes_on() {
    let qemu = boot();
    let python = |_: &std::path::Path| {
        let mut command = std::process::Command::new(tensorplug_tests::python());
        command
            .arg(tensorplug_tests::workspace_root().join("tests/python/tf_program_big_weights.py"))
            .env(
                "TF_PLUGGABLE_DEVICE_LIBRARY_PATH",
                tensorplug_tests::plugin_path(),
            );
        command
    };
    let (stdout, sent) = on_board(&qemu, "hil-stm32-big-weights", python, |_| false);
    for marker in [
        "small step 2 ok",
        "mid step 2 ok",
        "big step 2 error",
        "again step 2 ok",
    ] {
        assert!(stdout.contains(marker), "no `{marker}` in:\n{stdout}");
    }
    for line in stdout.lines().filter(|l| l.contains(" step ")) {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words[0] {
            "small" | "mid" | "again" => {
                assert_eq!(words[3], "ok", "{line}");
                let diff: f32 = words[6].parse().expect("max_diff");
                assert!(diff <= 1e-5, "{line}");
            }
            "big" => assert_eq!(
                &words[3..],
                ["error", "ResourceExhaustedError", "True"],
                "{line}"
            ),
            other => panic!("unexpected line {other}: {line}"),
        }
    }
    // Three steps each of `small`, `mid` and `again` (the big model fails
    // before its program runs); the windows between them are steps 1 and
    // 2 of each, and the windows into `mid` and `again`, which upload
    // their weights (`set_random_seed` clears TF's kernels).
    assert_eq!(sent.runs, 9, "one RunProgram per good step: {sent:?}");
    for window in [0, 1, 3, 4, 6, 7] {
        let bytes = sent.between_runs[window];
        assert!(
            bytes <= 512,
            "a step sent {bytes} B: its weights were not kept: {sent:?}"
        );
    }
}
