//! The op catalogue: every op tensorplug knows, declared once, as data.
//!
//! A declaration ([`OpDecl`]) gives an op its name, its one stable
//! identity ([`OpId`]: on the link, in capabilities and in errors), its
//! operand count and element types, and a representative [`OpKind`] whose
//! attributes travel in a fixed-size block ([`Attrs`]). Capability sets,
//! names, the link's op identities and `docs/ops.md`'s catalogue table are
//! derived from [`BUILTIN`]. An op declared as a record ([`OpRecord`],
//! `records.rs`) carries its shape rule, cost, reference kernel,
//! conformance cases and device arguments with it; the older ops' are
//! still `match` arms beside it. `docs/ops.md`, "Adding a device op".

use super::elementwise::{Binary, ELEMENTWISE_ABS, ELEMENTWISE_REL, Elementwise, Reference, Unary};
use super::op::{Form, OpDecl, OpKind, VendorOp};
use super::op_id::{ATTR_BYTES, Attrs, Namespace, OpId};
use super::record::{OpRecord, RecordReference};
use super::types::{DType, DTypeSet, MAX_RANK};
use super::vendor::VendorRules;
use super::window::{Activation, Window};

const F32: DTypeSet = DTypeSet::EMPTY.with(DType::F32);
const WINDOW: Window = Window::new([1, 1]);

/// An op of its own: its code is its variant's discriminant.
const fn op(name: &'static str, inputs: u8, kind: OpKind) -> OpDecl {
    decl(name, kind.discriminant(), inputs, Form::Builtin(kind))
}

/// An element-wise op of one operand; its rules are in [`ELEMENTWISE_RULES`].
const fn unary(name: &'static str, code: u16) -> OpDecl {
    decl(name, code, 1, Form::Unary(Unary(code, 0), None))
}

/// As [`unary`], with the f32 TF attribute `param` as its parameter.
const fn unary_with(name: &'static str, code: u16, param: &'static str) -> OpDecl {
    decl(name, code, 1, Form::Unary(Unary(code, 0), Some(param)))
}

/// A broadcasting element-wise op of two operands; rules as for [`unary`].
const fn binary(name: &'static str, code: u16) -> OpDecl {
    decl(name, code, 2, Form::Binary(Binary(code, 0), None))
}

/// As [`binary`], with the f32 TF attribute `param` as its parameter.
const fn binary_with(name: &'static str, code: u16, param: &'static str) -> OpDecl {
    decl(name, code, 2, Form::Binary(Binary(code, 0), Some(param)))
}

const fn decl(name: &'static str, code: u16, inputs: u8, form: Form) -> OpDecl {
    OpDecl {
        name,
        id: OpId::builtin(code),
        inputs,
        dtypes: F32,
        form,
    }
}

/// An int8 op: its operands' types are [`OpKind::operand_types`]; its
/// last input is a quantization block ([`crate::quant::block`]).
const fn int8(name: &'static str, inputs: u8, kind: OpKind) -> OpDecl {
    OpDecl {
        dtypes: I8,
        ..op(name, inputs, kind)
    }
}

const I8: DTypeSet = DTypeSet::EMPTY.with(DType::I8);

/// An f32 op with int32 or int64 indices ([`OpKind::operand_types`]) of two inputs.
const fn typed(name: &'static str, kind: OpKind) -> OpDecl {
    op(name, 2, kind)
}

/// tensorplug's ops: the catalogue's own and the records', each at its code − 1, its
/// bit in an [`OpSet`](super::OpSet). Codes are appended, never reused.
pub const BUILTIN: &[OpDecl] = &MERGED;

const MERGED: [OpDecl; OWN.len() + records::RECORDS.len()] = by_code(OWN, records::RECORDS);

/// `own` and `records` in one array, each declaration at its code − 1
/// (the check below fails the build on a gap or a duplicate).
const fn by_code<const N: usize>(own: &[OpDecl], records: &[OpDecl]) -> [OpDecl; N] {
    let mut out = [own[0]; N];
    let mut i = 0;
    while i < own.len() + records.len() {
        let d = if i < own.len() {
            own[i]
        } else {
            records[i - own.len()]
        };
        let slot = d.id.code as usize - 1;
        assert!(slot < N, "a BUILTIN code is past the catalogue's end");
        out[slot] = d;
        i += 1;
    }
    out
}

