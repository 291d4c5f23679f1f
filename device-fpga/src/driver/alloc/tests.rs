use super::*;

#[test]
fn allocations_are_aligned_disjoint_and_counted() {
    let mut a = Allocator::<8>::new(100, 100 + 64 * 100);
    let x = a.allocate(10, 4).unwrap();
    let y = a.allocate(200, 4096).unwrap();
    let z = a.allocate(0, 1).unwrap();
    assert_eq!(x % GRANULE, 0);
    assert_eq!(y % 4096, 0);
    assert!(x + 64 <= y || y + 256 <= x);
    assert!(z != x && z != y);
    assert_eq!(a.used(), 64 + 256 + 64);
    assert_eq!(a.live(), 3);
    assert_eq!(a.block_size(y), Some(256));
}

#[test]
fn double_free_and_unknown_addresses_are_errors() {
    let mut a = Allocator::<8>::new(0, 4096);
    let x = a.allocate(64, 64).unwrap();
    assert_eq!(
        a.deallocate(x + 4),
        Err(Error::UnknownAllocation { addr: x + 4 })
    );
    a.deallocate(x).unwrap();
    assert_eq!(a.deallocate(x), Err(Error::UnknownAllocation { addr: x }));
    assert_eq!(a.used(), 0);
}

#[test]
fn too_large_and_bad_alignment_are_refused() {
    let mut a = Allocator::<8>::new(0, 4096);
    assert_eq!(
        a.allocate(4097, 64),
        Err(Error::OutOfMemory {
            requested: 4097,
            largest_free: 4096
        })
    );
    assert!(matches!(
        a.allocate(u64::MAX, 64),
        Err(Error::OutOfMemory { .. })
    ));
    assert_eq!(a.allocate(64, 3), Err(Error::InvalidArgument));
    assert_eq!(a.allocate(4096, 64), Ok(0));
}

#[test]
fn fragmentation_is_reused_first_fit_and_coalesces_on_free() {
    let mut a = Allocator::<16>::new(0, 64 * 8);
    let blocks: [u64; 8] = core::array::from_fn(|_| a.allocate(64, 64).unwrap());
    // Free every other block: 4 holes of 64 bytes, 256 bytes free in total.
    for &b in blocks.iter().step_by(2) {
        a.deallocate(b).unwrap();
    }
    assert_eq!(a.largest_free(), 64);
    assert!(matches!(
        a.allocate(128, 64),
        Err(Error::OutOfMemory {
            largest_free: 64,
            ..
        })
    ));
    // First fit takes the lowest hole.
    assert_eq!(a.allocate(64, 64), Ok(blocks[0]));
    // Freeing blocks 1 and 3 joins the holes at 2 and 4: blocks 1..=4.
    a.deallocate(blocks[1]).unwrap();
    a.deallocate(blocks[3]).unwrap();
    assert_eq!(a.largest_free(), 64 * 4);
    assert_eq!(a.allocate(192, 64), Ok(blocks[1]));
}

#[test]
fn table_capacity_is_a_clean_error() {
    let mut a = Allocator::<2>::new(0, 4096);
    a.allocate(1, 1).unwrap();
    a.allocate(1, 1).unwrap();
    assert_eq!(a.allocate(1, 1), Err(Error::TooManyAllocations));
}
