//! `tensorflow/c/experimental/stream_executor/stream_executor.h`: the
//! PluggableDevice / StreamExecutor C API.

use super::layout::{c_enum, c_opaque, c_struct};
use super::status::{TF_Bool, TF_Status};
use core::ffi::{c_char, c_int, c_void};

pub const SE_MAJOR: i32 = 0;
pub const SE_MINOR: i32 = 0;
pub const SE_PATCH: i32 = 1;

c_opaque! {
    /// `struct SP_Stream_st`: the plugin's stream, behind `SP_Stream`.
    SP_Stream_st,
    /// `struct SP_Event_st`: the plugin's event, behind `SP_Event`.
    SP_Event_st,
    /// `struct SP_Timer_st`: the plugin's timer, behind `SP_Timer`.
    SP_Timer_st,
}

pub type SP_Stream = *mut SP_Stream_st;
pub type SP_Event = *mut SP_Event_st;
pub type SP_Timer = *mut SP_Timer_st;

/// `SE_StatusCallbackFn`: `void (*)(void* const, TF_Status* const)`.
pub type SE_StatusCallbackFn =
    Option<unsafe extern "C" fn(arg: *mut c_void, status: *mut TF_Status)>;

c_struct! {
    pub struct SP_TimerFns {
        pub struct_size: usize,
        pub ext: *mut c_void,
        pub nanoseconds: Option<unsafe extern "C" fn(timer: SP_Timer) -> u64>,
    }
    size SP_TIMER_FNS_STRUCT_SIZE = nanoseconds;
}

c_struct! {
    pub struct SP_AllocatorStats {
        pub struct_size: usize,
        pub num_allocs: i64,
        pub bytes_in_use: i64,
        pub peak_bytes_in_use: i64,
        pub largest_alloc_size: i64,
        pub has_bytes_limit: i8,
        pub bytes_limit: i64,
        pub bytes_reserved: i64,
        pub peak_bytes_reserved: i64,
        pub has_bytes_reservable_limit: i8,
        pub bytes_reservable_limit: i64,
        pub largest_free_block_bytes: i64,
    }
    size SP_ALLOCATORSTATS_STRUCT_SIZE = largest_free_block_bytes;
}

c_enum! {
    /// `SE_EventStatus` (`unsigned int` under gcc).
    pub struct SE_EventStatus(u32) {
        SE_EVENT_UNKNOWN = 0,
        SE_EVENT_ERROR = 1,
        SE_EVENT_PENDING = 2,
        SE_EVENT_COMPLETE = 3,
    }
}

c_struct! {
    pub struct SP_DeviceMemoryBase {
        pub struct_size: usize,
        pub ext: *mut c_void,
        pub opaque: *mut c_void,
        /// Size in bytes of this allocation.
        pub size: u64,
        /// Value for the plugin's use.
        pub payload: u64,
    }
    size SP_DEVICE_MEMORY_BASE_STRUCT_SIZE = payload;
}

c_struct! {
    pub struct SP_Device {
        pub struct_size: usize,
        pub ext: *mut c_void,
        pub ordinal: i32,
        pub device_handle: *mut c_void,
        pub hardware_name: *const c_char,
        pub device_vendor: *const c_char,
        pub pci_bus_id: *const c_char,
    }
    size SP_DEVICE_STRUCT_SIZE = pci_bus_id;
}

c_struct! {
    pub struct SE_CreateDeviceParams {
        pub struct_size: usize,
        pub ext: *mut c_void,
        pub ordinal: i32,
        /// Input/output: TF sets its `struct_size`, the plugin fills the rest.
        pub device: *mut SP_Device,
    }
    size SE_CREATE_DEVICE_PARAMS_STRUCT_SIZE = device;
}

c_struct! {
    pub struct SP_DeviceFns {
        pub struct_size: usize,
        pub ext: *mut c_void,
        pub get_numa_node: Option<unsafe extern "C" fn(device: *const SP_Device) -> i32>,
        pub get_memory_bandwidth: Option<unsafe extern "C" fn(device: *const SP_Device) -> i64>,
        pub get_gflops: Option<unsafe extern "C" fn(device: *const SP_Device) -> f64>,
    }
    size SP_DEVICE_FNS_STRUCT_SIZE = get_gflops;
}

c_struct! {
    pub struct SE_CreateDeviceFnsParams {
        pub struct_size: usize,
        pub ext: *mut c_void,
        /// Output, filled by the plugin.
        pub device_fns: *mut SP_DeviceFns,
    }
    size SE_CREATE_DEVICE_FNS_PARAMS_STRUCT_SIZE = device_fns;
}

