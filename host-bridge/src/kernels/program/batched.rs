//! Batched products in a program: `BatchMatMul`(`V2`) as one command,
//! the catalogue's `BatchMatMul` record (a `MatMul` of two matrices), and
//! an `Einsum` of two operands as that product with its operands' and
//! result's moves (`docs/device-programs.md`, "batched products").

use super::super::ops::einsum::Equation;
use super::super::ops::{Transposes, record_kind};
use super::pieces::{Cmd, Lowering, Operand, Piece};
use crate::graph::nodes::attr_of;
use crate::graph::proto::{NodeDef, attr_value::Value};
use tensorplug_core::accelerator::{OpKind, Shape};

/// TF's batched products a program holds, as one `BatchMatMul` record
/// (a `MatMul` for two matrices).
pub const BATCHED: [&str; 2] = ["BatchMatMul", "BatchMatMulV2"];

/// A batched product's `adj_x` and `adj_y` (absent: false).
fn adjoints(node: &NodeDef) -> Option<Transposes> {
    let flag = |key: &str| match attr_of(node, key) {
        None => Some(false),
        Some(&Value::B(b)) => Some(b),
        Some(_) => None,
    };
    Some(Transposes {
        a: flag("adj_x")?,
        b: flag("adj_y")?,
    })
}

/// The device op a batched product needs beyond the ops every program
/// command has: its record, which the graph pass asks the device for.
pub fn needs_record(node: &NodeDef) -> Option<OpKind> {
    match node.op.as_str() {
        op if BATCHED.contains(&op) => adjoints(node).map(record_kind),
        "Einsum" => Some(record_kind(Transposes::default())),
        _ => None,
    }
}

/// An `Einsum`'s equation, if it reads.
fn equation(node: &NodeDef) -> Option<Equation> {
    match attr_of(node, "equation") {
        Some(Value::S(s)) => Equation::parse(std::str::from_utf8(s).ok()?).ok(),
        _ => None,
    }
}

/// An `Einsum` of inputs `a`, `b`: each operand transposed into place and
/// copied into the shape the product reads (where either is needed), the
/// product, then the result transposed or copied into the output.
pub fn einsum(node: &NodeDef, shapes: &[Shape]) -> Result<Lowering, String> {
    let e = equation(node)
        .ok_or("no equation")?
        .program(shapes)
        .map_err(|f| f.cause)?;
    let mut low = Lowering::new(e.out);
    let step = |low: &mut Lowering, cmd: Cmd, inputs: Vec<Operand>, out: Option<Shape>| {
        let output = match out {
            Some(shape) => {
                low.temps.push(shape);
                Operand::Temp(low.temps.len() - 1)
            }
            None => Operand::Output,
        };
        low.pieces.push(Piece {
            cmd,
            inputs,
            output,
        });
        output
    };
    let mut read = Vec::new();
    for o in &e.operands {
        let (mut at, mut shape) = (Operand::Input(o.input), shapes[o.input]);
        if let Some((perm, moved)) = o.transpose {
            at = step(
                &mut low,
                Cmd::Launch(OpKind::Transpose(perm)),
                vec![at],
                Some(moved),
            );
            shape = moved;
        }
        if shape != o.read_as {
            at = step(&mut low, Cmd::Copy, vec![at], Some(o.read_as));
        }
        read.push(at);
    }
    let product = Cmd::Launch(e.kind);
    match e.out_perm {
        None if e.result == e.out => {
            step(&mut low, product, read, None);
        }
        None => {
            let result = step(&mut low, product, read, Some(e.result));
            step(&mut low, Cmd::Copy, vec![result], None);
        }
        Some((perm, labelled)) => {
            let mut result = step(&mut low, product, read, Some(e.result));
            if labelled != e.result {
                result = step(&mut low, Cmd::Copy, vec![result], Some(labelled));
            }
            step(
                &mut low,
                Cmd::Launch(OpKind::Transpose(perm)),
                vec![result],
                None,
            );
        }
    }
    Ok(low)
}

/// Whether a program holds `node`, a batched product or an `Einsum`: two
/// data inputs, and adjoints or an equation it lowers.
pub fn holds(node: &NodeDef) -> bool {
    let data_inputs = node.input.iter().filter(|i| !i.starts_with('^')).count();
    data_inputs == 2
        && match node.op.as_str() {
            "Einsum" => equation(node).is_some_and(|e| e.in_program()),
            _ => adjoints(node).is_some(),
        }
}

/// A batched product's command for inputs of `shapes`: a `MatMul` of two
/// matrices, else the record (whose rule refuses a broadcast `a`: the
/// segment then runs op by op); `None` for another op.
pub fn product(node: &NodeDef, shapes: &[Shape]) -> Option<Result<OpKind, String>> {
    let (op, [a, b]) = (node.op.as_str(), shapes) else {
        return None;
    };
    if !BATCHED.contains(&op) {
        return None;
    }
    let Some(t) = adjoints(node) else {
        return Some(Err("adjoints".into()));
    };
    let (ad, bd) = (a.dims(), b.dims());
    if ad.len() == 2 && bd.len() == 2 {
        return Some(Ok(OpKind::MatMul {
            transpose_a: t.a,
            transpose_b: t.b,
        }));
    }
    // The record's form, said in words before its rule says it in codes.
    let lead = ad.len().saturating_sub(2);
    let same_rank = bd.len() == ad.len();
    let shared = bd.len() == 2 || (same_rank && bd[..lead].iter().all(|&d| d == 1));
    if ad.len() < 3 || !(shared || (same_rank && ad[..lead] == bd[..lead])) {
        return Some(Err(format!(
            "operands {ad:?} and {bd:?} broadcast a batch axis of the left one or part of the \
             right one's, which is no one command (one takes equal batch axes, or the right \
             operand as one matrix for all)"
        )));
    }
    Some(Ok(record_kind(t)))
}
