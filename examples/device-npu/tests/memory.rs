//! The NPU's allocator, copies, fences and reset.

mod common;

use common::*;
use tensorplug_core::accelerator::prelude::*;
use tensorplug_core::accelerator::{DeviceAddr, ErrorKind, Fence, QueueId};
use tensorplug_device_npu::{BASE, MAX_BLOCKS};

fn kind<T: std::fmt::Debug>(result: Result<T, tensorplug_device_npu::NpuError>) -> ErrorKind {
    result.unwrap_err().kind()
}

#[test]
fn the_allocator_aligns_frees_reuses_and_runs_out() {
    let mut dev = npu();
    // Alignment is of the device address: BASE is only 2^28-aligned, so
    // even an empty 64 KiB NPU has no 2^29-aligned byte.
    assert_eq!(kind(dev.allocate(4, 1 << 29)), ErrorKind::OutOfMemory);
    let a = dev.allocate(100, 256).unwrap();
    assert_eq!(a, DeviceAddr(BASE), "device addresses start at BASE");
    let b = dev.allocate(100, 256).unwrap();
    assert_eq!(b.0 % 256, 0);
    assert!(b.0 >= a.0 + 100);
    dev.deallocate(a).unwrap();
    assert_eq!(
        dev.allocate(64, 64).unwrap(),
        a,
        "first fit reuses the hole"
    );
    assert_eq!(dev.memory_usage().used, 164);
    assert_eq!(dev.memory_usage().total, 1 << 16);
    // Out of memory, however it overflows.
    assert_eq!(kind(dev.allocate(1 << 20, 4)), ErrorKind::OutOfMemory);
    assert_eq!(kind(dev.allocate(u64::MAX, 1)), ErrorKind::OutOfMemory);
    assert_eq!(kind(dev.allocate(4, 1 << 63)), ErrorKind::OutOfMemory);
    assert_eq!(kind(dev.allocate(4, 3)), ErrorKind::InvalidArgument);
    // Only live allocations' first bytes can be freed, once.
    assert_eq!(
        kind(dev.deallocate(DeviceAddr(BASE + 3))),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        kind(dev.deallocate(DeviceAddr(3))),
        ErrorKind::InvalidArgument
    );
    dev.deallocate(b).unwrap();
    assert_eq!(kind(dev.deallocate(b)), ErrorKind::InvalidArgument);
}

#[test]
fn freeing_everything_gives_all_memory_back() {
    let mut dev = npu();
    let blocks: Vec<_> = (0..16).map(|_| dev.allocate(4096, 4096).unwrap()).collect();
    assert_eq!(kind(dev.allocate(1, 1)), ErrorKind::OutOfMemory);
    for addr in blocks {
        dev.deallocate(addr).unwrap();
    }
    assert_eq!(dev.memory_usage().used, 0);
    assert_eq!(dev.allocate(1 << 16, 1).unwrap(), DeviceAddr(BASE));
}

#[test]
fn the_block_table_is_fixed_capacity() {
    let mut dev = npu();
    for _ in 0..MAX_BLOCKS {
        dev.allocate(1, 1).unwrap();
    }
    let error = dev.allocate(1, 1).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::OutOfMemory, "{error}");
}

#[test]
fn out_of_range_copies_are_refused_and_touch_nothing() {
    let mut dev = npu();
    let x = put(&mut dev, &[1., 2.]);
    let freed = dev.allocate(8, 8).unwrap();
    dev.deallocate(freed).unwrap();
    let host = [0xAAu8; 16];
    let mut back = [0x55u8; 16];
    for (dst, len) in [
        (x, 9),
        (x.checked_add(4).unwrap(), 8),
        (freed, 8),
        (DeviceAddr(0), 4),
    ] {
        // SAFETY: `host` is readable for 16 bytes and outlives the call.
        let error = unsafe { dev.copy_to_device(Q, dst, host.as_ptr(), len) }.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidArgument, "{error}");
        // SAFETY: `back` is writable for 16 bytes and outlives the call.
        let error = unsafe { dev.copy_from_device(Q, back.as_mut_ptr(), dst, len) }.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidArgument, "{error}");
        assert_eq!(
            kind(dev.copy_on_device(Q, dst, x, len)),
            ErrorKind::InvalidArgument
        );
        assert_eq!(
            kind(dev.copy_on_device(Q, x, dst, len)),
            ErrorKind::InvalidArgument
        );
        assert_eq!(kind(dev.fill(Q, dst, len, 0)), ErrorKind::InvalidArgument);
    }
    // A length whose end overflows.
    assert_eq!(
        kind(dev.fill(Q, x, usize::MAX, 0)),
        ErrorKind::InvalidArgument
    );
    // A valid range on a queue the NPU does not have.
    // SAFETY: as above.
    let error = unsafe { dev.copy_to_device(NO_SUCH_QUEUE, x, host.as_ptr(), 8) }.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidArgument);
    assert_eq!(back, [0x55; 16]);
    assert_eq!(get(&mut dev, x, 2), [1., 2.], "nothing was written");
}

#[test]
fn copies_and_fills_within_allocations_work() {
    let mut dev = npu();
    let x = put(&mut dev, &[1., 2., 3., 4.]);
    let y = dev.allocate(16, 4).unwrap();
    dev.copy_on_device(QueueId(0), y, x.checked_add(4).unwrap(), 12)
        .unwrap();
    dev.fill(QueueId(0), y.checked_add(12).unwrap(), 4, 0x4080_0000)
        .unwrap(); // 4.0f32
    assert_eq!(get(&mut dev, y, 4), [2., 3., 4., 4.]);
}

#[test]
fn fences_increase_complete_at_once_and_unknown_ones_are_refused() {
    let mut dev = npu();
    let x = dev.allocate(4, 4).unwrap();
    let f0 = dev.fill(QueueId(0), x, 4, 0).unwrap();
    let f1 = dev.fill(QueueId(1), x, 4, 0).unwrap();
    let f2 = dev.fill(QueueId(0), x, 4, 0).unwrap();
    assert!(f0 < f1 && f1 < f2);
    for fence in [f0, f1, f2] {
        assert!(dev.poll(fence).unwrap());
        dev.wait(fence, T).unwrap();
    }
    let never = Fence(f2.0 + 1);
    assert_eq!(kind(dev.poll(never)), ErrorKind::InvalidArgument);
    assert_eq!(kind(dev.wait(never, T)), ErrorKind::InvalidArgument);
}

#[test]
fn reset_keeps_allocations_data_and_fences() {
    let mut dev = npu();
    let x = put(&mut dev, &[7.]);
    let fence = dev.fill(Q, x, 0, 0).unwrap();
    dev.reset().unwrap();
    assert!(dev.poll(fence).unwrap());
    assert_eq!(get(&mut dev, x, 1), [7.]);
    assert_eq!(dev.memory_usage().used, 4);
    assert!(
        dev.fill(Q, x, 4, 0).unwrap() > fence,
        "fences keep increasing"
    );
}

#[test]
fn an_array_works_as_memory() {
    let mut dev = tensorplug_device_npu::Npu::new([0u8; 256], StepClock::default());
    let x = put(&mut dev, &[-3., 3.]);
    assert_eq!(get(&mut dev, x, 2), [-3., 3.]);
    assert_eq!(dev.info().memory_bytes, 256);
    assert_eq!(kind(dev.allocate(256, 1)), ErrorKind::OutOfMemory);
}