type Dev = *const SP_Device;
type Mem = *mut SP_DeviceMemoryBase;
type ConstMem = *const SP_DeviceMemoryBase;
type Status = *mut TF_Status;

c_struct! {
    pub struct SP_StreamExecutor {
        pub struct_size: usize,
        pub ext: *mut c_void,
        // Allocation.
        pub allocate: Option<unsafe extern "C" fn(device: Dev, size: u64, memory_space: i64, mem: Mem)>,
        pub deallocate: Option<unsafe extern "C" fn(device: Dev, memory: Mem)>,
        pub host_memory_allocate: Option<unsafe extern "C" fn(device: Dev, size: u64) -> *mut c_void>,
        pub host_memory_deallocate: Option<unsafe extern "C" fn(device: Dev, mem: *mut c_void)>,
        pub unified_memory_allocate: Option<unsafe extern "C" fn(device: Dev, bytes: u64) -> *mut c_void>,
        pub unified_memory_deallocate: Option<unsafe extern "C" fn(device: Dev, location: *mut c_void)>,
        pub get_allocator_stats: Option<unsafe extern "C" fn(device: Dev, stats: *mut SP_AllocatorStats) -> TF_Bool>,
        pub device_memory_usage: Option<unsafe extern "C" fn(device: Dev, free: *mut i64, total: *mut i64) -> TF_Bool>,
        // Streams.
        pub create_stream: Option<unsafe extern "C" fn(device: Dev, stream: *mut SP_Stream, status: Status)>,
        pub destroy_stream: Option<unsafe extern "C" fn(device: Dev, stream: SP_Stream)>,
        pub create_stream_dependency: Option<unsafe extern "C" fn(device: Dev, dependent: SP_Stream, other: SP_Stream, status: Status)>,
        pub get_stream_status: Option<unsafe extern "C" fn(device: Dev, stream: SP_Stream, status: Status)>,
        // Events.
        pub create_event: Option<unsafe extern "C" fn(device: Dev, event: *mut SP_Event, status: Status)>,
        pub destroy_event: Option<unsafe extern "C" fn(device: Dev, event: SP_Event)>,
        pub get_event_status: Option<unsafe extern "C" fn(device: Dev, event: SP_Event) -> SE_EventStatus>,
        pub record_event: Option<unsafe extern "C" fn(device: Dev, stream: SP_Stream, event: SP_Event, status: Status)>,
        pub wait_for_event: Option<unsafe extern "C" fn(device: Dev, stream: SP_Stream, event: SP_Event, status: Status)>,
        // Timers.
        pub create_timer: Option<unsafe extern "C" fn(device: Dev, timer: *mut SP_Timer, status: Status)>,
        pub destroy_timer: Option<unsafe extern "C" fn(device: Dev, timer: SP_Timer)>,
        pub start_timer: Option<unsafe extern "C" fn(device: Dev, stream: SP_Stream, timer: SP_Timer, status: Status)>,
        pub stop_timer: Option<unsafe extern "C" fn(device: Dev, stream: SP_Stream, timer: SP_Timer, status: Status)>,
        // Copies.
        pub memcpy_dtoh: Option<unsafe extern "C" fn(device: Dev, stream: SP_Stream, host_dst: *mut c_void, device_src: ConstMem, size: u64, status: Status)>,
        pub memcpy_htod: Option<unsafe extern "C" fn(device: Dev, stream: SP_Stream, device_dst: Mem, host_src: *const c_void, size: u64, status: Status)>,
        pub memcpy_dtod: Option<unsafe extern "C" fn(device: Dev, stream: SP_Stream, device_dst: Mem, device_src: ConstMem, size: u64, status: Status)>,
        pub sync_memcpy_dtoh: Option<unsafe extern "C" fn(device: Dev, host_dst: *mut c_void, device_src: ConstMem, size: u64, status: Status)>,
        pub sync_memcpy_htod: Option<unsafe extern "C" fn(device: Dev, device_dst: Mem, host_src: *const c_void, size: u64, status: Status)>,
        pub sync_memcpy_dtod: Option<unsafe extern "C" fn(device: Dev, device_dst: Mem, device_src: ConstMem, size: u64, status: Status)>,
        pub block_host_for_event: Option<unsafe extern "C" fn(device: Dev, event: SP_Event, status: Status)>,
        pub block_host_until_done: Option<unsafe extern "C" fn(device: Dev, stream: SP_Stream, status: Status)>,
        pub synchronize_all_activity: Option<unsafe extern "C" fn(device: Dev, status: Status)>,
        pub mem_zero: Option<unsafe extern "C" fn(device: Dev, stream: SP_Stream, location: Mem, size: u64, status: Status)>,
        pub memset: Option<unsafe extern "C" fn(device: Dev, stream: SP_Stream, location: Mem, pattern: u8, size: u64, status: Status)>,
        pub memset32: Option<unsafe extern "C" fn(device: Dev, stream: SP_Stream, location: Mem, pattern: u32, size: u64, status: Status)>,
        pub host_callback: Option<unsafe extern "C" fn(device: Dev, stream: SP_Stream, callback_fn: SE_StatusCallbackFn, callback_arg: *mut c_void) -> TF_Bool>,
    }
    size SP_STREAMEXECUTOR_STRUCT_SIZE = host_callback;
}

