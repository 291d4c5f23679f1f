//! `ConcatV2` and `Split` (their axis constant) and `BiasAddGrad` in a
//! program. The first and the last as their op-by-op kernels launch them,
//! so a program's result is the same bytes: the inputs as rows joined two
//! at a time by the device's `Concat` (`ops/concat.rs`), and the bias
//! gradient as one `ones[1, len] · x[len, channels]` GEMM (`ops/sum.rs`).
//! A split's pieces are copies either way (exact): each a `Gather` of
//! one index from the input seen as `[outer, pieces, width]`.

use super::pieces::{Cmd, Lowering, Operand, Piece};
use super::reduce::AXES_ATTR;
use crate::graph::nodes::attr_of;
use crate::graph::proto::{NodeDef, attr_value::Value};
use crate::kernels::ops::concat::concat_dims;
use crate::kernels::ops::split::{Kind, piece_sizes};
use crate::kernels::shapes::{self, SumPlan};
use tensorplug_core::accelerator::{DType, OpKind, Shape};

/// The device op `ConcatV2` joins rows with.
pub const CONCAT: OpKind = OpKind::Concat(DType::F32);

/// The device op `Split` takes its pieces with.
pub const GATHER: OpKind = OpKind::Gather(DType::I32);

const MATMUL: OpKind = OpKind::MatMul {
    transpose_a: false,
    transpose_b: false,
};

fn shape(d: &[u64]) -> Result<Shape, String> {
    Shape::new(d).ok_or_else(|| format!("rank {}", d.len()))
}

/// `operand` seen as `view`: itself when it has that shape, else a copy
/// of its bytes into a temporary of it.
fn as_shape(low: &mut Lowering, operand: Operand, has: Shape, view: Shape) -> Operand {
    if has == view {
        return operand;
    }
    let t = low.temp(view);
    low.pieces.push(Piece {
        cmd: Cmd::Copy,
        inputs: vec![operand],
        output: t,
    });
    t
}

/// Writes `result` (of shape `has`) into the output (of `low.out`): the
/// last command writes it directly when the shapes agree, else a copy.
fn into_output(low: &mut Lowering, cmd: Cmd, inputs: Vec<Operand>, has: Shape) {
    let output = if has == low.out {
        Operand::Output
    } else {
        low.temp(has)
    };
    low.pieces.push(Piece {
        cmd,
        inputs,
        output,
    });
    if output != Operand::Output {
        low.pieces.push(Piece {
            cmd: Cmd::Copy,
            inputs: vec![output],
            output: Operand::Output,
        });
    }
}

/// The most temporaries [`concat`] makes for `inputs` values: a view per
/// input, a join per input after the second, and the output's view.
pub const fn concat_temps(inputs: usize) -> usize {
    2 * inputs
}

/// `ConcatV2` of inputs of `shapes` along the node's constant axis.
pub fn concat(node: &NodeDef, shapes: &[Shape]) -> Result<Lowering, String> {
    let axis = match attr_of(node, AXES_ATTR) {
        Some(Value::List(l)) => l.i.clone(),
        _ => return Err("no constant axis".into()),
    };
    let (axis, out_dims) = concat_dims(shapes, &axis).map_err(|f| f.cause)?;
    let mut low = Lowering::new(shape(&out_dims)?);
    let outer: u64 = out_dims[..axis].iter().product();
    let inner: u64 = out_dims[axis + 1..].iter().product();
    let joined: Vec<usize> = (0..shapes.len())
        .filter(|&i| shapes[i].elements() != Some(0))
        .collect();
    let rows = |i: usize| shape(&[outer, shapes[i].dims()[axis] * inner]);
    match joined[..] {
        // An empty output: the program fills no bytes of it.
        [] => return Ok(low),
        [only] => {
            // The others are empty: the output is its bytes.
            low.pieces.push(Piece {
                cmd: Cmd::Copy,
                inputs: vec![Operand::Input(only)],
                output: Operand::Output,
            });
            return Ok(low);
        }
        _ => {}
    }
    let mut acc = as_shape(
        &mut low,
        Operand::Input(joined[0]),
        shapes[joined[0]],
        rows(joined[0])?,
    );
    let mut width = rows(joined[0])?.dims()[1];
    for (j, &i) in joined.iter().enumerate().skip(1) {
        let x = as_shape(&mut low, Operand::Input(i), shapes[i], rows(i)?);
        width += rows(i)?.dims()[1];
        let joint = shape(&[outer, width])?;
        let cmd = Cmd::Launch(CONCAT);
        if j + 1 == joined.len() {
            into_output(&mut low, cmd, vec![acc, x], joint);
        } else {
            let t = low.temp(joint);
            low.pieces.push(Piece {
                cmd,
                inputs: vec![acc, x],
                output: t,
            });
            acc = t;
        }
    }
    Ok(low)
}

