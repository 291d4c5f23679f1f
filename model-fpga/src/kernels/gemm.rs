//! `out[m,n] = op(a) · op(b)`, optionally `+ bias[n]`, optionally ReLU.

use super::elementwise::{bias_add_in_place, relu_in_place};
use super::error::KernelError;

#[cfg(feature = "std")]
pub(crate) mod host;
mod portable;
mod spec;

pub use spec::GemmSpec;

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
