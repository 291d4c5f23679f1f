//! Helpers shared by the NPU's host tests.
#![allow(dead_code)]

use std::time::Duration;
use tensorplug_core::accelerator::{
    Accelerator, DType, DeviceAddr, OpDesc, OpKind, QueueId, Shape, TensorDesc,
};
use tensorplug_device_npu::{Npu, NpuClock, StdClock};

pub const Q: QueueId = QueueId(1);
pub const T: Duration = Duration::from_secs(1);
/// The NPU has queues 0 and 1.
pub const NO_SUCH_QUEUE: QueueId = QueueId(2);

pub type HostNpu = Npu<Vec<u8>, StdClock>;

/// An NPU with 64 KiB of memory.
pub fn npu() -> HostNpu {
    Npu::new(vec![0; 1 << 16], StdClock::new())
}

/// A clock that advances one tick per read, for exact timestamps.
#[derive(Default)]
pub struct StepClock(pub u64);

impl NpuClock for StepClock {
    fn now_ticks(&mut self) -> u64 {
        self.0 += 1;
        self.0
    }
}

/// Allocates and writes `values`.
pub fn put<A: Accelerator>(dev: &mut A, values: &[f32]) -> DeviceAddr {
    let addr = dev.allocate(values.len() as u64 * 4, 64).unwrap();
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    dev.write_blocking(Q, addr, &bytes, T).unwrap();
    addr
}

/// Reads `n` floats at `addr`.
pub fn get<A: Accelerator>(dev: &mut A, addr: DeviceAddr, n: usize) -> Vec<f32> {
    let mut bytes = vec![0; n * 4];
    dev.read_blocking(Q, &mut bytes, addr, T).unwrap();
    bytes
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// An f32 tensor of `dims` at `addr`.
pub fn t(addr: DeviceAddr, dims: &[u64]) -> TensorDesc {
    TensorDesc::new(addr, DType::F32, Shape::new(dims).unwrap())
}

pub fn matmul(transpose_a: bool, transpose_b: bool) -> OpKind {
    OpKind::MatMul {
        transpose_a,
        transpose_b,
    }
}

/// An op descriptor.
pub fn op<'a>(
    kind: OpKind,
    inputs: &'a [TensorDesc],
    output: TensorDesc,
    op_id: u16,
) -> OpDesc<'a> {
    OpDesc {
        kind,
        inputs,
        output,
        op_id,
    }
}