c_struct! {
    pub struct SE_CreateStreamExecutorParams {
        pub struct_size: usize,
        pub ext: *mut c_void,
        /// Output, filled by the plugin.
        pub stream_executor: *mut SP_StreamExecutor,
    }
    size SE_CREATE_STREAM_EXECUTOR_PARAMS_STRUCT_SIZE = stream_executor;
}

c_struct! {
    pub struct SP_Platform {
        pub struct_size: usize,
        /// Free-form data set by the plugin.
        pub ext: *mut c_void,
        /// Platform name, `[A-Z][A-Z_]*`.
        pub name: *const c_char,
        /// Device type, `[A-Z][A-Z_]*` (`/device:<type>:N`).
        pub r#type: *const c_char,
        pub supports_unified_memory: TF_Bool,
        pub use_bfc_allocator: TF_Bool,
        pub force_memory_growth: TF_Bool,
    }
    size SP_PLATFORM_STRUCT_SIZE = force_memory_growth;
}

type Platform = *const SP_Platform;

c_struct! {
    pub struct SP_PlatformFns {
        pub struct_size: usize,
        pub ext: *mut c_void,
        pub get_device_count: Option<unsafe extern "C" fn(platform: Platform, device_count: *mut c_int, status: Status)>,
        pub create_device: Option<unsafe extern "C" fn(platform: Platform, params: *mut SE_CreateDeviceParams, status: Status)>,
        pub destroy_device: Option<unsafe extern "C" fn(platform: Platform, device: *mut SP_Device)>,
        pub create_device_fns: Option<unsafe extern "C" fn(platform: Platform, params: *mut SE_CreateDeviceFnsParams, status: Status)>,
        pub destroy_device_fns: Option<unsafe extern "C" fn(platform: Platform, device_fns: *mut SP_DeviceFns)>,
        pub create_stream_executor: Option<unsafe extern "C" fn(platform: Platform, params: *mut SE_CreateStreamExecutorParams, status: Status)>,
        pub destroy_stream_executor: Option<unsafe extern "C" fn(platform: Platform, stream_executor: *mut SP_StreamExecutor)>,
        pub create_timer_fns: Option<unsafe extern "C" fn(platform: Platform, timer: *mut SP_TimerFns, status: Status)>,
        pub destroy_timer_fns: Option<unsafe extern "C" fn(platform: Platform, timer_fns: *mut SP_TimerFns)>,
    }
    size SP_PLATFORM_FNS_STRUCT_SIZE = destroy_timer_fns;
}

c_struct! {
    pub struct SE_PlatformRegistrationParams {
        pub struct_size: usize,
        pub ext: *mut c_void,
        pub major_version: i32,
        pub minor_version: i32,
        pub patch_version: i32,
        /// Output, set by the plugin.
        pub platform: *mut SP_Platform,
        /// Output, set by the plugin.
        pub platform_fns: *mut SP_PlatformFns,
        pub destroy_platform: Option<unsafe extern "C" fn(platform: *mut SP_Platform)>,
        pub destroy_platform_fns: Option<unsafe extern "C" fn(platform_fns: *mut SP_PlatformFns)>,
    }
    size SE_PLATFORM_REGISTRATION_PARAMS_STRUCT_SIZE = destroy_platform_fns;
}

/// Signature of the plugin's exported `SE_InitPlugin` (a helper, not a typedef of the header).
pub type SE_InitPluginFn =
    unsafe extern "C" fn(params: *mut SE_PlatformRegistrationParams, status: *mut TF_Status);
