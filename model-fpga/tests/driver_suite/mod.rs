//! The driver test suite, one body for every transport: each
//! `tests/driver_<transport>.rs` builds a [`Fixture`] and expands
//! [`driver_suite!`] into one `#[test]` per case.

#![allow(dead_code)]

pub mod faults;
pub mod ops;

use std::time::Duration;
use std::vec::Vec;

use tensorplug_core::accelerator::{
    Accelerator, DType, DeviceAddr, ErrorKind, OpDesc, OpKind, QueueId, Shape, TensorDesc,
};
use tensorplug_device_fpga::driver::{Driver, DriverConfig, StdClock};
use tensorplug_device_fpga::transport::Transport;
use tensorplug_model_fpga::model::Faults;

/// Generous for a debug build on a loaded 2-core machine.
pub const TIMEOUT: Duration = Duration::from_secs(10);
/// Short, for waits that are meant to time out.
pub const SHORT: Duration = Duration::from_millis(50);
pub const Q: QueueId = QueueId(0);

/// Small queues so back-pressure is exercised by ordinary tests.
pub fn config() -> DriverConfig {
    DriverConfig {
        command_entries: 16,
        completion_entries: 8,
        event_entries: 256,
        ..DriverConfig::default()
    }
}

/// A driver over one transport to a model, plus the model's fault hooks.
pub trait Fixture {
    type T: Transport;
    fn dev(&mut self) -> &mut Driver<Self::T, StdClock>;
    /// Replaces the model's fault switches; returns once the model has
    /// taken them.
    fn set_faults(&mut self, faults: Faults);
    /// Corrupts the next SPI request frame; false on other transports.
    fn corrupt_next_request(&mut self) -> bool {
        false
    }
}

/// Deterministic pseudo-random f32s in [-4, 4).
pub fn values(n: usize, seed: u32) -> Vec<f32> {
    let mut state = seed.wrapping_mul(747_796_405).wrapping_add(2_891_336_453);
    (0..n)
        .map(|_| {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (state >> 8) as f32 / (1u32 << 24) as f32 * 8.0 - 4.0
        })
        .collect()
}

pub fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn floats(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

pub fn upload<D: Accelerator>(dev: &mut D, data: &[f32]) -> DeviceAddr
where
    D::Error: core::fmt::Debug,
{
    let addr = dev.allocate((data.len() * 4) as u64, 64).expect("allocate");
    dev.write_blocking(Q, addr, &bytes(data), TIMEOUT)
        .expect("upload");
    addr
}

pub fn download<D: Accelerator>(dev: &mut D, addr: DeviceAddr, n: usize) -> Vec<f32>
where
    D::Error: core::fmt::Debug,
{
    let mut out = vec![0u8; n * 4];
    dev.read_blocking(Q, &mut out, addr, TIMEOUT)
        .expect("download");
    floats(&out)
}

pub fn tensor(addr: DeviceAddr, dims: &[u64]) -> TensorDesc {
    TensorDesc::new(addr, DType::F32, Shape::new(dims).expect("rank"))
}

/// Runs `kind` on `inputs` (shape, data) into a fresh output of
/// `out_dims`, and returns the output.
pub fn run<D: Accelerator>(
    dev: &mut D,
    kind: OpKind,
    inputs: &[(&[u64], &[f32])],
    out_dims: &[u64],
) -> Vec<f32>
where
    D::Error: core::fmt::Debug,
{
    let descs: Vec<TensorDesc> = inputs
        .iter()
        .map(|(dims, data)| tensor(upload(dev, data), dims))
        .collect();
    let n: u64 = out_dims.iter().product();
    let out = dev.allocate(n.max(1) * 4, 64).expect("allocate output");
    let op = OpDesc {
        kind,
        inputs: &descs,
        output: tensor(out, out_dims),
        op_id: 7,
    };
    let fence = dev.launch(Q, &op).expect("launch");
    dev.wait(fence, TIMEOUT).expect("wait");
    let result = download(dev, out, n as usize);
    for t in &descs {
        dev.deallocate(t.addr).expect("free input");
    }
    dev.deallocate(out).expect("free output");
    result
}

/// Asserts `got` is within `tol` (absolute + relative) of `want`.
pub fn assert_close(got: &[f32], want: &[f32], tol: f32, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let bound = tol * (1.0 + w.abs());
        assert!((g - w).abs() <= bound, "{what}[{i}]: got {g}, want {w}");
    }
}

/// Asserts bitwise equality (NaN-aware).
pub fn assert_exact(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
            "{what}[{i}]: got {g}, want {w}"
        );
    }
}

pub fn expect_kind<T: core::fmt::Debug, E: tensorplug_core::accelerator::Error>(
    r: Result<T, E>,
    kind: ErrorKind,
) -> E {
    match r {
        Ok(v) => panic!("expected a {kind:?} error, got Ok({v:?})"),
        Err(e) => {
            assert_eq!(e.kind(), kind, "wrong kind for {e}");
            e
        }
    }
}

/// One `#[test]` per suite case, over the fixture built by `$make`.
#[macro_export]
macro_rules! driver_suite {
    ($make:expr) => {
        driver_suite!(@each $make;
            ops::bring_up, ops::matmul_all_transposes, ops::fused_matmul_with_and_without_relu,
            ops::empty_inner_dimension_gives_zeros_plus_bias,
            ops::bias_add_flattens_leading_axes, ops::binary_ops_flat_and_broadcast,
            ops::relu_softmax_reduce_sum, ops::copies_in_all_directions, ops::fills_any_length,
            ops::allocator_limits_and_errors, ops::back_pressure_many_commands,
            ops::events_have_kinds_tags_and_order, ops::bad_inputs_are_specific_errors
        );
        driver_suite!(@each $make;
            faults::full_event_ring_counts_drops, faults::lost_completion_times_out_then_recovers,
            faults::stuck_busy_times_out_then_recovers, faults::device_fault_halts_then_recovers,
            faults::reset_mid_command_is_detected_then_recovers,
            faults::fault_in_a_multi_command_op_is_reported_promptly
        );
    };
    (@each $make:expr; $($module:ident :: $case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                let mut fixture = $make;
                driver_suite::$module::$case(&mut fixture);
            }
        )*
    };
}
