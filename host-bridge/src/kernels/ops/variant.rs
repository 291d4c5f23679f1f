//! `AddN` and `ZerosLike` of `variant`: the `TensorList`s of a `while`
//! loop's gradient (a Keras LSTM's `fit`). TF's `TF_AddNVariant` and
//! `TF_ZerosLikeVariant` (`kernels_experimental.h`) walk the lists and call
//! back once per element; the callbacks add or zero that element on the
//! device. Without these kernels the two ops ran on the CPU, and each
//! iteration of the loop copied every element of the list to the host and
//! back (a BiLSTM's step: 5 284 copies of 4 KiB, `docs/benchmarks.md`).
//!
//! A float32 element is added by the device's `Add`; an element of another
//! type (rare: gradients are floats) is added on the host, as TF's CPU
//! kernel adds it. Zeros are a device fill, whatever the type.

use super::host_add::{add_on_host, bytes_of};
use super::kernel::{Op, is_empty};
use crate::error::Error;
use crate::ffi::{self, tf_api};
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::launch::Launcher;
use crate::kernels::tf::{Context, Status, Tensor};
use std::cell::Cell;
use std::ffi::{CStr, c_void};
use tensorplug_abi::tf::{TF_DataType, TF_OpKernelContext, TF_Tensor};
use tensorplug_core::accelerator::{Binary, DType, OpKind};

/// Which of the two.
pub enum VariantOp {
    /// `AddN` of `TensorList`s: the lists' elements added pairwise.
    AddN,
    /// `ZerosLike` of a `TensorList`: a list of zeros of its shapes.
    ZerosLike,
}

/// The kernels.
pub static KERNELS: [VariantOp; 2] = [VariantOp::AddN, VariantOp::ZerosLike];

const ADD: OpKind = OpKind::Binary(Binary::ADD);

impl Op for VariantOp {
    type Attrs = ();

    fn op(&self) -> &'static CStr {
        match self {
            Self::AddN => c"AddN",
            Self::ZerosLike => c"ZerosLike",
        }
    }

    fn family(&self) -> Option<OpKind> {
        match self {
            Self::AddN => Some(ADD),
            Self::ZerosLike => None,
        }
    }

    fn registers_f32(&self) -> bool {
        false
    }

    fn more_types(&self) -> &'static [TF_DataType] {
        &[TF_DataType::TF_VARIANT]
    }

    fn available(&self) -> bool {
        tf_api::kernel_api().is_ok_and(|api| match self {
            Self::AddN => api.add_n_variant.is_some(),
            Self::ZerosLike => api.zeros_like_variant.is_some(),
        })
    }

    fn compute(&self, (): &(), ctx: &Context, run: &mut Launcher<'_>) -> KernelResult<()> {
        let api = tf_api::kernel_api()?;
        let status = Status::new()?;
        let raw = ctx.raw();
        with_launcher(run, || match self {
            // SAFETY: live context and status; the callbacks have TF's
            // signatures and run inside this call, on this thread.
            Self::AddN => api.add_n_variant.map(|f| unsafe {
                f(raw, Some(add_elements), status.fresh());
            }),
            // SAFETY: as above.
            Self::ZerosLike => api.zeros_like_variant.map(|f| unsafe {
                f(raw, Some(zero_element), status.fresh());
            }),
        })
        .ok_or_else(|| Failure::from(Error::TfApiMissing("TF_AddNVariant".into())))?;
        status.check(match self {
            Self::AddN => "TF_AddNVariant",
            Self::ZerosLike => "TF_ZerosLikeVariant",
        })
    }
}

thread_local! {
    /// The launcher of the variant kernel computing on this thread, for
    /// TF's per-element callbacks, which run inside its call.
    static LAUNCHER: Cell<*mut c_void> = const { Cell::new(std::ptr::null_mut()) };
}

