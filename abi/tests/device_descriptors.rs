//! Descriptor encode/decode: exact bytes, round trips, and agreement with
//! the in-memory `repr(C)` layout on little-endian hosts.

use proptest::prelude::*;
use tensorplug_abi::device::layout::{LAYOUTS, StructLayout};
use tensorplug_abi::device::{
    CommandDescriptor, CommandFlags, CompletionDescriptor, CompletionFlags, CompletionStatus,
    EventDescriptor, EventKind, ImageHeader, Opcode, expected_phase,
};

#[test]
fn gemm_command_encodes_to_exact_bytes() {
    let cmd = CommandDescriptor {
        flags: CommandFlags::TRANSPOSE_B.union(CommandFlags::IRQ),
        src0: 0x1000,
        src1: 0x0000_0002_0000_0000,
        dst: 0x3000,
        m: 2,
        n: 3,
        k: 4,
        ..CommandDescriptor::new(Opcode::GEMM_F32, 0xBEEF, 5)
    };
    let mut expected = [0u8; 64];
    expected[0..2].copy_from_slice(&[0x20, 0x00]);
    expected[2..4].copy_from_slice(&[0x01, 0x02]);
    expected[4..6].copy_from_slice(&[0xEF, 0xBE]);
    expected[6] = 5;
    expected[8..10].copy_from_slice(&[0x00, 0x10]);
    expected[20] = 0x02;
    expected[32..34].copy_from_slice(&[0x00, 0x30]);
    expected[48] = 2;
    expected[52] = 3;
    expected[56] = 4;
    assert_eq!(cmd.to_le_bytes(), expected);
    assert_eq!(CommandDescriptor::from_le_bytes(&expected), cmd);
}

#[test]
fn completion_and_event_encode_to_exact_bytes() {
    let cpl = CompletionDescriptor {
        tag: 0x0102,
        status: CompletionStatus::OUT_OF_RANGE,
        stream: 7,
        flags: CompletionFlags::PHASE,
        _reserved0: 0,
        command_index: 0x0A0B_0C0D,
        detail: 32,
    };
    assert_eq!(
        cpl.to_le_bytes(),
        [2, 1, 3, 0, 7, 1, 0, 0, 0x0D, 0x0C, 0x0B, 0x0A, 32, 0, 0, 0]
    );
    let ev = EventDescriptor {
        timestamp: 0x0102_0304_0506_0708,
        arg: 0x20,
        op_id: 0xBEEF,
        queue: 3,
        kind: EventKind::OP_END,
    };
    assert_eq!(
        ev.to_le_bytes(),
        [8, 7, 6, 5, 4, 3, 2, 1, 0x20, 0, 0, 0, 0xEF, 0xBE, 3, 2]
    );
}

/// The raw bytes of a value; sound here because the descriptors have no
/// padding (asserted at compile time in `device::layout`).
fn memory_bytes<T: Copy, const N: usize>(value: &T) -> [u8; N] {
    assert_eq!(size_of::<T>(), N);
    let mut out = [0u8; N];
    // SAFETY: T is N bytes with no padding, so every byte is initialised.
    let bytes = unsafe { core::slice::from_raw_parts((value as *const T).cast::<u8>(), N) };
    out.copy_from_slice(bytes);
    out
}

fn layout(name: &str) -> StructLayout {
    *LAYOUTS.iter().find(|l| l.name == name).expect(name)
}

/// Each field of the layout table, read little-endian from `bytes`.
fn fields_le(l: &StructLayout, bytes: &[u8]) -> Vec<u128> {
    l.fields
        .iter()
        .map(|f| {
            let mut word = [0u8; 16];
            let take = f.size.min(16);
            word[..take].copy_from_slice(&bytes[f.offset..f.offset + take]);
            u128::from_le_bytes(word)
        })
        .collect()
}

proptest! {
    #[test]
    fn any_command_bytes_round_trip(bytes in proptest::array::uniform32(any::<[u8; 2]>())) {
        let bytes: [u8; 64] = bytes.concat().try_into().unwrap();
        let cmd = CommandDescriptor::from_le_bytes(&bytes);
        prop_assert_eq!(cmd.to_le_bytes(), bytes);
        if cfg!(target_endian = "little") {
            prop_assert_eq!(memory_bytes::<_, 64>(&cmd), bytes);
        }
    }

    #[test]
    fn any_completion_bytes_round_trip(bytes in any::<[u8; 16]>()) {
        let cpl = CompletionDescriptor::from_le_bytes(&bytes);
        prop_assert_eq!(cpl.to_le_bytes(), bytes);
        if cfg!(target_endian = "little") {
            prop_assert_eq!(memory_bytes::<_, 16>(&cpl), bytes);
        }
    }

    #[test]
    fn any_event_bytes_round_trip(bytes in any::<[u8; 16]>()) {
        let ev = EventDescriptor::from_le_bytes(&bytes);
        prop_assert_eq!(ev.to_le_bytes(), bytes);
        if cfg!(target_endian = "little") {
            prop_assert_eq!(memory_bytes::<_, 16>(&ev), bytes);
        }
    }

    #[test]
    fn any_image_header_bytes_round_trip(bytes in proptest::array::uniform32(any::<[u8; 2]>())) {
        let bytes: [u8; 64] = bytes.concat().try_into().unwrap();
        let header = ImageHeader::from_le_bytes(&bytes);
        prop_assert_eq!(header.to_le_bytes(), bytes);
        if cfg!(target_endian = "little") {
            prop_assert_eq!(memory_bytes::<_, 64>(&header), bytes);
        }
    }

    #[test]
    fn encoded_fields_sit_at_the_layout_table_offsets(
        tag in any::<u16>(), stream in any::<u8>(), src0 in any::<u64>(), len in any::<u64>(),
        m in any::<u32>(), imm in any::<u32>(),
    ) {
        let cmd = CommandDescriptor {
            src0, len, m, imm,
            ..CommandDescriptor::new(Opcode::FILL, tag, stream)
        };
        let fields = fields_le(&layout("CommandDescriptor"), &cmd.to_le_bytes());
        let expected: Vec<u128> = vec![
            0x13, 0, tag.into(), stream.into(), 0, src0.into(), 0, 0, 0, len.into(),
            m.into(), 0, 0, imm.into(),
        ];
        prop_assert_eq!(fields, expected);
    }
}