/// The ops declared here, in code order; a new op is a record instead.
const OWN: &[OpDecl] = &[
    op(
        "MatMul",
        2,
        OpKind::MatMul {
            transpose_a: false,
            transpose_b: false,
        },
    ),
    op(
        "FusedMatMul",
        3,
        OpKind::FusedMatMul {
            transpose_a: false,
            transpose_b: false,
            relu: false,
        },
    ),
    op("BiasAdd", 2, OpKind::BiasAdd),
    binary("Add", 4),
    binary("Sub", 5),
    binary("Mul", 6),
    binary("Maximum", 7),
    unary("Relu", 8),
    op("Softmax", 1, OpKind::Softmax),
    op("ReduceSum", 1, OpKind::ReduceSum),
    binary("Div", 11),
    binary("DivNoNan", 12),
    binary("Pow", 13),
    binary("ReluGrad", 14),
    unary("Sqrt", 15),
    unary("Rsqrt", 16),
    op("LogSoftmax", 1, OpKind::LogSoftmax),
    unary("Relu6", 18),
    unary("Sigmoid", 19),
    unary("Tanh", 20),
    op("Conv2D", 2, OpKind::Conv2D(WINDOW)),
    op("DepthwiseConv2D", 2, OpKind::DepthwiseConv2D(WINDOW)),
    op("MaxPool", 1, OpKind::MaxPool(WINDOW)),
    op("AvgPool", 1, OpKind::AvgPool(WINDOW)),
    op(
        "Conv2DBackpropInput",
        2,
        OpKind::Conv2DBackpropInput(WINDOW),
    ),
    op(
        "Conv2DBackpropFilter",
        2,
        OpKind::Conv2DBackpropFilter(WINDOW),
    ),
    op("MaxPoolGrad", 2, OpKind::MaxPoolGrad(WINDOW)),
    op("AvgPoolGrad", 1, OpKind::AvgPoolGrad(WINDOW)),
    op(
        "FusedConv2D",
        3,
        OpKind::FusedConv2D(WINDOW, Activation::None),
    ),
    op("Transpose", 1, OpKind::Transpose([0; MAX_RANK])),
    unary("Exp", 31),
    unary("Log", 32),
    binary("SquaredDifference", 33),
    int8("Conv2DInt8", 3, OpKind::Conv2DInt8(WINDOW)),
    int8(
        "DepthwiseConv2DInt8",
        3,
        OpKind::DepthwiseConv2DInt8(WINDOW),
    ),
    int8("MatMulInt8", 3, OpKind::MatMulInt8 { transpose_b: false }),
    int8("AddInt8", 3, OpKind::AddInt8),
    int8("MaxPoolInt8", 2, OpKind::MaxPoolInt8(WINDOW)),
    int8("AvgPoolInt8", 2, OpKind::AvgPoolInt8(WINDOW)),
    int8("Quantize", 2, OpKind::Quantize),
    int8("Dequantize", 2, OpKind::Dequantize),
    unary("Erf", 42),
    unary("Erfc", 43),
    unary("Abs", 44),
    unary("Softplus", 45),
    binary("Minimum", 46),
    binary("SigmoidGrad", 47),
    binary("TanhGrad", 48),
    binary("RsqrtGrad", 49),
    typed("Gather", OpKind::Gather(DType::I32)),
    typed("SegmentSum", OpKind::SegmentSum(DType::I32)),
    op("ReduceMax", 1, OpKind::ReduceMax),
    op("ReduceMin", 1, OpKind::ReduceMin),
    op("ReduceProd", 1, OpKind::ReduceProd),
    unary("Log1p", 55),
    unary("Reciprocal", 56),
    unary("Expm1", 57),
    unary("Elu", 58),
    unary("Selu", 59),
    unary("Sign", 60),
    unary("Floor", 61),
    unary("Ceil", 62),
    unary("Round", 63),
    unary("Softsign", 64),
    binary("EluGrad", 65),
    binary("SeluGrad", 66),
    binary("SoftplusGrad", 67),
    binary("SoftsignGrad", 68),
    binary("ReciprocalGrad", 69),
    binary("SqrtGrad", 70),
    binary("MulNoNan", 71),
    binary("Xdivy", 72),
    binary("Xlogy", 73),
    binary("FloorDiv", 74),
    binary("FloorMod", 75),
    op(
        "Cast",
        1,
        OpKind::Cast {
            from: DType::F32,
            to: DType::I32,
        },
    ),
    // Comparisons as f32 masks (1.0 true, 0.0 false): a `Cast` to bool
    // makes TF's results; `Select` takes them as its condition.
    binary("Equal", 77),
    binary("NotEqual", 78),
    binary("Less", 79),
    binary("LessEqual", 80),
    binary("Greater", 81),
    binary("GreaterEqual", 82),
    op("Select", 3, OpKind::Select),
    op("ArgMax", 1, OpKind::ArgMax(DType::I64)),
    op("ArgMin", 1, OpKind::ArgMin(DType::I64)),
    op(
        "RandomUniform",
        0,
        OpKind::RandomUniform {
            key: 0,
            counter: [0; 2],
        },
    ),
    // A mask too: 1.0 where finite (`IsFinite` casts it to bool).
    unary("IsFinite", 87),
    int8("SoftmaxInt8", 2, OpKind::SoftmaxInt8),
    int8("LookupInt8", 2, OpKind::LookupInt8),
    int8("MulInt8", 3, OpKind::MulInt8),
    // Its element type is its attribute: f32 or int8.
    OpDecl {
        dtypes: F32.with(DType::I8),
        ..op("Concat", 2, OpKind::Concat(DType::F32))
    },
    unary_with("LeakyRelu", 92, "alpha"),
    binary_with("LeakyReluGrad", 93, "alpha"),
];

