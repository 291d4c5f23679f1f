//! Shape rules of the kernels, as TF states them, before anything is
//! allocated: pure functions, unit-tested without TF.

use super::failure::{Failure, KernelResult};
use tensorplug_core::accelerator::{MAX_RANK, Shape, ShapeError, broadcast_shapes, matmul_shape};

/// Which axes of `x` a reduction over `axes` (negative from the end)
/// reduces, checked as TF does.
pub fn reduced_axes(x: &Shape, axes: &[i64]) -> KernelResult<[bool; MAX_RANK]> {
    let rank = x.dims().len();
    let mut reduced = [false; MAX_RANK];
    for &axis in axes {
        let normal = if axis < 0 { axis + rank as i64 } else { axis };
        match usize::try_from(normal) {
            Ok(i) if i < rank => reduced[i] = true,
            _ => {
                return Err(Failure::invalid(format!(
                    "Invalid reduction dimension ({axis} for input with {rank} dimension(s))"
                )));
            }
        }
    }
    Ok(reduced)
}

/// `[2, 3]` for messages.
pub fn show(shape: &Shape) -> String {
    format!("{:?}", shape.dims())
}

fn shape(dims: &[u64]) -> KernelResult<Shape> {
    Shape::new(dims)
        .ok_or_else(|| Failure::unimplemented(format!("rank {} (at most {MAX_RANK})", dims.len())))
}

/// NumPy broadcasting of `a` and `b` (core's rule, TF's message).
pub fn broadcast(a: &Shape, b: &Shape) -> KernelResult<Shape> {
    broadcast_shapes(a, b)
        .map_err(|_| Failure::invalid(format!("Incompatible shapes: {} vs. {}", show(a), show(b))))
}

/// `[m, n]` of `op(a) · op(b)` (core's rule, TF's messages).
pub fn matmul(a: &Shape, b: &Shape, transpose_a: bool, transpose_b: bool) -> KernelResult<Shape> {
    matmul_shape(a, b, transpose_a, transpose_b).map_err(|error| {
        Failure::invalid(match error {
            ShapeError::Rank { .. } => format!(
                "In[0] and In[1] must be matrices: In[0]: {}, In[1]: {}",
                show(a),
                show(b)
            ),
            _ => format!(
                "Matrix size-incompatible: In[0]: {}, In[1]: {} (transpose_a={transpose_a}, \
                 transpose_b={transpose_b})",
                show(a),
                show(b)
            ),
        })
    })
}

/// Checks `bias` against `x` for `BiasAdd` (channels last) and the bias of
/// a fused MatMul.
pub fn bias(x: &Shape, bias: &Shape) -> KernelResult<()> {
    if x.dims().len() < 2 {
        return Err(Failure::invalid(format!(
            "Input tensor must be at least 2D: {}",
            show(x)
        )));
    }
    if bias.dims() != [x.last()] {
        return Err(Failure::invalid(format!(
            "Must provide as many biases as the last dimension of the input tensor: {} vs. {}",
            show(bias),
            show(x)
        )));
    }
    Ok(())
}

/// How a `Sum` runs on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SumPlan {
    /// The output is empty: no device command.
    Nothing,
    /// A reduced axis is empty: the output is zeros (one fill).
    Zeros,
    /// No axis of size > 1 is reduced: the output is a copy of the input.
    Copy,
    /// The reduced axes are the trailing ones: `REDUCE_SUM` of `[rows, len]`.
    Trailing {
        /// Rows (product of the kept axes).
        rows: u64,
        /// Elements summed per row.
        len: u64,
    },
    /// The reduced axes are the leading ones: `ones[1, len] · x[len, cols]`.
    Leading {
        /// Elements summed per column.
        len: u64,
        /// Columns (product of the kept axes).
        cols: u64,
    },
    /// A block of axes in the middle (`[outer, len, inner]`, e.g. `H, W` of
    /// NHWC): one `ones[1, len] · x[b][len, inner]` per outer index `b`.
    Middle {
        /// Product of the kept axes before the block.
        outer: u64,
        /// Elements summed per output.
        len: u64,
        /// Product of the kept axes after the block.
        inner: u64,
    },
}

