//! Rings: wrap-around, back-pressure, phase bit, event contents and drops,
//! the modelled clock, host-memory rings.
#![cfg(feature = "std")]

mod model_support;

use model_support::*;
use tensorplug_abi::device::{
    CommandDescriptor, CommandFlags, CompletionFlags, CompletionStatus, Control, EventKind, Irq,
    Opcode, Register, Status, expected_phase,
};
use tensorplug_model_fpga::model::{HostBus, Timing};

fn nop(tag: u16) -> CommandDescriptor {
    CommandDescriptor::new(Opcode::NOP, tag, 2)
}

#[test]
fn indices_wrap_around_the_rings_many_times() {
    let mut rig = Rig::new(4, 4, 8, Control::EVENTS);
    for round in 0..10u16 {
        let cmds: Vec<_> = (0..3).map(|i| nop(round * 3 + i)).collect();
        rig.submit(&cmds);
        let done = rig.take_completions();
        let tags: Vec<u16> = done.iter().map(|c| c.tag).collect();
        assert_eq!(tags, [round * 3, round * 3 + 1, round * 3 + 2]);
        for c in &done {
            assert_eq!(c.status, CompletionStatus::OK);
            assert_eq!(u32::from(c.tag), c.command_index);
        }
        assert_eq!(rig.take_events().len(), 6);
    }
    assert_eq!(rig.reg(Register::CMDQ_HEAD), 30);
    assert_eq!(rig.reg(Register::CPLQ_TAIL), 30);
    assert_eq!(rig.reg(Register::EVQ_TAIL), 60);
    assert_eq!(rig.reg(Register::EVQ_DROPPED), 0);
}

#[test]
fn a_full_completion_queue_back_pressures_the_command_queue() {
    let mut rig = Rig::new(8, 2, 16, Control(0));
    rig.post(&(0..5).map(nop).collect::<Vec<_>>());
    let s = rig.dev.service();
    assert_eq!(s.commands, 2);
    assert!(s.back_pressured);
    assert_eq!(rig.reg(Register::CMDQ_HEAD), 2, "only two taken");
    assert_ne!(rig.reg(Register::STATUS) & Status::BUSY.0, 0);
    // Nothing overwritten: the two completions are still the first two.
    assert_eq!((rig.completion_at(0).tag, rig.completion_at(1).tag), (0, 1));
    let mut tags = Vec::new();
    for _ in 0..3 {
        tags.extend(rig.take_completions().iter().map(|c| c.tag));
        rig.dev.service();
    }
    assert_eq!(tags, [0, 1, 2, 3, 4]);
    assert_eq!(rig.reg(Register::STATUS) & Status::BUSY.0, 0);
}

#[test]
fn phase_flips_on_every_pass() {
    let mut rig = Rig::new(4, 4, 8, Control(0));
    for i in 0..12u32 {
        rig.submit(&[nop(i as u16)]);
        let c = rig.completion_at(i);
        let phase = c.flags.contains(CompletionFlags::PHASE);
        assert_eq!(phase, expected_phase(i, 4), "index {i}");
        assert_eq!(phase, (i / 4) % 2 == 0);
        // The next slot still carries the previous pass's phase: not yet written.
        let next = rig.completion_at(i + 1);
        assert_ne!(
            next.flags.contains(CompletionFlags::PHASE),
            expected_phase(i + 1, 4),
            "index {} must look unwritten",
            i + 1
        );
        rig.take_completions();
    }
}

