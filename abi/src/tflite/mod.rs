//! `#[repr(C)]` mirrors of TFLite's delegate C ABI
//! (`tensorflow/lite/core/c/common.h`, `c_api_types.h`, `builtin_op_data.h`),
//! for an external delegate (`docs/delegate.md`).
//!
//! Nothing here links against a TFLite symbol: the runtime hands us every
//! struct and every function pointer. Field names are the C names; every
//! struct records its field table ([`STRUCTS`]) like the TF mirrors
//! ([`crate::tf::layout`]), and the LP64 sizes and offsets below are
//! compile-time facts read off the header (tensorflow/tensorflow
//! `3ca3029d`, `common.h`).
//!
//! # Versions
//! `common.h` calls its structs "semi-ABI stable": fields are appended,
//! never reordered. What that means for TF 2.15 … 2.21:
//! - [`TfLiteRegistration`] is passed **by value** to
//!   `ReplaceNodeSubsetsWithDelegateKernels`, so its size is part of the
//!   call. It grew over versions: [`TfLiteRegistration_V1`] (up to
//!   `version`), `_V2` (+`registration_external`), `_V3` (+`async_kernel`),
//!   and today's (+`inplace_operator`, 88 bytes on LP64). A delegate built
//!   against a prefix would have the runtime read past the struct it
//!   pushed; `tensorplug-delegate` always passes the full 88-byte struct
//!   with the new fields zeroed (their "absent" value), which an older
//!   runtime reads a prefix of. Verified to work on the runtimes of TF
//!   2.15.1, 2.21.0 and ai-edge-litert 2.3.0; that every header from 2.15
//!   on ends at `inplace_operator` is believed, not checked against them.
//! - [`TfLiteContext`] only grew at its end (on Windows only, since 2023);
//!   we read it and never allocate one, so a longer runtime struct is fine,
//!   a shorter one is not: the delegate checks the function pointers it
//!   calls before calling them.
//! - [`TfLiteTensor`] is an array element (`context->tensors`), so its size
//!   must match exactly: the delegate proves it at run time against the
//!   runtime's own `GetTensor` before reading any tensor.
//! - `TfLiteFloatArray` (per-channel scales) changed shape in the newest
//!   sources (`float* data; int size; bool owning`, was `int size; float
//!   data[]`): it is not mirrored, and nothing here reads per-channel
//!   quantization yet.
#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals)]

mod builtin;

pub use builtin::*;

use crate::tf::layout::{CEnum, CStruct, EnumLayout, StructLayout, c_enum, c_struct};
use core::ffi::{c_char, c_int, c_void};

c_enum! {
    /// `TfLiteStatus` (c_api_types.h).
    pub struct TfLiteStatus(i32) {
        kTfLiteOk = 0,
        kTfLiteError = 1,
        kTfLiteDelegateError = 2,
        kTfLiteApplicationError = 3,
        kTfLiteDelegateDataNotFound = 4,
        kTfLiteDelegateDataWriteError = 5,
        kTfLiteDelegateDataReadError = 6,
        kTfLiteUnresolvedOps = 7,
        kTfLiteCancelled = 8,
    }
}

c_enum! {
    /// `TfLiteType` (c_api_types.h): a tensor element type. Values only
    /// ever get added, so an unknown one is carried as is.
    pub struct TfLiteType(i32) {
        kTfLiteNoType = 0,
        kTfLiteFloat32 = 1,
        kTfLiteInt32 = 2,
        kTfLiteUInt8 = 3,
        kTfLiteInt64 = 4,
        kTfLiteString = 5,
        kTfLiteBool = 6,
        kTfLiteInt16 = 7,
        kTfLiteComplex64 = 8,
        kTfLiteInt8 = 9,
        kTfLiteFloat16 = 10,
        kTfLiteFloat64 = 11,
        kTfLiteComplex128 = 12,
        kTfLiteUInt64 = 13,
        kTfLiteResource = 14,
        kTfLiteVariant = 15,
        kTfLiteUInt32 = 16,
        kTfLiteUInt16 = 17,
        kTfLiteInt4 = 18,
        kTfLiteBFloat16 = 19,
    }
}

c_enum! {
    /// `TfLiteAllocationType` (common.h): `kTfLiteMmapRo` marks the model's
    /// read-only constants (weights).
    pub struct TfLiteAllocationType(i32) {
        kTfLiteMemNone = 0,
        kTfLiteMmapRo = 1,
        kTfLiteArenaRw = 2,
        kTfLiteArenaRwPersistent = 3,
        kTfLiteDynamic = 4,
        kTfLitePersistentRo = 5,
        kTfLiteCustom = 6,
        kTfLiteVariantObject = 7,
        kTfLiteNonCpu = 8,
    }
}