/// The most temporaries [`split`] makes for `pieces` pieces: the input's
/// view, and per piece its index and its gathered rows.
pub const fn split_temps(pieces: usize) -> usize {
    1 + 2 * pieces
}

/// `Split` of `x` into the node's `num_split` equal pieces along its
/// constant axis: outputs 0, 1, …
pub fn split(node: &NodeDef, x: Shape) -> Result<Lowering, String> {
    let axis = match attr_of(node, AXES_ATTR) {
        Some(Value::List(l)) => match l.i[..] {
            [a] => a,
            _ => return Err("split_dim must be a scalar".into()),
        },
        _ => return Err("no constant axis".into()),
    };
    let pieces = match attr_of(node, "num_split") {
        Some(&Value::I(n)) => usize::try_from(n).map_err(|_| format!("num_split {n}"))?,
        _ => return Err("no num_split".into()),
    };
    let dims = x.dims();
    let rank = dims.len() as i64;
    let at = if axis < 0 { axis + rank } else { axis };
    let at = usize::try_from(at)
        .ok()
        .filter(|&a| a < dims.len())
        .ok_or_else(|| format!("axis {axis} is out of range for a tensor of rank {rank}"))?;
    let lengths = piece_sizes(Kind::Split, dims[at], pieces, &[]).map_err(|f| f.cause)?;
    let mut piece = dims.to_vec();
    piece[at] = lengths[0];
    let piece = shape(&piece)?;
    let mut low = Lowering::new(piece);
    low.ports = vec![piece; pieces - 1];
    let outer: u64 = dims[..at].iter().product();
    let width = lengths[0] * dims[at + 1..].iter().product::<u64>();
    if piece.elements() == Some(0) {
        // Empty pieces: the program fills no bytes of them.
        return Ok(low);
    }
    let stacked = shape(&[outer, pieces as u64, width])?;
    let rows = as_shape(&mut low, Operand::Input(0), x, stacked);
    for k in 0..pieces {
        let index = low.typed_temp(shape(&[1])?, DType::I32);
        low.pieces.push(Piece {
            cmd: Cmd::Fill(k as u32),
            inputs: Vec::new(),
            output: index,
        });
        let port = match k {
            0 => Operand::Output,
            k => Operand::Port(k),
        };
        let gathered = shape(&[outer, 1, width])?;
        let output = if gathered == piece {
            port
        } else {
            low.temp(gathered)
        };
        low.pieces.push(Piece {
            cmd: Cmd::Launch(GATHER),
            inputs: vec![rows, index],
            output,
        });
        if output != port {
            low.pieces.push(Piece {
                cmd: Cmd::Copy,
                inputs: vec![output],
                output: port,
            });
        }
    }
    Ok(low)
}

/// The most temporaries [`bias_grad`] makes: the ones, the input's view
/// and the product's.
pub const BIAS_GRAD_TEMPS: usize = 3;

/// `BiasAddGrad` (NHWC) of `x`: summed over every axis but the last,
/// planned as the op-by-op kernel plans it (`shapes::sum`).
pub fn bias_grad(x: Shape) -> Result<Lowering, String> {
    let rank = x.dims().len();
    if rank < 2 {
        return Err(format!(
            "out_backprop must be at least 2-D, got rank {rank}"
        ));
    }
    let axes: Vec<i64> = (0..rank as i64 - 1).collect();
    let (out, plan) = shapes::sum(&x, &axes, false).map_err(|f| f.cause)?;
    let mut low = Lowering::new(out);
    let (cmd, inputs) = match plan {
        SumPlan::Nothing | SumPlan::Zeros => (Cmd::Fill(0), vec![]),
        SumPlan::Copy => (Cmd::Copy, vec![Operand::Input(0)]),
        SumPlan::Trailing { rows, len } => {
            let x = as_shape(&mut low, Operand::Input(0), x, shape(&[rows, len])?);
            let sum = Cmd::Launch(OpKind::ReduceSum);
            into_output(&mut low, sum, vec![x], shape(&[rows])?);
            return Ok(low);
        }
        SumPlan::Leading { len, cols } => {
            let ones = low.temp(shape(&[1, len])?);
            low.pieces.push(Piece {
                cmd: Cmd::Fill(1.0f32.to_bits()),
                inputs: Vec::new(),
                output: ones,
            });
            let rows = as_shape(&mut low, Operand::Input(0), x, shape(&[len, cols])?);
            into_output(
                &mut low,
                Cmd::Launch(MATMUL),
                vec![ones, rows],
                shape(&[1, cols])?,
            );
            return Ok(low);
        }
        SumPlan::Middle { .. } => return Err("a bias gradient sums leading axes".into()),
    };
    low.pieces.push(Piece {
        cmd,
        inputs,
        output: Operand::Output,
    });
    Ok(low)
}

