//! An `Einsum` as a device program's commands (`kernels/program/batched.rs`
//! writes them): each operand moved into its product order, one product,
//! the result moved into the output.

use super::super::kernel::flat;
use super::{Equation, repeated};
use crate::kernels::failure::KernelResult;
use tensorplug_core::accelerator::{MAX_RANK, OpKind, Shape};

/// One operand of an `Einsum` in a device program: its input, the
/// transpose into its product order (and the shape that makes), and the
/// shape the product reads it in (a copy when that merges axes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramOperand {
    /// The node's input.
    pub input: usize,
    /// The transpose and its result's shape, if it needs one.
    pub transpose: Option<([u8; MAX_RANK], Shape)>,
    /// The shape the product reads.
    pub read_as: Shape,
}

/// An `Einsum` as a program's commands: each operand moved into place,
/// one product, then the result moved into the output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramEinsum {
    /// The product's left and right operands.
    pub operands: [ProgramOperand; 2],
    /// The product: a `MatMul`, or the `BatchMatMul` record.
    pub kind: OpKind,
    /// Its result's shape.
    pub result: Shape,
    /// The transpose of the result into the output, if it needs one, and
    /// the result's shape label by label, which it permutes.
    pub out_perm: Option<([u8; MAX_RANK], Shape)>,
    /// The output's shape.
    pub out: Shape,
}

impl Equation {
    /// Whether a program can hold this equation, whatever the shapes: two
    /// operands, no `...`, and every label kept or contracted (none
    /// repeated or summed within one operand).
    pub fn in_program(&self) -> bool {
        let [a, b] = self.inputs.as_slice() else {
            return false;
        };
        let Some(out) = &self.output else {
            return false;
        };
        let all = || a.iter().chain(b).chain(out);
        !all().any(|&c| c == b'.')
            && !repeated(a)
            && !repeated(b)
            && !repeated(out)
            && a.iter()
                .chain(b)
                .all(|l| out.contains(l) || (a.contains(l) && b.contains(l)))
    }

    /// The program's commands for operands of `shapes`.
    ///
    /// # Errors
    /// Shapes TF refuses, or a product that is not one command (a
    /// broadcast left operand).
    pub fn program(&self, shapes: &[Shape]) -> KernelResult<ProgramEinsum> {
        if !self.in_program() {
            return Err(self.unsupported("not in a program"));
        }
        let plan = self.plan(shapes)?;
        let mm = plan
            .matmul
            .as_ref()
            .ok_or_else(|| self.unsupported("no product"))?;
        let (kind, a, b) = mm
            .as_one_command()
            .ok_or_else(|| self.unsupported("a broadcast left operand"))?;
        let (li, ri) = if plan.swap { (1, 0) } else { (0, 1) };
        let operand = |i: usize, read: &[u64]| -> KernelResult<ProgramOperand> {
            let dims = shapes[i].dims();
            let transpose = match plan.transposes[i] {
                Some(perm) => {
                    let moved: Vec<u64> = (0..dims.len())
                        .map(|j| dims[usize::from(perm[j])])
                        .collect();
                    Some((perm, flat(&moved)?))
                }
                None => None,
            };
            Ok(ProgramOperand {
                input: i,
                transpose,
                read_as: flat(read)?,
            })
        };
        Ok(ProgramEinsum {
            operands: [operand(li, &a)?, operand(ri, &b)?],
            kind,
            result: mm.out_shape()?,
            out_perm: match plan.out_perm {
                Some(perm) => Some((perm, flat(&plan.result_dims)?)),
                None => None,
            },
            out: flat(&plan.out_dims)?,
        })
    }
}