c_enum! {
    /// `TfLiteQuantizationType` (common.h).
    pub struct TfLiteQuantizationType(i32) {
        kTfLiteNoQuantization = 0,
        kTfLiteAffineQuantization = 1,
        kTfLiteBlockwiseQuantization = 2,
        kTfLiteMultiAxisQuantization = 3,
    }
}

/// `TfLiteDelegateFlags` (common.h), a bitmask in `TfLiteDelegate::flags`.
pub const kTfLiteDelegateFlagsNone: i64 = 0;
pub const kTfLiteDelegateFlagsAllowDynamicTensors: i64 = 1;
pub const kTfLiteDelegateFlagsRequirePropagatedShapes: i64 = 2;
pub const kTfLiteDelegateFlagsPerOperatorProfiling: i64 = 4;
/// `kTfLiteOptionalTensor`: an absent optional input.
pub const kTfLiteOptionalTensor: c_int = -1;

c_struct! {
    /// `TfLiteIntArray`: `int size;` then a flexible `int data[]` (read it
    /// with [`TfLiteIntArray::as_slice`]).
    pub struct TfLiteIntArray {
        pub size: c_int,
    }
}

impl TfLiteIntArray {
    /// The `size` ints after the header.
    ///
    /// # Safety
    /// `self` must be a live `TfLiteIntArray` of the runtime's, with
    /// `size` ints after it, not written while the slice lives.
    pub unsafe fn as_slice(&self) -> &[c_int] {
        let len = usize::try_from(self.size).unwrap_or(0);
        // SAFETY: the caller's contract; `data` starts right after `size`
        // (offset 4, int-aligned).
        unsafe { core::slice::from_raw_parts((self as *const Self).cast::<c_int>().add(1), len) }
    }
}

c_struct! {
    /// `TfLiteQuantizationParams` (c_api_types.h): per-tensor affine
    /// quantization, `real = scale · (q − zero_point)`.
    pub struct TfLiteQuantizationParams {
        pub scale: f32,
        pub zero_point: i32,
    }
}

c_struct! {
    /// `TfLiteQuantization`: `params` points to a
    /// [`TfLiteAffineQuantization`] when `type` is affine.
    pub struct TfLiteQuantization {
        pub r#type: TfLiteQuantizationType,
        pub params: *mut c_void,
    }
}

c_struct! {
    /// `TfLiteAffineQuantization`. `scale` is a `TfLiteFloatArray*`, whose
    /// layout differs between runtime versions (module docs): opaque here.
    pub struct TfLiteAffineQuantization {
        pub scale: *mut c_void,
        pub zero_point: *mut TfLiteIntArray,
        pub quantized_dimension: i32,
    }
}

c_struct! {
    /// `TfLiteTensor` (the full, non-`TF_LITE_STATIC_MEMORY` one). `data`
    /// is `TfLitePtrUnion`, a union of pointers: one `void*` here.
    pub struct TfLiteTensor {
        pub r#type: TfLiteType,
        pub data: *mut c_void,
        pub dims: *mut TfLiteIntArray,
        pub params: TfLiteQuantizationParams,
        pub allocation_type: TfLiteAllocationType,
        pub bytes: usize,
        pub allocation: *const c_void,
        pub name: *const c_char,
        pub delegate: *mut TfLiteDelegate,
        pub buffer_handle: c_int,
        pub data_is_stale: bool,
        pub is_variable: bool,
        pub quantization: TfLiteQuantization,
        pub sparsity: *mut c_void,
        pub dims_signature: *const TfLiteIntArray,
    }
}

c_struct! {
    /// `TfLiteNode` (the full one).
    pub struct TfLiteNode {
        pub inputs: *mut TfLiteIntArray,
        pub outputs: *mut TfLiteIntArray,
        pub intermediates: *mut TfLiteIntArray,
        pub temporaries: *mut TfLiteIntArray,
        pub user_data: *mut c_void,
        pub builtin_data: *mut c_void,
        pub custom_initial_data: *const c_void,
        pub custom_initial_data_size: c_int,
        pub delegate: *mut TfLiteDelegate,
        pub might_have_side_effect: bool,
    }
}

c_struct! {
    /// `TfLiteDelegateParams`: one partition, as `builtin_data` of the
    /// delegate kernel's node (and the `buffer` of its `init`).
    pub struct TfLiteDelegateParams {
        pub delegate: *mut TfLiteDelegate,
        pub nodes_to_replace: *mut TfLiteIntArray,
        pub input_tensors: *mut TfLiteIntArray,
        pub output_tensors: *mut TfLiteIntArray,
    }
}

