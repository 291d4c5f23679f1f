//! `_Tensorplug<DEVICE>QatPack`: on the CPU, the host values the `Qat` ops
//! of a graph read (variables, ranges, folded batch norms), gathered into
//! one `uint8` tensor ([`super::packed`]) that crosses to the device once.

use super::packed::{self, Value};
use crate::ffi;
use crate::identity;
use crate::kernels::builder::KernelBuilder;
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::op_def::{define, op_name};
use crate::kernels::tf::Context;
use crate::log;
use std::ffi::c_void;
use tensorplug_abi::tf::{TF_OpKernelConstruction, TF_OpKernelContext};
use tensorplug_core::accelerator::Shape;

/// The op's name after `_Tensorplug<DEVICE>`.
pub const PACK: &str = "QatPack";

pub(super) fn define_op() -> KernelResult<()> {
    define(
        op_name(identity::device_type(), PACK),
        &[c"values: N * float"],
        &[c"packed: uint8"],
        &[c"N: int >= 1"],
    )
}

/// Registers the CPU kernel.
pub(super) fn register() -> KernelResult<()> {
    let name = op_name(identity::device_type(), PACK);
    let builder = KernelBuilder::new(name, c"CPU", create, compute, delete)?;
    builder.register(&format!("tensorplug_cpu_{}", name.to_string_lossy()), None)
}

/// The kernel has no state; TF wants a non-null pointer.
unsafe extern "C" fn create(_: *mut TF_OpKernelConstruction) -> *mut c_void {
    std::ptr::NonNull::<u8>::dangling().as_ptr().cast()
}

unsafe extern "C" fn delete(_: *mut c_void) {}

unsafe extern "C" fn compute(_: *mut c_void, raw: *mut TF_OpKernelContext) {
    ffi::swallow("qat pack compute", (), || {
        // SAFETY: TF's live context for this call.
        let ctx = match unsafe { Context::new(raw) } {
            Ok(ctx) => ctx,
            Err(failure) => {
                log::error(format_args!("qat pack compute: {}", failure.cause));
                return Ok(());
            }
        };
        let outcome = ffi::run("qat pack compute", || Ok(pack(&ctx)))
            .unwrap_or_else(|panic| Err(Failure::from(panic)));
        if let Err(failure) = outcome {
            ctx.fail(failure.code, &failure.message(PACK, ctx.node_name()));
        }
        Ok(())
    });
}

fn pack(ctx: &Context) -> KernelResult<()> {
    let tensors = (0..ctx.num_inputs())
        .map(|i| ctx.input(i, true))
        .collect::<KernelResult<Vec<_>>>()?;
    let values = tensors
        .iter()
        .map(|t| {
            Ok(Value {
                dtype: t.dtype().0,
                dims: t.shape()?.dims().to_vec(),
                bytes: t.host_bytes(None)?,
            })
        })
        .collect::<KernelResult<Vec<_>>>()?;
    let len = packed::packed_len(&values).map_err(Failure::invalid)?;
    let shape = Shape::new(&[len as u64]).ok_or_else(|| Failure::invalid("shape"))?;
    let out = ctx.output_at(0, &shape, &[])?;
    if out.byte_size() != len || out.data().is_null() {
        return Err(Failure::invalid(format!("a {len}-byte output")));
    }
    // SAFETY: TF allocated this CPU output of `len` bytes for this call.
    let bytes = unsafe { std::slice::from_raw_parts_mut(out.data().cast::<u8>(), len) };
    packed::pack_into(&values, bytes).map_err(Failure::invalid)
}