#[test]
fn events_mark_begin_and_end_of_every_command_with_kinds_and_args() {
    let mut rig = Rig::standard();
    rig.dev.bus_mut().write(HOST_BASE, &[1; 64]).unwrap();
    let mut h2d = CommandDescriptor::new(Opcode::COPY_H2D, 10, 1);
    (h2d.src0, h2d.dst, h2d.len) = (HOST_BASE, DATA, 64);
    let mut d2d = CommandDescriptor::new(Opcode::COPY_D2D, 11, 1);
    (d2d.src0, d2d.dst, d2d.len) = (DATA, DATA + 64, 64);
    let mut d2h = CommandDescriptor::new(Opcode::COPY_D2H, 12, 1);
    (d2h.src0, d2h.dst, d2h.len) = (DATA, HOST_BASE + 64, 64);
    let mut fill = CommandDescriptor::new(Opcode::FILL, 13, 1);
    (fill.dst, fill.len) = (DATA, 8);
    let mut quiet = nop(14);
    quiet.flags = CommandFlags::NO_EVENTS;
    let bad = CommandDescriptor::new(Opcode(0x99), 15, 1);
    rig.submit(&[h2d, d2d, d2h, fill, quiet, bad]);
    let ev = rig.take_events();
    let got: Vec<_> = ev
        .iter()
        .map(|e| (e.kind, e.arg, e.op_id, e.queue))
        .collect();
    assert_eq!(
        got,
        [
            (EventKind::COPY_H2D_BEGIN, 64, 10, 1),
            (EventKind::COPY_H2D_END, 64, 10, 1),
            (EventKind::COPY_D2D_BEGIN, 64, 11, 1),
            (EventKind::COPY_D2D_END, 64, 11, 1),
            (EventKind::COPY_D2H_BEGIN, 64, 12, 1),
            (EventKind::COPY_D2H_END, 64, 12, 1),
            (EventKind::OP_BEGIN, 0x13, 13, 1),
            (EventKind::OP_END, 0x13, 13, 1),
            (EventKind::OP_BEGIN, 0x99, 15, 1),
            (EventKind::OP_END, 0x99, 15, 1),
        ]
    );
    assert!(
        ev.windows(2).all(|w| w[0].timestamp <= w[1].timestamp),
        "monotonic"
    );
    assert!(
        ev.chunks(2).all(|p| p[1].timestamp > p[0].timestamp),
        "every command takes time"
    );
}

#[test]
fn events_are_off_without_control_events() {
    let mut rig = Rig::new(8, 8, 8, Control(0));
    rig.submit(&[nop(1)]);
    assert_eq!(rig.reg(Register::EVQ_TAIL), 0);
    assert_eq!(rig.reg(Register::EVQ_DROPPED), 0);
}

#[test]
fn a_full_event_ring_drops_and_counts_without_stalling() {
    let mut rig = Rig::new(16, 16, 4, Control::EVENTS);
    rig.dev
        .write_reg(Register::IRQ_ENABLE.0, Irq::EVENTS_DROPPED.0);
    rig.submit(&(0..5).map(nop).collect::<Vec<_>>());
    assert_eq!(
        rig.take_completions().len(),
        5,
        "commands never wait for the event ring"
    );
    assert_eq!(rig.reg(Register::EVQ_TAIL), 4);
    assert_eq!(rig.reg(Register::EVQ_DROPPED), 6);
    assert_ne!(rig.reg(Register::IRQ_STATUS) & Irq::EVENTS_DROPPED.0, 0);
    assert!(rig.dev.irq_line());
    let ev = rig.take_events();
    assert_eq!(
        ev.iter().map(|e| e.op_id).collect::<Vec<_>>(),
        [0, 0, 1, 1],
        "the oldest are kept"
    );
    rig.submit(&[nop(9)]);
    assert_eq!(
        rig.take_events().len(),
        2,
        "room again after the host drained"
    );
}

#[test]
fn event_threshold_raises_the_events_irq() {
    let mut rig = Rig::new(16, 16, 16, Control::EVENTS);
    rig.dev.write_reg(Register::EVQ_IRQ_THRESHOLD.0, 4);
    rig.submit(&[nop(0)]);
    assert_eq!(rig.reg(Register::IRQ_STATUS) & Irq::EVENTS.0, 0, "2 < 4");
    rig.submit(&[nop(1)]);
    assert_ne!(
        rig.reg(Register::IRQ_STATUS) & Irq::EVENTS.0,
        0,
        "4 reached"
    );
}