/// Runs `body` with `run` reachable from the element callbacks.
fn with_launcher<R>(run: &mut Launcher<'_>, body: impl FnOnce() -> R) -> R {
    struct Restore(*mut c_void);
    impl Drop for Restore {
        fn drop(&mut self) {
            LAUNCHER.with(|slot| slot.set(self.0));
        }
    }
    let this: *mut Launcher<'_> = run;
    let _restore = Restore(LAUNCHER.with(|slot| slot.replace(this.cast())));
    body()
}

/// One element callback: adopts TF's tensors (the callee deletes them),
/// runs `body` on the kernel's launcher and reports a failure on `ctx`.
fn on_element<const N: usize>(
    ctx: *mut TF_OpKernelContext,
    raw: [*mut TF_Tensor; N],
    op: &'static str,
    body: impl FnOnce(&mut Launcher<'_>, &[Tensor; N]) -> KernelResult<()>,
) {
    ffi::swallow("a variant kernel's element callback", (), || {
        // SAFETY: TF's live context for the kernel's call.
        let context = unsafe { Context::new(ctx) }.map_err(|f| Error::Internal(f.cause))?;
        let outcome = ffi::run("a variant kernel's element callback", || {
            // SAFETY: TF hands each tensor over (`kernels_experimental.h`);
            // all are adopted first, so each is deleted whatever fails.
            let adopted = raw.map(|t| unsafe { Tensor::adopt(t) });
            let tensors = adopted
                .into_iter()
                .collect::<KernelResult<Vec<Tensor>>>()
                .and_then(|all| {
                    <[Tensor; N]>::try_from(all).map_err(|_| Failure::invalid("element count"))
                });
            let ptr = LAUNCHER.with(Cell::get).cast::<Launcher<'_>>();
            // SAFETY: set by `with_launcher`, whose borrow is live (TF calls
            // back inside it, on this thread) and idle meanwhile.
            let Some(run) = (unsafe { ptr.as_mut() }) else {
                return Ok(Err(Failure::from(Error::Internal(
                    "a variant callback outside its kernel".into(),
                ))));
            };
            Ok(tensors.and_then(|t| body(run, &t)))
        })
        .unwrap_or_else(|panic| Err(Failure::from(panic)));
        if let Err(failure) = outcome {
            context.fail(failure.code, &failure.message(op, context.node_name()));
        }
        Ok(())
    });
}

/// `out = a + b`, one pair of list elements.
unsafe extern "C" fn add_elements(
    ctx: *mut TF_OpKernelContext,
    a: *mut TF_Tensor,
    b: *mut TF_Tensor,
    out: *mut TF_Tensor,
) {
    on_element(ctx, [a, b, out], "AddN", |run, [a, b, out]| {
        let shape = a.shape()?;
        if b.shape()? != shape || out.shape()? != shape || b.dtype() != a.dtype() {
            return Err(Failure::invalid(format!(
                "list elements of {:?} {:?} and {:?} {:?} cannot be added",
                a.dtype(),
                shape.dims(),
                b.dtype(),
                b.shape()?.dims()
            )));
        }
        if is_empty(&shape) {
            return Ok(());
        }
        if a.dtype() == TF_DataType::TF_FLOAT {
            let (x, y, z) = (
                run.desc(a, shape)?,
                run.desc(b, shape)?,
                run.desc(out, shape)?,
            );
            return run.launch(ADD, &[x, y], z);
        }
        add_on_host(run, a, b, out)
    });
}

/// `out = 0`, one list element.
unsafe extern "C" fn zero_element(
    ctx: *mut TF_OpKernelContext,
    input: *mut TF_Tensor,
    out: *mut TF_Tensor,
) {
    on_element(ctx, [input, out], "ZerosLike", |run, [_, out]| {
        let bytes = bytes_of(out)?;
        if is_empty(&bytes) {
            return Ok(());
        }
        run.fill(run.typed_desc(out, bytes, DType::I8)?, 0)
    });
}
