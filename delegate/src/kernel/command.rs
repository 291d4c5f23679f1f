//! One command of a partition, on device buffers: what a node plans and
//! the partition's program is built from.

use tensorplug_core::accelerator::{OpKind, TensorDesc};

pub enum Command {
    Launch {
        node: i32,
        kind: OpKind,
        inputs: Vec<TensorDesc>,
        output: TensorDesc,
    },
    Copy {
        dst: TensorDesc,
        src: TensorDesc,
    },
}
