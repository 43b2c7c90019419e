//! The CPU allocator's memory limit (Note [CPU memory limit]); its own binary, because the limit
//! is process-wide and would fail other tests' allocations.

use c10::allocator::Allocator;
use c10::caching_allocator::{limited_peak_bytes, memory_limit, memory_stats, set_memory_limit, CachingCpuAllocator};
use c10::{DeviceType, Error};

#[test]
fn allocations_over_the_limit_fail_and_the_peak_is_exact() {
    let a = CachingCpuAllocator;
    let base = memory_stats().allocated_bytes;
    set_memory_limit(Some(base + (3 << 20)));
    assert_eq!(memory_limit(), Some(base + (3 << 20)));
    assert_eq!(limited_peak_bytes(), base);

    let one = a.allocate(1 << 20).unwrap();
    let two = a.allocate(1 << 20).unwrap();
    // 2 MiB held: another 2 MiB would pass the limit (a small block still fits).
    match a.allocate(2 << 20) {
        Err(Error::OutOfMemory { device: DeviceType::Cpu, nbytes }) => assert_eq!(nbytes, 2 << 20),
        other => panic!("expected out of memory, got {other:?}"),
    }
    let small = a.allocate(100).unwrap();
    assert_eq!(limited_peak_bytes(), base + (2 << 20) + 128);
    drop((one, two, small));
    // Freed memory counts no more: 3 MiB fit now, and the peak moves to it.
    let three = a.allocate(3 << 20).unwrap();
    assert_eq!(limited_peak_bytes(), base + (3 << 20));
    drop(three);

    set_memory_limit(None);
    assert_eq!(memory_limit(), None);
    let big = a.allocate(8 << 20).unwrap();
    assert_eq!(limited_peak_bytes(), base + (3 << 20), "no tracking without a limit");
    drop(big);
}
