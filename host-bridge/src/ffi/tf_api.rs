//! TensorFlow's own C functions (`TF_SetStatus`, `TF_NewStatus`, …), resolved
//! lazily with `dlsym` ([`lookup`]).
//!
//! They live in `libtensorflow_framework.so.2` and `libtensorflow_cc.so.2`,
//! which TF's Python has loaded before it loads a plugin (`RTLD_GLOBAL` from
//! TF 2.19, `RTLD_LOCAL` before). Nothing
//! links against TF: the cdylib has no undefined `TF_*` symbols, and Rust
//! test binaries of the rlib link and run without TF (they [`install`] a
//! table of their own).

use crate::error::{Error, Result};
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;
use tensorplug_abi::tf::{
    SP_Stream, TF_AllocatorAttributes, TF_Bool, TF_Code, TF_DataType, TF_KernelBuilder,
    TF_OpKernelConstruction, TF_OpKernelContext, TF_Status, TF_StringView, TF_Tensor,
};

/// The TF functions the bridge calls.
#[derive(Clone, Copy, Debug)]
pub struct TfApi {
    /// `void TF_SetStatus(TF_Status*, TF_Code, const char*)`.
    pub set_status: unsafe extern "C" fn(*mut TF_Status, TF_Code, *const c_char),
    /// `TF_Code TF_GetCode(const TF_Status*)`.
    pub get_code: unsafe extern "C" fn(*const TF_Status) -> TF_Code,
    /// `const char* TF_Message(const TF_Status*)`.
    pub message: unsafe extern "C" fn(*const TF_Status) -> *const c_char,
    /// `TF_Status* TF_NewStatus(void)`.
    pub new_status: unsafe extern "C" fn() -> *mut TF_Status,
    /// `void TF_DeleteStatus(TF_Status*)`.
    pub delete_status: unsafe extern "C" fn(*mut TF_Status),
}

static API: OnceLock<std::result::Result<TfApi, String>> = OnceLock::new();

/// Installs `api` instead of looking the functions up (tests, embedders).
/// Returns `false` if a table was already resolved or installed.
#[cfg(test)]
pub fn install(api: TfApi) -> bool {
    API.set(Ok(api)).is_ok()
}

/// The resolved table, or an error naming the first missing symbol.
pub fn api() -> Result<&'static TfApi> {
    API.get_or_init(resolve)
        .as_ref()
        .map_err(|missing| Error::TfApiMissing(missing.clone()))
}

fn resolve() -> std::result::Result<TfApi, String> {
    // SAFETY: each symbol gets the signature tf_status.h declares for it.
    unsafe {
        Ok(TfApi {
            set_status: symbol(c"TF_SetStatus")?,
            get_code: symbol(c"TF_GetCode")?,
            message: symbol(c"TF_Message")?,
            new_status: symbol(c"TF_NewStatus")?,
            delete_status: symbol(c"TF_DeleteStatus")?,
        })
    }
}

/// The libraries TF's C API lives in, by soname: the functions of
/// `kernels.h`, `tf_tensor.h` and `tf_status.h` in the framework, the
/// grappler and `c_api.h` helpers (`TF_Version`) in `cc`.
const TF_LIBRARIES: [&CStr; 2] = [c"libtensorflow_framework.so.2", c"libtensorflow_cc.so.2"];

