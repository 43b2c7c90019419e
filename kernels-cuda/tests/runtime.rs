//! The CUDA runtime through c10's device-generic API: device and stream guards, events, and the
//! caching allocator registered for `DeviceType::Cuda`, on the device `TORCH_CUDA_DRIVER`
//! names (the emulated one by default, as in `kernels.rs`).
#![cfg(feature = "cuda")]

use c10::allocator::get_allocator;
use c10::{Device, DeviceGuard, DeviceType, Event, Stream, StreamGuard};
use kernels_cuda::driver::{self, DriverKind};
use kernels_cuda::runtime;

fn setup() {
    if std::env::var_os("TORCH_CUDA_DRIVER").is_none() {
        driver::select(DriverKind::Emulator).unwrap();
    }
    runtime::init();
    assert!(runtime::is_available());
}

#[test]
fn device_guards_switch_and_restore_the_current_device() {
    setup();
    if runtime::device_count() < 2 {
        // A machine with one real GPU: the guard must still restore.
        let _g = DeviceGuard::new(Device::cuda(0)).unwrap();
        assert_eq!(runtime::current_device().unwrap(), Device::cuda(0));
        return;
    }
    assert_eq!(runtime::current_device().unwrap(), Device::cuda(0));
    {
        let _g = DeviceGuard::new(Device::cuda(1)).unwrap();
        assert_eq!(runtime::current_device().unwrap(), Device::cuda(1));
        // -1 means "the current device": no change.
        let _h = DeviceGuard::new(Device::new(DeviceType::Cuda, -1)).unwrap();
        assert_eq!(runtime::current_device().unwrap(), Device::cuda(1));
    }
    assert_eq!(runtime::current_device().unwrap(), Device::cuda(0));
    let e = DeviceGuard::new(Device::cuda(64)).err().unwrap().to_string();
    assert!(e.contains("invalid device ordinal"), "{e}");
    assert_eq!(runtime::current_device().unwrap(), Device::cuda(0));
}

#[test]
fn stream_guards_and_events() {
    setup();
    let dev = Device::cuda(0);
    let default = runtime::current_stream(dev).unwrap();
    assert_eq!(default, Stream::default_for(dev));
    let imp = c10::stream::device_guard_impl(DeviceType::Cuda).unwrap();
    let side = imp.new_stream(dev).unwrap();
    assert_ne!(side, default);
    {
        let _g = StreamGuard::new(side).unwrap();
        assert_eq!(runtime::current_stream(dev).unwrap(), side);
    }
    assert_eq!(runtime::current_stream(dev).unwrap(), default);

    let (start, end) = (Event::new(dev, true).unwrap(), Event::new(dev, true).unwrap());
    start.record(side).unwrap();
    end.record(side).unwrap();
    end.wait(default).unwrap();
    end.synchronize().unwrap();
    assert!(end.query().unwrap());
    assert!(start.elapsed_time(&end).unwrap() >= 0.0);
    // An event records only on its own device's streams (PyTorch's check).
    if runtime::device_count() > 1 {
        let other = Stream::default_for(Device::cuda(1));
        let e = start.record(other).unwrap_err().to_string();
        assert!(e.contains("does not match recording stream's device"), "{e}");
    }
}

/// The c10 allocator for CUDA is the caching allocator on the current device and stream: bytes
/// are rounded to 512, a small block comes from a 2 MiB segment, freed blocks are cached, and a
/// steady loop makes no new driver allocations.
#[test]
fn the_cuda_allocator_caches_blocks() {
    setup();
    // Device 1 where there is one, so the other tests' allocations on device 0 do not mix in.
    let dev = Device::cuda((runtime::device_count() - 1) as i8);
    let _g = DeviceGuard::new(dev).unwrap();
    let alloc = get_allocator(DeviceType::Cuda).unwrap();
    let before = runtime::memory_stats(dev).unwrap();
    let block = alloc.allocate(1000).unwrap();
    assert_eq!(block.device(), dev);
    assert_eq!(runtime::memory_allocated(dev).unwrap(), 1024);
    assert!(runtime::memory_reserved(dev).unwrap() >= 2 << 20);
    drop(block);
    assert_eq!(runtime::memory_allocated(dev).unwrap(), 0);
    for _ in 0..100 {
        let a = alloc.allocate(4096).unwrap();
        let b = alloc.allocate(100).unwrap();
        drop((a, b));
    }
    let after = runtime::memory_stats(dev).unwrap();
    assert_eq!(after.num_device_alloc - before.num_device_alloc, 1, "one 2 MiB segment serves the whole loop");
    assert!(runtime::max_memory_allocated(dev).unwrap() >= 4096 + 512);
}

/// Out of memory: the allocator frees its cache, retries, then reports PyTorch's message.
#[test]
fn out_of_memory_is_pytorchs_error() {
    setup();
    let (_, total) = driver::driver().unwrap().mem_info(0).unwrap();
    let _g = DeviceGuard::new(Device::cuda(0)).unwrap();
    let e = get_allocator(DeviceType::Cuda).unwrap().allocate(total + (1 << 30)).unwrap_err();
    assert!(matches!(e, c10::Error::CudaOutOfMemory { device: 0, .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.starts_with("CUDA out of memory. Tried to allocate"), "{msg}");
    assert!(msg.contains("GPU 0 has a total capacity of"), "{msg}");
    assert!(runtime::memory_stats(Device::cuda(0)).unwrap().num_ooms >= 1);
}
