//! The NPU's own op, declared here in its own namespace: `LeakyRelu`,
//! `x > 0 ? x : alpha · x` (TF's `LeakyRelu`, Keras' `LeakyReLU` layer),
//! with `alpha` an f32 in attribute bytes 0..4 (little-endian).
//!
//! Its identity lives in the NPU's own namespace, so it never collides with
//! tensorplug's ops (the catalogue's own `LeakyRelu`, code 92, is another
//! op) or another vendor's. Its shape rule, cost, reference
//! kernel and conformance cases come with it; the conformance suite runs
//! them on any device that declares it.

use tensorplug_core::accelerator::{
    ATTR_BYTES, Attrs, DType, DTypeSet, Namespace, OpDecl, OpKind, Shape, ShapeError, TensorDesc,
    Tolerance, VendorCase, VendorOp, VendorRules,
};

/// The example NPU vendor's namespace.
pub const NAMESPACE: Namespace = Namespace::named("org.tensorplug.example-npu");

/// `LeakyRelu`: code 1 of [`NAMESPACE`], one f32 input.
pub static LEAKY_RELU: OpDecl = OpDecl::vendor(
    "LeakyRelu",
    NAMESPACE,
    1,
    1,
    DTypeSet::EMPTY.with(DType::F32),
    &RULES,
);

/// `LeakyRelu` with slope `alpha` below zero.
pub fn leaky_relu(alpha: f32) -> OpKind {
    OpKind::Vendor(VendorOp {
        decl: &LEAKY_RELU,
        attrs: attrs(alpha),
    })
}

/// The slope an attribute block carries.
pub fn alpha(attrs: &Attrs) -> f32 {
    f32::from_le_bytes([attrs.0[0], attrs.0[1], attrs.0[2], attrs.0[3]])
}

/// One element, as TF's CPU kernel computes it (NaN stays NaN, `-0.0`
/// becomes `alpha · -0.0`).
pub fn apply(x: f32, alpha: f32) -> f32 {
    if x > 0.0 { x } else { x * alpha }
}

const fn attrs(alpha: f32) -> Attrs {
    let b = alpha.to_le_bytes();
    let mut a = [0u8; ATTR_BYTES];
    a[0] = b[0];
    a[1] = b[1];
    a[2] = b[2];
    a[3] = b[3];
    Attrs(a)
}

fn shape(attrs: &Attrs, inputs: &[TensorDesc]) -> Result<Shape, ShapeError> {
    // Bytes past the slope are not ours to accept.
    if attrs.0[4..].iter().any(|&b| b != 0) {
        return Err(ShapeError::Attrs);
    }
    Ok(inputs[0].shape)
}

fn flops(_: &Attrs, inputs: &[TensorDesc], _: &TensorDesc) -> u64 {
    inputs[0].shape.elements().unwrap_or(0)
}

fn reference(attrs: &Attrs, inputs: &[&[f32]], _: &[Shape], out: &mut [f32]) {
    let a = alpha(attrs);
    for (o, &x) in out.iter_mut().zip(inputs[0]) {
        *o = apply(x, a);
    }
}

const SPECIAL: [f32; 8] = [
    -3.5,
    2.25,
    -0.0,
    0.0,
    f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    -1e-30,
];

static RULES: VendorRules = VendorRules {
    shape,
    flops,
    reference,
    cases: &[
        VendorCase {
            attrs: attrs(0.2),
            inputs: &[(&[2, 4], &SPECIAL)],
            out: &[2, 4],
        },
        VendorCase {
            attrs: attrs(0.01),
            inputs: &[(&[1, 2, 4], &SPECIAL)],
            out: &[1, 2, 4],
        },
        VendorCase {
            attrs: attrs(-1.5),
            inputs: &[(&[8], &SPECIAL)],
            out: &[8],
        },
        VendorCase {
            attrs: attrs(0.3),
            inputs: &[(&[0, 3], &[])],
            out: &[0, 3],
        },
    ],
    tolerance: Tolerance::EXACT,
};
