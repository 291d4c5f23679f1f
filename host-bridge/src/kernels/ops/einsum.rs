//! `Einsum` of two operands, lowered to device `Transpose`s and the
//! batched `MatMul`s of `BatchMatMulV2`: each label is a batch axis (in
//! both operands and the output; size 1 broadcasts), a contracted one (in
//! both, not the output) or a free one of one operand. The equations
//! Keras' `EinsumDense` and `MultiHeadAttention` write, and their
//! gradients', are all of this form; so are `...` broadcasts (the only
//! axes that broadcast, as in TF). One operand:
//! a permutation of its axes. A label summed within one operand (in no
//! other operand, not in the output: `ij->i`) is summed first, by a device
//! `ReduceSum` over that operand's summed axes moved last. A label repeated
//! within an operand (`ii->i`) takes its diagonal first ([`diagonal`]).

use super::batch_matmul::{Batched, MATMUL};
use super::kernel::{Op, flat, is_empty};
use super::matmul::Transposes;
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::tf::{Construction, Context, Tensor};
use std::ffi::CStr;
use tensorplug_core::accelerator::{MAX_RANK, OpKind, Shape, TensorDesc};
use transposed::transposed;

/// The `Einsum` kernel.
pub struct Einsum;

/// The equation, split into its terms (`...` kept as `.`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Equation {
    text: String,
    inputs: Vec<Vec<u8>>,
    output: Option<Vec<u8>>,
}

const TRANSPOSE: OpKind = OpKind::Transpose([0; MAX_RANK]);

impl Op for Einsum {
    type Attrs = Equation;

    fn op(&self) -> &'static CStr {
        c"Einsum"
    }

    fn family(&self) -> Option<OpKind> {
        Some(MATMUL)
    }

    fn also_launches(&self) -> &'static [OpKind] {
        &[TRANSPOSE, OpKind::ReduceSum]
    }

    fn may_launch(&self) -> &'static [OpKind] {
        &[super::batch_matmul::BATCH_MATMUL]
    }

    fn construct(&self, ctx: &Construction) -> KernelResult<Equation> {
        Equation::parse(&ctx.string_attr(c"equation")?)
    }

    fn compute(&self, eq: &Equation, ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let tensors = (0..ctx.num_inputs())
            .map(|i| ctx.input(i, false))
            .collect::<KernelResult<Vec<_>>>()?;
        let shapes = tensors
            .iter()
            .map(Tensor::shape)
            .collect::<KernelResult<Vec<_>>>()?;
        let plan = eq.plan(&shapes)?;
        let out_shape = flat(&plan.out_dims)?;
        let out = ctx.output(&out_shape, &[])?;
        if is_empty(&out_shape) {
            return Ok(());
        }
        let out = run.desc(&out, out_shape)?;
        let mut held = Vec::new();
        // Each operand with the labels summed within it summed away.
        let mut operands = Vec::new();
        for (i, reduction) in plan.reductions.iter().enumerate() {
            let x = run.desc(&tensors[i], shapes[i])?;
            let x = match &plan.diagonals[i] {
                Some(d) => diagonal::take(ctx, run, x, d, &mut held)?,
                None => x,
            };
            operands.push(match reduction {
                Some(r) => summed(ctx, run, x, r, &mut held)?,
                None => x,
            });
        }
        let mut operand = |i: usize, run: &mut Launcher<'_>| -> KernelResult<TensorDesc> {
            let x = operands[i];
            let Some(perm) = plan.transposes[i] else {
                return Ok(x);
            };
            let (desc, tensor) = transposed(ctx, run, x, &perm)?;
            held.push(tensor);
            Ok(desc)
        };
        let Some(mm) = &plan.matmul else {
            let x = operands[0];
            return match plan.transposes[0] {
                Some(perm) => run.launch(OpKind::Transpose(perm), &[x], out),
                None => run.copy(out, x),
            };
        };
        let (a, b) = (operand(0, run)?, operand(1, run)?);
        let (a, b) = if plan.swap { (b, a) } else { (a, b) };
        let Some(perm) = plan.out_perm else {
            return mm.launch(run, a, b, out);
        };
        let result_shape = mm.out_shape()?;
        let result_tensor = ctx.temp(&result_shape)?;
        let result = run.desc(&result_tensor, result_shape)?;
        mm.launch(run, a, b, result)?;
        // The permutation is of the result's labels, not of its merged
        // groups (`ij,bjk->bik`: `[i, b·k]` seen as `[i, b, k]`).
        let labelled = TensorDesc::new(result.addr, result.dtype, flat(&plan.result_dims)?);
        run.launch(OpKind::Transpose(perm), &[labelled], out)
    }
}