// Each declaration sits at its code − 1 (an own op's code is its variant's
// discriminant): a declaration out of place, a gap or a code taken twice
// does not compile.
const _: () = {
    let mut i = 0;
    while i < BUILTIN.len() {
        assert!(
            BUILTIN[i].id.code as usize == i + 1,
            "a BUILTIN declaration is not at its code − 1"
        );
        i += 1;
    }
};

/// The element-wise ops that code names (any member can also be named in a
/// `const` with [`Unary::named`]).
impl Unary {
    /// `Relu`.
    pub const RELU: Self = Self::named("Relu");
    /// `Sqrt`.
    pub const SQRT: Self = Self::named("Sqrt");
    /// `Rsqrt`.
    pub const RSQRT: Self = Self::named("Rsqrt");
    /// `Relu6`.
    pub const RELU6: Self = Self::named("Relu6");
    /// `Sigmoid`.
    pub const SIGMOID: Self = Self::named("Sigmoid");
    /// `Tanh`.
    pub const TANH: Self = Self::named("Tanh");
    /// `Exp`.
    pub const EXP: Self = Self::named("Exp");
}

/// As for [`Unary`].
impl Binary {
    /// `Add`.
    pub const ADD: Self = Self::named("Add");
    /// `Sub`.
    pub const SUB: Self = Self::named("Sub");
    /// `Mul`.
    pub const MUL: Self = Self::named("Mul");
    /// `Maximum`.
    pub const MAXIMUM: Self = Self::named("Maximum");
    /// `Div`.
    pub const DIV: Self = Self::named("Div");
    /// `DivNoNan`.
    pub const DIV_NO_NAN: Self = Self::named("DivNoNan");
    /// `Pow`.
    pub const POW: Self = Self::named("Pow");
    /// `ReluGrad`.
    pub const RELU_GRAD: Self = Self::named("ReluGrad");
}

