//! Every validation error: status and detail, in the documented order.
#![cfg(feature = "std")]

mod model_support;

use model_support::*;
use tensorplug_abi::device::{
    CommandDescriptor, CommandFlags, CompletionStatus, Features, Opcode, REFERENCE_FEATURES,
};
use tensorplug_model_fpga::model::{ModelConfig, SRC0_BCAST_M, SRC1_BCAST_K};

const INVALID: CompletionStatus = CompletionStatus::INVALID_ARGUMENT;
const OOR: CompletionStatus = CompletionStatus::OUT_OF_RANGE;
const MIS: CompletionStatus = CompletionStatus::MISALIGNED;
const END: u64 = MEM_SIZE as u64;

fn gemm() -> CommandDescriptor {
    let mut c = CommandDescriptor::new(Opcode::GEMM_F32, 1, 0);
    (c.src0, c.src1, c.dst, c.m, c.n, c.k) = (DATA, DATA + 0x1000, DATA + 0x2000, 4, 4, 4);
    c
}
fn add() -> CommandDescriptor {
    let mut c = CommandDescriptor::new(Opcode::ADD_F32, 1, 0);
    (c.src0, c.src1, c.dst, c.len) = (DATA, DATA + 0x1000, DATA + 0x2000, 16);
    c
}
fn copy() -> CommandDescriptor {
    let mut c = CommandDescriptor::new(Opcode::COPY_D2D, 1, 0);
    (c.src0, c.dst, c.len) = (DATA, DATA + 0x1000, 16);
    c
}
fn rows(op: Opcode) -> CommandDescriptor {
    let mut c = CommandDescriptor::new(op, 1, 0);
    (c.src0, c.dst, c.m, c.n) = (DATA, DATA + 0x2000, 4, 4);
    if op == Opcode::BIAS_ADD_F32 {
        c.src1 = DATA + 0x1000;
    }
    c
}

fn check(rig: &mut Rig, what: &str, c: CommandDescriptor, status: CompletionStatus, detail: u32) {
    let done = rig.run(c);
    assert_eq!((done.status, done.detail), (status, detail), "{what}");
}