#[test]
fn unknown_values_are_representable_and_reported_unknown() {
    assert_eq!(Opcode::from_raw(0).known(), None);
    assert_eq!(Opcode::from_raw(0xFFFF).known(), None);
    assert_eq!(Opcode::from_raw(0x20).known(), Some(Opcode::GEMM_F32));
    assert_eq!(CompletionStatus::from_raw(9).known(), None);
    assert_eq!(EventKind::from_raw(0).known(), None);
    assert_eq!(EventKind::from_raw(9).known(), None);
    let known_opcodes = (0..=u16::MAX)
        .filter(|&raw| Opcode::from_raw(raw).known().is_some())
        .count();
    assert_eq!(known_opcodes, Opcode::ALL.len());
    let known_statuses = (0..=u16::MAX)
        .filter(|&raw| CompletionStatus::from_raw(raw).known().is_some())
        .count();
    assert_eq!(known_statuses, CompletionStatus::ALL.len());
    let known_kinds = (0..=u8::MAX)
        .filter(|&raw| EventKind::from_raw(raw).known().is_some())
        .count();
    assert_eq!(known_kinds, EventKind::ALL.len());
}

#[test]
fn opcode_names_are_unique_and_copies_are_flagged() {
    let mut names: Vec<_> = Opcode::ALL.iter().map(|o| o.name().unwrap()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), Opcode::ALL.len());
    let copies: Vec<_> = Opcode::ALL.iter().filter(|o| o.is_copy()).collect();
    assert_eq!(
        copies,
        [&Opcode::COPY_H2D, &Opcode::COPY_D2H, &Opcode::COPY_D2D]
    );
}

#[test]
fn event_kinds_match_core_event_kind_numbers() {
    // tensorplug_core::event::EventKind: OpBegin = 1 ... CopyD2DEnd = 8.
    let raw: Vec<u8> = EventKind::ALL.iter().map(|k| k.0).collect();
    assert_eq!(raw, [1, 2, 3, 4, 5, 6, 7, 8]);
}

#[test]
fn command_flags_report_unknown_bits() {
    assert!(!CommandFlags::KNOWN.has_unknown_bits());
    assert!(CommandFlags(1 << 13).has_unknown_bits());
    assert!(CommandFlags(1 << 15).has_unknown_bits());
    // The convolution epilogue: three bits after the transposes.
    let epilogue = [CommandFlags::BIAS, CommandFlags::RELU, CommandFlags::RELU6];
    for (i, bit) in epilogue.iter().enumerate() {
        assert_eq!(bit.bits(), 1 << (10 + i));
    }
    assert_eq!(
        epilogue.iter().fold(CommandFlags(0), |a, b| a.union(*b)),
        CommandFlags::EPILOGUE_MASK
    );
}

#[test]
fn phase_tag_flips_on_every_pass_over_the_queue() {
    assert!(expected_phase(0, 8));
    assert!(expected_phase(7, 8));
    assert!(!expected_phase(8, 8));
    assert!(expected_phase(16, 8));
    assert!(!expected_phase(u32::MAX, 8));
    assert!(!expected_phase(3, 0), "a zero-sized queue must not panic");
}

#[test]
fn broadcast_flags_are_the_six_bits_between_no_events_and_transpose_a() {
    let bits = [
        CommandFlags::SRC0_BCAST_M,
        CommandFlags::SRC0_BCAST_N,
        CommandFlags::SRC0_BCAST_K,
        CommandFlags::SRC1_BCAST_M,
        CommandFlags::SRC1_BCAST_N,
        CommandFlags::SRC1_BCAST_K,
    ];
    let mut all = CommandFlags(0);
    for (i, bit) in bits.iter().enumerate() {
        assert_eq!(bit.bits(), 1 << (2 + i));
        all = all.union(*bit);
    }
    assert_eq!(all, CommandFlags::BCAST_MASK);
    assert!(CommandFlags::KNOWN.contains(CommandFlags::BCAST_MASK));
    assert!(CommandFlags(1 << 13).has_unknown_bits());
}
