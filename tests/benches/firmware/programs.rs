//! A device program's step three ways, over the same link in the same run
//! (`docs/device-programs.md`): one `RunProgram` (link 2.3), the program's
//! commands replayed by the host in one `SubmitBatch` (2.2), and one frame
//! each within the window (2.1). Time in round trips of the run, and bytes
//! the host sends per step.

use super::{ANSWER, Counting, figure, median};
use tensorplug_core::accelerator::prelude::*;
use tensorplug_core::accelerator::{Binary, DType, OpKind, QueueId, Shape, Unary, VendorOps};
use tensorplug_core::program::{
    Bindings, BufferKind, Limits, Program, ProgramBuilder, replay, validate,
};
use tensorplug_link_host::RemoteAccelerator;

/// Commands in the program: a matmul, its bias, then element-wise steps.
pub const COMMANDS: usize = 16;

/// `x·w + b`, then alternately `tanh` and `t·t`: 16 commands over [8, 32].
fn program() -> Vec<u8> {
    let s = |d: &[u64]| Shape::new(d).expect("shape");
    let f = DType::F32;
    let mut b = ProgramBuilder::new();
    let x = b.buffer(BufferKind::Input, f, s(&[8, 32])).expect("x");
    let w = b.buffer(BufferKind::Constant, f, s(&[32, 32])).expect("w");
    let bias = b.buffer(BufferKind::Constant, f, s(&[32])).expect("b");
    let y = b.buffer(BufferKind::Output, f, s(&[8, 32])).expect("y");
    let t = [
        b.buffer(BufferKind::Scratch, f, s(&[8, 32])).expect("t0"),
        b.buffer(BufferKind::Scratch, f, s(&[8, 32])).expect("t1"),
    ];
    let mm = OpKind::MatMul {
        transpose_a: false,
        transpose_b: false,
    };
    b.launch(mm, 1, &[x, w], t[0]).expect("matmul");
    b.launch(OpKind::BiasAdd, 2, &[t[0], bias], t[1])
        .expect("bias");
    for k in 2..COMMANDS - 1 {
        let (from, to) = (t[(k + 1) % 2], t[k % 2]);
        let kind = if k % 2 == 0 {
            b.launch(OpKind::Unary(Unary::TANH), k as u16 + 1, &[from], to)
        } else {
            b.launch(OpKind::Binary(Binary::MUL), k as u16 + 1, &[from, from], to)
        };
        kind.expect("element-wise step");
    }
    b.launch(OpKind::Unary(Unary::TANH), COMMANDS as u16, &[t[0]], y)
        .expect("last step");
    b.finish(&VendorOps::NONE).expect("a valid program").bytes
}

/// One way's median step, in round trips of `trip`, and bytes sent per step.
pub struct Way {
    pub trips: f64,
    pub bytes: f64,
}

/// Each way's step on `dev`: (`RunProgram`, one batch, a frame each).
pub fn three_ways(dev: &mut RemoteAccelerator<Counting>, trip: f64) -> [Way; 3] {
    let bytes = program();
    let q = QueueId(0);
    let mut alloc = |n: u64| dev.allocate(n, 64).expect("allocate");
    let slots = [alloc(1024), alloc(4096), alloc(128), alloc(1024)];
    let arena = alloc(4096);
    for (addr, len) in [(slots[0], 1024), (slots[1], 4096), (slots[2], 128)] {
        let data: Vec<u8> = (0..len / 4)
            .flat_map(|i| ((i % 7) as f32 * 0.01).to_le_bytes())
            .collect();
        dev.write_blocking(q, addr, &data, ANSWER).expect("inputs");
    }
    let name = dev
        .load_program(&bytes)
        .expect("the program loads")
        .expect("the peer keeps programs");
    let valid = validate(
        Program::parse(&bytes).expect("parse"),
        &VendorOps::NONE,
        &Limits::HOST,
    )
    .expect("valid");
    let at = Bindings::new(&slots, arena);
    let step = |dev: &mut RemoteAccelerator<Counting>, native: bool| {
        let sent = dev.stream().written;
        let start = std::time::Instant::now();
        let fence = if native {
            dev.run_program(q, name, &slots, arena)
                .expect("the peer keeps programs")
                .expect("run")
        } else {
            replay(dev, q, &valid, &at)
                .expect("replay")
                .expect("a fence")
        };
        dev.wait(fence, ANSWER).expect("the step completes");
        (
            start.elapsed().as_secs_f64(),
            (dev.stream().written - sent) as f64,
        )
    };
    let way = |dev: &mut RemoteAccelerator<Counting>, native: bool| {
        let runs: Vec<(f64, f64)> = (0..12).map(|_| step(dev, native)).collect();
        Way {
            trips: median(runs.iter().map(|r| r.0).collect()) / trip,
            bytes: median(runs.iter().map(|r| r.1).collect()),
        }
    };
    assert!(dev.batching(), "the peer takes batches (2.2)");
    let run = way(dev, true);
    let batched = way(dev, false);
    dev.set_batching(false).expect("batches off");
    let framed = way(dev, false);
    dev.set_batching(true).expect("batches on");
    [run, batched, framed]
}

/// Writes the figures of [`three_ways`] on link `link` (`firmware`, `tcp`).
pub fn report(link: &str, what: &str, ways: &[Way; 3]) {
    let [run, batched, framed] = ways;
    figure(
        &format!("{link}_program_step"),
        &format!(
            "a {COMMANDS}-command program's step {what}, in round trips: one RunProgram vs the \
             same commands in one SubmitBatch (a frame each: {:.1}); bytes sent per step {:.0} vs \
             {:.0} vs {:.0}",
            framed.trips, run.bytes, batched.bytes, framed.bytes
        ),
        run.trips,
        Some(batched.trips),
        "round trips",
        "ratio <= 1",
    );
}
