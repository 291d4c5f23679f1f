//! [`GemmSpec`]: one GEMM's dimensions and flags. A leaf the kernels import.

use crate::kernels::error::{KernelError, Operand, expect_len, mul};

/// Dimensions and flags of one GEMM. Matrices are dense and row-major.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct GemmSpec {
    /// Rows of the output.
    pub m: usize,
    /// Columns of the output.
    pub n: usize,
    /// The contracted dimension.
    pub k: usize,
    /// `a` is stored `[k, m]` and used transposed; otherwise `[m, k]`.
    pub transpose_a: bool,
    /// `b` is stored `[n, k]` and used transposed; otherwise `[k, n]`.
    pub transpose_b: bool,
    /// Apply `max(x, 0)` after the bias.
    pub relu: bool,
}

/// Element strides of `op(a)` (`m × k`) and `op(b)` (`k × n`) in their slices.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Strides {
    pub(crate) row_a: usize,
    pub(crate) col_a: usize,
    pub(crate) row_b: usize,
    pub(crate) col_b: usize,
}

impl GemmSpec {
    /// Plain `[m, k] · [k, n]` with no transposes, bias or ReLU.
    pub const fn new(m: usize, n: usize, k: usize) -> Self {
        Self {
            m,
            n,
            k,
            transpose_a: false,
            transpose_b: false,
            relu: false,
        }
    }

    pub(crate) const fn strides(&self) -> Strides {
        let (row_a, col_a) = if self.transpose_a {
            (1, self.m)
        } else {
            (self.k, 1)
        };
        let (row_b, col_b) = if self.transpose_b {
            (1, self.k)
        } else {
            (self.n, 1)
        };
        Strides {
            row_a,
            col_a,
            row_b,
            col_b,
        }
    }

    /// Checks every slice length against the dims.
    pub(super) fn validate(
        &self,
        a: &[f32],
        b: &[f32],
        bias: Option<&[f32]>,
        out: &[f32],
    ) -> Result<(), KernelError> {
        expect_len(Operand::Lhs, mul(self.m, self.k)?, a.len())?;
        expect_len(Operand::Rhs, mul(self.k, self.n)?, b.len())?;
        expect_len(Operand::Output, mul(self.m, self.n)?, out.len())?;
        if let Some(bias) = bias {
            expect_len(Operand::Bias, self.n, bias.len())?;
        }
        Ok(())
    }
}
