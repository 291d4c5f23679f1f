//! Element-wise binary ops with NumPy broadcasting.

use tensorplug_core::accelerator::Binary;

use super::error::{KernelError, Operand, expect_len, mul};
use tensorplug_core::accelerator::MAX_RANK;

/// Declares [`BinaryOp`]: one line per op, its catalogue op and its f32
/// function, which `apply` and [`binary`] (one loop per op) both use; after
/// the `;`, the ops with a parameter, whose function takes it third.
macro_rules! binary_ops {
    (
        $($(#[$doc:meta])* $name:ident = $op:expr => $f:expr,)*
        ;
        $($(#[$pdoc:meta])* $pname:ident = $pop:expr => $pf:expr,)*
    ) => {
        /// The element-wise binary ops the model runs: each discriminant is
        /// the op's catalogue code (`BINARY`'s `imm`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[cfg_attr(feature = "defmt", derive(defmt::Format))]
        #[non_exhaustive]
        #[repr(u16)]
        pub enum BinaryOp {
            $($(#[$doc])* $name = $op.code(),)*
            $($(#[$pdoc])* $pname = $pop.code(),)*
        }

        impl BinaryOp {
            /// Every op, the `OPS` registers' binary bits.
            pub const ALL: [Self; [$(stringify!($name),)* $(stringify!($pname)),*].len()] =
                [$(Self::$name,)* $(Self::$pname),*];

            /// True for an op with a parameter (`BINARY`'s `src2`).
            pub const fn takes_param(self) -> bool {
                match self {
                    $(Self::$pname => true,)*
                    _ => false,
                }
            }

            /// The op on one pair of elements (an op with a parameter: 0.0).
            #[inline(always)]
            pub fn apply(self, a: f32, b: f32) -> f32 {
                self.apply_with(a, b, 0.0)
            }

            /// The op on one pair of elements with parameter `p` (unused by most).
            #[inline(always)]
            pub fn apply_with(self, a: f32, b: f32, p: f32) -> f32 {
                let _ = p;
                match self {
                    $(Self::$name => ($f)(a, b),)*
                    $(Self::$pname => ($pf)(a, b, p),)*
                }
            }

            /// `plan` over `a`, `b` into `out`, the op's function inlined.
            fn run(self, p: f32, plan: &Plan, a: &[f32], b: &[f32], out: &mut [f32]) {
                let _ = p;
                match self {
                    $(Self::$name => plan.run(a, b, out, $f),)*
                    $(Self::$pname => plan.run(a, b, out, |x, y| ($pf)(x, y, p)),)*
                }
            }
        }
    };
}

binary_ops! {
    /// `a + b`.
    Add = Binary::ADD => |a, b| a + b,
    /// `a - b`.
    Sub = Binary::SUB => |a, b| a - b,
    /// `a * b`.
    Mul = Binary::MUL => |a, b| a * b,
    /// `max(a, b)`; NaN if either is NaN (as `tf.maximum`).
    Maximum = Binary::MAXIMUM => maximum,
    /// `a / b`.
    Div = Binary::DIV => |a, b| a / b,
    /// `a / b`, `0` where `b == 0` (as `tf.math.divide_no_nan`).
    DivNoNan = Binary::DIV_NO_NAN => div_no_nan,
    /// `powf(a, b)`.
    Pow = Binary::POW => libm::powf,
    /// `a · (b > 0 ? 1 : 0)`: ReLU's gradient `a` at input `b` (as TF's `ReluGrad`).
    ReluGrad = Binary::RELU_GRAD => relu_grad,
    /// `(a − b)²`, as `(a − b) · (a − b)` in f32 (as TF's CPU kernel).
    SquaredDifference = Binary::named("SquaredDifference") => |a, b| (a - b) * (a - b),
    /// `min(a, b)`; NaN if either is.
    Minimum = Binary::named("Minimum") => minimum,
    /// `dy · y · (1 − y)` for `(y, dy)`.
    SigmoidGrad = Binary::named("SigmoidGrad") => |y: f32, dy: f32| dy * y * (1.0 - y),
    /// `dy · (1 − y²)` for `(y, dy)`.
    TanhGrad = Binary::named("TanhGrad") => |y: f32, dy: f32| dy * (1.0 - y * y),
    /// `−½ · dy · y³` for `(y, dy)`, `0` where `dy` is.
    RsqrtGrad = Binary::named("RsqrtGrad") => |y: f32, dy: f32| if dy == 0.0 { 0.0 } else { -0.5 * (dy * y) * (y * y) },
    /// `g · (y + 1)` where `y < 0`, else `g`, for `(g, y)`.
    EluGrad = Binary::named("EluGrad") => |g: f32, y: f32| if y < 0.0 { g * (y + 1.0) } else { g },
    /// `g · (y + 1.7580993)` where `y < 0`, else `g · 1.0507009`.
    SeluGrad = Binary::named("SeluGrad") => |g: f32, y: f32| if y < 0.0 { g * (y + 1.758_099_3) } else { g * 1.050_701 },
    /// `g / (e^−x + 1)` for `(g, x)`.
    SoftplusGrad = Binary::named("SoftplusGrad") => |g: f32, x: f32| g / (libm::expf(-x) + 1.0),
    /// `g / (1 + |x|)²`.
    SoftsignGrad = Binary::named("SoftsignGrad") => |g: f32, x: f32| g / ((1.0 + x.abs()) * (1.0 + x.abs())),
    /// `−y² · dy` for `(y, dy)`, `0` where `dy` is.
    ReciprocalGrad = Binary::named("ReciprocalGrad") => |y: f32, dy: f32| if dy == 0.0 { 0.0 } else { -y * y * dy },
    /// `½ · dy / y`, `0` where `dy` is.
    SqrtGrad = Binary::named("SqrtGrad") => |y: f32, dy: f32| if dy == 0.0 { 0.0 } else { 0.5 * dy / y },
    /// `a · b`, `0` where `b` is.
    MulNoNan = Binary::named("MulNoNan") => |a: f32, b: f32| if b == 0.0 { 0.0 } else { a * b },
    /// `a / b`, `0` where `a` is.
    Xdivy = Binary::named("Xdivy") => |a: f32, b: f32| if a == 0.0 { 0.0 } else { a / b },
    /// `a · ln b`, `0` where `a` is.
    Xlogy = Binary::named("Xlogy") => |a: f32, b: f32| if a == 0.0 { 0.0 } else { a * libm::logf(b) },
    /// `⌊a / b⌋`.
    FloorDiv = Binary::named("FloorDiv") => |a: f32, b: f32| libm::floorf(a / b),
    /// `fmod(a, b)` moved into `b`'s sign.
    FloorMod = Binary::named("FloorMod") => floor_mod,
    /// `a = b` as 1.0 or 0.0 (the comparisons: masks, `Cast` makes bools).
    Equal = Binary::named("Equal") => |a: f32, b: f32| mask(a == b),
    /// `a ≠ b` (true for NaN).
    NotEqual = Binary::named("NotEqual") => |a: f32, b: f32| mask(a != b),
    /// `a < b`.
    Less = Binary::named("Less") => |a: f32, b: f32| mask(a < b),
    /// `a ≤ b`.
    LessEqual = Binary::named("LessEqual") => |a: f32, b: f32| mask(a <= b),
    /// `a > b`.
    Greater = Binary::named("Greater") => |a: f32, b: f32| mask(a > b),
    /// `a ≥ b`.
    GreaterEqual = Binary::named("GreaterEqual") => |a: f32, b: f32| mask(a >= b),
    ;
    /// The gradient `g` where the feature `x` is above 0, else `alpha·g`.
    LeakyReluGrad = Binary::named("LeakyReluGrad") => |g: f32, x: f32, alpha: f32| if x > 0.0 { g } else { g * alpha },
}

#[inline(always)]
fn mask(on: bool) -> f32 {
    if on { 1.0 } else { 0.0 }
}

fn floor_mod(a: f32, b: f32) -> f32 {
    let m = libm::fmodf(a, b);
    if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
        m + b
    } else {
        m
    }
}

impl BinaryOp {
    /// The op of catalogue code `code`, if the model runs it.
    pub fn from_code(code: u16) -> Option<Self> {
        Self::ALL.into_iter().find(|op| *op as u16 == code)
    }
}

#[inline(always)]
fn div_no_nan(a: f32, b: f32) -> f32 {
    if b == 0.0 { 0.0 } else { a / b }
}

/// A multiply by the 0/1 mask, as TF: a NaN or infinite gradient stays NaN.
#[inline(always)]
fn relu_grad(gradient: f32, input: f32) -> f32 {
    gradient * if input > 0.0 { 1.0 } else { 0.0 }
}

/// `max(a, b)` propagating NaN; `a` wins ties (so `max(-0.0, 0.0)` is `-0.0`).
#[inline(always)]
fn maximum(a: f32, b: f32) -> f32 {
    if a < b || b.is_nan() { b } else { a }
}

/// `min(a, b)`, NaN from either side (as [`maximum`]).
fn minimum(a: f32, b: f32) -> f32 {
    if b < a || b.is_nan() { b } else { a }
}

/// `out = a <op> b`, broadcasting `a_shape` against `b_shape` NumPy-style
/// (shapes aligned at their last axis; a size-1 axis stretches). `out` must
/// hold the broadcast shape's element count. Ranks up to [`MAX_RANK`].
pub fn binary(
    op: BinaryOp,
    a: &[f32],
    a_shape: &[usize],
    b: &[f32],
    b_shape: &[usize],
    out: &mut [f32],
) -> Result<(), KernelError> {
    binary_with(op, 0.0, a, a_shape, b, b_shape, out)
}

/// [`binary`] with the op's parameter `p` ([`BinaryOp::takes_param`]).
pub fn binary_with(
    op: BinaryOp,
    p: f32,
    a: &[f32],
    a_shape: &[usize],
    b: &[f32],
    b_shape: &[usize],
    out: &mut [f32],
) -> Result<(), KernelError> {
    let plan = Plan::new(a_shape, b_shape)?;
    expect_len(Operand::Lhs, elements(a_shape)?, a.len())?;
    expect_len(Operand::Rhs, elements(b_shape)?, b.len())?;
    expect_len(Operand::Output, plan.out_len()?, out.len())?;
    if out.is_empty() {
        return Ok(());
    }
    op.run(p, &plan, a, b, out);
    Ok(())
}

fn elements(shape: &[usize]) -> Result<usize, KernelError> {
    shape.iter().try_fold(1usize, |acc, &d| mul(acc, d))
}

/// The broadcast iteration space with size-1 axes dropped and contiguous
/// axes merged. Strides are in elements; 0 means "broadcast along this axis".
struct Plan {
    rank: usize,
    dims: [usize; MAX_RANK],
    stride_a: [usize; MAX_RANK],
    stride_b: [usize; MAX_RANK],
}

/// Size of `shape`'s axis aligned with output axis `axis` of `rank` (1 if absent).
fn aligned_dim(shape: &[usize], rank: usize, axis: usize) -> usize {
    let pad = rank - shape.len();
    if axis < pad { 1 } else { shape[axis - pad] }
}

impl Plan {
    fn new(a_shape: &[usize], b_shape: &[usize]) -> Result<Self, KernelError> {
        for (operand, shape) in [(Operand::Lhs, a_shape), (Operand::Rhs, b_shape)] {
            if shape.len() > MAX_RANK {
                return Err(KernelError::Rank {
                    operand,
                    got: shape.len(),
                });
            }
        }
        let rank = a_shape.len().max(b_shape.len());
        // Full-rank dims and strides, innermost first.
        let mut full = [(0usize, 0usize, 0usize); MAX_RANK];
        let (mut next_a, mut next_b) = (1usize, 1usize);
        for axis in (0..rank).rev() {
            let (da, db) = (
                aligned_dim(a_shape, rank, axis),
                aligned_dim(b_shape, rank, axis),
            );
            let d = match (da, db) {
                _ if da == db => da,
                (1, _) => db,
                (_, 1) => da,
                _ => {
                    return Err(KernelError::Broadcast {
                        axis: axis as u8,
                        lhs: da,
                        rhs: db,
                    });
                }
            };
            let sa = if da == 1 { 0 } else { next_a };
            let sb = if db == 1 { 0 } else { next_b };
            next_a = mul(next_a, da)?;
            next_b = mul(next_b, db)?;
            full[axis] = (d, sa, sb);
        }
        let mut plan = Self {
            rank: 0,
            dims: [0; MAX_RANK],
            stride_a: [0; MAX_RANK],
            stride_b: [0; MAX_RANK],
        };
        for &(d, sa, sb) in full[..rank].iter().filter(|(d, ..)| *d != 1) {
            plan.push(d, sa, sb)?;
        }
        Ok(plan)
    }

    /// Appends an inner axis, merging it into the previous one when both
    /// operands step through the two axes as one contiguous run.
    fn push(&mut self, d: usize, sa: usize, sb: usize) -> Result<(), KernelError> {
        if let Some(last) = self.rank.checked_sub(1) {
            let (pd, psa, psb) = (self.dims[last], self.stride_a[last], self.stride_b[last]);
            if psa == sa.saturating_mul(d) && psb == sb.saturating_mul(d) {
                self.dims[last] = mul(pd, d)?;
                self.stride_a[last] = sa;
                self.stride_b[last] = sb;
                return Ok(());
            }
        }
        self.dims[self.rank] = d;
        self.stride_a[self.rank] = sa;
        self.stride_b[self.rank] = sb;
        self.rank += 1;
        Ok(())
    }

    fn out_len(&self) -> Result<usize, KernelError> {
        elements(&self.dims[..self.rank])
    }

    /// Runs `f` over the plan. Lengths are validated and `out` is non-empty.
    /// The innermost axis has stride 0 or 1 in each operand, so it runs as one
    /// of four tight loops.
    fn run(&self, a: &[f32], b: &[f32], out: &mut [f32], f: impl Fn(f32, f32) -> f32 + Copy) {
        let (inner, sa, sb, outer_rank) = match self.rank.checked_sub(1) {
            Some(last) => (
                self.dims[last],
                self.stride_a[last],
                self.stride_b[last],
                last,
            ),
            None => (1, 0, 0, 0),
        };
        let mut index = [0usize; MAX_RANK];
        let (mut off_a, mut off_b) = (0usize, 0usize);
        for out_row in out.chunks_exact_mut(inner) {
            match (sa, sb) {
                (0, 0) => out_row.fill(f(a[off_a], b[off_b])),
                (0, _) => {
                    let x = a[off_a];
                    for (o, &y) in out_row.iter_mut().zip(&b[off_b..off_b + inner]) {
                        *o = f(x, y);
                    }
                }
                (_, 0) => {
                    let y = b[off_b];
                    for (o, &x) in out_row.iter_mut().zip(&a[off_a..off_a + inner]) {
                        *o = f(x, y);
                    }
                }
                _ => {
                    let rows = a[off_a..off_a + inner].iter().zip(&b[off_b..off_b + inner]);
                    for (o, (&x, &y)) in out_row.iter_mut().zip(rows) {
                        *o = f(x, y);
                    }
                }
            }
            // Odometer over the outer axes.
            for axis in (0..outer_rank).rev() {
                index[axis] += 1;
                off_a += self.stride_a[axis];
                off_b += self.stride_b[axis];
                if index[axis] < self.dims[axis] {
                    break;
                }
                index[axis] = 0;
                off_a -= self.stride_a[axis] * self.dims[axis];
                off_b -= self.stride_b[axis] * self.dims[axis];
            }
        }
    }
}