type Ctx = *mut TfLiteContext;

c_struct! {
    /// `TfLiteContext` (without the two `_WIN32`-only pointers at its end).
    pub struct TfLiteContext {
        pub tensors_size: usize,
        pub GetExecutionPlan:
            Option<unsafe extern "C" fn(context: Ctx, plan: *mut *mut TfLiteIntArray) -> TfLiteStatus>,
        pub tensors: *mut TfLiteTensor,
        pub impl_: *mut c_void,
        pub ResizeTensor: Option<
            unsafe extern "C" fn(context: Ctx, tensor: *mut TfLiteTensor, new_size: *mut TfLiteIntArray) -> TfLiteStatus,
        >,
        pub ReportError: Option<unsafe extern "C" fn(context: Ctx, msg: *const c_char, ...)>,
        pub AddTensors:
            Option<unsafe extern "C" fn(context: Ctx, tensors_to_add: c_int, first: *mut c_int) -> TfLiteStatus>,
        pub GetNodeAndRegistration: Option<
            unsafe extern "C" fn(
                context: Ctx,
                node_index: c_int,
                node: *mut *mut TfLiteNode,
                registration: *mut *mut TfLiteRegistration,
            ) -> TfLiteStatus,
        >,
        /// Takes the registration **by value** (module docs).
        pub ReplaceNodeSubsetsWithDelegateKernels: Option<
            unsafe extern "C" fn(
                context: Ctx,
                registration: TfLiteRegistration,
                nodes_to_replace: *const TfLiteIntArray,
                delegate: *mut TfLiteDelegate,
            ) -> TfLiteStatus,
        >,
        pub recommended_num_threads: c_int,
        pub GetExternalContext: Option<unsafe extern "C" fn(context: Ctx, kind: c_int) -> *mut c_void>,
        pub SetExternalContext: Option<unsafe extern "C" fn(context: Ctx, kind: c_int, external: *mut c_void)>,
        pub allow_fp32_relax_to_fp16: bool,
        pub profiler: *mut c_void,
        pub AllocatePersistentBuffer: Option<unsafe extern "C" fn(context: Ctx, bytes: usize) -> *mut c_void>,
        pub AllocateBufferForEval:
            Option<unsafe extern "C" fn(context: Ctx, bytes: usize, ptr: *mut *mut c_void) -> TfLiteStatus>,
        pub RequestScratchBufferInArena:
            Option<unsafe extern "C" fn(context: Ctx, bytes: usize, buffer_idx: *mut c_int) -> TfLiteStatus>,
        pub GetScratchBuffer: Option<unsafe extern "C" fn(context: Ctx, buffer_idx: c_int) -> *mut c_void>,
        pub ResizeTensorExplicit: Option<
            unsafe extern "C" fn(context: Ctx, tensor: *mut TfLiteTensor, dims: c_int, shape: *const c_int) -> TfLiteStatus,
        >,
        pub PreviewDelegatePartitioning: Option<
            unsafe extern "C" fn(
                context: Ctx,
                nodes_to_replace: *const TfLiteIntArray,
                partition_params_array: *mut *mut TfLiteDelegateParams,
                num_partitions: *mut c_int,
            ) -> TfLiteStatus,
        >,
        pub GetTensor: Option<unsafe extern "C" fn(context: *const TfLiteContext, tensor_idx: c_int) -> *mut TfLiteTensor>,
        pub GetEvalTensor: Option<unsafe extern "C" fn(context: *const TfLiteContext, tensor_idx: c_int) -> *mut c_void>,
        pub GetModelMetadata: Option<
            unsafe extern "C" fn(
                context: *const TfLiteContext,
                name: *const c_char,
                ptr: *mut *const c_char,
                bytes: *mut usize,
            ) -> TfLiteStatus,
        >,
        pub AcquireSubgraphContext:
            Option<unsafe extern "C" fn(context: Ctx, subgraph_index: c_int, acquired: *mut Ctx) -> TfLiteStatus>,
        pub ReleaseSubgraphContext: Option<unsafe extern "C" fn(context: Ctx, subgraph_index: c_int) -> TfLiteStatus>,
    }
}

/// `init`: `buffer` is a [`TfLiteDelegateParams`] for a delegate kernel.
pub type InitFn =
    unsafe extern "C" fn(context: Ctx, buffer: *const c_char, length: usize) -> *mut c_void;