#[test]
fn every_rejection_has_its_status_and_field_offset() {
    let mut rig = Rig::standard();
    let cases: Vec<(&str, CommandDescriptor, CompletionStatus, u32)> = vec![
        (
            "unknown opcode",
            CommandDescriptor::new(Opcode(0x7777), 1, 0),
            CompletionStatus::INVALID_OPCODE,
            0x7777,
        ),
        (
            "unknown flag",
            {
                let mut c = gemm();
                c.flags = CommandFlags(1 << 12);
                c
            },
            INVALID,
            2,
        ),
        (
            "transpose on a copy",
            {
                let mut c = copy();
                c.flags = CommandFlags::TRANSPOSE_A;
                c
            },
            INVALID,
            2,
        ),
        (
            "broadcast flag on a GEMM",
            {
                let mut c = gemm();
                c.flags = CommandFlags(SRC0_BCAST_M);
                c
            },
            INVALID,
            2,
        ),
        (
            "broadcast flag on the flat form",
            {
                let mut c = add();
                c.flags = CommandFlags(SRC1_BCAST_K);
                c
            },
            INVALID,
            2,
        ),
        (
            "an element type the model does not run (f16)",
            {
                let mut c = gemm();
                c.dtype = 2;
                c
            },
            CompletionStatus::UNSUPPORTED,
            2,
        ),
        (
            "src2 on GEMM_F32",
            {
                let mut c = gemm();
                c.src2 = 8;
                c
            },
            INVALID,
            24,
        ),
        (
            "len on a GEMM",
            {
                let mut c = gemm();
                c.len = 1;
                c
            },
            INVALID,
            40,
        ),
        (
            "imm on a copy",
            {
                let mut c = copy();
                c.imm = 1;
                c
            },
            INVALID,
            60,
        ),
        (
            "k on bias-add",
            {
                let mut c = rows(Opcode::BIAS_ADD_F32);
                c.k = 1;
                c
            },
            INVALID,
            56,
        ),
        (
            "src1 on relu",
            {
                let mut c = CommandDescriptor::new(Opcode::RELU_F32, 1, 0);
                (c.src0, c.src1, c.dst, c.len) = (DATA, 4, DATA, 1);
                c
            },
            INVALID,
            16,
        ),
        (
            "operand on NOP",
            {
                let mut c = CommandDescriptor::new(Opcode::NOP, 1, 0);
                c.dst = 4;
                c
            },
            INVALID,
            32,
        ),
        (
            "zero length copy",
            {
                let mut c = copy();
                c.len = 0;
                c
            },
            INVALID,
            40,
        ),
        (
            "zero m",
            {
                let mut c = gemm();
                c.m = 0;
                c
            },
            INVALID,
            48,
        ),
        (
            "zero n",
            {
                let mut c = rows(Opcode::SOFTMAX_F32);
                c.n = 0;
                c
            },
            INVALID,
            52,
        ),
        (
            "zero k",
            {
                let mut c = gemm();
                c.k = 0;
                c
            },
            INVALID,
            56,
        ),
        (
            "partial 3-D form",
            {
                let mut c = add();
                (c.m, c.n, c.k) = (2, 0, 8);
                c
            },
            INVALID,
            52,
        ),
        (
            "len != m·n·k",
            {
                let mut c = add();
                (c.m, c.n, c.k) = (2, 2, 2);
                c
            },
            INVALID,
            40,
        ),
        (
            "src0 past the end",
            {
                let mut c = gemm();
                c.src0 = END - 32;
                c
            },
            OOR,
            8,
        ),
        (
            "src1 overflows",
            {
                let mut c = add();
                c.src1 = u64::MAX - 8;
                c
            },
            OOR,
            16,
        ),
        (
            "dst past the end",
            {
                let mut c = copy();
                c.dst = END - 8;
                c
            },
            OOR,
            32,
        ),
        (
            "element count overflows",
            {
                let mut c = add();
                c.len = u64::MAX / 2;
                c
            },
            OOR,
            8,
        ),
        (
            "bias past the end",
            {
                let mut c = gemm();
                c.opcode = Opcode::GEMM_BIAS_RELU_F32;
                c.src2 = END;
                c
            },
            OOR,
            24,
        ),
        (
            "misaligned src0",
            {
                let mut c = gemm();
                c.src0 += 2;
                c
            },
            MIS,
            8,
        ),
        (
            "misaligned dst",
            {
                let mut c = rows(Opcode::REDUCE_SUM_F32);
                c.dst += 1;
                c
            },
            MIS,
            32,
        ),
        (
            "GEMM output overlaps A",
            {
                let mut c = gemm();
                c.dst = c.src0 + 16;
                c
            },
            INVALID,
            32,
        ),
        (
            "GEMM in place",
            {
                let mut c = gemm();
                c.dst = c.src0;
                c
            },
            INVALID,
            32,
        ),
        (
            "binary dst overlaps src1",
            {
                let mut c = add();
                c.dst = c.src1;
                c
            },
            INVALID,
            32,
        ),
        (
            "reduce-sum in place",
            {
                let mut c = rows(Opcode::REDUCE_SUM_F32);
                c.dst = c.src0;
                c
            },
            INVALID,
            32,
        ),
        (
            "partial overlap",
            {
                let mut c = rows(Opcode::SOFTMAX_F32);
                c.dst = c.src0 + 4;
                c
            },
            INVALID,
            32,
        ),
    ];
    for (what, c, status, detail) in cases {
        check(&mut rig, what, c, status, detail);
    }
}

#[test]
fn the_first_failing_check_wins() {
    let mut rig = Rig::standard();
    // Flags before unused fields before dimensions before ranges before alignment.
    let mut c = gemm();
    (c.flags, c.len, c.m, c.src0) = (CommandFlags(1 << 15), 1, 0, END + 2);
    check(&mut rig, "flags first", c, INVALID, 2);
    c.flags = CommandFlags(0);
    check(&mut rig, "then unused fields", c, INVALID, 40);
    c.len = 0;
    check(&mut rig, "then dimensions", c, INVALID, 48);
    c.m = 4;
    check(&mut rig, "then ranges", c, OOR, 8);
    c.src0 = DATA + 2;
    check(&mut rig, "then alignment", c, MIS, 8);
}

#[test]
fn missing_features_are_unsupported_with_the_feature_bit() {
    let mut rig = Rig::standard();
    rig.dev = model_with(ModelConfig {
        features: Features(
            REFERENCE_FEATURES.0
                & !(Features::GEMM.0 | Features::ROW_REDUCTIONS.0 | Features::ELEMENTWISE.0),
        ),
        ..ModelConfig::default()
    });
    rig.bring_up(tensorplug_abi::device::Control(0));
    check(
        &mut rig,
        "gemm",
        gemm(),
        CompletionStatus::UNSUPPORTED,
        Features::GEMM.0,
    );
    check(
        &mut rig,
        "softmax",
        rows(Opcode::SOFTMAX_F32),
        CompletionStatus::UNSUPPORTED,
        Features::ROW_REDUCTIONS.0,
    );
    check(
        &mut rig,
        "add",
        add(),
        CompletionStatus::UNSUPPORTED,
        Features::ELEMENTWISE.0,
    );
    check(
        &mut rig,
        "copy needs nothing",
        copy(),
        CompletionStatus::OK,
        0,
    );
}

