//! The example NPU as a TensorFlow plugin: `/device:NPU:<n>`, one per item
//! of `TENSORPLUG_NPU_DEVICE` (default `sim`). This file is the whole
//! vendor side of the seam, with `leaky_relu.rs`: the TF kernel of the
//! NPU's own op.

mod leaky_relu;

use std::ffi::CStr;
use tensorplug_device_npu::{Npu, StdClock};
use tensorplug_host_bridge::prelude::*;

/// Device memory of a simulated NPU.
const SIM_MEMORY_BYTES: usize = 64 << 20;

/// The example NPU.
pub struct NpuBackend;

impl Backend for NpuBackend {
    const DEVICE_TYPE: &'static CStr = c"NPU";
    const VENDOR: &'static CStr = c"tensorplug example";
    const DEVICE_KINDS: &'static str = "`sim`";
    /// The kernel of the NPU's own op (tensorplug's kernels come with it).
    const KERNELS: &'static [&'static dyn TfKernel] = &[&leaky_relu::LeakyRelu];

    fn open(item: &str) -> Result<Box<DynAccelerator>, OpenError> {
        match item {
            "sim" => Ok(erase(Npu::new(
                vec![0u8; SIM_MEMORY_BYTES].into_boxed_slice(),
                StdClock::default(),
            ))),
            other => Err(format!("unknown NPU device `{other}`; expected `sim`").into()),
        }
    }
}

export_plugin!(NpuBackend);
// And the LiteRT delegate of the same devices: no code beyond the backend.
tensorplug_delegate::export_delegate!(NpuBackend);
