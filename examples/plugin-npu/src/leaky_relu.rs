//! The TF kernel of the NPU's own op: TF's `LeakyRelu` (Keras' `LeakyReLU`
//! layer) lowered to the NPU's `LeakyRelu` ([`tensorplug_device_npu::LEAKY_RELU`]).
//! tensorplug has no such op; this kernel is registered through
//! [`Backend::KERNELS`](tensorplug_host_bridge::prelude::Backend::KERNELS) when every
//! NPU declares it.

use std::ffi::CStr;
use tensorplug_core::accelerator::OpKind;
use tensorplug_device_npu::leaky_relu;
use tensorplug_host_bridge::prelude::*;

/// TF's `LeakyRelu` on the NPU.
pub struct LeakyRelu;

impl Op for LeakyRelu {
    /// The slope below zero (TF's `alpha` attribute).
    type Attrs = f32;

    fn op(&self) -> &'static CStr {
        c"LeakyRelu"
    }

    fn family(&self) -> Option<OpKind> {
        Some(leaky_relu(0.0))
    }

    fn construct(&self, ctx: &Construction) -> KernelResult<f32> {
        ctx.float_attr(c"alpha")
    }

    fn compute(&self, alpha: &f32, ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let Some((x, shape, out)) = elementwise(ctx)? else {
            return Ok(());
        };
        run.launch(
            leaky_relu(*alpha),
            &[run.desc(&x, shape)?],
            run.desc(&out, shape)?,
        )
    }
}