#[test]
fn a_failed_command_does_not_stop_the_queue() {
    let mut rig = Rig::standard();
    let mut bad = copy();
    bad.len = 0;
    rig.submit(&[bad, copy(), CommandDescriptor::new(Opcode(0xFFFF), 9, 3)]);
    let done = rig.take_completions();
    let got: Vec<_> = done.iter().map(|c| (c.status, c.command_index)).collect();
    assert_eq!(
        got,
        [
            (INVALID, 0),
            (CompletionStatus::OK, 1),
            (CompletionStatus::INVALID_OPCODE, 2)
        ]
    );
    assert_eq!((done[2].tag, done[2].stream), (9, 3));
}

mod no_panics {
    use super::*;
    use proptest::prelude::*;

    /// Addresses near the interesting places: 0, the data area, the end of
    /// memory, misaligned, huge.
    fn addr() -> impl Strategy<Value = u64> {
        prop_oneof![
            Just(0u64),
            (0u64..64).prop_map(|o| DATA + o),
            (0u64..256).prop_map(|o| END - o),
            any::<u64>(),
        ]
    }

    fn dim() -> impl Strategy<Value = u32> {
        prop_oneof![Just(0u32), 1u32..9, any::<u32>()]
    }

    fn descriptor() -> impl Strategy<Value = CommandDescriptor> {
        let opcode = prop_oneof![
            prop::sample::select(vec![
                0x01u16, 0x10, 0x11, 0x12, 0x13, 0x20, 0x21, 0x22, 0x30, 0x31, 0x32, 0x33, 0x34,
                0x35, 0x40, 0x41,
            ]),
            any::<u16>(),
        ];
        let flags = prop_oneof![0u16..0x400, any::<u16>()];
        let len = prop_oneof![0u64..600, any::<u64>()];
        (
            (
                opcode,
                flags,
                any::<u16>(),
                any::<u8>(),
                prop_oneof![Just(0u8), any::<u8>()],
            ),
            (addr(), addr(), addr(), addr(), len),
            (dim(), dim(), dim(), any::<u32>()),
        )
            .prop_map(
                |((op, flags, tag, stream, res), (s0, s1, s2, dst, len), (m, n, k, imm))| {
                    let mut c = CommandDescriptor::new(Opcode(op), tag, stream);
                    (c.flags, c.dtype) = (CommandFlags(flags), res);
                    (c.src0, c.src1, c.src2, c.dst, c.len) = (s0, s1, s2, dst, len);
                    (c.m, c.n, c.k, c.imm) = (m, n, k, imm);
                    c
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        /// Any descriptor completes exactly once with a defined status, and
        /// only `DEVICE_FAULT` could halt (it never comes from validation).
        #[test]
        fn any_descriptor_completes_once(c in descriptor()) {
            let mut rig = Rig::standard();
            let done = rig.run(c);
            prop_assert_eq!((done.tag, done.stream, done.command_index), (c.tag, c.stream, 0));
            prop_assert!(done.status.known().is_some());
            prop_assert_ne!(done.status, CompletionStatus::DEVICE_FAULT);
            prop_assert_eq!(rig.take_events().len(), if c.flags.contains(CommandFlags::NO_EVENTS) { 0 } else { 2 });
        }
    }
}

/// A window command of `op` over `[1, 32, 32, 16]` with a 3x3 SAME window
/// and 16 output channels (multiplier 1 for the depthwise one).
fn window_cmd(op: Opcode) -> CommandDescriptor {
    let pool = matches!(
        op,
        Opcode::MAX_POOL_F32
            | Opcode::AVG_POOL_F32
            | Opcode::MAX_POOL_GRAD_F32
            | Opcode::AVG_POOL_GRAD_F32
    );
    let fields = tensorplug_abi::device::WindowFields {
        batch: 1,
        input: [32, 32],
        channels: 16,
        k: match op {
            _ if pool => 0,
            Opcode::DEPTHWISE_CONV2D_F32 => 1,
            _ => 16,
        },
        size: [3, 3],
        output: [32, 32],
        stride: [1, 1],
        dilation: [1, 1],
        pad: [1, 1],
    };
    let mut c = fields.pack(CommandDescriptor::new(op, 1, 0));
    (c.src0, c.dst) = (DATA, DATA + 0x2_0000);
    if !matches!(
        op,
        Opcode::MAX_POOL_F32 | Opcode::AVG_POOL_F32 | Opcode::AVG_POOL_GRAD_F32
    ) {
        c.src1 = DATA + 0x1_0000;
    }
    c
}

#[test]
fn window_results_past_device_memory_are_refused_before_any_write() {
    let mut rig = Rig::standard();
    let ops = [
        Opcode::CONV2D_F32,
        Opcode::DEPTHWISE_CONV2D_F32,
        Opcode::MAX_POOL_F32,
        Opcode::AVG_POOL_F32,
        Opcode::CONV2D_BACKPROP_INPUT_F32,
        Opcode::CONV2D_BACKPROP_FILTER_F32,
        Opcode::MAX_POOL_GRAD_F32,
        Opcode::AVG_POOL_GRAD_F32,
    ];
    let tail = END - 4096;
    rig.write_f32(tail, &[7.0; 1024]);
    for op in ops {
        // In range, the command runs.
        let what = format!("{op:?} in range");
        check(&mut rig, &what, window_cmd(op), CompletionStatus::OK, 0);
        // A result that would run 4 bytes (or 64 KiB) past the end of memory.
        let mut c = window_cmd(op);
        let out_bytes = match op {
            Opcode::CONV2D_BACKPROP_FILTER_F32 => 3 * 3 * 16 * 16 * 4,
            _ => 32 * 32 * 16 * 4,
        };
        c.dst = END - out_bytes + 4;
        check(
            &mut rig,
            &format!("{op:?} 4 bytes past the end"),
            c,
            OOR,
            32,
        );
        // A geometry whose output does not fit in any memory (65535² pixels
        // of 65535 channels, times 2³² batches) is refused too.
        let mut huge = tensorplug_abi::device::WindowFields::unpack(&window_cmd(op));
        (huge.batch, huge.input, huge.output) = (u32::MAX, [65535; 2], [65535; 2]);
        huge.channels = 65535;
        let mut c = huge.pack(window_cmd(op));
        c.dst = tail;
        let done = rig.run(c);
        assert_ne!(done.status, CompletionStatus::OK, "{op:?}");
        assert_eq!(
            rig.read_f32(tail, 1024),
            [7.0; 1024],
            "{op:?} wrote past its check"
        );
    }
}

#[test]
fn conv_epilogue_flags_need_the_bias_and_one_activation() {
    let mut rig = Rig::standard();
    let conv = window_cmd(Opcode::CONV2D_F32);
    let with = |flags: CommandFlags, src2: u64| CommandDescriptor {
        flags,
        src2,
        ..conv
    };
    let bias = DATA + 0x3_0000;
    let relu = CommandFlags::BIAS.union(CommandFlags::RELU);
    check(
        &mut rig,
        "bias and relu",
        with(relu, bias),
        CompletionStatus::OK,
        0,
    );
    check(
        &mut rig,
        "relu without bias",
        with(CommandFlags::RELU, 0),
        INVALID,
        2,
    );
    let both = relu.union(CommandFlags::RELU6);
    check(&mut rig, "relu and relu6", with(both, bias), INVALID, 2);
    check(
        &mut rig,
        "src2 without bias",
        with(CommandFlags(0), bias),
        INVALID,
        24,
    );
    check(
        &mut rig,
        "bias past the end",
        with(CommandFlags::BIAS, END - 8),
        OOR,
        24,
    );
    let depthwise = CommandDescriptor {
        flags: CommandFlags::BIAS,
        ..window_cmd(Opcode::DEPTHWISE_CONV2D_F32)
    };
    check(
        &mut rig,
        "bias on a depthwise convolution",
        depthwise,
        INVALID,
        2,
    );
}

/// An `ADD_I8` of 16 int8s at `DATA`, `DATA + 0x100` into `DATA + 0x200`,
/// its quantization block at `DATA + 0x300`.
fn add_i8() -> CommandDescriptor {
    let mut c = CommandDescriptor::new(Opcode::ADD_I8, 1, 0);
    (c.src0, c.src1, c.src2, c.dst, c.len) = (DATA, DATA + 0x100, DATA + 0x300, DATA + 0x200, 16);
    c.dtype = 4;
    c
}

#[test]
fn int8_commands_check_their_type_fields_and_block() {
    use tensorplug_core::quant::block::QuantHeader;
    use tensorplug_core::quant::{Requantize, Rounding};
    let mut rig = Rig::standard();
    let header = QuantHeader {
        zero_points: [1, -2],
        output_zero_point: 3,
        min: -128,
        max: 127,
        rounding: Rounding::Double,
        channels: 0,
    };
    // Inputs scaled by 1/2, the output by 1/2 and back from TFLite's 2^20.
    let half = Requantize::from_real(0.5).unwrap();
    let out = Requantize::from_real(0.5 / f64::from(1 << 20)).unwrap();
    let mut block: Vec<i32> = header.words().to_vec();
    for r in [half, half, out] {
        block.extend([r.multiplier, i32::from(r.shift)]);
    }
    let words = |b: &[i32]| b.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>();
    rig.write_bytes(DATA, &[7u8; 16]);
    rig.write_bytes(DATA + 0x100, &[9u8; 16]);
    rig.write_bytes(DATA + 0x300, &words(&block));
    rig.write_bytes(DATA + 0x200, &[0xAA; 16]);
    check(&mut rig, "ADD_I8", add_i8(), CompletionStatus::OK, 0);
    // ((7 − 1) + (9 + 2)) / 2 / 2 = 4.25 → 4, + 3.
    assert_eq!(rig.read_bytes(DATA + 0x200, 16), vec![7u8; 16]);
    // ABI 1.9: `n` 4 repeats `src1`'s first 4 values along `src0`'s rows,
    // as the same command on them written out 4 times.
    let b = [9u8, 11, 13, 15];
    rig.write_bytes(DATA + 0x100, &b.repeat(4));
    check(&mut rig, "ADD_I8 of 16", add_i8(), CompletionStatus::OK, 0);
    let whole = rig.read_bytes(DATA + 0x200, 16);
    assert_ne!(whole, vec![7u8; 16], "the four values give four sums");
    rig.write_bytes(DATA + 0x100, &[b.as_slice(), &[0xEE; 12]].concat());
    rig.write_bytes(DATA + 0x200, &[0xAA; 16]);
    let broadcast = |n: u32| {
        let mut c = add_i8();
        c.n = n;
        c
    };
    check(
        &mut rig,
        "ADD_I8, n 4",
        broadcast(4),
        CompletionStatus::OK,
        0,
    );
    assert_eq!(rig.read_bytes(DATA + 0x200, 16), whole);
    // `n` must divide `len`: detail `n`'s offset, 52.
    check(&mut rig, "ADD_I8, n 5", broadcast(5), INVALID, 52);
    rig.write_bytes(DATA + 0x100, &[9u8; 16]);
    let bad = |f: fn(&mut CommandDescriptor)| {
        let mut c = add_i8();
        f(&mut c);
        c
    };
    check(
        &mut rig,
        "f32 dtype",
        bad(|c| c.dtype = 0),
        CompletionStatus::UNSUPPORTED,
        0,
    );
    check(&mut rig, "a stray m", bad(|c| c.m = 1), INVALID, 48);
    let mut gemm_i8 = CommandDescriptor::new(Opcode::GEMM_I8, 1, 0);
    (gemm_i8.src0, gemm_i8.src1, gemm_i8.src2, gemm_i8.dst) =
        (DATA, DATA + 0x100, DATA + 0x300, DATA + 0x200);
    (gemm_i8.m, gemm_i8.n, gemm_i8.k, gemm_i8.dtype) = (2, 2, 2, 4);
    gemm_i8.flags = CommandFlags::TRANSPOSE_A;
    check(&mut rig, "GEMM_I8 with TRANSPOSE_A", gemm_i8, INVALID, 2);
    // A block with an output zero point of 300: refused when it runs,
    // and nothing written.
    rig.write_bytes(DATA + 0x200, &[0xAA; 16]);
    block[2] = 300;
    rig.write_bytes(DATA + 0x300, &words(&block));
    // Detail: src2's offset 24, reason 4 (zero point), the value 300.
    check(
        &mut rig,
        "a bad block",
        add_i8(),
        INVALID,
        24 | 4 << 8 | 300 << 16,
    );
    assert_eq!(rig.read_bytes(DATA + 0x200, 16), vec![0xAA; 16]);
    // A device without INT8.
    let config = ModelConfig {
        features: Features(REFERENCE_FEATURES.0 & !Features::INT8.0),
        ..ModelConfig::default()
    };
    rig.dev = model_with(config);
    rig.bring_up(tensorplug_abi::device::Control(0));
    check(
        &mut rig,
        "no INT8",
        add_i8(),
        CompletionStatus::UNSUPPORTED,
        Features::INT8.0,
    );
}

fn gather() -> CommandDescriptor {
    let mut c = CommandDescriptor::new(Opcode::GATHER, 1, 0);
    (c.src0, c.src1, c.dst) = (DATA, DATA + 0x100, DATA + 0x200);
    (c.m, c.n, c.k, c.len, c.dtype) = (1, 4, 2, 3, 1);
    c
}

#[test]
fn index_commands_check_their_indices_when_they_run() {
    let mut rig = Rig::standard();
    let bytes = |v: &[u32]| v.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>();
    let params: Vec<u32> = (0..8).map(|i| (i as f32).to_bits()).collect();
    rig.write_bytes(DATA, &bytes(&params));
    rig.write_bytes(DATA + 0x100, &bytes(&[3, 0, 3]));
    check(&mut rig, "GATHER", gather(), CompletionStatus::OK, 0);
    let want: Vec<u32> = [6.0f32, 7.0, 0.0, 1.0, 6.0, 7.0].map(f32::to_bits).to_vec();
    assert_eq!(rig.read_bytes(DATA + 0x200, 24), bytes(&want));
    // An index of 4 in a table of 4 rows: refused when it runs (detail:
    // src1's offset), nothing written.
    rig.write_bytes(DATA + 0x200, &[0xAA; 24]);
    rig.write_bytes(DATA + 0x100, &bytes(&[0, 4, 1]));
    check(&mut rig, "an index out of range", gather(), INVALID, 16);
    assert_eq!(rig.read_bytes(DATA + 0x200, 24), vec![0xAA; 24]);
    // SEGMENT_SUM: rows 0 and 2 into segment 1, row 1 dropped (−1).
    let mut sum = CommandDescriptor::new(Opcode::SEGMENT_SUM, 1, 0);
    (sum.src0, sum.src1, sum.dst) = (DATA, DATA + 0x100, DATA + 0x200);
    (sum.n, sum.k, sum.len, sum.dtype) = (2, 2, 3, 1);
    rig.write_bytes(DATA + 0x100, &bytes(&[1, u32::MAX, 1]));
    check(&mut rig, "SEGMENT_SUM", sum, CompletionStatus::OK, 0);
    let want: Vec<u32> = [0.0f32, 0.0, 4.0, 6.0].map(f32::to_bits).to_vec();
    assert_eq!(rig.read_bytes(DATA + 0x200, 16), bytes(&want));
    rig.write_bytes(DATA + 0x100, &bytes(&[1, 2, 0]));
    check(&mut rig, "an id out of range", sum, INVALID, 16);
    let mut stray = gather();
    stray.src2 = DATA;
    check(&mut rig, "a stray src2", stray, INVALID, 24);
    let mut int8 = gather();
    int8.dtype = 4;
    check(
        &mut rig,
        "int8 data",
        int8,
        CompletionStatus::UNSUPPORTED,
        4,
    );
    // A device without INDEX.
    rig.dev = model_with(ModelConfig {
        features: Features(REFERENCE_FEATURES.0 & !Features::INDEX.0),
        ..ModelConfig::default()
    });
    rig.bring_up(tensorplug_abi::device::Control(0));
    check(
        &mut rig,
        "no INDEX",
        gather(),
        CompletionStatus::UNSUPPORTED,
        Features::INDEX.0,
    );
}

#[test]
fn cast_checks_its_pair_and_runs_in_place_when_the_sizes_match() {
    let mut rig = Rig::standard();
    let mut cast = CommandDescriptor::new(Opcode::CAST, 1, 0);
    (cast.src0, cast.dst, cast.len) = (DATA, DATA + 0x100, 3);
    (cast.dtype, cast.imm) = (1, 6);
    rig.write_f32(DATA, &[2.7, f32::NAN, -3e9]);
    check(&mut rig, "f32 → i32", cast, CompletionStatus::OK, 0);
    let ints: Vec<u8> = [2i32, i32::MIN, i32::MIN]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    assert_eq!(rig.read_bytes(DATA + 0x100, 12), ints);
    // i32 → f32 in place.
    let back = CommandDescriptor {
        src0: DATA + 0x100,
        dtype: 6,
        imm: 1,
        ..cast
    };
    check(
        &mut rig,
        "i32 → f32 in place",
        back,
        CompletionStatus::OK,
        0,
    );
    assert_eq!(
        rig.read_f32(DATA + 0x100, 3),
        [2.0, -2_147_483_648.0, -2_147_483_648.0]
    );
    // A pair Cast does not convert, an unknown type: the pair in the detail.
    let bad = |dtype: u8, imm: u32| CommandDescriptor { dtype, imm, ..cast };
    check(
        &mut rig,
        "f32 → i8",
        bad(1, 4),
        CompletionStatus::UNSUPPORTED,
        1 << 8 | 4,
    );
    check(
        &mut rig,
        "f32 → 99",
        bad(1, 99),
        CompletionStatus::UNSUPPORTED,
        1 << 8 | 99,
    );
    // Overlapping but not in place, and i32 → i64 (sizes differ) in place.
    let overlap = CommandDescriptor {
        dst: DATA + 4,
        ..cast
    };
    check(&mut rig, "overlap", overlap, INVALID, 32);
    let widen = CommandDescriptor {
        dst: DATA,
        dtype: 6,
        imm: 7,
        ..cast
    };
    check(&mut rig, "i32 → i64 in place", widen, INVALID, 32);
}

#[test]
fn softmax_i8_checks_its_rows_and_block_and_matches_the_reference() {
    use tensorplug_core::quant::Rounding;
    use tensorplug_core::quant::block;
    use tensorplug_core::quant::softmax::SoftmaxQuant;
    let mut rig = Rig::standard();
    let q = SoftmaxQuant::new(1.0, 0.1, Rounding::Double).unwrap();
    let mut words = block::softmax(&q);
    let bytes = |b: &[i32]| b.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>();
    let x: [i8; 8] = [0, 10, 20, 30, -128, 127, 5, 5];
    rig.write_bytes(DATA, &x.map(|v| v as u8));
    rig.write_bytes(DATA + 0x300, &bytes(&words));
    let softmax = || {
        let mut c = CommandDescriptor::new(Opcode::SOFTMAX_I8, 1, 0);
        (c.src0, c.src2, c.dst, c.len, c.n, c.dtype) = (DATA, DATA + 0x300, DATA + 0x200, 8, 4, 4);
        c
    };
    check(&mut rig, "SOFTMAX_I8", softmax(), CompletionStatus::OK, 0);
    let mut want = [0i8; 8];
    for (x, o) in x.chunks(4).zip(want.chunks_mut(4)) {
        q.row(x, o);
    }
    assert_eq!(rig.read_bytes(DATA + 0x200, 8), want.map(|v| v as u8));
    let mut rows_of_3 = softmax();
    rows_of_3.n = 3;
    check(&mut rig, "rows of 3 in 8", rows_of_3, INVALID, 52);
    // An output zero point other than TFLite's −128: refused when it runs.
    words[2] = -127;
    rig.write_bytes(DATA + 0x300, &bytes(&words));
    let detail = 24 | 4 << 8 | ((-127i16) as u16 as u32) << 16;
    check(&mut rig, "zero point -127", softmax(), INVALID, detail);
    // A device of ABI 1.6 without INT8_ACTIVATIONS.
    rig.dev = model_with(ModelConfig {
        features: Features(REFERENCE_FEATURES.0 & !Features::INT8_ACTIVATIONS.0),
        ..ModelConfig::default()
    });
    rig.bring_up(tensorplug_abi::device::Control(0));
    check(
        &mut rig,
        "no INT8_ACTIVATIONS",
        softmax(),
        CompletionStatus::UNSUPPORTED,
        Features::INT8_ACTIVATIONS.0,
    );
}

#[test]
fn lookup_i8_looks_each_byte_up_and_checks_its_fields() {
    use tensorplug_core::quant::block;
    let mut rig = Rig::standard();
    // The table negates (−128 stays −128).
    let table: [i8; 256] = core::array::from_fn(|b| (b as u8 as i8).wrapping_neg());
    let words = block::lookup(&table);
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let x: [i8; 6] = [0, 1, -1, 127, -128, 5];
    rig.write_bytes(DATA, &x.map(|v| v as u8));
    rig.write_bytes(DATA + 0x300, &bytes);
    let lookup = || {
        let mut c = CommandDescriptor::new(Opcode::LOOKUP_I8, 1, 0);
        (c.src0, c.src2, c.dst, c.len, c.dtype) = (DATA, DATA + 0x300, DATA + 0x200, 6, 4);
        c
    };
    check(&mut rig, "LOOKUP_I8", lookup(), CompletionStatus::OK, 0);
    let want = x.map(|v| v.wrapping_neg() as u8);
    assert_eq!(rig.read_bytes(DATA + 0x200, 6), want);
    let mut stray_n = lookup();
    stray_n.n = 4;
    check(&mut rig, "a stray n", stray_n, INVALID, 52);
}

#[test]
fn mul_i8_broadcasts_its_second_operand_and_checks_n() {
    use tensorplug_core::quant::block::QuantHeader;
    use tensorplug_core::quant::{Requantize, Rounding};
    let mut rig = Rig::standard();
    let header = QuantHeader {
        zero_points: [1, -2],
        output_zero_point: 3,
        min: -128,
        max: 127,
        rounding: Rounding::Double,
        channels: 0,
    };
    let half = Requantize::from_real(0.5).unwrap();
    let mut block = header.words().to_vec();
    block.extend([half.multiplier, i32::from(half.shift)]);
    let bytes: Vec<u8> = block.iter().flat_map(|w| w.to_le_bytes()).collect();
    // a: 2 rows of 3; b: one row of 3, broadcast.
    let (a, b): ([i8; 6], [i8; 3]) = ([5, 7, 9, -1, 0, 1], [4, -2, 0]);
    rig.write_bytes(DATA, &a.map(|v| v as u8));
    rig.write_bytes(DATA + 0x100, &b.map(|v| v as u8));
    rig.write_bytes(DATA + 0x300, &bytes);
    let mul = || {
        let mut c = CommandDescriptor::new(Opcode::MUL_I8, 1, 0);
        (c.src0, c.src1, c.src2, c.dst) = (DATA, DATA + 0x100, DATA + 0x300, DATA + 0x200);
        (c.len, c.n, c.dtype) = (6, 3, 4);
        c
    };
    check(&mut rig, "MUL_I8", mul(), CompletionStatus::OK, 0);
    // (a − 1)(b + 2) / 2 + 3, rounded half away from zero.
    let want: Vec<u8> = a
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let p = (i32::from(x) - 1) * (i32::from(b[i % 3]) + 2);
            (half.apply(p, Rounding::Double) + 3) as i8 as u8
        })
        .collect();
    assert_eq!(rig.read_bytes(DATA + 0x200, 6), want);
    let mut n4 = mul();
    n4.n = 4;
    check(&mut rig, "b of 4 for a of 6", n4, INVALID, 52);
}