/// `x` with the labels of `r` summed: transposed last, then one device
/// `ReduceSum` of `[rows, len]` rows into a temp of the kept dims.
fn summed(
    ctx: &Context,
    run: &mut Launcher<'_>,
    x: TensorDesc,
    r: &Reduction,
    held: &mut Vec<Tensor>,
) -> KernelResult<TensorDesc> {
    let x = match &r.perm {
        Some(perm) => {
            let (desc, tensor) = transposed(ctx, run, x, perm)?;
            held.push(tensor);
            desc
        }
        None => x,
    };
    let kept = flat(&r.kept)?;
    let tensor = ctx.temp(&kept)?;
    let out = run.desc(&tensor, kept)?;
    held.push(tensor);
    let rows = TensorDesc::new(out.addr, out.dtype, flat(&[r.rows])?);
    if r.rows == 0 {
        return Ok(out);
    }
    if r.len == 0 {
        run.fill(rows, 0)?; // a sum of nothing: 0.0
        return Ok(out);
    }
    let input = TensorDesc::new(x.addr, x.dtype, flat(&[r.rows, r.len])?);
    run.launch(OpKind::ReduceSum, &[input], rows)?;
    Ok(out)
}

/// The operands' labels, the output's, and each label's size (by byte).
type Labels = (Vec<Vec<u8>>, Vec<u8>, [u64; 128]);

/// The labels summed within one operand: moved last by `perm`, then the
/// operand, as `[rows, len]`, summed into `[rows]`: the `kept` dims.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Reduction {
    perm: Option<[u8; MAX_RANK]>,
    kept: Vec<u64>,
    rows: u64,
    len: u64,
}

/// What one compute call enqueues.
#[derive(Debug)]
pub(super) struct Plan {
    out_dims: Vec<u64>,
    /// Per operand, its diagonal first, if a label repeats in it.
    diagonals: Vec<Option<diagonal::Diagonal>>,
    /// Per operand, the sum of its own labels next, if it has any.
    reductions: Vec<Option<Reduction>>,
    /// Per operand, the transpose into its MatMul order, if it needs one.
    transposes: Vec<Option<[u8; MAX_RANK]>>,
    /// The MatMuls (`None`: one operand, a transpose or a copy).
    matmul: Option<Batched>,
    /// Operand 1 is the MatMul's left-hand side (the output is `[…, n, m]`).
    swap: bool,
    /// The transpose of the MatMul result into the output, if it needs one.
    out_perm: Option<[u8; MAX_RANK]>,
    /// The MatMul result's dims label by label (`[batch…, m…, n…]`), which
    /// `out_perm` permutes; the MatMul writes them with each group merged.
    result_dims: Vec<u64>,
}

impl Equation {
    /// Splits and checks `text` as far as it can without shapes.
    pub fn parse(text: &str) -> KernelResult<Self> {
        let bad = |why: &str| Failure::invalid(format!("Einsum equation '{text}': {why}"));
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let (lhs, output) = match compact.split_once("->") {
            Some((lhs, out)) => (lhs, Some(out)),
            None => (compact.as_str(), None),
        };
        let term = |t: &str| -> KernelResult<Vec<u8>> {
            let t = t.replace("...", ".");
            if t.bytes().filter(|&c| c == b'.').count() > 1
                || !t.bytes().all(|c| c == b'.' || c.is_ascii_alphabetic())
            {
                return Err(bad(
                    "a term has a character other than letters and one '...'",
                ));
            }
            Ok(t.into_bytes())
        };
        let inputs = lhs.split(',').map(term).collect::<KernelResult<Vec<_>>>()?;
        if !(1..=2).contains(&inputs.len()) {
            return Err(Failure::unimplemented(format!(
                "Einsum equation '{text}': {} operands (the FPGA takes one or two)",
                inputs.len()
            )));
        }
        Ok(Self {
            text: text.into(),
            inputs,
            output: output.map(term).transpose()?,
        })
    }