/// The element-wise ops' scalar rules, by code. They sit apart from
/// [`BUILTIN`], which a device build reads at run time, so that it links
/// none of these `f64` reference functions; a catalogue test checks that
/// every element-wise declaration has its entry here and nothing else does.
pub(super) const ELEMENTWISE_RULES: &[(u16, Elementwise)] = &[
    (4, near(|a, b| a + b)),
    (5, near(|a, b| a - b)),
    (6, near(|a, b| a * b)),
    (
        7,
        near(|a, b| {
            if a.is_nan() || b.is_nan() {
                f32::NAN
            } else if b > a {
                b
            } else {
                a
            }
        }),
    ),
    (8, near(|x, _| if x < 0.0 { 0.0 } else { x })),
    (11, near(|a, b| a / b)),
    (12, near(|a, b| if b == 0.0 { 0.0 } else { a / b })),
    (
        13,
        Elementwise {
            reference: Reference::Plain(|a, b| libm::pow(f64::from(a), f64::from(b)) as f32),
            bound: pow_bound,
            flops: 1,
            params: &[],
        },
    ),
    (14, near(|a, b| a * if b > 0.0 { 1.0 } else { 0.0 })),
    (15, near(|x, _| libm::sqrt(f64::from(x)) as f32)),
    (16, near(|x, _| (1.0 / libm::sqrt(f64::from(x))) as f32)),
    (
        18,
        near(|x, _| if x.is_nan() { x } else { x.clamp(0.0, 6.0) }),
    ),
    (
        19,
        near(|x, _| (1.0 / (1.0 + libm::exp(-f64::from(x)))) as f32),
    ),
    (20, near(|x, _| libm::tanh(f64::from(x)) as f32)),
    (31, near(|x, _| libm::exp(f64::from(x)) as f32)),
    (32, near(|x, _| libm::log(f64::from(x)) as f32)),
    (33, near(|a, b| (a - b) * (a - b))),
    (42, near(|x, _| libm::erf(f64::from(x)) as f32)),
    (43, near(|x, _| libm::erfc(f64::from(x)) as f32)),
    (44, near(|x, _| x.abs())),
    (45, near(|x, _| softplus(f64::from(x)) as f32)),
    (
        46,
        near(|a, b| {
            if a.is_nan() || b.is_nan() {
                f32::NAN
            } else if b < a {
                b
            } else {
                a
            }
        }),
    ),
    // The gradients take (y, dy), y the forward op's output; TF's formulas
    // in f32.
    (47, near(|y, dy| dy * y * (1.0 - y))),
    (48, near(|y, dy| dy * (1.0 - y * y))),
    (
        49,
        near(|y, dy| {
            if dy == 0.0 {
                0.0
            } else {
                -0.5 * (dy * y) * (y * y)
            }
        }),
    ),
    (55, near(|x, _| libm::log1p(f64::from(x)) as f32)),
    (56, near(|x, _| 1.0 / x)),
    (57, near(|x, _| libm::expm1(f64::from(x)) as f32)),
    // TF's `exp(x) − 1` below 0 (not `expm1`): `exp` rounded, then 1 off.
    (58, near(|x, _| if x < 0.0 { exp_f32(x) - 1.0 } else { x })),
    (
        59,
        near(|x, _| {
            if x < 0.0 {
                SELU_SCALE_ALPHA * (exp_f32(x) - 1.0)
            } else {
                SELU_SCALE * x
            }
        }),
    ),
    (
        60,
        near(|x, _| {
            if x.is_nan() {
                x
            } else if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                0.0
            }
        }),
    ),
    (61, near(|x, _| libm::floorf(x))),
    (62, near(|x, _| libm::ceilf(x))),
    (63, near(|x, _| libm::rintf(x))),
    (64, near(|x, _| x / (1.0 + x.abs()))),
    // The gradients of the forward ops: (gradient, forward output or input).
    (65, near(|g, y| if y < 0.0 { g * (y + 1.0) } else { g })),
    (
        66,
        near(|g, y| {
            if y < 0.0 {
                g * (y + SELU_SCALE_ALPHA)
            } else {
                g * SELU_SCALE
            }
        }),
    ),
    (67, near(|g, x| g / (exp_f32(-x) + 1.0))),
    (68, near(|g, x| g / ((1.0 + x.abs()) * (1.0 + x.abs())))),
    (69, near(|y, dy| if dy == 0.0 { 0.0 } else { -y * y * dy })),
    (70, near(|y, dy| if dy == 0.0 { 0.0 } else { 0.5 * dy / y })),
    (71, near(|a, b| if b == 0.0 { 0.0 } else { a * b })),
    (72, near(|a, b| if a == 0.0 { 0.0 } else { a / b })),
    (
        73,
        near(|a, b| {
            if a == 0.0 {
                0.0
            } else {
                (f64::from(a) * libm::log(f64::from(b))) as f32
            }
        }),
    ),
    (74, near(|a, b| libm::floorf(a / b))),
    (75, near(floor_mod)),
    (77, near(|a, b| mask(a == b))),
    (78, near(|a, b| mask(a != b))),
    (79, near(|a, b| mask(a < b))),
    (80, near(|a, b| mask(a <= b))),
    (81, near(|a, b| mask(a > b))),
    (82, near(|a, b| mask(a >= b))),
    (87, near(|x, _| mask(x.is_finite()))),
    // TF's select: `x` above 0, else `alpha·x` (NaN stays NaN, −0 scaled).
    (
        92,
        near_with(
            |x, _, alpha| if x > 0.0 { x } else { x * alpha },
            &[0.2, 0.01, -1.5],
        ),
    ),
    // (gradient, features): the gradient where the feature is above 0, else `alpha·gradient`.
    (
        93,
        near_with(
            |g, x, alpha| if x > 0.0 { g } else { g * alpha },
            &[0.2, -1.5],
        ),
    ),
];

/// A comparison's result as an f32 mask.
fn mask(true_: bool) -> f32 {
    if true_ { 1.0 } else { 0.0 }
}

/// `selu`'s constants, as TF's kernel has them.
const SELU_SCALE: f32 = 1.050_701;
const SELU_SCALE_ALPHA: f32 = 1.758_099_3;

/// `eˣ` rounded to f32.
fn exp_f32(x: f32) -> f32 {
    libm::exp(f64::from(x)) as f32
}

/// TF's `FloorMod` on floats: `fmod`, moved into the divisor's sign.
fn floor_mod(a: f32, b: f32) -> f32 {
    let m = libm::fmodf(a, b);
    if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
        m + b
    } else {
        m
    }
}

