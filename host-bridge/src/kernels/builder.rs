//! TF's kernel builder (`TF_NewKernelBuilder` … `TF_RegisterKernelBuilder`)
//! as one owner: every kernel the plugin registers goes through it, and a
//! builder that is not registered is deleted, whatever fails first.

use crate::ffi::tf_api::{self, KernelApi};
use crate::kernels::failure::{Failure, KernelResult};
use crate::kernels::tf::Status;
use std::ffi::{CStr, CString, c_void};
use tensorplug_abi::tf::{
    TF_DataType, TF_KernelBuilder, TF_OpKernelConstruction, TF_OpKernelContext,
};

/// A kernel's `create` callback.
pub type CreateFn = unsafe extern "C" fn(*mut TF_OpKernelConstruction) -> *mut c_void;
/// A kernel's `compute` callback.
pub type ComputeFn = unsafe extern "C" fn(*mut c_void, *mut TF_OpKernelContext);
/// A kernel's `delete` callback.
pub type DeleteFn = unsafe extern "C" fn(*mut c_void);
/// An async kernel's `compute_async` callback (the last argument is TF's
/// `TF_AsyncOpKernelDoneCallback`).
pub type ComputeAsyncFn = unsafe extern "C" fn(*mut c_void, *mut TF_OpKernelContext, *mut c_void);

/// A kernel of op `op` on `device`, not registered yet.
pub struct KernelBuilder {
    api: &'static KernelApi,
    status: Status,
    builder: *mut TF_KernelBuilder,
}

impl KernelBuilder {
    /// `TF_NewKernelBuilder`; the callbacks must have TF's signatures,
    /// which their types give.
    pub fn new(
        op: &CStr,
        device: &CStr,
        create: CreateFn,
        compute: ComputeFn,
        delete: DeleteFn,
    ) -> KernelResult<Self> {
        let api = tf_api::kernel_api()?;
        // SAFETY: NUL-terminated names (TF copies them); our callbacks.
        let builder = unsafe {
            (api.new_kernel_builder)(
                op.as_ptr(),
                device.as_ptr(),
                Some(create),
                Some(compute),
                Some(delete),
            )
        };
        Self::owning(api, builder, "TF_NewKernelBuilder")
    }

    /// Owns `builder`, which `what` returned (deleting it if no status
    /// can be made for it).
    fn owning(
        api: &'static KernelApi,
        builder: *mut TF_KernelBuilder,
        what: &str,
    ) -> KernelResult<Self> {
        if builder.is_null() {
            return Err(Failure::invalid(format!("{what} returned null")));
        }
        match Status::new() {
            Ok(status) => Ok(Self {
                api,
                status,
                builder,
            }),
            Err(failure) => {
                // SAFETY: ours, not handed to TF.
                unsafe { (api.delete_kernel_builder)(builder) };
                Err(failure)
            }
        }
    }

    /// `TF_NewAsyncKernelBuilder`; `None` when TF lacks async kernels.
    pub fn new_async(
        op: &CStr,
        device: &CStr,
        create: CreateFn,
        compute: ComputeAsyncFn,
        delete: DeleteFn,
    ) -> KernelResult<Option<Self>> {
        let api = tf_api::kernel_api()?;
        let Some(async_api) = api.async_kernels else {
            return Ok(None);
        };
        // SAFETY: NUL-terminated names (TF copies them); our callbacks.
        let builder = unsafe {
            (async_api.new_builder)(
                op.as_ptr(),
                device.as_ptr(),
                Some(create),
                Some(compute),
                Some(delete),
            )
        };
        Self::owning(api, builder, "TF_NewAsyncKernelBuilder").map(Some)
    }

    /// `TF_KernelBuilder_TypeConstraint`.
    pub fn type_constraint(&mut self, attr: &CStr, dtype: TF_DataType) -> KernelResult<()> {
        // SAFETY: our live builder and status; TF copies the name.
        unsafe {
            (self.api.type_constraint)(self.builder, attr.as_ptr(), dtype, self.status.fresh())
        };
        self.status.check("TF_KernelBuilder_TypeConstraint")
    }

    /// `TF_KernelBuilder_HostMemory`.
    pub fn host_memory(&mut self, arg: &CStr) {
        // SAFETY: our live builder; TF copies the name.
        unsafe { (self.api.host_memory)(self.builder, arg.as_ptr()) };
    }

    /// `TF_RegisterKernelBuilder` as `name`, or, with `def` (a serialized
    /// `KernelDef`) and a TF that has it,
    /// `TF_RegisterKernelBuilderWithKernelDef`.
    pub fn register(mut self, name: &str, def: Option<&CStr>) -> KernelResult<()> {
        let name = CString::new(name).map_err(|_| Failure::invalid("kernel name with NUL"))?;
        // TF owns the builder from here, whatever the outcome.
        let builder = std::mem::replace(&mut self.builder, std::ptr::null_mut());
        match (def, self.api.register_with_kernel_def) {
            (Some(def), Some(register)) => {
                // SAFETY: TF takes the builder and copies the def and name.
                unsafe { register(def.as_ptr(), name.as_ptr(), builder, self.status.fresh()) };
                self.status.check("TF_RegisterKernelBuilderWithKernelDef")
            }
            _ => {
                // SAFETY: TF takes the builder and copies the name.
                unsafe {
                    (self.api.register_kernel_builder)(name.as_ptr(), builder, self.status.fresh())
                };
                self.status.check("TF_RegisterKernelBuilder")
            }
        }
    }
}

impl Drop for KernelBuilder {
    fn drop(&mut self) {
        if !self.builder.is_null() {
            // SAFETY: ours, never handed to TF (`register` nulls it first).
            unsafe { (self.api.delete_kernel_builder)(self.builder) };
        }
    }
}
