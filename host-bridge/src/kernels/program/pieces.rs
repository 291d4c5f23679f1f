//! What one TF node of a segment becomes: its commands, over its inputs,
//! its outputs and temporaries of its own (a `Mean`'s divisor).

use tensorplug_core::accelerator::{Binary, DType, OpKind, Shape};

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
    /// The node's output (its output 0).
    Output,
    /// The node's output `p`, `p` ≥ 1 (a `Split`'s pieces).
    Port(usize),
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

/// A node's commands, in order, with its outputs' and temporaries' shapes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lowering {
    /// The output's shape (output 0).
    pub out: Shape,
    /// The shapes of outputs 1, 2, … (none for most nodes).
    pub ports: Vec<Shape>,
    /// Each temporary's shape.
    pub temps: Vec<Shape>,
    /// Temporaries of another type than float32, by index (a gather's
    /// indices).
    pub typed_temps: Vec<(usize, DType)>,
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
            pieces: vec![Piece {
                cmd: Cmd::Launch(kind),
                inputs: inputs.into_iter().map(Operand::Input).collect(),
                output: Operand::Output,
            }],
            ..Self::new(out)
        }
    }

    /// A view: its input's bytes copied into its new shape.
    pub fn view(out: Shape) -> Self {
        Self {
            pieces: vec![Piece {
                cmd: Cmd::Copy,
                inputs: vec![Operand::Input(0)],
                output: Operand::Output,
            }],
            ..Self::new(out)
        }
    }

    /// `x · x` (no `factor`), or `x · factor` with the scalar filled.
    pub fn mul_by(x: Shape, factor: Option<u32>) -> Self {
        let mul = Cmd::Launch(OpKind::Binary(Binary::MUL));
        let Some(bits) = factor else {
            return Self {
                pieces: vec![Piece {
                    cmd: mul,
                    inputs: vec![Operand::Input(0), Operand::Input(0)],
                    output: Operand::Output,
                }],
                ..Self::new(x)
            };
        };
        Self {
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
            ..Self::new(x)
        }
    }

    /// A node of one output of `out`, its commands to come.
    pub fn new(out: Shape) -> Self {
        Self {
            out,
            ports: Vec::new(),
            temps: Vec::new(),
            typed_temps: Vec::new(),
            pieces: Vec::new(),
        }
    }

    /// The shape of `operand` for a node whose inputs have `inputs`.
    pub fn shape(&self, operand: Operand, inputs: &[Shape]) -> Shape {
        match operand {
            Operand::Input(i) => inputs[i],
            Operand::Temp(t) => self.temps[t],
            Operand::Output => self.out,
            Operand::Port(p) => self.ports[p - 1],
        }
    }

    /// A new float32 temporary of `shape`.
    pub fn temp(&mut self, shape: Shape) -> Operand {
        self.typed_temp(shape, DType::F32)
    }

    /// A new temporary of `shape` and `dtype`.
    pub fn typed_temp(&mut self, shape: Shape, dtype: DType) -> Operand {
        self.temps.push(shape);
        let t = self.temps.len() - 1;
        if dtype != DType::F32 {
            self.typed_temps.push((t, dtype));
        }
        Operand::Temp(t)
    }

    /// The element type of temporary `t`.
    pub fn temp_type(&self, t: usize) -> DType {
        (self.typed_temps.iter())
            .find(|&&(i, _)| i == t)
            .map_or(DType::F32, |&(_, d)| d)
    }

    /// Each output's shape, output 0 first.
    pub fn outputs(&self) -> impl Iterator<Item = Shape> + '_ {
        core::iter::once(self.out).chain(self.ports.iter().copied())
    }
}