#[cfg(test)]
mod tests {
    use super::super::lower::{lower_node, max_temps, needs_op, supported};
    use super::*;
    use crate::graph::proto::{AttrValue, DataType, attr_value::ListValue};

    fn node(op: &str, inputs: usize, attrs: &[(&str, Value)]) -> NodeDef {
        let mut n = NodeDef {
            name: "n".into(),
            op: op.into(),
            input: (0..inputs).map(|i| format!("x{i}")).collect(),
            ..Default::default()
        };
        let t = Value::Type(DataType::DtFloat as i32);
        n.attr.insert("T".into(), AttrValue { value: Some(t) });
        for (k, v) in attrs {
            let value = Some(v.clone());
            n.attr.insert((*k).into(), AttrValue { value });
        }
        n
    }

    fn concat_node(n: usize, axis: i64) -> NodeDef {
        let axis = Value::List(ListValue {
            i: vec![axis],
            ..Default::default()
        });
        node(
            "ConcatV2",
            n,
            &[("N", Value::I(n as i64)), (AXES_ATTR, axis)],
        )
    }

    fn s(d: &[u64]) -> Shape {
        Shape::new(d).unwrap()
    }

    fn cmds(low: &Lowering) -> Vec<Cmd> {
        low.pieces.iter().map(|p| p.cmd).collect()
    }

    #[test]
    fn a_concat_of_rows_is_its_joins_into_the_output() {
        // An LSTM's gate gradients: four [32, 32] along the last axis.
        let n = concat_node(4, -1);
        assert!(supported(&n));
        assert_eq!(needs_op(&n), Some(CONCAT));
        let low = lower_node(&n, &[s(&[32, 32]); 4]).unwrap();
        assert_eq!(low.out, s(&[32, 128]));
        assert_eq!(cmds(&low), [Cmd::Launch(CONCAT); 3]);
        assert_eq!(low.temps, [s(&[32, 64]), s(&[32, 96])]);
        assert_eq!(low.pieces[2].output, Operand::Output);
        // Rank 3 along the middle: each value seen as rows first, the
        // result copied into the output's shape.
        let low = lower_node(&concat_node(2, 1), &[s(&[2, 3, 4]), s(&[2, 1, 4])]).unwrap();
        assert_eq!(low.out, s(&[2, 4, 4]));
        assert_eq!(
            cmds(&low),
            [Cmd::Copy, Cmd::Copy, Cmd::Launch(CONCAT), Cmd::Copy]
        );
        assert_eq!(low.temps, [s(&[2, 12]), s(&[2, 4]), s(&[2, 16])]);
        assert!(low.temps.len() <= max_temps(&concat_node(2, 1)));
        // An empty value drops out; one left is a copy.
        let low = lower_node(&concat_node(2, 0), &[s(&[0, 3]), s(&[2, 3])]).unwrap();
        assert_eq!(cmds(&low), [Cmd::Copy]);
        let low = lower_node(&concat_node(2, 0), &[s(&[0, 3]), s(&[0, 3])]).unwrap();
        assert_eq!((low.out, cmds(&low)), (s(&[0, 3]), vec![]));
        // Shapes TF refuses, and an axis that is not a constant.
        assert!(lower_node(&concat_node(2, 1), &[s(&[2, 3]), s(&[3, 3])]).is_err());
        assert!(lower_node(&concat_node(2, 2), &[s(&[2, 3]), s(&[2, 3])]).is_err());
        let mut computed = concat_node(2, 1);
        computed.attr.remove(AXES_ATTR);
        assert!(!supported(&computed));
    }