/// The most launches a [`SumPlan::Middle`] may take.
pub const MAX_MIDDLE_LAUNCHES: u64 = 4096;

/// The output shape of `Sum(x, axes, keep_dims)` and how to compute it.
/// Axes of size 1 do not matter; the others must be one contiguous block
/// (anything else is [`Failure::unimplemented`]), with at most
/// [`MAX_MIDDLE_LAUNCHES`] outer indexes before a block in the middle.
pub fn sum(x: &Shape, axes: &[i64], keep_dims: bool) -> KernelResult<(Shape, SumPlan)> {
    let reduced = reduced_axes(x, axes)?;
    let mut out = [0u64; MAX_RANK];
    let mut out_rank = 0;
    for (i, &dim) in x.dims().iter().enumerate() {
        if !reduced[i] || keep_dims {
            out[out_rank] = if reduced[i] { 1 } else { dim };
            out_rank += 1;
        }
    }
    let out = shape(&out[..out_rank])?;
    let elements = |s: &Shape| s.elements().unwrap_or(0);
    if elements(&out) == 0 {
        return Ok((out, SumPlan::Nothing));
    }
    if elements(x) == 0 {
        return Ok((out, SumPlan::Zeros));
    }
    // Only axes of size > 1 shape the plan.
    let big: Vec<(u64, bool)> = x
        .dims()
        .iter()
        .zip(reduced)
        .filter(|(dim, _)| **dim > 1)
        .map(|(&dim, r)| (dim, r))
        .collect();
    let len: u64 = big.iter().filter(|(_, r)| *r).map(|(d, _)| d).product();
    let kept: u64 = big.iter().filter(|(_, r)| !*r).map(|(d, _)| d).product();
    let first = big.iter().position(|(_, r)| *r);
    let last = big.iter().rposition(|(_, r)| *r);
    let plan = match (first, last) {
        (None, _) | (_, None) => SumPlan::Copy,
        (Some(first), Some(last)) if big[first..=last].iter().any(|(_, r)| !*r) => {
            return Err(not_contiguous(x, axes));
        }
        (Some(_), Some(last)) if last + 1 == big.len() => SumPlan::Trailing { rows: kept, len },
        (Some(0), Some(_)) => SumPlan::Leading { len, cols: kept },
        (Some(first), Some(last)) => {
            let outer: u64 = big[..first].iter().map(|(d, _)| d).product();
            let inner: u64 = big[last + 1..].iter().map(|(d, _)| d).product();
            if outer > MAX_MIDDLE_LAUNCHES {
                return Err(Failure::unimplemented(format!(
                    "reducing axes {axes:?} of a {} tensor takes {outer} device launches, \
                     more than {MAX_MIDDLE_LAUNCHES}",
                    show(x)
                )));
            }
            SumPlan::Middle { outer, len, inner }
        }
    };
    Ok((out, plan))
}