    /// Whether the device lowers this equation whatever the shapes (but an
    /// output of rank above 6): what the graph pass asks before it leaves
    /// an `Einsum` on the device, so the others run on the CPU.
    pub fn lowers(&self) -> bool {
        let letters = |t: &[u8]| -> Vec<u8> { t.iter().copied().filter(|&c| c != b'.').collect() };
        if self.inputs.iter().any(|t| repeated(&letters(t))) {
            return false;
        }
        let Some(out) = &self.output else {
            // Implicit: the ellipsis and every label seen once are kept.
            return true;
        };
        // Every other label is kept, contracted, or summed within its
        // operand; the axes of `...` only broadcast.
        let dots = self.inputs.iter().any(|t| t.contains(&b'.'));
        !repeated(out) && (!dots || out.contains(&b'.'))
    }

    fn unsupported(&self, why: &str) -> Failure {
        Failure::unimplemented(format!(
            "Einsum equation '{}' is not one the FPGA lowers: {why}",
            self.text
        ))
    }

    /// The operands' labels with `...` spelled out (as `0`, `1`, …, aligned
    /// right), the output's, and each label's size.
    fn labels(&self, shapes: &[Shape]) -> KernelResult<Labels> {
        if shapes.len() != self.inputs.len() {
            return Err(Failure::invalid(format!(
                "Einsum equation '{}' has {} operands, the op {}",
                self.text,
                self.inputs.len(),
                shapes.len()
            )));
        }
        let explicit = |t: &[u8]| t.iter().filter(|&&c| c != b'.').count();
        let mut ellipsis = 0;
        for (t, s) in self.inputs.iter().zip(shapes) {
            let rank = s.dims().len();
            let dots = t.contains(&b'.');
            if rank < explicit(t) || (!dots && rank != t.len()) {
                return Err(Failure::invalid(format!(
                    "Einsum equation '{}': an operand of rank {rank} for the term '{}'",
                    self.text,
                    String::from_utf8_lossy(t)
                )));
            }
            ellipsis = ellipsis.max(rank - explicit(t));
        }
        let spell = |t: &[u8], r: usize| -> Vec<u8> {
            let dots = (ellipsis - r..ellipsis).map(|i| b'0' + i as u8);
            let at = t.iter().position(|&c| c == b'.').unwrap_or(t.len());
            let mut out = t[..at].to_vec();
            if at < t.len() {
                out.extend(dots);
                out.extend(&t[at + 1..]);
            }
            out
        };
        let inputs: Vec<Vec<u8>> = self
            .inputs
            .iter()
            .zip(shapes)
            .map(|(t, s)| spell(t, s.dims().len() - explicit(t)))
            .collect();
        let output = match &self.output {
            Some(t) => spell(t, ellipsis),
            // Implicit output: the ellipsis, then the labels seen once, sorted.
            None => {
                let mut once: Vec<u8> = (b'a'..=b'z')
                    .chain(b'A'..=b'Z')
                    .filter(|&c| inputs.iter().flatten().filter(|&&l| l == c).count() == 1)
                    .collect();
                let mut out: Vec<u8> = (0..ellipsis).map(|i| b'0' + i as u8).collect();
                out.append(&mut once);
                out
            }
        };
        let mut size = [u64::MAX; 128];
        for (t, s) in inputs.iter().zip(shapes) {
            for (&l, &d) in t.iter().zip(s.dims()) {
                // Only the axes of `...` broadcast, as in TF.
                let known = &mut size[usize::from(l)];
                let broadcasts = l.is_ascii_digit() && (*known == 1 || d == 1);
                if *known == u64::MAX || (broadcasts && *known == 1) {
                    *known = d;
                } else if d != *known && !broadcasts {
                    return Err(Failure::invalid(format!(
                        "Einsum equation '{}': label '{}' has sizes {known} and {d}",
                        self.text,
                        char::from(l)
                    )));
                }
            }
        }
        if repeated(&output) || output.iter().any(|&l| size[usize::from(l)] == u64::MAX) {
            return Err(Failure::invalid(format!(
                "Einsum equation '{}': an output label repeats or is in no operand",
                self.text
            )));
        }
        Ok((inputs, output, size))
    }