/// The address of TF's C function `name`: in the global scope (TF 2.19 and
/// later load their libraries `RTLD_GLOBAL`), else in TF's own libraries,
/// which TF 2.15–2.18 load `RTLD_LOCAL` (found with `RTLD_NOLOAD`: never
/// loaded by us, only looked up once TF has loaded them). `docs/tf-abi.md`.
pub fn lookup(name: &CStr) -> std::result::Result<*mut c_void, String> {
    // SAFETY: `name` is NUL-terminated; RTLD_DEFAULT searches the global scope.
    let global = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    if !global.is_null() {
        return Ok(global);
    }
    for library in TF_LIBRARIES {
        // SAFETY: NUL-terminated soname; RTLD_NOLOAD only finds a loaded one.
        let handle = unsafe { libc::dlopen(library.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
        if handle.is_null() {
            continue;
        }
        // SAFETY: a live handle (its reference stays: TF keeps the library
        // loaded for the life of the process anyway) and a NUL-terminated name.
        let address = unsafe { libc::dlsym(handle, name.as_ptr()) };
        if !address.is_null() {
            return Ok(address);
        }
    }
    Err(name.to_string_lossy().into_owned())
}

/// [`lookup`] as a function of type `F`.
///
/// # Safety
/// `F` must be a function pointer type matching the symbol's C signature.
unsafe fn symbol<F: Copy>(name: &CStr) -> std::result::Result<F, String> {
    const { assert!(size_of::<F>() == size_of::<*mut c_void>()) };
    let address = lookup(name)?;
    // SAFETY: non-null code address; the caller guarantees the signature.
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&address) })
}

/// TF's async kernels (`kernels.h`): `TF_NewAsyncKernelBuilder` and
/// `TF_RunAsyncOpKernelDoneCallback`. The last argument of the compute
/// callback is TF's `TF_AsyncOpKernelDoneCallback`, run once.
#[derive(Clone, Copy, Debug)]
#[allow(clippy::type_complexity)]
pub struct AsyncKernelApi {
    pub new_builder: unsafe extern "C" fn(
        *const c_char,
        *const c_char,
        Option<unsafe extern "C" fn(*mut TF_OpKernelConstruction) -> *mut c_void>,
        Option<unsafe extern "C" fn(*mut c_void, *mut TF_OpKernelContext, *mut c_void)>,
        Option<unsafe extern "C" fn(*mut c_void)>,
    ) -> *mut TF_KernelBuilder,
    pub run_done: unsafe extern "C" fn(*mut c_void),
}

