//! What one TF node of a segment becomes: its commands, over its inputs,
//! its output and temporaries of its own (a `Mean`'s divisor).

use tensorplug_core::accelerator::{Binary, OpKind, Shape};

/// One command of a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmd {
    /// A launch of a catalogue op.
    Launch(OpKind),
    /// A copy of the one input into the output (same bytes).
    Copy,
    /// The output filled with a 32-bit pattern.
    Fill(u32),
}

/// A buffer a command reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operand {
    /// The node's input `i`.
    Input(usize),
    /// The node's temporary `t`.
    Temp(usize),
    /// The node's output.
    Output,
}

/// One command and its operands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    /// What it does.
    pub cmd: Cmd,
    /// What it reads.
    pub inputs: Vec<Operand>,
    /// What it writes.
    pub output: Operand,
}

/// A node's commands, in order, with its output's and temporaries' shapes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lowering {
    /// The output's shape.
    pub out: Shape,
    /// Each temporary's shape.
    pub temps: Vec<Shape>,
    /// The commands.
    pub pieces: Vec<Piece>,
}

impl Lowering {
    /// One launch of `kind` over the node's `arity` inputs.
    pub fn launch(kind: OpKind, arity: usize, out: Shape) -> Self {
        Self::launch_over(kind, (0..arity).collect(), out)
    }

    /// One launch of `kind` over the node's inputs `inputs`, in that order.
    pub fn launch_over(kind: OpKind, inputs: Vec<usize>, out: Shape) -> Self {
        Self {
            out,
            temps: Vec::new(),
            pieces: vec![Piece {
                cmd: Cmd::Launch(kind),
                inputs: inputs.into_iter().map(Operand::Input).collect(),
                output: Operand::Output,
            }],
        }
    }

    /// A view: its input's bytes copied into its new shape.
    pub fn view(out: Shape) -> Self {
        Self {
            out,
            temps: Vec::new(),
            pieces: vec![Piece {
                cmd: Cmd::Copy,
                inputs: vec![Operand::Input(0)],
                output: Operand::Output,
            }],
        }
    }

    /// `x · x` (no `factor`), or `x · factor` with the scalar filled.
    pub fn mul_by(x: Shape, factor: Option<u32>) -> Self {
        let mul = Cmd::Launch(OpKind::Binary(Binary::MUL));
        let Some(bits) = factor else {
            return Self {
                out: x,
                temps: Vec::new(),
                pieces: vec![Piece {
                    cmd: mul,
                    inputs: vec![Operand::Input(0), Operand::Input(0)],
                    output: Operand::Output,
                }],
            };
        };
        Self {
            out: x,
            temps: vec![Shape::SCALAR],
            pieces: vec![
                Piece {
                    cmd: Cmd::Fill(bits),
                    inputs: Vec::new(),
                    output: Operand::Temp(0),
                },
                Piece {
                    cmd: mul,
                    inputs: vec![Operand::Input(0), Operand::Temp(0)],
                    output: Operand::Output,
                },
            ],
        }
    }

    /// The shape of `operand` for a node whose inputs have `inputs`.
    pub fn shape(&self, operand: Operand, inputs: &[Shape]) -> Shape {
        match operand {
            Operand::Input(i) => inputs[i],
            Operand::Temp(t) => self.temps[t],
            Operand::Output => self.out,
        }
    }
}