#[test]
fn concat_puts_rows_side_by_side_and_checks_its_fields() {
    let mut rig = Rig::standard();
    // int8: 2 rows of 3, then 2 rows of 1.
    let (a, b): ([i8; 6], [i8; 2]) = ([1, 2, 3, -4, -5, -6], [7, -8]);
    rig.write_bytes(DATA + 1, &a.map(|v| v as u8));
    rig.write_bytes(DATA + 0x101, &b.map(|v| v as u8));
    let concat = || {
        let mut c = CommandDescriptor::new(Opcode::CONCAT, 1, 0);
        (c.src0, c.src1, c.dst) = (DATA + 1, DATA + 0x101, DATA + 0x201);
        (c.m, c.n, c.k, c.dtype) = (2, 3, 1, 4);
        c
    };
    check(
        &mut rig,
        "CONCAT of int8",
        concat(),
        CompletionStatus::OK,
        0,
    );
    let want: Vec<u8> = [1i8, 2, 3, 7, -4, -5, -6, -8].map(|v| v as u8).to_vec();
    assert_eq!(rig.read_bytes(DATA + 0x201, 8), want);
    // f32, an empty first half: a copy of the second.
    let floats: Vec<u8> = [1.5f32, -2.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    rig.write_bytes(DATA + 0x400, &floats);
    let mut f32_only_b = concat();
    (f32_only_b.src0, f32_only_b.src1, f32_only_b.dst) = (DATA, DATA + 0x400, DATA + 0x500);
    (f32_only_b.n, f32_only_b.dtype) = (0, 1);
    check(&mut rig, "f32, n = 0", f32_only_b, CompletionStatus::OK, 0);
    assert_eq!(rig.read_bytes(DATA + 0x500, 8), floats);
    let mut empty = concat();
    (empty.n, empty.k) = (0, 0);
    check(&mut rig, "n = k = 0", empty, INVALID, 52);
    let mut no_rows = concat();
    no_rows.m = 0;
    check(&mut rig, "m = 0", no_rows, INVALID, 48);
    let mut misaligned = concat();
    misaligned.dtype = 1;
    check(&mut rig, "f32 at an odd address", misaligned, MIS, 8);
    let mut overlap = concat();
    overlap.dst = DATA + 2;
    check(&mut rig, "dst over src0", overlap, INVALID, 32);
    let mut stray_len = concat();
    stray_len.len = 8;
    check(&mut rig, "a stray len", stray_len, INVALID, 40);
    let mut i32s = concat();
    i32s.dtype = 6;
    check(&mut rig, "int32", i32s, CompletionStatus::UNSUPPORTED, 6);
    let mut past_end = concat();
    past_end.dst = END - 4;
    check(&mut rig, "dst past the end", past_end, OOR, 32);
    // A device of ABI 1.6: no CONCAT.
    rig.dev = model_with(ModelConfig {
        features: Features(REFERENCE_FEATURES.0 & !Features::CONCAT.0),
        ..ModelConfig::default()
    });
    rig.bring_up(tensorplug_abi::device::Control(0));
    check(
        &mut rig,
        "no CONCAT",
        concat(),
        CompletionStatus::UNSUPPORTED,
        Features::CONCAT.0,
    );
}