/// `ln(1 + eˣ)`, as TF computes it: `x` above 13.94 (`−(ln ε + 2)`), `eˣ`
/// below −13.94, else `log1p(eˣ)`.
fn softplus(x: f64) -> f64 {
    let threshold = libm::log(f64::from(f32::EPSILON)) + 2.0;
    if x > -threshold {
        x
    } else if x < threshold {
        libm::exp(x)
    } else {
        libm::log1p(libm::exp(x))
    }
}

/// Rules with the element-wise bound ([`ELEMENTWISE_ABS`] + [`ELEMENTWISE_REL`]·|want|).
const fn near(reference: fn(f32, f32) -> f32) -> Elementwise {
    Elementwise {
        reference: Reference::Plain(reference),
        bound: elementwise_bound,
        flops: 1,
        params: &[],
    }
}

/// [`near`] for an op with a parameter: the reference on `(a, b, p)` (`b`
/// is 0 for a unary op), and the parameter values its conformance cases try.
const fn near_with(reference: fn(f32, f32, f32) -> f32, params: &'static [f32]) -> Elementwise {
    Elementwise {
        reference: Reference::WithParam(reference),
        bound: elementwise_bound,
        flops: 1,
        params,
    }
}

/// The element-wise bound.
fn elementwise_bound(_: f32, _: f32, want: f32) -> f32 {
    ELEMENTWISE_ABS + ELEMENTWISE_REL * want.abs()
}

/// `Pow`'s bound: a `powf` within a few ulp of `ln` has a relative error
/// that grows with `|b·ln a|` (the exponent the result is `exp` of).
fn pow_bound(a: f32, b: f32, want: f32) -> f32 {
    let eps = f64::from(f32::EPSILON);
    let exponent = f64::from(b) * libm::log(f64::from(a).abs());
    let bound = 8.0 * eps * f64::from(want.abs()) * (1.0 + exponent.abs());
    let near = elementwise_bound(a, b, want);
    if bound.is_finite() && bound as f32 > near {
        bound as f32
    } else {
        near
    }
}

/// The built-in op with identity `id`.
pub fn builtin(id: OpId) -> Option<&'static OpDecl> {
    if id.namespace != Namespace::TENSORPLUG || id.code == 0 {
        return None;
    }
    BUILTIN.get(usize::from(id.code) - 1)
}

/// The built-in op named `name`, if any.
pub const fn named(name: &str) -> Option<&'static OpDecl> {
    let mut i = 0;
    while i < BUILTIN.len() {
        if str_eq(BUILTIN[i].name, name) {
            return Some(&BUILTIN[i]);
        }
        i += 1;
    }
    None
}

/// The `BatchMatMul` record with its transposes (`docs/ops.md`, "A record
/// of two inputs").
pub const fn batch_matmul(transpose_a: bool, transpose_b: bool) -> OpKind {
    let mut attrs = Attrs([0; ATTR_BYTES]);
    attrs.0[0] = transpose_a as u8;
    attrs.0[1] = transpose_b as u8;
    // Looked up when this builds, not when it runs.
    const DECL: &OpDecl = match named("BatchMatMul") {
        Some(decl) => decl,
        None => panic!("no BatchMatMul in the catalogue"),
    };
    OpKind::Record(VendorOp { decl: DECL, attrs })
}

/// The `LayerNorm` record with `epsilon` and `form` (its declaration says
/// what they mean).
pub const fn layer_norm(epsilon: f32, form: u8) -> OpKind {
    const DECL: &OpDecl = match named("LayerNorm") {
        Some(decl) => decl,
        None => panic!("no LayerNorm in the catalogue"),
    };
    OpKind::Record(VendorOp {
        decl: DECL,
        attrs: records::layer_norm_attrs(epsilon, form),
    })
}

/// The `Gelu` record with its constants `c` and `h` (its declaration says
/// what they are).
pub const fn gelu(c: f32, h: f32) -> OpKind {
    const DECL: &OpDecl = match named("Gelu") {
        Some(decl) => decl,
        None => panic!("no Gelu in the catalogue"),
    };
    OpKind::Record(VendorOp {
        decl: DECL,
        attrs: records::gelu_attrs(c, h),
    })
}