fn not_contiguous(x: &Shape, axes: &[i64]) -> Failure {
    Failure::unimplemented(format!(
        "reducing axes {axes:?} of a {} tensor: the device sums one contiguous block of \
         axes only",
        show(x)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(dims: &[u64]) -> Shape {
        Shape::new(dims).unwrap()
    }

    #[test]
    fn broadcasting_follows_numpy() {
        assert_eq!(
            broadcast(&s(&[4, 1, 3]), &s(&[5, 1])).unwrap(),
            s(&[4, 5, 3])
        );
        assert_eq!(broadcast(&s(&[]), &s(&[2, 3])).unwrap(), s(&[2, 3]));
        assert_eq!(broadcast(&s(&[0, 3]), &s(&[1, 3])).unwrap(), s(&[0, 3]));
        let error = broadcast(&s(&[2, 3]), &s(&[4])).unwrap_err();
        assert_eq!(error.cause, "Incompatible shapes: [2, 3] vs. [4]");
    }

    #[test]
    fn matmul_shapes_and_transposes() {
        assert_eq!(
            matmul(&s(&[2, 3]), &s(&[3, 5]), false, false).unwrap(),
            s(&[2, 5])
        );
        assert_eq!(
            matmul(&s(&[3, 2]), &s(&[5, 3]), true, true).unwrap(),
            s(&[2, 5])
        );
        assert_eq!(
            matmul(&s(&[2, 0]), &s(&[0, 4]), false, false).unwrap(),
            s(&[2, 4])
        );
        assert!(
            matmul(&s(&[2, 3]), &s(&[2, 3]), false, false)
                .unwrap_err()
                .cause
                .contains("size-incompatible")
        );
        assert!(
            matmul(&s(&[2]), &s(&[2, 3]), false, false)
                .unwrap_err()
                .cause
                .contains("matrices")
        );
    }

    #[test]
    fn bias_needs_rank_two_and_one_bias_per_channel() {
        assert!(bias(&s(&[2, 3]), &s(&[3])).is_ok());
        assert!(bias(&s(&[3]), &s(&[3])).is_err());
        assert!(bias(&s(&[2, 3]), &s(&[2])).is_err());
    }

    #[test]
    fn sum_plans() {
        let x = s(&[2, 3, 4]);
        assert_eq!(
            sum(&x, &[-1], false).unwrap(),
            (s(&[2, 3]), SumPlan::Trailing { rows: 6, len: 4 })
        );
        assert_eq!(
            sum(&x, &[2], true).unwrap(),
            (s(&[2, 3, 1]), SumPlan::Trailing { rows: 6, len: 4 })
        );
        assert_eq!(
            sum(&x, &[1, 2], false).unwrap(),
            (s(&[2]), SumPlan::Trailing { rows: 2, len: 12 })
        );
        assert_eq!(
            sum(&x, &[0, 1, 2], false).unwrap(),
            (s(&[]), SumPlan::Trailing { rows: 1, len: 24 })
        );
        assert_eq!(
            sum(&x, &[0], false).unwrap(),
            (s(&[3, 4]), SumPlan::Leading { len: 2, cols: 12 })
        );
        assert_eq!(sum(&x, &[], false).unwrap(), (x, SumPlan::Copy));
        assert_eq!(
            sum(&s(&[2, 1, 4]), &[1], false).unwrap(),
            (s(&[2, 4]), SumPlan::Copy)
        );
        // A size-1 axis between reduced ones does not break the block.
        assert_eq!(
            sum(&s(&[2, 1, 4]), &[0, 2], false).unwrap().1,
            SumPlan::Trailing { rows: 1, len: 8 }
        );
        assert_eq!(
            sum(&s(&[3, 0]), &[1], false).unwrap(),
            (s(&[3]), SumPlan::Zeros)
        );
        assert_eq!(
            sum(&s(&[0, 3]), &[1], false).unwrap(),
            (s(&[0]), SumPlan::Nothing)
        );
        assert_eq!(
            sum(&x, &[1], false).unwrap(),
            (
                s(&[2, 4]),
                SumPlan::Middle {
                    outer: 2,
                    len: 3,
                    inner: 4
                }
            )
        );
        let split = sum(&x, &[0, 2], false).unwrap_err();
        assert_eq!(split.code, tensorplug_abi::tf::TF_UNIMPLEMENTED);
        assert!(
            split.cause.contains("[0, 2] of a [2, 3, 4] tensor"),
            "{}",
            split.cause
        );
        assert!(
            sum(&x, &[3], false)
                .unwrap_err()
                .cause
                .contains("Invalid reduction dimension")
        );
    }
}
