//! The model's register file: reset values, access types, bring-up checks,
//! reset semantics, timestamp latching, IRQs.
#![cfg(feature = "std")]

mod model_support;

use model_support::*;
use tensorplug_abi::device::{
    CommandDescriptor, CommandFlags, CompletionStatus, Control, DEVICE_ABI_VERSION_WORD,
    DEVICE_MAGIC, Features, Irq, Opcode, REFERENCE_FEATURES, RESET_KEY, Register, Status,
};
use tensorplug_model_fpga::model::{AlignedMemory, ManualClock, Model, ModelConfig, NoHostBus};

#[test]
fn reset_values_match_the_register_map() {
    let mut d = model();
    let expect = [
        (Register::ID, DEVICE_MAGIC),
        (Register::ABI_VERSION, DEVICE_ABI_VERSION_WORD),
        (Register::FEATURES, REFERENCE_FEATURES.0),
        (Register::SCRATCH, 0),
        (Register::DEVICE_MEM_SIZE_LO, MEM_SIZE as u32),
        (Register::DEVICE_MEM_SIZE_HI, 0),
        (Register::TIMESTAMP_FREQ_HZ, 100_000_000),
        (Register::MAX_RING_ENTRIES, 1 << 16),
        (Register::CONTROL, 0),
        (Register::STATUS, Status::READY.0),
        (Register::RESET, 0),
        (Register::HALT_REASON, 0),
        (Register::IRQ_STATUS, 0),
        (Register::IRQ_ENABLE, 0),
        (Register::CMDQ_HEAD, 0),
        (Register::CPLQ_TAIL, 0),
        (Register::EVQ_DROPPED, 0),
        (Register::CMDQ_DOORBELL, 0),
    ];
    for (reg, value) in expect {
        assert_eq!(d.read_reg(reg.0), value, "{reg:?}");
    }
    // Unnamed offsets read 0 and ignore writes.
    d.write_reg(0x5C, 7);
    d.write_reg(0xFFC, 7);
    assert_eq!(d.read_reg(0x5C), 0);
    assert_eq!(d.read_reg(0xFFC), 0);
}

#[test]
fn read_only_registers_ignore_writes_and_write_only_read_zero() {
    let mut d = model();
    for reg in [
        Register::ID,
        Register::FEATURES,
        Register::STATUS,
        Register::CMDQ_HEAD,
        Register::CPLQ_TAIL,
        Register::EVQ_TAIL,
    ] {
        let before = d.read_reg(reg.0);
        d.write_reg(reg.0, 0x1234_5678);
        assert_eq!(d.read_reg(reg.0), before, "{reg:?}");
    }
    d.write_reg(Register::SCRATCH.0, 0xDEAD_BEEF);
    assert_eq!(d.read_reg(Register::SCRATCH.0), 0xDEAD_BEEF);
    d.write_reg(Register::CMDQ_SIZE.0, 8);
    d.write_reg(Register::CMDQ_DOORBELL.0, 3);
    assert_eq!(
        d.read_reg(Register::CMDQ_DOORBELL.0),
        0,
        "doorbell is write-only"
    );
    assert_eq!(d.read_reg(Register::CMDQ_TAIL.0), 3);
}

#[test]
fn dma_feature_follows_the_host_bus() {
    let d = Model::new(
        AlignedMemory::zeroed(4096),
        NoHostBus,
        ManualClock::new(),
        ModelConfig::default(),
        false,
    )
    .unwrap();
    assert_eq!(d.config().features.0 & Features::DMA.0, 0);
    assert_eq!(
        d.config().features.0,
        REFERENCE_FEATURES.0 & !Features::DMA.0
    );
}

#[test]
fn enable_latches_valid_rings() {
    let mut rig = Rig::standard();
    assert_ne!(rig.reg(Register::STATUS) & Status::ENABLED.0, 0);
    // Ring registers are frozen while enabled.
    rig.dev.write_reg(Register::CMDQ_SIZE.0, 4);
    assert_eq!(rig.reg(Register::CMDQ_SIZE), 64);
    // Disabling clears ENABLED; the rings may change again.
    rig.dev.write_reg(Register::CONTROL.0, 0);
    assert_eq!(rig.reg(Register::STATUS) & Status::ENABLED.0, 0);
    rig.dev.write_reg(Register::CMDQ_SIZE.0, 4);
    assert_eq!(rig.reg(Register::CMDQ_SIZE), 4);
}

