//! A reduction in a program (`Sum`, `Mean`, their axes constant): the
//! commands it lowers to, whatever its axes.

use super::pieces::{Cmd, Lowering, Operand, Piece};
use crate::graph::nodes::attr_of;
use crate::graph::proto::{NodeDef, attr_value::Value};
use tensorplug_core::accelerator::{Binary, MAX_RANK, OpKind, Shape};

/// Reductions a program holds, when a `Const` gives their axes (the graph
/// pass writes them into the segment's copy of the node, [`AXES_ATTR`]).
pub const REDUCE_OPS: [&str; 2] = ["Sum", "Mean"];

/// A segment reduction's constant axes.
pub const AXES_ATTR: &str = "_tensorplug_axes";

/// The most temporaries [`reduction`] makes: the moved rows, the merged
/// rows, the sum, the divisor and the quotient (a test tries every rank,
/// axis set and `keep_dims`).
pub const MAX_TEMPS: usize = 5;

/// `Sum` or `Mean` of `x` over the node's axes: the reduced axes moved
/// last (`Transpose`) and merged (`Copy` into their product), a row sum
/// (`ReduceSum`) into the kept shape, then, for `Mean`, a division by the
/// count (as TF divides).
pub fn reduction(node: &NodeDef, x: Shape) -> Result<Lowering, String> {
    let dims = x.dims();
    let rank = dims.len();
    let mut reduced = vec![false; rank];
    let axes = match attr_of(node, AXES_ATTR) {
        Some(Value::List(l)) => l.i.clone(),
        _ => return Err("no constant axes".into()),
    };
    for &a in &axes {
        let at = if a < 0 { a + rank as i64 } else { a };
        let at = usize::try_from(at)
            .ok()
            .filter(|&at| at < rank)
            .ok_or_else(|| format!("axis {a} of a rank-{rank} input"))?;
        reduced[at] = true;
    }
    let kept: Vec<usize> = (0..rank).filter(|&i| !reduced[i]).collect();
    let gone: Vec<usize> = (0..rank).filter(|&i| reduced[i]).collect();
    let count: u64 = gone.iter().map(|&i| dims[i]).product();
    let kept_dims: Vec<u64> = kept.iter().map(|&i| dims[i]).collect();
    let keep = matches!(attr_of(node, "keep_dims"), Some(Value::B(true)));
    let out_dims: Vec<u64> = if keep {
        (0..rank)
            .map(|i| if reduced[i] { 1 } else { dims[i] })
            .collect()
    } else {
        kept_dims.clone()
    };
    let shape = |d: &[u64]| Shape::new(d).ok_or_else(|| format!("rank {}", d.len()));
    let mut low = Lowering::new(shape(&out_dims)?);
    let temp =
        |low: &mut Lowering, d: &[u64]| -> Result<Operand, String> { Ok(low.temp(shape(d)?)) };
    // The reduced axes last.
    let mut rows = Operand::Input(0);
    let order: Vec<usize> = kept.iter().chain(&gone).copied().collect();
    if order.iter().enumerate().any(|(i, &p)| i != p) {
        let mut perm = [0u8; MAX_RANK];
        for (i, &p) in order.iter().enumerate() {
            perm[i] = p as u8;
        }
        let moved: Vec<u64> = order.iter().map(|&i| dims[i]).collect();
        let t = temp(&mut low, &moved)?;
        low.pieces.push(Piece {
            cmd: Cmd::Launch(OpKind::Transpose(perm)),
            inputs: vec![rows],
            output: t,
        });
        rows = t;
    }
    // Merged into one.
    if gone.len() != 1 {
        let merged: Vec<u64> = kept_dims.iter().copied().chain([count]).collect();
        let t = temp(&mut low, &merged)?;
        low.pieces.push(Piece {
            cmd: Cmd::Copy,
            inputs: vec![rows],
            output: t,
        });
        rows = t;
    }
    // The row sum, then for `Mean` the division by the count; a command
    // writes none of its own inputs, so the sum is a temporary unless it
    // is the last command. A `ReduceSum` writes [kept] or [kept, 1]; an
    // output of another shape (kept axes of 1 in between) is a copy of it.
    let direct = out_dims == kept_dims
        || (out_dims.len() == kept_dims.len() + 1
            && out_dims.ends_with(&[1])
            && out_dims[..kept_dims.len()] == kept_dims[..]);
    let sum_dims = if direct { &out_dims } else { &kept_dims };
    let mean = node.op == "Mean";
    let sum = if direct && !mean {
        Operand::Output
    } else {
        temp(&mut low, sum_dims)?
    };
    low.pieces.push(Piece {
        cmd: Cmd::Launch(OpKind::ReduceSum),
        inputs: vec![rows],
        output: sum,
    });
    let mut last = sum;
    if mean {
        let divisor = temp(&mut low, &[])?;
        low.pieces.push(Piece {
            cmd: Cmd::Fill((count as f32).to_bits()),
            inputs: Vec::new(),
            output: divisor,
        });
        let quotient = if direct {
            Operand::Output
        } else {
            temp(&mut low, sum_dims)?
        };
        low.pieces.push(Piece {
            cmd: Cmd::Launch(OpKind::Binary(Binary::DIV)),
            inputs: vec![sum, divisor],
            output: quotient,
        });
        last = quotient;
    }
    if last != Operand::Output {
        low.pieces.push(Piece {
            cmd: Cmd::Copy,
            inputs: vec![last],
            output: Operand::Output,
        });
    }
    Ok(low)
}