    /// The lowering for operands of `shapes`.
    pub(super) fn plan(&self, shapes: &[Shape]) -> KernelResult<Plan> {
        let (spelled, out, size) = self.labels(shapes)?;
        let mut diagonals = Vec::new();
        let (mut inputs, mut diagonal_shapes) = (Vec::new(), Vec::new());
        for (t, shape) in spelled.iter().zip(shapes) {
            let d = diagonal::plan(t, shape.dims(), |why| self.unsupported(why))?;
            match &d {
                Some(d) => {
                    inputs.push(d.labels.clone());
                    diagonal_shapes.push(flat(&d.dims)?);
                }
                None => {
                    inputs.push(t.clone());
                    diagonal_shapes.push(*shape);
                }
            }
            diagonals.push(d);
        }
        let shapes = diagonal_shapes.as_slice();
        let mut reductions = Vec::new();
        let (mut kept_inputs, mut kept_shapes) = (Vec::new(), Vec::new());
        for (i, (t, shape)) in inputs.iter().zip(shapes).enumerate() {
            let elsewhere = |l: &u8| {
                out.contains(l)
                    || inputs
                        .iter()
                        .enumerate()
                        .any(|(j, o)| j != i && o.contains(l))
            };
            let (kept, own): (Vec<u8>, Vec<u8>) = t.iter().partition(|l| elsewhere(l));
            if own.is_empty() {
                reductions.push(None);
                kept_inputs.push(t.clone());
                kept_shapes.push(*shape);
                continue;
            }
            if own.iter().any(u8::is_ascii_digit) {
                return Err(self.unsupported("an axis of '...' is summed"));
            }
            let local = |ls: &[u8]| -> Vec<u64> {
                ls.iter()
                    .map(|l| shape.dims()[t.iter().position(|x| x == l).unwrap_or(0)])
                    .collect()
            };
            let product = |ls: &[u8]| {
                local(ls)
                    .iter()
                    .try_fold(1u64, |p, &d| p.checked_mul(d))
                    .ok_or_else(|| self.unsupported("a dimension product over 2^64"))
            };
            let (rows, len) = (product(&kept)?, product(&own)?);
            let kept_dims = local(&kept);
            kept_shapes.push(flat(&kept_dims)?);
            reductions.push(Some(Reduction {
                perm: permutation(t, &[kept.as_slice(), &own].concat()),
                kept: kept_dims,
                rows,
                len,
            }));
            kept_inputs.push(kept);
        }
        let plan = self.lower(&kept_inputs, &kept_shapes, out, &size)?;
        Ok(Plan {
            diagonals,
            reductions,
            ..plan
        })
    }

