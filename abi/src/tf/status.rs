//! `tf_status.h` / `xla/tsl/c/tsl_status.h`: the status object and codes.

use super::layout::{c_enum, c_opaque};
use core::ffi::{c_char, c_void};

c_opaque! {
    /// `struct TSL_Status`: opaque, created and owned by TensorFlow.
    TSL_Status,
}

/// `typedef struct TSL_Status TF_Status;`
pub type TF_Status = TSL_Status;

c_enum! {
    /// `TSL_Code` (`typedef TSL_Code TF_Code`): a status code. gcc makes it
    /// an `unsigned int` (no negative enumerators).
    pub struct TSL_Code(u32) {
        TSL_OK = 0,
        TSL_CANCELLED = 1,
        TSL_UNKNOWN = 2,
        TSL_INVALID_ARGUMENT = 3,
        TSL_DEADLINE_EXCEEDED = 4,
        TSL_NOT_FOUND = 5,
        TSL_ALREADY_EXISTS = 6,
        TSL_PERMISSION_DENIED = 7,
        TSL_UNAUTHENTICATED = 16,
        TSL_RESOURCE_EXHAUSTED = 8,
        TSL_FAILED_PRECONDITION = 9,
        TSL_ABORTED = 10,
        TSL_OUT_OF_RANGE = 11,
        TSL_UNIMPLEMENTED = 12,
        TSL_INTERNAL = 13,
        TSL_UNAVAILABLE = 14,
        TSL_DATA_LOSS = 15,
    }
}

/// `typedef TSL_Code TF_Code;`
pub type TF_Code = TSL_Code;

// The `#define TF_X TSL_X` aliases of tf_status.h.
pub const TF_OK: TF_Code = TSL_Code::TSL_OK;
pub const TF_CANCELLED: TF_Code = TSL_Code::TSL_CANCELLED;
pub const TF_UNKNOWN: TF_Code = TSL_Code::TSL_UNKNOWN;
pub const TF_INVALID_ARGUMENT: TF_Code = TSL_Code::TSL_INVALID_ARGUMENT;
pub const TF_DEADLINE_EXCEEDED: TF_Code = TSL_Code::TSL_DEADLINE_EXCEEDED;
pub const TF_NOT_FOUND: TF_Code = TSL_Code::TSL_NOT_FOUND;
pub const TF_ALREADY_EXISTS: TF_Code = TSL_Code::TSL_ALREADY_EXISTS;
pub const TF_PERMISSION_DENIED: TF_Code = TSL_Code::TSL_PERMISSION_DENIED;
pub const TF_UNAUTHENTICATED: TF_Code = TSL_Code::TSL_UNAUTHENTICATED;
pub const TF_RESOURCE_EXHAUSTED: TF_Code = TSL_Code::TSL_RESOURCE_EXHAUSTED;
pub const TF_FAILED_PRECONDITION: TF_Code = TSL_Code::TSL_FAILED_PRECONDITION;
pub const TF_ABORTED: TF_Code = TSL_Code::TSL_ABORTED;
pub const TF_OUT_OF_RANGE: TF_Code = TSL_Code::TSL_OUT_OF_RANGE;
pub const TF_UNIMPLEMENTED: TF_Code = TSL_Code::TSL_UNIMPLEMENTED;
pub const TF_INTERNAL: TF_Code = TSL_Code::TSL_INTERNAL;
pub const TF_UNAVAILABLE: TF_Code = TSL_Code::TSL_UNAVAILABLE;
pub const TF_DATA_LOSS: TF_Code = TSL_Code::TSL_DATA_LOSS;

/// `TF_Bool` (`#define TF_Bool unsigned char`): 0 is false, anything else true.
pub type TF_Bool = u8;

/// `TSL_PayloadVisitor` (`#define TF_PayloadVisitor TSL_PayloadVisitor`).
pub type TSL_PayloadVisitor =
    Option<unsafe extern "C" fn(key: *const c_char, value: *const c_char, capture: *mut c_void)>;

/// `TF_PayloadVisitor`.
pub type TF_PayloadVisitor = TSL_PayloadVisitor;