#[cfg(test)]
mod tests {
    use super::super::lower::{lower_node, max_temps};
    use super::*;
    use crate::graph::proto::NodeDef;
    use crate::graph::proto::{AttrValue, attr_value};

    fn mean(axes: &[i64], keep: bool) -> NodeDef {
        let mut n = NodeDef {
            name: "m".into(),
            op: "Mean".into(),
            input: vec!["x".into()],
            ..Default::default()
        };
        let list = attr_value::ListValue {
            i: axes.to_vec(),
            ..Default::default()
        };
        n.attr.insert(
            AXES_ATTR.into(),
            AttrValue {
                value: Some(Value::List(list)),
            },
        );
        n.attr.insert(
            "keep_dims".into(),
            AttrValue {
                value: Some(Value::B(keep)),
            },
        );
        n
    }

    fn cmds(low: &Lowering) -> Vec<Cmd> {
        low.pieces.iter().map(|p| p.cmd).collect()
    }

    const DIV: Cmd = Cmd::Launch(OpKind::Binary(Binary::DIV));

    #[test]
    fn a_mean_over_the_last_axis_sums_then_divides_into_the_output() {
        let x = Shape::new(&[2, 5, 4]).unwrap();
        let low = lower_node(&mean(&[-1], true), &[x]).unwrap();
        assert_eq!(low.out.dims(), [2, 5, 1]);
        let count = Cmd::Fill(4f32.to_bits());
        assert_eq!(cmds(&low), [Cmd::Launch(OpKind::ReduceSum), count, DIV]);
        // No command writes its own input.
        assert!(low.pieces.iter().all(|p| !p.inputs.contains(&p.output)));
    }

    #[test]
    fn a_mean_over_middle_axes_moves_and_merges_them_first() {
        let x = Shape::new(&[2, 3, 3, 4]).unwrap();
        let low = lower_node(&mean(&[1, 2], true), &[x]).unwrap();
        assert_eq!(low.out.dims(), [2, 1, 1, 4]);
        let mut perm = [0u8; MAX_RANK];
        perm[..4].copy_from_slice(&[0, 3, 1, 2]);
        assert_eq!(
            cmds(&low),
            [
                Cmd::Launch(OpKind::Transpose(perm)),
                Cmd::Copy,
                Cmd::Launch(OpKind::ReduceSum),
                Cmd::Fill(9f32.to_bits()),
                DIV,
                Cmd::Copy,
            ]
        );
        assert_eq!(low.temps[1].dims(), [2, 4, 9], "merged rows");
        assert!(low.temps.len() <= max_temps(&mean(&[1, 2], true)));
        let error = lower_node(&mean(&[4], true), &[x]).unwrap_err();
        assert!(error.contains("axis 4 of a rank-4 input"), "{error}");
    }

    #[test]
    fn no_reduction_of_any_rank_axes_or_keep_dims_makes_more_than_max_temps() {
        let mut most = 0;
        for rank in 1..=MAX_RANK {
            let dims: Vec<u64> = (2..2 + rank as u64).collect();
            let x = Shape::new(&dims).unwrap();
            for set in 1u32..(1 << rank) {
                let axes: Vec<i64> = (0..rank as i64).filter(|a| set & (1 << a) != 0).collect();
                for (op, keep) in [
                    ("Sum", false),
                    ("Sum", true),
                    ("Mean", false),
                    ("Mean", true),
                ] {
                    let mut node = mean(&axes, keep);
                    node.op = op.into();
                    let low = lower_node(&node, &[x]).unwrap();
                    assert!(
                        low.temps.len() <= max_temps(&node),
                        "{op} {axes:?} of {dims:?}"
                    );
                    most = most.max(low.temps.len());
                }
            }
        }
        assert_eq!(most, MAX_TEMPS, "the bound is the most any reduction makes");
    }
}