    fn split_node(pieces: i64, axis: i64) -> NodeDef {
        let axis = Value::List(ListValue {
            i: vec![axis],
            ..Default::default()
        });
        node(
            "Split",
            1,
            &[("num_split", Value::I(pieces)), (AXES_ATTR, axis)],
        )
    }

    #[test]
    fn a_split_is_one_gather_per_piece_into_its_outputs() {
        // An LSTM cell's gates: [32, 128] into four [32, 32].
        let n = split_node(4, 1);
        assert!(supported(&n));
        assert_eq!(needs_op(&n), Some(GATHER));
        let low = lower_node(&n, &[s(&[32, 128])]).unwrap();
        assert_eq!(low.out, s(&[32, 32]));
        assert_eq!(low.ports, [s(&[32, 32]); 3]);
        assert!(low.temps.len() <= max_temps(&n));
        // The input seen as [32, 4, 32], then per piece its index, the
        // gather and the copy into the piece's shape.
        let per_piece = [Cmd::Fill(0), Cmd::Launch(GATHER), Cmd::Copy];
        assert_eq!(cmds(&low)[0], Cmd::Copy);
        assert_eq!(low.temps[0], s(&[32, 4, 32]));
        for k in 0..4 {
            let piece = &low.pieces[1 + 3 * k..4 + 3 * k];
            let fill = Cmd::Fill(k as u32);
            assert_eq!(
                [piece[0].cmd, piece[1].cmd, piece[2].cmd],
                [fill, per_piece[1], per_piece[2]]
            );
            let Operand::Temp(index) = piece[0].output else {
                panic!("{piece:?}");
            };
            assert_eq!(low.temp_type(index), DType::I32);
            let port = if k == 0 {
                Operand::Output
            } else {
                Operand::Port(k)
            };
            assert_eq!(piece[2].output, port);
        }
        // A rank-3 input along its last axis: [2, 3, 4] into two [2, 3, 2];
        // along the first axis each piece is a gather from [1, 2, 6].
        let low = lower_node(&split_node(2, -1), &[s(&[2, 3, 4])]).unwrap();
        assert_eq!((low.out, low.temps[0]), (s(&[2, 3, 2]), s(&[6, 2, 2])));
        let low = lower_node(&split_node(2, 0), &[s(&[4, 6])]).unwrap();
        assert_eq!((low.out, low.temps[0]), (s(&[2, 6]), s(&[1, 2, 12])));
        // Pieces that do not divide the axis; an axis out of range.
        assert!(lower_node(&split_node(3, 1), &[s(&[2, 4])]).is_err());
        assert!(lower_node(&split_node(2, 2), &[s(&[2, 4])]).is_err());
        let mut computed = split_node(2, 1);
        computed.attr.remove(AXES_ATTR);
        assert!(!supported(&computed));
    }

    #[test]
    fn a_bias_gradient_is_planned_as_its_kernel_plans_it() {
        let n = node("BiasAddGrad", 1, &[]);
        assert!(supported(&n));
        // Leading axes: ones · rows, the [1, c] product copied into [c].
        let low = lower_node(&n, &[s(&[4, 2, 3])]).unwrap();
        assert_eq!(low.out, s(&[3]));
        let matmul = Cmd::Launch(MATMUL);
        let fill = Cmd::Fill(1.0f32.to_bits());
        assert_eq!(cmds(&low), [fill, Cmd::Copy, matmul, Cmd::Copy]);
        assert_eq!(low.temps, [s(&[1, 8]), s(&[8, 3]), s(&[1, 3])]);
        assert!(low.temps.len() <= max_temps(&n));
        // Nothing summed: a copy, as `Sum` copies (signed zeros kept).
        assert_eq!(cmds(&lower_node(&n, &[s(&[1, 5])]).unwrap()), [Cmd::Copy]);
        // One channel: a row sum.
        let low = lower_node(&n, &[s(&[6, 1])]).unwrap();
        assert!(cmds(&low).contains(&Cmd::Launch(OpKind::ReduceSum)));
        assert!(lower_node(&n, &[s(&[6])]).is_err());
        let nchw = node(
            "BiasAddGrad",
            1,
            &[("data_format", Value::S(b"NCHW".to_vec()))],
        );
        assert!(!supported(&nchw));
    }
}