/// The catalogue code of the built-in op `name`; in a `const`, a name the
/// catalogue lacks fails the build (so a device's table names its ops
/// and states no code twice).
pub const fn code_of(name: &str) -> u16 {
    match named(name) {
        Some(decl) => decl.id.code,
        None => panic!("no op of that name in the catalogue"),
    }
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The ops declared as records, with default attributes, in code order.
pub fn records() -> impl Iterator<Item = OpKind> {
    BUILTIN
        .iter()
        .filter(|d| d.record().is_some())
        .map(OpDecl::default_kind)
}

const TRANSPOSE_A: u8 = 1;
const TRANSPOSE_B: u8 = 2;
const RELU: u8 = 4;
/// Bytes of a [`Window`] in an attribute block (ten `u16`, little-endian).
const WINDOW_BYTES: usize = 20;

impl OpKind {
    /// This op's declaration.
    pub const fn decl(self) -> &'static OpDecl {
        match self {
            Self::Vendor(op) | Self::Record(op) => op.decl,
            _ => &BUILTIN[self.builtin_index()],
        }
    }

    /// The op's name ([`OpDecl::name`]), as in errors and capability lists.
    pub const fn name(self) -> &'static str {
        self.decl().name
    }

    /// How many input tensors the op takes.
    pub const fn input_count(self) -> usize {
        self.decl().inputs as usize
    }

    /// The op's index in [`BUILTIN`] (its code − 1), `None` for a vendor's.
    pub(super) const fn index(self) -> Option<usize> {
        match self {
            Self::Vendor(_) => None,
            _ => Some(self.builtin_index()),
        }
    }

    /// The built-in op's index in [`BUILTIN`]: its code − 1, the code its
    /// variant's discriminant or, for the element-wise families, its
    /// payload's (0 for a vendor op, never asked).
    const fn builtin_index(self) -> usize {
        match self {
            Self::Vendor(_) => 0,
            Self::Unary(op) => op.code() as usize - 1,
            Self::Binary(op) => op.code() as usize - 1,
            Self::Record(op) => op.decl.id.code as usize - 1,
            _ => self.discriminant() as usize - 1,
        }
    }

    /// The attribute block that carries this op's attributes.
    pub fn attrs(self) -> Attrs {
        let mut a = [0u8; ATTR_BYTES];
        match self {
            Self::MatMul {
                transpose_a,
                transpose_b,
            } => a[0] = flags(transpose_a, transpose_b, false),
            Self::FusedMatMul {
                transpose_a,
                transpose_b,
                relu,
            } => a[0] = flags(transpose_a, transpose_b, relu),
            Self::MatMulInt8 { transpose_b } => a[0] = flags(false, transpose_b, false),
            Self::FusedConv2D(w, act) => {
                put_window(&mut a, &w);
                a[WINDOW_BYTES] = act as u8;
            }
            Self::Transpose(perm) => a[..MAX_RANK].copy_from_slice(&perm),
            Self::Cast { from, to } => a[..2].copy_from_slice(&[from as u8, to as u8]),
            Self::ArgMax(out) | Self::ArgMin(out) => a[0] = out as u8,
            Self::Gather(index) | Self::SegmentSum(index) => a[0] = index as u8,
            Self::Concat(t) => a[0] = t as u8,
            Self::Unary(op) => a[..4].copy_from_slice(&op.1.to_le_bytes()),
            Self::Binary(op) => a[..4].copy_from_slice(&op.1.to_le_bytes()),
            Self::RandomUniform { key, counter } => {
                for (slot, v) in a.chunks_exact_mut(8).zip([key, counter[0], counter[1]]) {
                    slot.copy_from_slice(&v.to_le_bytes());
                }
            }
            Self::Vendor(op) | Self::Record(op) => return op.attrs,
            other => {
                if let Some(w) = other.window() {
                    put_window(&mut a, &w);
                }
            }
        }
        Attrs(a)
    }

    /// The window of a window op.
    pub const fn window(self) -> Option<Window> {
        match self {
            Self::Conv2D(w)
            | Self::DepthwiseConv2D(w)
            | Self::MaxPool(w)
            | Self::AvgPool(w)
            | Self::Conv2DBackpropInput(w)
            | Self::Conv2DBackpropFilter(w)
            | Self::MaxPoolGrad(w)
            | Self::AvgPoolGrad(w)
            | Self::FusedConv2D(w, _)
            | Self::Conv2DInt8(w)
            | Self::DepthwiseConv2DInt8(w)
            | Self::MaxPoolInt8(w)
            | Self::AvgPoolInt8(w) => Some(w),
            _ => None,
        }
    }

    /// `self` with its window replaced (other ops unchanged).
    const fn with_window(self, w: Window) -> Self {
        match self {
            Self::Conv2D(_) => Self::Conv2D(w),
            Self::DepthwiseConv2D(_) => Self::DepthwiseConv2D(w),
            Self::MaxPool(_) => Self::MaxPool(w),
            Self::AvgPool(_) => Self::AvgPool(w),
            Self::Conv2DBackpropInput(_) => Self::Conv2DBackpropInput(w),
            Self::Conv2DBackpropFilter(_) => Self::Conv2DBackpropFilter(w),
            Self::MaxPoolGrad(_) => Self::MaxPoolGrad(w),
            Self::AvgPoolGrad(_) => Self::AvgPoolGrad(w),
            Self::FusedConv2D(_, act) => Self::FusedConv2D(w, act),
            Self::Conv2DInt8(_) => Self::Conv2DInt8(w),
            Self::DepthwiseConv2DInt8(_) => Self::DepthwiseConv2DInt8(w),
            Self::MaxPoolInt8(_) => Self::MaxPoolInt8(w),
            Self::AvgPoolInt8(_) => Self::AvgPoolInt8(w),
            other => other,
        }
    }
}

