//! Element-wise kernels with no broadcasting: ReLU, square roots, bias-add, fill.

use tensorplug_core::accelerator::Unary;

use super::error::{KernelError, Operand, expect_len, expect_whole_rows};

/// `max(x, 0)` as TF computes it: NaN stays NaN, `-0.0` stays `-0.0`.
#[inline(always)]
pub(crate) fn relu_scalar(x: f32) -> f32 {
    if x < 0.0 { 0.0 } else { x }
}

/// `out[i] = max(x[i], 0)`.
pub fn relu(x: &[f32], out: &mut [f32]) -> Result<(), KernelError> {
    unary(UnaryOp::Relu, 0.0, x, out)
}

/// `x[i] = max(x[i], 0)` in place.
pub fn relu_in_place(x: &mut [f32]) {
    unary_in_place(UnaryOp::Relu, 0.0, x);
}

/// Declares [`UnaryOp`]: one line per op, its catalogue op and its f32
/// function; after the `;`, the ops with a parameter (`OpDecl::param`),
/// whose function takes it second.
macro_rules! unary_ops {
    (
        $($(#[$doc:meta])* $name:ident = $op:expr => $f:expr,)*
        ;
        $($(#[$pdoc:meta])* $pname:ident = $pop:expr => $pf:expr,)*
    ) => {
        /// The element-wise ops of one operand the model runs: each
        /// discriminant is the op's catalogue code (`UNARY`'s `imm`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[cfg_attr(feature = "defmt", derive(defmt::Format))]
        #[non_exhaustive]
        #[repr(u16)]
        pub enum UnaryOp {
            $($(#[$doc])* $name = $op.code(),)*
            $($(#[$pdoc])* $pname = $pop.code(),)*
        }

        impl UnaryOp {
            /// Every op, the `OPS` registers' unary bits.
            pub const ALL: [Self; [$(stringify!($name),)* $(stringify!($pname)),*].len()] =
                [$(Self::$name,)* $(Self::$pname),*];

            /// True for an op with a parameter (`UNARY`'s `src2`).
            pub const fn takes_param(self) -> bool {
                match self {
                    $(Self::$pname => true,)*
                    _ => false,
                }
            }

            /// The op on one element, with parameter `p` (unused by most).
            #[inline(always)]
            pub fn apply(self, x: f32, p: f32) -> f32 {
                let _ = p;
                match self {
                    $(Self::$name => ($f)(x),)*
                    $(Self::$pname => ($pf)(x, p),)*
                }
            }

            /// `out[i] = op(x[i])`, one loop per op (the match outside the
            /// loop, so each loop vectorizes; `out` and `x` of one length).
            fn map(self, p: f32, x: &[f32], out: &mut [f32]) {
                let _ = p;
                match self {
                    $(Self::$name => {
                        for (o, &v) in out.iter_mut().zip(x) {
                            *o = ($f)(v);
                        }
                    })*
                    $(Self::$pname => {
                        for (o, &v) in out.iter_mut().zip(x) {
                            *o = ($pf)(v, p);
                        }
                    })*
                }
            }

            /// `x[i] = op(x[i])`, one loop per op.
            fn map_in_place(self, p: f32, x: &mut [f32]) {
                let _ = p;
                match self {
                    $(Self::$name => {
                        for v in x.iter_mut() {
                            *v = ($f)(*v);
                        }
                    })*
                    $(Self::$pname => {
                        for v in x.iter_mut() {
                            *v = ($pf)(*v, p);
                        }
                    })*
                }
            }
        }
    };
}

unary_ops! {
    /// `max(x, 0)`: NaN stays NaN, `-0.0` stays `-0.0`.
    Relu = Unary::RELU => relu_scalar,
    /// `√x` (correctly rounded).
    Sqrt = Unary::SQRT => libm::sqrtf,
    /// `1 / √x`.
    Rsqrt = Unary::RSQRT => |x| 1.0 / libm::sqrtf(x),
    /// `min(max(x, 0), 6)`: NaN stays NaN.
    Relu6 = Unary::RELU6 => |x: f32| if x.is_nan() { x } else { x.clamp(0.0, 6.0) },
    /// `1 / (1 + e^−x)`.
    Sigmoid = Unary::SIGMOID => |x: f32| 1.0 / (1.0 + libm::expf(-x)),
    /// `tanh(x)`.
    Tanh = Unary::TANH => libm::tanhf,
    /// `eˣ` (`expf`).
    Exp = Unary::EXP => libm::expf,
    /// `ln x` (`logf`).
    Log = Unary::named("Log") => libm::logf,
    /// `erf x` (`erff`).
    Erf = Unary::named("Erf") => libm::erff,
    /// `erfc x` (`erfcf`).
    Erfc = Unary::named("Erfc") => libm::erfcf,
    /// `|x|`.
    Abs = Unary::named("Abs") => f32::abs,
    /// `ln(1 + eˣ)` with TF's thresholds (`x` above 13.94, `eˣ` below −13.94).
    Softplus = Unary::named("Softplus") => softplus,
    /// `ln(1 + x)` (`log1pf`).
    Log1p = Unary::named("Log1p") => libm::log1pf,
    /// `1 / x`.
    Reciprocal = Unary::named("Reciprocal") => |x: f32| 1.0 / x,
    /// `eˣ − 1` (`expm1f`).
    Expm1 = Unary::named("Expm1") => libm::expm1f,
    /// `eˣ − 1` below 0, else `x` (TF's formula, not `expm1`).
    Elu = Unary::named("Elu") => |x: f32| if x < 0.0 { libm::expf(x) - 1.0 } else { x },
    /// TF's `selu`: `1.7580993·(eˣ − 1)` below 0, else `1.0507009·x`.
    Selu = Unary::named("Selu") => selu,
    /// `±1`, `0` for `±0`, NaN for NaN.
    Sign = Unary::named("Sign") => sign,
    /// `⌊x⌋`.
    Floor = Unary::named("Floor") => libm::floorf,
    /// `⌈x⌉`.
    Ceil = Unary::named("Ceil") => libm::ceilf,
    /// `x` rounded half to even (`Round`, `Rint`).
    Round = Unary::named("Round") => libm::rintf,
    /// `x / (1 + |x|)`.
    Softsign = Unary::named("Softsign") => |x: f32| x / (1.0 + x.abs()),
    /// 1.0 where `x` is finite, else 0.0 (a mask).
    IsFinite = Unary::named("IsFinite") => |x: f32| if x.is_finite() { 1.0 } else { 0.0 },
    ;
    /// `x` above 0, else `alpha·x`.
    LeakyRelu = Unary::named("LeakyRelu") => |x: f32, alpha: f32| if x > 0.0 { x } else { x * alpha },
}

fn selu(x: f32) -> f32 {
    if x < 0.0 {
        1.758_099_3 * (libm::expf(x) - 1.0)
    } else {
        1.050_701 * x
    }
}

fn sign(x: f32) -> f32 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else if x.is_nan() {
        x
    } else {
        0.0
    }
}

/// TF's softplus: `−(ln ε + 2)` = 13.94 bounds where `log1p(eˣ)` is exact
/// enough to skip.
fn softplus(x: f32) -> f32 {
    const THRESHOLD: f32 = -13.942_385;
    if x > -THRESHOLD {
        x
    } else if x < THRESHOLD {
        libm::expf(x)
    } else {
        libm::log1pf(libm::expf(x))
    }
}

impl UnaryOp {
    /// The op of catalogue code `code`, if the model runs it.
    pub fn from_code(code: u16) -> Option<Self> {
        Self::ALL.into_iter().find(|op| *op as u16 == code)
    }
}

/// `out[i] = op(x[i])`, `p` the op's parameter ([`UnaryOp::takes_param`]).
pub fn unary(op: UnaryOp, p: f32, x: &[f32], out: &mut [f32]) -> Result<(), KernelError> {
    expect_len(Operand::Output, x.len(), out.len())?;
    op.map(p, x, out);
    Ok(())
}

/// `x[i] = op(x[i])` in place.
pub fn unary_in_place(op: UnaryOp, p: f32, x: &mut [f32]) {
    op.map_in_place(p, x);
}

/// `out = x + bias` along the last axis: `x` is `[.., c]` with
/// `c = bias.len()`, so `x.len()` must be a multiple of `c` (0 if `c` is 0).
pub fn bias_add(x: &[f32], bias: &[f32], out: &mut [f32]) -> Result<(), KernelError> {
    expect_whole_rows(Operand::Input, x.len(), bias.len())?;
    expect_len(Operand::Output, x.len(), out.len())?;
    if bias.is_empty() {
        return Ok(());
    }
    for (out_row, x_row) in out
        .chunks_exact_mut(bias.len())
        .zip(x.chunks_exact(bias.len()))
    {
        for ((o, &v), &b) in out_row.iter_mut().zip(x_row).zip(bias) {
            *o = v + b;
        }
    }
    Ok(())
}

/// [`bias_add`] in place.
pub fn bias_add_in_place(x: &mut [f32], bias: &[f32]) -> Result<(), KernelError> {
    expect_whole_rows(Operand::Input, x.len(), bias.len())?;
    if bias.is_empty() {
        return Ok(());
    }
    for row in x.chunks_exact_mut(bias.len()) {
        for (v, &b) in row.iter_mut().zip(bias) {
            *v += b;
        }
    }
    Ok(())
}

/// `out[i] = value`.
pub fn fill(out: &mut [f32], value: f32) {
    out.fill(value);
}
