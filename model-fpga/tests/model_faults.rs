//! Fault injection: each switch shows the documented symptom.
#![cfg(feature = "std")]

mod model_support;

use model_support::*;
use tensorplug_abi::device::{
    CommandDescriptor, CompletionStatus, Control, Irq, Opcode, Register, Status,
};
use tensorplug_device_fpga::transport::spi::slave::SpiSlave;
use tensorplug_device_fpga::transport::spi::{SpiConfig, SpiTransport};
use tensorplug_device_fpga::transport::{ErrorKind, Transport};
use tensorplug_model_fpga::model::{DEVICE_FAULT_DETAIL, Faults};

fn nop(tag: u16) -> CommandDescriptor {
    CommandDescriptor::new(Opcode::NOP, tag, 0)
}

#[test]
fn lost_completion_runs_the_command_but_writes_nothing() {
    let mut rig = Rig::standard();
    rig.dev.faults_mut().lose_next_completion = true;
    let mut fill = CommandDescriptor::new(Opcode::FILL, 1, 0);
    (fill.dst, fill.len, fill.imm) = (DATA, 4, 0xAABB_CCDD);
    rig.submit(&[fill]);
    assert_eq!(rig.reg(Register::CMDQ_HEAD), 1, "taken");
    assert_eq!(rig.reg(Register::CPLQ_TAIL), 0, "no completion");
    assert_eq!(
        rig.read_bytes(DATA, 4),
        [0xDD, 0xCC, 0xBB, 0xAA],
        "executed"
    );
    assert!(!rig.dev.faults().lose_next_completion, "one-shot");
    let next = rig.run(nop(2));
    assert_eq!((next.tag, next.command_index), (2, 1));
}

#[test]
fn stuck_busy_takes_no_commands() {
    let mut rig = Rig::standard();
    rig.dev.faults_mut().stuck_busy = true;
    assert_ne!(
        rig.reg(Register::STATUS) & Status::BUSY.0,
        0,
        "busy even when empty"
    );
    rig.submit(&[nop(1)]);
    for _ in 0..100 {
        rig.dev.service();
    }
    assert_eq!(rig.reg(Register::CMDQ_HEAD), 0);
    assert_eq!(rig.reg(Register::CPLQ_TAIL), 0);
    rig.dev.faults_mut().stuck_busy = false;
    rig.dev.service();
    assert_eq!(rig.take_completions().len(), 1, "unstuck: the command runs");
}

#[test]
fn reset_mid_command_loses_the_command_and_the_ring_state() {
    let mut rig = Rig::standard();
    rig.dev.faults_mut().reset_mid_command = true;
    rig.post(&[nop(1), nop(2)]);
    rig.dev.service();
    assert_eq!(rig.reg(Register::STATUS) & Status::ENABLED.0, 0);
    for reg in [
        Register::CONTROL,
        Register::CMDQ_HEAD,
        Register::CMDQ_TAIL,
        Register::CPLQ_TAIL,
    ] {
        assert_eq!(rig.reg(reg), 0, "{reg:?}");
    }
    assert_eq!(rig.completion_at(0).tag, 0, "no completion written");
    // The begin event was stamped before the reset; the device can be brought up again.
    rig.bring_up(Control::EVENTS);
    assert_eq!(rig.run(nop(3)).status, CompletionStatus::OK);
}

#[test]
fn capped_event_ring_fills_up_and_counts_drops() {
    let mut rig = Rig::standard();
    rig.dev.faults_mut().cap_event_ring = Some(3);
    rig.submit(&[nop(1), nop(2)]);
    assert_eq!(rig.reg(Register::EVQ_TAIL), 3);
    assert_eq!(rig.reg(Register::EVQ_DROPPED), 1);
    assert_ne!(rig.reg(Register::IRQ_STATUS) & Irq::EVENTS_DROPPED.0, 0);
}

#[test]
fn device_fault_completes_then_halts() {
    let mut rig = Rig::standard();
    rig.dev.faults_mut().fault_next_command = true;
    rig.submit(&[nop(1), nop(2)]);
    let done = rig.take_completions();
    assert_eq!(done.len(), 1, "the queued command after it is not run");
    assert_eq!(
        (done[0].status, done[0].detail),
        (CompletionStatus::DEVICE_FAULT, DEVICE_FAULT_DETAIL)
    );
    let status = rig.reg(Register::STATUS);
    assert_ne!(status & Status::HALTED.0, 0);
    assert_eq!(
        rig.reg(Register::HALT_REASON),
        u32::from(CompletionStatus::DEVICE_FAULT.0)
    );
    assert_ne!(rig.reg(Register::IRQ_STATUS) & Irq::HALTED.0, 0);
    rig.dev.service();
    assert_eq!(rig.reg(Register::CPLQ_TAIL), 1, "halted: nothing more");
    rig.bring_up(Control::EVENTS);
    assert_eq!(
        rig.run(nop(3)).status,
        CompletionStatus::OK,
        "a reset recovers"
    );
}

#[test]
fn corrupted_spi_frames_surface_as_crc_errors_and_the_model_is_untouched() {
    let dev = model();
    let mut spi = SpiTransport::new(SpiSlave::new(dev), SpiConfig::default());
    spi.write_reg(Register::SCRATCH.0, 0x1234).unwrap();
    spi.device_mut().corrupt_next_request();
    let err = spi.write_reg(Register::SCRATCH.0, 0x9999).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Crc);
    assert_eq!(
        spi.read_reg(Register::SCRATCH.0).unwrap(),
        0x1234,
        "not executed"
    );
    spi.device_mut().corrupt_next_response();
    assert_eq!(
        spi.read_reg(Register::ID.0).unwrap_err().kind(),
        ErrorKind::Crc
    );
}

#[test]
fn faults_default_to_a_healthy_device() {
    assert_eq!(
        Faults::default(),
        Faults {
            lose_next_completion: false,
            stuck_busy: false,
            reset_mid_command: false,
            cap_event_ring: None,
            fault_next_command: false,
        }
    );
}