/// TF's kernel and tensor functions (`kernels.h`, `tf_tensor.h`), used by
/// [`crate::kernels`]. A table of its own so that [`TfApi`] stays small.
#[derive(Clone, Copy, Debug)]
#[allow(clippy::type_complexity)]
pub struct KernelApi {
    pub new_kernel_builder: unsafe extern "C" fn(
        *const c_char,
        *const c_char,
        Option<unsafe extern "C" fn(*mut TF_OpKernelConstruction) -> *mut c_void>,
        Option<unsafe extern "C" fn(*mut c_void, *mut TF_OpKernelContext)>,
        Option<unsafe extern "C" fn(*mut c_void)>,
    ) -> *mut TF_KernelBuilder,
    pub type_constraint:
        unsafe extern "C" fn(*mut TF_KernelBuilder, *const c_char, TF_DataType, *mut TF_Status),
    pub host_memory: unsafe extern "C" fn(*mut TF_KernelBuilder, *const c_char),
    pub register_kernel_builder:
        unsafe extern "C" fn(*const c_char, *mut TF_KernelBuilder, *mut TF_Status),
    /// `TF_RegisterKernelBuilderWithKernelDef` (a kernel with integer
    /// attribute constraints; `None` if TF lacks it).
    pub register_with_kernel_def: Option<
        unsafe extern "C" fn(*const c_char, *const c_char, *mut TF_KernelBuilder, *mut TF_Status),
    >,
    pub delete_kernel_builder: unsafe extern "C" fn(*mut TF_KernelBuilder),
    /// Async kernels; `None` if TF lacks either function.
    pub async_kernels: Option<AsyncKernelApi>,
    pub construction_failure: unsafe extern "C" fn(*mut TF_OpKernelConstruction, *mut TF_Status),
    pub construction_name: unsafe extern "C" fn(*mut TF_OpKernelConstruction) -> TF_StringView,
    pub get_attr_bool: unsafe extern "C" fn(
        *mut TF_OpKernelConstruction,
        *const c_char,
        *mut TF_Bool,
        *mut TF_Status,
    ),
    pub get_attr_int32:
        unsafe extern "C" fn(*mut TF_OpKernelConstruction, *const c_char, *mut i32, *mut TF_Status),
    /// Optional: only the stateful `RandomUniform` reads its int64 seeds,
    /// so a TF without it loses that kernel (an error at construction).
    pub get_attr_int64: Option<
        unsafe extern "C" fn(*mut TF_OpKernelConstruction, *const c_char, *mut i64, *mut TF_Status),
    >,
    /// Optional: only `FusedBatchNormV3` reads a float attribute, so a TF
    /// without it loses that kernel (an error at construction naming it).
    pub get_attr_float: Option<
        unsafe extern "C" fn(*mut TF_OpKernelConstruction, *const c_char, *mut f32, *mut TF_Status),
    >,
    pub get_attr_int64_list: unsafe extern "C" fn(
        *mut TF_OpKernelConstruction,
        *const c_char,
        *mut i64,
        c_int,
        *mut TF_Status,
    ),
    pub get_attr_size: unsafe extern "C" fn(
        *mut TF_OpKernelConstruction,
        *const c_char,
        *mut i32,
        *mut i32,
        *mut TF_Status,
    ),
    pub get_attr_string: unsafe extern "C" fn(
        *mut TF_OpKernelConstruction,
        *const c_char,
        *mut c_char,
        usize,
        *mut TF_Status,
    ),
    pub get_attr_string_list: unsafe extern "C" fn(
        *mut TF_OpKernelConstruction,
        *const c_char,
        *mut *mut c_char,
        *mut usize,
        c_int,
        *mut c_void,
        usize,
        *mut TF_Status,
    ),
    pub get_stream: unsafe extern "C" fn(*mut TF_OpKernelContext, *mut TF_Status) -> SP_Stream,
    pub num_inputs: unsafe extern "C" fn(*mut TF_OpKernelContext) -> c_int,
    pub get_input:
        unsafe extern "C" fn(*mut TF_OpKernelContext, c_int, *mut *mut TF_Tensor, *mut TF_Status),
    pub forward_input_or_allocate_output: unsafe extern "C" fn(
        *mut TF_OpKernelContext,
        *const c_int,
        c_int,
        c_int,
        *const i64,
        c_int,
        *mut c_int,
        *mut TF_Status,
    ) -> *mut TF_Tensor,
    pub allocate_temp: unsafe extern "C" fn(
        *mut TF_OpKernelContext,
        TF_DataType,
        *const i64,
        c_int,
        *mut TF_AllocatorAttributes,
        *mut TF_Status,
    ) -> *mut TF_Tensor,
    pub set_output:
        unsafe extern "C" fn(*mut TF_OpKernelContext, c_int, *const TF_Tensor, *mut TF_Status),
    pub context_failure: unsafe extern "C" fn(*mut TF_OpKernelContext, *mut TF_Status),
    pub op_kernel_name: unsafe extern "C" fn(*mut TF_OpKernelContext) -> TF_StringView,
    pub tensor_data: unsafe extern "C" fn(*const TF_Tensor) -> *mut c_void,
    pub num_dims: unsafe extern "C" fn(*const TF_Tensor) -> c_int,
    pub dim: unsafe extern "C" fn(*const TF_Tensor, c_int) -> i64,
    pub tensor_type: unsafe extern "C" fn(*const TF_Tensor) -> TF_DataType,
    pub tensor_byte_size: unsafe extern "C" fn(*const TF_Tensor) -> usize,
    pub delete_tensor: unsafe extern "C" fn(*mut TF_Tensor),
    /// `TF_AddNVariant` (`kernels_experimental.h`; `None` if TF lacks it:
    /// no `AddN` of `variant` is registered then).
    pub add_n_variant: Option<
        unsafe extern "C" fn(
            *mut TF_OpKernelContext,
            Option<
                unsafe extern "C" fn(
                    *mut TF_OpKernelContext,
                    *mut TF_Tensor,
                    *mut TF_Tensor,
                    *mut TF_Tensor,
                ),
            >,
            *mut TF_Status,
        ),
    >,
    /// `TF_ZerosLikeVariant`, likewise.
    pub zeros_like_variant: Option<
        unsafe extern "C" fn(
            *mut TF_OpKernelContext,
            Option<unsafe extern "C" fn(*mut TF_OpKernelContext, *mut TF_Tensor, *mut TF_Tensor)>,
            *mut TF_Status,
        ),
    >,
}