fn enable_with(setup: impl FnOnce(&mut TestModel), control: Control) -> (u32, u32) {
    let mut d = model();
    for (size, base, n) in [
        (Register::CMDQ_SIZE, Register::CMDQ_BASE_LO, 8u32),
        (Register::CPLQ_SIZE, Register::CPLQ_BASE_LO, 8),
        (Register::EVQ_SIZE, Register::EVQ_BASE_LO, 8),
    ] {
        d.write_reg(size.0, n);
        d.write_reg(base.0, 0x1000 * (1 + n));
    }
    d.write_reg(Register::CPLQ_BASE_LO.0, 0x2000);
    d.write_reg(Register::EVQ_BASE_LO.0, 0x3000);
    setup(&mut d);
    d.write_reg(Register::CONTROL.0, (Control::ENABLE | control).0);
    (
        d.read_reg(Register::STATUS.0),
        d.read_reg(Register::HALT_REASON.0),
    )
}

#[test]
fn invalid_rings_halt_with_the_documented_reason() {
    let halted = |s: u32| s & Status::HALTED.0 != 0 && s & Status::ENABLED.0 == 0;
    type Setup = fn(&mut TestModel);
    let cases: [(&str, Setup, CompletionStatus); 6] = [
        (
            "size not a power of two",
            |d| d.write_reg(Register::CPLQ_SIZE.0, 6),
            CompletionStatus::INVALID_ARGUMENT,
        ),
        (
            "size above MAX_RING_ENTRIES",
            |d| d.write_reg(Register::EVQ_SIZE.0, 1 << 17),
            CompletionStatus::INVALID_ARGUMENT,
        ),
        (
            "command queue base not 64-aligned",
            |d| d.write_reg(Register::CMDQ_BASE_LO.0, 0x1010),
            CompletionStatus::MISALIGNED,
        ),
        (
            "completion queue base not 16-aligned",
            |d| d.write_reg(Register::CPLQ_BASE_LO.0, 0x2008),
            CompletionStatus::MISALIGNED,
        ),
        (
            "ring outside memory",
            |d| d.write_reg(Register::EVQ_BASE_HI.0, 1),
            CompletionStatus::OUT_OF_RANGE,
        ),
        (
            "ring crosses the end of memory",
            |d| d.write_reg(Register::CMDQ_BASE_LO.0, (MEM_SIZE - 64) as u32),
            CompletionStatus::OUT_OF_RANGE,
        ),
    ];
    for (what, setup, reason) in cases {
        let (status, halt) = enable_with(setup, Control(0));
        assert!(halted(status), "{what}: status {status:#x}");
        assert_eq!(halt, u32::from(reason.0), "{what}");
    }
    let (status, _) = enable_with(|_| {}, Control::EVENTS);
    assert_ne!(status & Status::ENABLED.0, 0, "valid rings enable");
}

#[test]
fn host_rings_or_events_without_the_feature_are_unsupported() {
    let mut d = model_with(ModelConfig {
        features: Features(REFERENCE_FEATURES.0 & !Features::EVENT_RING.0),
        ..ModelConfig::default()
    });
    d.write_reg(Register::CONTROL.0, (Control::ENABLE | Control::EVENTS).0);
    assert_ne!(d.read_reg(Register::STATUS.0) & Status::HALTED.0, 0);
    assert_eq!(
        d.read_reg(Register::HALT_REASON.0),
        u32::from(CompletionStatus::UNSUPPORTED.0)
    );
    assert_ne!(d.read_reg(Register::IRQ_STATUS.0) & Irq::HALTED.0, 0);

    let mut d = Model::new(
        AlignedMemory::zeroed(4096),
        NoHostBus,
        ManualClock::new(),
        ModelConfig::default(),
        false,
    )
    .unwrap();
    d.write_reg(
        Register::CONTROL.0,
        (Control::ENABLE | Control::HOST_RINGS).0,
    );
    assert_eq!(
        d.read_reg(Register::HALT_REASON.0),
        u32::from(CompletionStatus::UNSUPPORTED.0)
    );
}

#[test]
fn zero_sized_event_ring_with_events_drops_everything() {
    let mut rig = Rig::new(8, 8, 0, Control::EVENTS);
    assert_ne!(rig.reg(Register::STATUS) & Status::ENABLED.0, 0);
    let c = rig.run(CommandDescriptor::new(Opcode::NOP, 1, 0));
    assert_eq!(c.status, CompletionStatus::OK);
    assert_eq!(rig.reg(Register::EVQ_DROPPED), 2);
}

#[test]
fn doorbell_past_the_queue_size_halts() {
    let mut rig = Rig::standard();
    rig.dev.write_reg(Register::CMDQ_DOORBELL.0, 65);
    assert_ne!(rig.reg(Register::STATUS) & Status::HALTED.0, 0);
    assert_eq!(
        rig.reg(Register::HALT_REASON),
        u32::from(CompletionStatus::INVALID_ARGUMENT.0)
    );
    assert_eq!(rig.reg(Register::CMDQ_TAIL), 0);
}

