//! The ops a device runs, from its feature bits and `OPS` registers.

use tensorplug_abi::device::{Features, OPS_WORDS, Opcode};
use tensorplug_core::accelerator::{Activation, Binary, DType, OpKind, OpSet, Unary, Window};

/// The ops a device runs: each feature bit of `docs/device-abi.md` brings
/// the ops its opcodes lower, and the element-wise ops and records are
/// [`elementwise_ops`].
pub fn ops_of(features: Features, ops_words: &[u32; OPS_WORDS]) -> OpSet {
    let matmul = OpKind::MatMul {
        transpose_a: false,
        transpose_b: false,
    };
    let fused = OpKind::FusedMatMul {
        transpose_a: false,
        transpose_b: false,
        relu: false,
    };
    let window = Window::new([1, 1]);
    let groups: [(Features, &[OpKind]); 15] = [
        (Features::GEMM, &[matmul, fused]),
        (Features::ELEMENTWISE, &[OpKind::BiasAdd]),
        (
            Features::ROW_REDUCTIONS,
            &[OpKind::Softmax, OpKind::ReduceSum],
        ),
        (Features::MATH, &[OpKind::LogSoftmax]),
        (
            Features::WINDOW,
            &[
                OpKind::Conv2D(window),
                OpKind::FusedConv2D(window, Activation::None),
                OpKind::DepthwiseConv2D(window),
                OpKind::MaxPool(window),
                OpKind::AvgPool(window),
            ],
        ),
        (Features::LAYOUT, &[OpKind::Transpose([0; 6])]),
        (
            Features::WINDOW_GRAD,
            &[
                OpKind::Conv2DBackpropInput(window),
                OpKind::Conv2DBackpropFilter(window),
                OpKind::MaxPoolGrad(window),
                OpKind::AvgPoolGrad(window),
            ],
        ),
        (
            Features::INT8,
            &[
                OpKind::Conv2DInt8(window),
                OpKind::DepthwiseConv2DInt8(window),
                OpKind::MatMulInt8 { transpose_b: false },
                OpKind::AddInt8,
                OpKind::MaxPoolInt8(window),
                OpKind::AvgPoolInt8(window),
                OpKind::Quantize,
                OpKind::Dequantize,
            ],
        ),
        (
            Features::REDUCTIONS,
            &[
                OpKind::ReduceMax,
                OpKind::ReduceMin,
                OpKind::ReduceProd,
                OpKind::ArgMax(DType::I64),
                OpKind::ArgMin(DType::I64),
            ],
        ),
        (
            Features::INDEX,
            &[OpKind::Gather(DType::I32), OpKind::SegmentSum(DType::I32)],
        ),
        (
            Features::TYPES,
            &[
                OpKind::Cast {
                    from: DType::F32,
                    to: DType::I32,
                },
                OpKind::Select,
            ],
        ),
        (
            Features::RANDOM,
            &[OpKind::RandomUniform {
                key: 0,
                counter: [0; 2],
            }],
        ),
        (
            Features::INT8_ACTIVATIONS,
            &[OpKind::SoftmaxInt8, OpKind::LookupInt8],
        ),
        (Features::INT8_MUL, &[OpKind::MulInt8]),
        (Features::CONCAT, &[OpKind::Concat(DType::F32)]),
    ];
    let mut set = elementwise_ops(features, ops_words);
    for (bit, kinds) in groups {
        if features.contains(bit) {
            for &kind in kinds {
                set = set.with(kind);
            }
        }
    }
    set
}

/// The element-wise ops ([`Unary`], [`Binary`]) a device runs: with
/// `Features::CATALOGUE` (ABI 1.3), those of this driver's catalogue that
/// the `OPS` registers list; before, those of the per-op opcodes its
/// feature bits bring ([`Opcode::PER_OP_ELEMENTWISE`]). With
/// `Features::RECORDS` (ABI 1.10), also the records the `OPS` registers list.
pub fn elementwise_ops(features: Features, ops_words: &[u32; OPS_WORDS]) -> OpSet {
    let listed = |code: u16| {
        let bit = usize::from(code).wrapping_sub(1);
        ops_words
            .get(bit / 32)
            .is_some_and(|w| w & (1 << (bit % 32)) != 0)
    };
    let mut set = OpSet::EMPTY;
    if features.contains(Features::CATALOGUE) {
        let records = features.contains(Features::RECORDS);
        for kind in Unary::all()
            .map(OpKind::Unary)
            .chain(Binary::all().map(OpKind::Binary))
            .chain(
                records
                    .then(tensorplug_core::accelerator::records)
                    .into_iter()
                    .flatten(),
            )
        {
            if listed(kind.decl().id.code) {
                set = set.with(kind);
            }
        }
        return set;
    }
    for e in Opcode::PER_OP_ELEMENTWISE {
        if let (true, Some(kind)) = (features.contains(e.feature), elementwise_kind(e.code)) {
            set = set.with(kind);
        }
    }
    set
}

/// The element-wise op of catalogue code `code`.
fn elementwise_kind(code: u16) -> Option<OpKind> {
    Unary::from_code(code)
        .map(OpKind::Unary)
        .or(Binary::from_code(code).map(OpKind::Binary))
}