static KERNEL_API: OnceLock<std::result::Result<KernelApi, String>> = OnceLock::new();

/// The resolved kernel table, or an error naming the first missing symbol.
pub fn kernel_api() -> Result<&'static KernelApi> {
    KERNEL_API
        .get_or_init(resolve_kernel_api)
        .as_ref()
        .map_err(|missing| Error::TfApiMissing(missing.clone()))
}

fn resolve_kernel_api() -> std::result::Result<KernelApi, String> {
    // SAFETY: each symbol gets the signature kernels.h / tf_tensor.h declare.
    unsafe {
        Ok(KernelApi {
            new_kernel_builder: symbol(c"TF_NewKernelBuilder")?,
            type_constraint: symbol(c"TF_KernelBuilder_TypeConstraint")?,
            host_memory: symbol(c"TF_KernelBuilder_HostMemory")?,
            register_kernel_builder: symbol(c"TF_RegisterKernelBuilder")?,
            register_with_kernel_def: symbol(c"TF_RegisterKernelBuilderWithKernelDef").ok(),
            delete_kernel_builder: symbol(c"TF_DeleteKernelBuilder")?,
            async_kernels: symbol(c"TF_NewAsyncKernelBuilder")
                .and_then(|new_builder| {
                    Ok(AsyncKernelApi {
                        new_builder,
                        run_done: symbol(c"TF_RunAsyncOpKernelDoneCallback")?,
                    })
                })
                .ok(),
            construction_failure: symbol(c"TF_OpKernelConstruction_Failure")?,
            construction_name: symbol(c"TF_OpKernelConstruction_GetName")?,
            get_attr_bool: symbol(c"TF_OpKernelConstruction_GetAttrBool")?,
            get_attr_int32: symbol(c"TF_OpKernelConstruction_GetAttrInt32")?,
            get_attr_int64: symbol(c"TF_OpKernelConstruction_GetAttrInt64").ok(),
            get_attr_float: symbol(c"TF_OpKernelConstruction_GetAttrFloat").ok(),
            get_attr_int64_list: symbol(c"TF_OpKernelConstruction_GetAttrInt64List")?,
            get_attr_size: symbol(c"TF_OpKernelConstruction_GetAttrSize")?,
            get_attr_string: symbol(c"TF_OpKernelConstruction_GetAttrString")?,
            get_attr_string_list: symbol(c"TF_OpKernelConstruction_GetAttrStringList")?,
            get_stream: symbol(c"TF_GetStream")?,
            num_inputs: symbol(c"TF_NumInputs")?,
            get_input: symbol(c"TF_GetInput")?,
            forward_input_or_allocate_output: symbol(c"TF_ForwardInputOrAllocateOutput")?,
            allocate_temp: symbol(c"TF_AllocateTemp")?,
            set_output: symbol(c"TF_SetOutput")?,
            context_failure: symbol(c"TF_OpKernelContext_Failure")?,
            op_kernel_name: symbol(c"TF_GetOpKernelName")?,
            tensor_data: symbol(c"TF_TensorData")?,
            num_dims: symbol(c"TF_NumDims")?,
            dim: symbol(c"TF_Dim")?,
            tensor_type: symbol(c"TF_TensorType")?,
            tensor_byte_size: symbol(c"TF_TensorByteSize")?,
            delete_tensor: symbol(c"TF_DeleteTensor")?,
            add_n_variant: symbol(c"TF_AddNVariant").ok(),
            zeros_like_variant: symbol(c"TF_ZerosLikeVariant").ok(),
        })
    }
}