    /// The lowering of operands (`inputs`, of `shapes`) with no label summed
    /// within one.
    fn lower(
        &self,
        inputs: &[Vec<u8>],
        shapes: &[Shape],
        out: Vec<u8>,
        size: &[u64; 128],
    ) -> KernelResult<Plan> {
        let dims = |ls: &[u8]| -> Vec<u64> { ls.iter().map(|&l| size[usize::from(l)]).collect() };
        let out_dims = dims(&out);
        if out.len() > MAX_RANK {
            return Err(self.unsupported("an output of rank above 6"));
        }
        if let [a] = inputs {
            if a.len() != out.len() {
                return Err(self.unsupported("one operand whose labels are not all kept"));
            }
            return Ok(Plan {
                out_dims,
                diagonals: Vec::new(),
                reductions: Vec::new(),
                transposes: vec![permutation(a, &out)],
                matmul: None,
                swap: false,
                out_perm: None,
                result_dims: Vec::new(),
            });
        }
        let (a, b) = (&inputs[0], &inputs[1]);
        let has = |t: &[u8], l: u8| t.contains(&l);
        let batch: Vec<u8> = out
            .iter()
            .copied()
            .filter(|&l| has(a, l) && has(b, l))
            .collect();
        let m: Vec<u8> = out
            .iter()
            .copied()
            .filter(|&l| has(a, l) && !has(b, l))
            .collect();
        let n: Vec<u8> = out
            .iter()
            .copied()
            .filter(|&l| !has(a, l) && has(b, l))
            .collect();
        let k: Vec<u8> = a
            .iter()
            .copied()
            .filter(|&l| has(b, l) && !has(&out, l))
            .collect();
        if a.iter()
            .chain(b)
            .any(|&l| !(has(&out, l) || has(a, l) && has(b, l)))
        {
            return Err(self.unsupported("a label is summed within one operand"));
        }
        let local = |t: &[u8], shape: &Shape, ls: &[u8]| -> Vec<u64> {
            ls.iter()
                .map(|l| shape.dims()[t.iter().position(|x| x == l).unwrap_or(0)])
                .collect()
        };
        if local(a, &shapes[0], &k) != local(b, &shapes[1], &k) {
            return Err(Failure::invalid(format!(
                "Einsum equation '{}': contracted labels differ in size: {:?} vs. {:?}",
                self.text,
                local(a, &shapes[0], &k),
                local(b, &shapes[1], &k)
            )));
        }
        // Checked: an empty operand may pair a 0 with dims whose product
        // overflows.
        let product = |ls: &[u8]| -> KernelResult<u64> {
            dims(ls)
                .iter()
                .try_fold(1u64, |p, &d| p.checked_mul(d))
                .ok_or_else(|| self.unsupported("a dimension product over 2^64"))
        };
        let concat = |parts: &[&[u8]]| -> Vec<u8> { parts.concat() };
        // The output order is [batch, m, n], [batch, n, m] (operands
        // swapped), or needs a transpose of [batch, m, n].
        let swap = out == concat(&[&batch, &n, &m]) && out != concat(&[&batch, &m, &n]);
        let (lhs, rhs, lm, rn) = match swap {
            false => (a, b, &m, &n),
            true => (b, a, &n, &m),
        };
        let mut transposes = vec![None, None];
        // An operand in neither MatMul order is transposed into the one
        // that keeps its innermost axis in place, if either does.
        let mut side = |t: &[u8], i: usize, plain: Vec<u8>, flipped: Vec<u8>| -> bool {
            if *t == plain[..] {
                false
            } else if *t == flipped[..] {
                true
            } else if t.last() == flipped.last() && t.last() != plain.last() {
                transposes[i] = permutation(t, &flipped);
                true
            } else {
                transposes[i] = permutation(t, &plain);
                false
            }
        };
        let (li, ri) = if swap { (1, 0) } else { (0, 1) };
        let t = Transposes {
            a: side(
                lhs,
                li,
                concat(&[&batch, lm, &k]),
                concat(&[&batch, &k, lm]),
            ),
            b: side(
                rhs,
                ri,
                concat(&[&batch, &k, rn]),
                concat(&[&batch, rn, &k]),
            ),
        };
        let (bm, bk, bn) = (product(lm)?, product(&k)?, product(rn)?);
        let matmul = Batched {
            a_batch: local(lhs, &shapes[li], &batch),
            b_batch: local(rhs, &shapes[ri], &batch),
            a: if t.a { [bk, bm] } else { [bm, bk] },
            b: if t.b { [bn, bk] } else { [bk, bn] },
            t,
        };
        let result = concat(&[&batch, lm, rn]);
        Ok(Plan {
            out_dims,
            diagonals: Vec::new(),
            reductions: Vec::new(),
            transposes,
            matmul: Some(matmul),
            swap,
            out_perm: if result == out {
                None
            } else {
                permutation(&result, &out)
            },
            result_dims: dims(&result),
        })
    }
}

fn repeated(t: &[u8]) -> bool {
    t.iter().enumerate().any(|(i, l)| t[i + 1..].contains(l))
}

/// The `Transpose` permutation from labels `from` to `to` (`None`: none needed).
fn permutation(from: &[u8], to: &[u8]) -> Option<[u8; MAX_RANK]> {
    let mut perm = [0u8; MAX_RANK];
    for (i, l) in to.iter().enumerate() {
        perm[i] = from.iter().position(|x| x == l)? as u8;
    }
    (perm[..to.len()]
        .iter()
        .enumerate()
        .any(|(i, &p)| usize::from(p) != i))
    .then_some(perm)
}

mod diagonal;
mod program;
#[cfg(test)]
mod tests;
mod transposed;
