//! The `SP_StreamExecutor` table.

use super::{copies, events, memory, streams, timers};
use tensorplug_abi::tf::SP_StreamExecutor;

/// Every function of our stream executor (unified memory excepted: the
/// platform does not claim it).
pub fn stream_executor() -> SP_StreamExecutor {
    SP_StreamExecutor {
        allocate: Some(memory::allocate),
        deallocate: Some(memory::deallocate),
        host_memory_allocate: Some(memory::host_memory_allocate),
        host_memory_deallocate: Some(memory::host_memory_deallocate),
        get_allocator_stats: Some(memory::get_allocator_stats),
        device_memory_usage: Some(memory::device_memory_usage),
        create_stream: Some(streams::create_stream),
        destroy_stream: Some(streams::destroy_stream),
        create_stream_dependency: Some(streams::create_stream_dependency),
        get_stream_status: Some(streams::get_stream_status),
        create_event: Some(events::create_event),
        destroy_event: Some(events::destroy_event),
        get_event_status: Some(events::get_event_status),
        record_event: Some(events::record_event),
        wait_for_event: Some(events::wait_for_event),
        create_timer: Some(timers::create_timer),
        destroy_timer: Some(timers::destroy_timer),
        start_timer: Some(timers::start_timer),
        stop_timer: Some(timers::stop_timer),
        memcpy_dtoh: Some(copies::memcpy_dtoh),
        memcpy_htod: Some(copies::memcpy_htod),
        memcpy_dtod: Some(copies::memcpy_dtod),
        sync_memcpy_dtoh: Some(copies::sync_memcpy_dtoh),
        sync_memcpy_htod: Some(copies::sync_memcpy_htod),
        sync_memcpy_dtod: Some(copies::sync_memcpy_dtod),
        block_host_for_event: Some(events::block_host_for_event),
        block_host_until_done: Some(streams::block_host_until_done),
        synchronize_all_activity: Some(streams::synchronize_all_activity),
        mem_zero: Some(copies::mem_zero),
        memset: Some(copies::memset),
        memset32: Some(copies::memset32),
        host_callback: Some(streams::host_callback),
        ..SP_StreamExecutor::new()
    }
}
