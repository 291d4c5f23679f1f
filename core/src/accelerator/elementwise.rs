//! The element-wise families: ops of one operand ([`Unary`]) and NumPy-
//! broadcasting ops of two ([`Binary`]). A member is nothing but its
//! catalogue declaration and its scalar rules ([`Elementwise`]): the shape
//! rule, cost, conformance cases, device command and TF kernel are the
//! family's. `docs/ops.md`, "Adding a device op".
//!
//! The types only (a leaf); their catalogue lookups are in `family.rs`.

/// Absolute part of the element-wise bound (`docs/device-numerics.md`).
pub const ELEMENTWISE_ABS: f32 = 1e-5;
/// Relative part of the element-wise bound.
pub const ELEMENTWISE_REL: f32 = 1e-5;

/// What the catalogue declares about an element-wise op besides its
/// identity (its line of the catalogue's `ELEMENTWISE_RULES`).
#[derive(Clone, Copy)]
pub struct Elementwise {
    /// The reference kernel on one element, computed in `f64` where it
    /// matters and rounded once.
    pub reference: Reference,
    /// The bound on a device's error for operands `a`, `b` whose reference
    /// result is `want`: `|got − want| ≤ bound(a, b, want)` (NaN must give
    /// NaN and ±∞ the same ∞ whatever the bound).
    pub bound: fn(f32, f32, f32) -> f32,
    /// Floating-point operations per output element, for the profiler.
    pub flops: u8,
    /// The parameter values the conformance cases try; empty for an op
    /// without a parameter.
    pub params: &'static [f32],
}

/// An element-wise op's reference on one element (`b` is 0 for a unary op).
#[derive(Clone, Copy)]
pub enum Reference {
    /// `f(a, b)`.
    Plain(fn(f32, f32) -> f32),
    /// `f(a, b, parameter)`, for an op with a parameter.
    WithParam(fn(f32, f32, f32) -> f32),
}

/// An element-wise op of one operand (`out[i] = op(x[i])`), by its
/// catalogue code, with its parameter's bits: an f32 attribute for an op
/// whose declaration names one ([`OpDecl::param`](super::OpDecl::param),
/// e.g. `LeakyRelu`'s `alpha`), else 0.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Unary(pub(super) u16, pub(super) u32);

/// An element-wise op of two operands with NumPy broadcasting
/// (`out = a ∘ b`), by its catalogue code, with its parameter's bits (as
/// for [`Unary`]: `LeakyReluGrad`'s `alpha`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Binary(pub(super) u16, pub(super) u32);

impl Elementwise {
    /// The reference on `a`, `b` (0 for a unary op) with parameter `p`.
    pub fn eval(&self, a: f32, b: f32, p: f32) -> f32 {
        match self.reference {
            Reference::Plain(f) => f(a, b),
            Reference::WithParam(f) => f(a, b, p),
        }
    }

    /// The rules of a member without an entry in `ELEMENTWISE_RULES`: a
    /// negative bound, so no device passes its cases.
    pub const MISSING: Self = Self {
        reference: Reference::Plain(|_, _| 0.0),
        bound: |_, _, _| -1.0,
        flops: 0,
        params: &[],
    };
}
