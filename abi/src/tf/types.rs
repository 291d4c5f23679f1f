//! The parts of `tf_datatype.h`, `tf_buffer.h`, `tf_tensor.h`, `c_api.h` and
//! `kernels.h` that the plugin APIs need.

use super::layout::{c_enum, c_opaque, c_struct};
use super::status::{TF_Bool, TF_Status};
use core::ffi::{c_char, c_int, c_void};

c_enum! {
    /// `TF_DataType`: a tensor element type (`unsigned int` under gcc).
    pub struct TF_DataType(u32) {
        TF_FLOAT = 1,
        TF_DOUBLE = 2,
        TF_INT32 = 3,
        TF_UINT8 = 4,
        TF_INT16 = 5,
        TF_INT8 = 6,
        TF_STRING = 7,
        TF_COMPLEX64 = 8,
        /// Old name of `TF_COMPLEX64`.
        TF_COMPLEX = 8,
        TF_INT64 = 9,
        TF_BOOL = 10,
        TF_QINT8 = 11,
        TF_QUINT8 = 12,
        TF_QINT32 = 13,
        TF_BFLOAT16 = 14,
        TF_QINT16 = 15,
        TF_QUINT16 = 16,
        TF_UINT16 = 17,
        TF_COMPLEX128 = 18,
        TF_HALF = 19,
        TF_RESOURCE = 20,
        TF_VARIANT = 21,
        TF_UINT32 = 22,
        TF_UINT64 = 23,
        TF_FLOAT8_E5M2 = 24,
        TF_FLOAT8_E4M3FN = 25,
        TF_FLOAT8_E4M3FNUZ = 26,
        TF_FLOAT8_E4M3B11FNUZ = 27,
        TF_FLOAT8_E5M2FNUZ = 28,
        TF_INT4 = 29,
        TF_UINT4 = 30,
        TF_INT2 = 31,
        TF_UINT2 = 32,
        TF_FLOAT4_E2M1FN = 33,
    }
}

c_struct! {
    /// `TF_Buffer` (tf_buffer.h): bytes plus an optional deallocator.
    pub struct TF_Buffer {
        pub data: *const c_void,
        pub length: usize,
        pub data_deallocator: Option<unsafe extern "C" fn(data: *mut c_void, length: usize)>,
    }
}

c_struct! {
    /// `TF_StringView` (c_api.h): a borrowed string, not NUL-terminated.
    pub struct TF_StringView {
        pub data: *const c_char,
        pub len: usize,
    }
}

c_struct! {
    /// `TF_AllocatorAttributes` (tf_tensor.h).
    pub struct TF_AllocatorAttributes {
        pub struct_size: usize,
        /// 1 for host (CPU) memory, 0 for device memory.
        pub on_host: TF_Bool,
    }
    size TF_ALLOCATOR_ATTRIBUTES_STRUCT_SIZE = on_host;
}

c_struct! {
    /// `TF_InputRange_Args` (kernels.h; an anonymous struct in C).
    pub struct TF_InputRange_Args {
        pub struct_size: usize,
        pub r#priv: *mut c_void,
        pub start: c_int,
        pub stop: c_int,
        pub status: *mut TF_Status,
    }
    size TF_InputRange_Args_STRUCT_SIZE = status;
}

c_opaque! {
    /// `TF_Tensor` (tf_tensor.h / kernels.h).
    TF_Tensor,
    /// `TF_KernelBuilder` (kernels.h).
    TF_KernelBuilder,
    /// `TF_OpKernelConstruction` (kernels.h).
    TF_OpKernelConstruction,
    /// `TF_OpKernelContext` (kernels.h).
    TF_OpKernelContext,
    /// `TF_AsyncOpKernelDoneCallback` (kernels.h).
    TF_AsyncOpKernelDoneCallback,
}