impl OpDecl {
    /// A vendor's op: `name` in the vendor's `namespace` (never
    /// [`Namespace::TENSORPLUG`]), `code` ≥ 1, and its rules.
    pub const fn vendor(
        name: &'static str,
        namespace: Namespace,
        code: u16,
        inputs: u8,
        dtypes: DTypeSet,
        rules: &'static VendorRules,
    ) -> Self {
        Self {
            name,
            id: OpId { namespace, code },
            inputs,
            dtypes,
            form: Form::Vendor(rules),
        }
    }

    /// An element-wise op of one operand with a parameter: the name of the
    /// f32 TF attribute it comes from (`LeakyRelu`'s `"alpha"`); its value
    /// is [`Unary::param`], attribute bytes 0..4. `None` for the rest.
    pub const fn param(&self) -> Option<&'static str> {
        match self.form {
            Form::Unary(_, param) | Form::Binary(_, param) => param,
            _ => None,
        }
    }

    /// The vendor op's rules (`None` for a built-in op).
    pub const fn rules(&self) -> Option<&'static VendorRules> {
        match self.form {
            Form::Vendor(rules) => Some(rules),
            _ => None,
        }
    }

    /// The reference side of an op declared by its rules: a record's
    /// entry in `REFERENCES`, or a vendor op's rules (`None` for the other
    /// ops). Host code only: a device build that calls this links every
    /// record's.
    pub fn reference(&self) -> Option<RecordReference> {
        match self.form {
            Form::Record(_) => records::REFERENCES
                .iter()
                .find(|r| r.code == self.id.code)
                .copied(),
            Form::Vendor(rules) => Some(RecordReference {
                code: self.id.code,
                reference: rules.reference,
                cases: rules.cases,
                tolerance: rules.tolerance,
            }),
            _ => None,
        }
    }

    /// The record of an op declared as one (`None` for the rest).
    pub const fn record(&self) -> Option<&'static OpRecord> {
        match self.form {
            Form::Record(record) => Some(record),
            _ => None,
        }
    }

    /// The op with default attributes.
    pub fn default_kind(&'static self) -> OpKind {
        match self.form {
            Form::Builtin(kind) => kind,
            Form::Unary(op, _) => OpKind::Unary(op),
            Form::Binary(op, _) => OpKind::Binary(op),
            Form::Vendor(_) => OpKind::Vendor(VendorOp {
                decl: self,
                attrs: Attrs::default(),
            }),
            Form::Record(_) => OpKind::Record(VendorOp {
                decl: self,
                attrs: Attrs::default(),
            }),
        }
    }

    /// The op with the attributes of `attrs`, or `None` when the block is
    /// not one this op writes (stray bits, bytes it does not use; a vendor
    /// op takes any block, its shape rule judges it).
    pub fn kind(&'static self, attrs: &Attrs) -> Option<OpKind> {
        let a = &attrs.0;
        let builtin = match self.form {
            Form::Builtin(kind) => kind,
            Form::Unary(_, Some(_)) | Form::Binary(_, Some(_)) => {
                let bits = u32::from_le_bytes([a[0], a[1], a[2], a[3]]);
                let kind = match self.form {
                    Form::Unary(op, _) => OpKind::Unary(Unary(op.0, bits)),
                    _ => OpKind::Binary(Binary(self.id.code, bits)),
                };
                return a[4..].iter().all(|&b| b == 0).then_some(kind);
            }
            Form::Unary(..) | Form::Binary(..) => {
                return a.iter().all(|&b| b == 0).then(|| self.default_kind());
            }
            Form::Vendor(_) => {
                return Some(OpKind::Vendor(VendorOp {
                    decl: self,
                    attrs: *attrs,
                }));
            }
            // Its shape rule judges the block (`ShapeError::Attrs`).
            Form::Record(_) => {
                return Some(OpKind::Record(VendorOp {
                    decl: self,
                    attrs: *attrs,
                }));
            }
        };
        let (kind, used) = match builtin {
            OpKind::MatMul { .. } if a[0] & !(TRANSPOSE_A | TRANSPOSE_B) == 0 => (
                OpKind::MatMul {
                    transpose_a: a[0] & TRANSPOSE_A != 0,
                    transpose_b: a[0] & TRANSPOSE_B != 0,
                },
                1,
            ),
            OpKind::FusedMatMul { .. } if a[0] & !(TRANSPOSE_A | TRANSPOSE_B | RELU) == 0 => (
                OpKind::FusedMatMul {
                    transpose_a: a[0] & TRANSPOSE_A != 0,
                    transpose_b: a[0] & TRANSPOSE_B != 0,
                    relu: a[0] & RELU != 0,
                },
                1,
            ),
            OpKind::MatMulInt8 { .. } if a[0] & !TRANSPOSE_B == 0 => (
                OpKind::MatMulInt8 {
                    transpose_b: a[0] & TRANSPOSE_B != 0,
                },
                1,
            ),
            OpKind::MatMul { .. } | OpKind::FusedMatMul { .. } | OpKind::MatMulInt8 { .. } => {
                return None;
            }
            OpKind::FusedConv2D(..) => {
                let act = match a[WINDOW_BYTES] {
                    0 => Activation::None,
                    1 => Activation::Relu,
                    2 => Activation::Relu6,
                    _ => return None,
                };
                (OpKind::FusedConv2D(get_window(a), act), WINDOW_BYTES + 1)
            }
            OpKind::Cast { .. } => {
                let (from, to) = (DType::from_code(a[0])?, DType::from_code(a[1])?);
                if !super::op::cast_supported(from, to) {
                    return None;
                }
                (OpKind::Cast { from, to }, 2)
            }
            OpKind::RandomUniform { .. } => {
                let word = |i: usize| {
                    let mut w = [0u8; 8];
                    w.copy_from_slice(&a[8 * i..8 * i + 8]);
                    u64::from_le_bytes(w)
                };
                let counter = [word(1), word(2)];
                (
                    OpKind::RandomUniform {
                        key: word(0),
                        counter,
                    },
                    ATTR_BYTES,
                )
            }
            OpKind::Gather(_) | OpKind::SegmentSum(_) => {
                let index = match DType::from_code(a[0])? {
                    d @ (DType::I32 | DType::I64) => d,
                    _ => return None,
                };
                let kind = match builtin {
                    OpKind::Gather(_) => OpKind::Gather(index),
                    _ => OpKind::SegmentSum(index),
                };
                (kind, 1)
            }
            OpKind::ArgMax(_) | OpKind::ArgMin(_) => {
                let out = match DType::from_code(a[0])? {
                    d @ (DType::I32 | DType::I64) => d,
                    _ => return None,
                };
                let kind = match builtin {
                    OpKind::ArgMax(_) => OpKind::ArgMax(out),
                    _ => OpKind::ArgMin(out),
                };
                (kind, 1)
            }
            OpKind::Concat(_) => match DType::from_code(a[0])? {
                t @ (DType::F32 | DType::I8) => (OpKind::Concat(t), 1),
                _ => return None,
            },
            OpKind::Transpose(_) => {
                let mut perm = [0u8; MAX_RANK];
                perm.copy_from_slice(&a[..MAX_RANK]);
                (OpKind::Transpose(perm), MAX_RANK)
            }
            kind if kind.window().is_some() => (kind.with_window(get_window(a)), WINDOW_BYTES),
            kind => (kind, 0),
        };
        a[used..].iter().all(|&b| b == 0).then_some(kind)
    }
}

fn flags(transpose_a: bool, transpose_b: bool, relu: bool) -> u8 {
    let bit = |on: bool, b: u8| if on { b } else { 0 };
    bit(transpose_a, TRANSPOSE_A) | bit(transpose_b, TRANSPOSE_B) | bit(relu, RELU)
}

fn put_window(a: &mut [u8; ATTR_BYTES], w: &Window) {
    let fields = w
        .size
        .iter()
        .chain(&w.stride)
        .chain(&w.dilation)
        .chain(&w.pad);
    for (slot, v) in a.chunks_exact_mut(2).zip(fields) {
        slot.copy_from_slice(&v.to_le_bytes());
    }
}

fn get_window(a: &[u8; ATTR_BYTES]) -> Window {
    let v = |i: usize| u16::from_le_bytes([a[2 * i], a[2 * i + 1]]);
    Window {
        size: [v(0), v(1)],
        stride: [v(2), v(3)],
        dilation: [v(4), v(5)],
        pad: [v(6), v(7), v(8), v(9)],
    }
}

mod records;
#[cfg(test)]
mod tests;
