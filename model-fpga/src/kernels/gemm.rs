//! `out[m,n] = op(a) · op(b)`, optionally `+ bias[n]`, optionally ReLU.

use super::elementwise::{bias_add_in_place, relu_in_place};
use super::error::{KernelError, Operand, expect_len, mul};

#[cfg(feature = "std")]
pub(crate) mod host;
mod portable;

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
    fn validate(
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

/// Which inner GEMM kernel runs.
#[derive(Clone, Copy)]
enum Path {
    #[cfg(feature = "std")]
    Host,
    Portable,
}

/// GEMM with the best kernel of this build: `matrixmultiply` with feature
/// `std`, otherwise the portable blocked kernel. `out` is overwritten (its
/// previous contents, even NaN, do not matter).
pub fn gemm(
    spec: &GemmSpec,
    a: &[f32],
    b: &[f32],
    bias: Option<&[f32]>,
    out: &mut [f32],
) -> Result<(), KernelError> {
    #[cfg(feature = "std")]
    let path = Path::Host;
    #[cfg(not(feature = "std"))]
    let path = Path::Portable;
    run(path, spec, a, b, bias, out)
}

/// GEMM with the portable, allocation-free blocked kernel, whatever the build.
pub fn gemm_portable(
    spec: &GemmSpec,
    a: &[f32],
    b: &[f32],
    bias: Option<&[f32]>,
    out: &mut [f32],
) -> Result<(), KernelError> {
    run(Path::Portable, spec, a, b, bias, out)
}

fn run(
    path: Path,
    spec: &GemmSpec,
    a: &[f32],
    b: &[f32],
    bias: Option<&[f32]>,
    out: &mut [f32],
) -> Result<(), KernelError> {
    spec.validate(a, b, bias, out)?;
    if out.is_empty() {
        return Ok(());
    }
    if spec.k == 0 {
        out.fill(0.0);
    } else {
        match path {
            #[cfg(feature = "std")]
            Path::Host => host::gemm(spec, a, b, out)?,
            Path::Portable => portable::gemm(spec, a, b, out),
        }
    }
    // Bias after the full sum, as TF's fused kernel does.
    if let Some(bias) = bias {
        bias_add_in_place(out, bias)?;
    }
    if spec.relu {
        relu_in_place(out);
    }
    Ok(())
}