/// An opaque `TF_OpDefinitionBuilder` (`tensorflow/c/ops.h`).
#[repr(C)]
pub struct TF_OpDefinitionBuilder {
    _opaque: [u8; 0],
}

/// TF's op-definition C API (`tensorflow/c/ops.h`): the int8 ops' TF ops.
pub struct OpsApi {
    pub new_builder: unsafe extern "C" fn(*const c_char) -> *mut TF_OpDefinitionBuilder,
    pub add_input: unsafe extern "C" fn(*mut TF_OpDefinitionBuilder, *const c_char),
    pub add_output: unsafe extern "C" fn(*mut TF_OpDefinitionBuilder, *const c_char),
    pub add_attr: unsafe extern "C" fn(*mut TF_OpDefinitionBuilder, *const c_char),
    pub register: unsafe extern "C" fn(*mut TF_OpDefinitionBuilder, *mut TF_Status),
}

static OPS_API: OnceLock<std::result::Result<OpsApi, String>> = OnceLock::new();

/// The resolved op-definition table, or an error naming the first missing symbol.
pub fn ops_api() -> Result<&'static OpsApi> {
    OPS_API
        .get_or_init(|| {
            // SAFETY: each symbol gets the signature ops.h declares.
            unsafe {
                Ok(OpsApi {
                    new_builder: symbol(c"TF_NewOpDefinitionBuilder")?,
                    add_input: symbol(c"TF_OpDefinitionBuilderAddInput")?,
                    add_output: symbol(c"TF_OpDefinitionBuilderAddOutput")?,
                    add_attr: symbol(c"TF_OpDefinitionBuilderAddAttr")?,
                    register: symbol(c"TF_RegisterOpDefinition")?,
                })
            }
        })
        .as_ref()
        .map_err(|missing| Error::TfApiMissing(missing.clone()))
}

/// A status TF's callbacks write into, deleted on drop.
pub struct OwnedStatus {
    api: &'static TfApi,
    raw: *mut TF_Status,
}

impl OwnedStatus {
    /// `TF_NewStatus()`.
    pub fn new() -> Result<Self> {
        let api = api()?;
        // SAFETY: TF_NewStatus has no preconditions.
        let raw = unsafe { (api.new_status)() };
        if raw.is_null() {
            return Err(Error::Internal("TF_NewStatus returned null".into()));
        }
        Ok(Self { api, raw })
    }

    /// The pointer to hand to TF.
    pub fn as_ptr(&self) -> *mut TF_Status {
        self.raw
    }

    /// `Ok` for `TF_OK`, else the code and TF's message.
    pub fn to_result(&self) -> std::result::Result<(), (TF_Code, String)> {
        // SAFETY: `raw` is a live status from TF_NewStatus.
        let code = unsafe { (self.api.get_code)(self.raw) };
        if code == tensorplug_abi::tf::TF_OK {
            return Ok(());
        }
        // SAFETY: as above; TF_Message returns a NUL-terminated string or null.
        let message = unsafe { (self.api.message)(self.raw) };
        let text = if message.is_null() {
            String::new()
        } else {
            // SAFETY: non-null and NUL-terminated, valid while the status lives.
            unsafe { CStr::from_ptr(message) }
                .to_string_lossy()
                .into_owned()
        };
        Err((code, text))
    }
}

impl Drop for OwnedStatus {
    fn drop(&mut self) {
        // SAFETY: `raw` came from TF_NewStatus and is deleted once.
        unsafe { (self.api.delete_status)(self.raw) }
    }
}