/// `free`.
pub type FreeFn = unsafe extern "C" fn(context: Ctx, buffer: *mut c_void);
/// `prepare` / `invoke`.
pub type NodeFn = unsafe extern "C" fn(context: Ctx, node: *mut TfLiteNode) -> TfLiteStatus;
/// `profiling_string`.
pub type ProfilingStringFn =
    unsafe extern "C" fn(context: *const TfLiteContext, node: *const TfLiteNode) -> *const c_char;
/// `async_kernel`.
pub type AsyncKernelFn = unsafe extern "C" fn(context: Ctx, node: *mut TfLiteNode) -> *mut c_void;

c_struct! {
    /// `TfLiteRegistration` as the newest sources define it
    /// (`inplace_operator` last); passed by value (module docs).
    pub struct TfLiteRegistration {
        pub init: Option<InitFn>,
        pub free: Option<FreeFn>,
        pub prepare: Option<NodeFn>,
        pub invoke: Option<NodeFn>,
        pub profiling_string: Option<ProfilingStringFn>,
        pub builtin_code: i32,
        pub custom_name: *const c_char,
        pub version: c_int,
        pub registration_external: *mut c_void,
        pub async_kernel: Option<AsyncKernelFn>,
        pub inplace_operator: u64,
    }
}

c_struct! {
    /// `TfLiteRegistration_V3`: without `inplace_operator`.
    pub struct TfLiteRegistration_V3 {
        pub init: Option<InitFn>,
        pub free: Option<FreeFn>,
        pub prepare: Option<NodeFn>,
        pub invoke: Option<NodeFn>,
        pub profiling_string: Option<ProfilingStringFn>,
        pub builtin_code: i32,
        pub custom_name: *const c_char,
        pub version: c_int,
        pub registration_external: *mut c_void,
        pub async_kernel: Option<AsyncKernelFn>,
    }
}

c_struct! {
    /// `TfLiteRegistration_V2`: without `async_kernel`.
    pub struct TfLiteRegistration_V2 {
        pub init: Option<InitFn>,
        pub free: Option<FreeFn>,
        pub prepare: Option<NodeFn>,
        pub invoke: Option<NodeFn>,
        pub profiling_string: Option<ProfilingStringFn>,
        pub builtin_code: i32,
        pub custom_name: *const c_char,
        pub version: c_int,
        pub registration_external: *mut c_void,
    }
}

c_struct! {
    /// `TfLiteRegistration_V1`: up to `version`.
    pub struct TfLiteRegistration_V1 {
        pub init: Option<InitFn>,
        pub free: Option<FreeFn>,
        pub prepare: Option<NodeFn>,
        pub invoke: Option<NodeFn>,
        pub profiling_string: Option<ProfilingStringFn>,
        pub builtin_code: i32,
        pub custom_name: *const c_char,
        pub version: c_int,
    }
}

type Delegate = *mut TfLiteDelegate;

c_struct! {
    /// `TfLiteDelegate`.
    pub struct TfLiteDelegate {
        pub data_: *mut c_void,
        pub Prepare: Option<unsafe extern "C" fn(context: Ctx, delegate: Delegate) -> TfLiteStatus>,
        pub CopyFromBufferHandle: Option<
            unsafe extern "C" fn(context: Ctx, delegate: Delegate, handle: c_int, tensor: *mut TfLiteTensor) -> TfLiteStatus,
        >,
        pub CopyToBufferHandle: Option<
            unsafe extern "C" fn(context: Ctx, delegate: Delegate, handle: c_int, tensor: *mut TfLiteTensor) -> TfLiteStatus,
        >,
        pub FreeBufferHandle: Option<unsafe extern "C" fn(context: Ctx, delegate: Delegate, handle: *mut c_int)>,
        pub flags: i64,
        pub opaque_delegate_builder: *mut c_void,
    }
}

/// `tflite_plugin_create_delegate` (delegates/external/
/// external_delegate_interface.h): `n` options as parallel key/value
/// arrays, and a callback for a reason the creation failed.
pub type CreateDelegateFn = unsafe extern "C" fn(
    options_keys: *const *const c_char,
    options_values: *const *const c_char,
    num_options: usize,
    report_error: Option<unsafe extern "C" fn(msg: *const c_char)>,
) -> *mut TfLiteDelegate;
/// `tflite_plugin_destroy_delegate`.
pub type DestroyDelegateFn = unsafe extern "C" fn(delegate: *mut TfLiteDelegate);