#[test]
fn the_clock_follows_the_tick_source_when_idle_and_models_work_when_busy() {
    let mut rig = Rig::standard();
    let timing = Timing::REFERENCE;
    rig.dev.tick_source_mut().advance(1_000);
    let mut copy = CommandDescriptor::new(Opcode::COPY_D2D, 1, 0);
    (copy.src0, copy.dst, copy.len) = (DATA, DATA + 0x8_0000, 0x4_0000);
    rig.submit(&[copy, copy]);
    let ev = rig.take_events();
    let dur = timing.duration_ticks(0, 2 * 0x4_0000, 0);
    assert_eq!(dur, 100 + 2 * 0x4_0000 * 100_000_000 / 12_800_000_000);
    assert_eq!(ev[0].timestamp, 1_000, "starts at the idle clock");
    assert_eq!(ev[1].timestamp, 1_000 + dur);
    assert_eq!(
        ev[2].timestamp, ev[1].timestamp,
        "back to back: the next starts when the last ended"
    );
    assert_eq!(ev[3].timestamp, 1_000 + 2 * dur);
    // While the modelled work is "in flight" the counter reads its end.
    assert_eq!(rig.dev.timestamp(), 1_000 + 2 * dur);
    rig.dev.tick_source_mut().advance(1_000_000);
    assert_eq!(rig.dev.timestamp(), 1_001_000, "idle again: real time");
}

#[test]
fn gemm_time_is_compute_bound() {
    let t = Timing::REFERENCE;
    let flops = 2 * 512 * 512 * 512;
    let bytes = 4 * 3 * 512 * 512;
    assert_eq!(
        t.duration_ticks(0, bytes, flops),
        100 + flops * 100_000_000 / 100_000_000_000
    );
    assert_eq!(
        t.duration_ticks(1 << 20, 1 << 20, 0),
        100 + (1 << 20) * 100_000_000 / 3_200_000_000
    );
}

#[test]
fn rings_in_host_memory() {
    let mut rig = Rig::new(4, 4, 4, Control(0));
    let d = &mut rig.dev;
    d.write_reg(Register::RESET.0, tensorplug_abi::device::RESET_KEY);
    d.service();
    let (cmdq, cplq, evq) = (HOST_BASE, HOST_BASE + 0x400, HOST_BASE + 0x800);
    for (lo, hi, size, base) in [
        (
            Register::CMDQ_BASE_LO,
            Register::CMDQ_BASE_HI,
            Register::CMDQ_SIZE,
            cmdq,
        ),
        (
            Register::CPLQ_BASE_LO,
            Register::CPLQ_BASE_HI,
            Register::CPLQ_SIZE,
            cplq,
        ),
        (
            Register::EVQ_BASE_LO,
            Register::EVQ_BASE_HI,
            Register::EVQ_SIZE,
            evq,
        ),
    ] {
        d.write_reg(lo.0, base as u32);
        d.write_reg(hi.0, (base >> 32) as u32);
        d.write_reg(size.0, 4);
    }
    d.write_reg(
        Register::CONTROL.0,
        (Control::ENABLE | Control::HOST_RINGS | Control::EVENTS).0,
    );
    assert_ne!(d.read_reg(Register::STATUS.0) & Status::ENABLED.0, 0);
    d.bus_mut().write(cmdq, &nop(77).to_le_bytes()).unwrap();
    d.write_reg(Register::CMDQ_DOORBELL.0, 1);
    d.service();
    let mut raw = [0; 16];
    d.bus_mut().read(cplq, &mut raw).unwrap();
    let c = tensorplug_abi::device::CompletionDescriptor::from_le_bytes(&raw);
    assert_eq!((c.tag, c.status), (77, CompletionStatus::OK));
    d.bus_mut().read(evq + 16, &mut raw).unwrap();
    let e = tensorplug_abi::device::EventDescriptor::from_le_bytes(&raw);
    assert_eq!((e.kind, e.op_id), (EventKind::OP_END, 77));
}