#[test]
fn reset_needs_the_key_restores_registers_and_keeps_memory() {
    let mut rig = Rig::standard();
    rig.write_bytes(DATA, b"kept");
    rig.dev.write_reg(Register::SCRATCH.0, 5);
    rig.dev.write_reg(Register::RESET.0, RESET_KEY ^ 1);
    assert_eq!(rig.reg(Register::SCRATCH), 5, "wrong key ignored");
    // Queue two commands but do not service them: reset discards them.
    rig.post(&[
        CommandDescriptor::new(Opcode::NOP, 1, 0),
        CommandDescriptor::new(Opcode::NOP, 2, 0),
    ]);
    rig.dev.write_reg(Register::RESET.0, RESET_KEY);
    assert_eq!(
        rig.reg(Register::STATUS) & Status::READY.0,
        0,
        "READY clear while resetting"
    );
    rig.dev.service();
    assert_eq!(rig.reg(Register::STATUS), Status::READY.0);
    for reg in [
        Register::SCRATCH,
        Register::CONTROL,
        Register::CMDQ_SIZE,
        Register::CMDQ_HEAD,
        Register::CMDQ_TAIL,
        Register::CPLQ_TAIL,
        Register::EVQ_TAIL,
    ] {
        assert_eq!(rig.reg(reg), 0, "{reg:?}");
    }
    assert_eq!(rig.read_bytes(DATA, 4), b"kept");
    assert_eq!(
        rig.read_bytes(CPLQ_BASE, 16),
        vec![0; 16],
        "no completion written"
    );
}

#[test]
fn reset_clears_a_halt() {
    let mut rig = Rig::standard();
    rig.dev.write_reg(Register::CMDQ_DOORBELL.0, 1000);
    assert_ne!(rig.reg(Register::STATUS) & Status::HALTED.0, 0);
    rig.bring_up(Control::EVENTS);
    assert_eq!(
        rig.reg(Register::STATUS),
        (Status::READY | Status::ENABLED).0
    );
    assert_eq!(
        rig.run(CommandDescriptor::new(Opcode::NOP, 3, 0)).status,
        CompletionStatus::OK
    );
}

#[test]
fn timestamp_low_read_latches_the_high_word() {
    let mut d = model();
    d.tick_source_mut().advance(0x1_FFFF_FFF0);
    let lo = d.read_reg(Register::TIMESTAMP_LO.0);
    d.tick_source_mut().advance(0x100);
    let hi = d.read_reg(Register::TIMESTAMP_HI.0);
    assert_eq!(
        (u64::from(hi) << 32) | u64::from(lo),
        0x1_FFFF_FFF0,
        "HI is the latched word"
    );
    assert_eq!(
        d.read_reg(Register::TIMESTAMP_HI.0),
        1,
        "until the next LO read"
    );
    let lo2 = d.read_reg(Register::TIMESTAMP_LO.0);
    assert_eq!((lo2, d.read_reg(Register::TIMESTAMP_HI.0)), (0xF0, 2));
}

#[test]
fn reset_restarts_the_timestamp_counter() {
    let mut d = model();
    d.tick_source_mut().advance(5000);
    assert_eq!(d.timestamp(), 5000);
    d.write_reg(Register::RESET.0, RESET_KEY);
    assert_eq!(d.timestamp(), 0);
    d.tick_source_mut().advance(7);
    assert_eq!(d.timestamp(), 7);
}

#[test]
fn irq_status_is_write_one_to_clear_and_masked_by_enable() {
    let mut rig = Rig::standard();
    let mut cmd = CommandDescriptor::new(Opcode::NOP, 1, 0);
    cmd.flags = CommandFlags::IRQ;
    rig.run(cmd);
    assert_eq!(rig.reg(Register::IRQ_STATUS), Irq::COMPLETION.0);
    assert!(!rig.dev.irq_line(), "masked");
    rig.dev.write_reg(Register::IRQ_ENABLE.0, Irq::COMPLETION.0);
    assert!(rig.dev.irq_line());
    rig.dev.write_reg(Register::IRQ_STATUS.0, Irq::EVENTS.0);
    assert_eq!(
        rig.reg(Register::IRQ_STATUS),
        Irq::COMPLETION.0,
        "other bits untouched"
    );
    rig.dev.write_reg(Register::IRQ_STATUS.0, Irq::COMPLETION.0);
    assert_eq!(rig.reg(Register::IRQ_STATUS), 0);
    assert!(!rig.dev.irq_line());
    // Without the IRQ flag no interrupt.
    rig.run(CommandDescriptor::new(Opcode::NOP, 2, 0));
    assert_eq!(rig.reg(Register::IRQ_STATUS), 0);
}

#[test]
fn misaligned_memory_is_refused() {
    #[repr(C, align(8))]
    struct Buf([u8; 64]);
    let mut buf = Buf([0; 64]);
    let r = Model::new(
        &mut buf.0[1..],
        NoHostBus,
        ManualClock::new(),
        ModelConfig::default(),
        false,
    );
    assert_eq!(
        r.err(),
        Some(tensorplug_model_fpga::model::ModelError::MisalignedMemory)
    );
}