/// Every mirrored TFLite struct, for the layout facts (`tflite_layout`).
pub const STRUCTS: &[StructLayout] = &[
    TfLiteIntArray::LAYOUT,
    TfLiteQuantizationParams::LAYOUT,
    TfLiteQuantization::LAYOUT,
    TfLiteAffineQuantization::LAYOUT,
    TfLiteTensor::LAYOUT,
    TfLiteNode::LAYOUT,
    TfLiteDelegateParams::LAYOUT,
    TfLiteContext::LAYOUT,
    TfLiteRegistration::LAYOUT,
    TfLiteRegistration_V3::LAYOUT,
    TfLiteRegistration_V2::LAYOUT,
    TfLiteRegistration_V1::LAYOUT,
    TfLiteDelegate::LAYOUT,
    TfLiteFullyConnectedParams::LAYOUT,
    TfLiteAddParams::LAYOUT,
    TfLiteConvParams::LAYOUT,
    TfLiteDepthwiseConvParams::LAYOUT,
    TfLitePoolParams::LAYOUT,
    TfLiteReducerParams::LAYOUT,
    TfLiteSoftmaxParams::LAYOUT,
    TfLiteMulParams::LAYOUT,
    TfLiteConcatenationParams::LAYOUT,
    TfLiteLeakyReluParams::LAYOUT,
    TfLiteCumsumParams::LAYOUT,
    TfLiteStridedSliceParams::LAYOUT,
    TfLitePackParams::LAYOUT,
    TfLiteBatchMatMulParams::LAYOUT,
    TfLiteGatherParams::LAYOUT,
];

/// Every mirrored TFLite enum.
pub const ENUMS: &[EnumLayout] = &[
    TfLiteStatus::LAYOUT,
    TfLiteType::LAYOUT,
    TfLiteAllocationType::LAYOUT,
    TfLiteQuantizationType::LAYOUT,
    TfLiteFusedActivation::LAYOUT,
    TfLitePadding::LAYOUT,
];

/// LP64 facts read off `common.h` by hand (offsets of the fields the
/// delegate reads, and every size): a moved field does not compile.
#[cfg(target_pointer_width = "64")]
const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(size_of::<TfLiteTensor>() == 112);
    assert!(offset_of!(TfLiteTensor, dims) == 16);
    assert!(offset_of!(TfLiteTensor, params) == 24);
    assert!(offset_of!(TfLiteTensor, allocation_type) == 32);
    assert!(offset_of!(TfLiteTensor, bytes) == 40);
    assert!(offset_of!(TfLiteTensor, name) == 56);
    assert!(offset_of!(TfLiteTensor, quantization) == 80);
    assert!(offset_of!(TfLiteTensor, dims_signature) == 104);
    assert!(size_of::<TfLiteNode>() == 80);
    assert!(offset_of!(TfLiteNode, builtin_data) == 40);
    assert!(offset_of!(TfLiteNode, delegate) == 64);
    assert!(size_of::<TfLiteContext>() == 200);
    assert!(offset_of!(TfLiteContext, ReplaceNodeSubsetsWithDelegateKernels) == 64);
    assert!(offset_of!(TfLiteContext, recommended_num_threads) == 72);
    assert!(offset_of!(TfLiteContext, PreviewDelegatePartitioning) == 152);
    assert!(offset_of!(TfLiteContext, GetTensor) == 160);
    assert!(size_of::<TfLiteRegistration>() == 88);
    assert!(size_of::<TfLiteRegistration_V3>() == 80);
    assert!(size_of::<TfLiteRegistration_V2>() == 72);
    assert!(size_of::<TfLiteRegistration_V1>() == 64);
    assert!(offset_of!(TfLiteRegistration, builtin_code) == 40);
    assert!(offset_of!(TfLiteRegistration, custom_name) == 48);
    assert!(offset_of!(TfLiteRegistration, version) == 56);
    assert!(size_of::<TfLiteDelegate>() == 56);
    assert!(offset_of!(TfLiteDelegate, flags) == 40);
    assert!(size_of::<TfLiteDelegateParams>() == 32);
    assert!(size_of::<TfLiteConvParams>() == 24);
    assert!(size_of::<TfLiteDepthwiseConvParams>() == 28);
    assert!(size_of::<TfLitePoolParams>() == 24);
    assert!(size_of::<TfLiteReducerParams>() == 1);
    assert!(size_of::<TfLiteSoftmaxParams>() == 4);
    assert!(size_of::<TfLiteMulParams>() == 4);
    assert!(size_of::<TfLiteConcatenationParams>() == 8);
    assert!(size_of::<TfLiteLeakyReluParams>() == 4);
    assert!(size_of::<TfLiteCumsumParams>() == 2);
    assert!(size_of::<TfLitePackParams>() == 8);
    assert!(size_of::<TfLiteStridedSliceParams>() == 20);
    assert!(size_of::<TfLiteBatchMatMulParams>() == 2);
    assert!(size_of::<TfLiteGatherParams>() == 8);
};
