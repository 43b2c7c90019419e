//! The CUDA runtime as the rest of the framework sees it: the current device and stream per
//! thread (c10's [`DeviceGuardImpl`] for `DeviceType::Cuda`), the caching allocator over the
//! driver (c10's [`Allocator`] for CUDA), and PyTorch's `torch.cuda` functions.
//!
//! [`init`] registers both with c10; it runs at the dispatcher's first use and touches no driver,
//! so a program that never uses CUDA never loads one (Note [Choosing the driver]).

use std::cell::RefCell;
use std::sync::{Arc, OnceLock};

use c10::allocator::{Allocator, DataPtr};
use c10::cuda_caching_allocator::{CachingAllocator, DeviceMemory, DriverError, MemoryStats, StreamId as AllocStream};
use c10::stream::{DeviceGuardImpl, Stream};
use c10::{Device, DeviceType, Error, Result};

use crate::driver::{driver, Driver, EventId, StreamId};

/// Registers the CUDA device guard and allocator with c10 (idempotent).
pub fn init() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        c10::stream::set_device_guard_impl(&CUDA_GUARD);
        c10::allocator::set_allocator(DeviceType::Cuda, &CUDA_ALLOCATOR);
        c10::allocator::set_pinned_memory(&PINNED);
    });
}

/// Whether a CUDA device can be used: a driver loads and has at least one device (PyTorch's
/// `torch.cuda.is_available()`).
pub fn is_available() -> bool {
    driver().is_ok_and(|d| d.device_count() > 0)
}

/// Number of CUDA devices, 0 without a driver (`torch.cuda.device_count()`).
pub fn device_count() -> usize {
    driver().map_or(0, |d| d.device_count())
}

/// The driver, with PyTorch's error when it has no device.
fn checked_driver() -> Result<&'static dyn Driver> {
    let d = driver()?;
    if d.device_count() == 0 {
        return Err(Error::Cuda("CUDA error: no CUDA-capable device is detected".into()));
    }
    Ok(d)
}

fn index(device: Device) -> Result<usize> {
    if device.ty != DeviceType::Cuda {
        return Err(Error::invalid("cuda", format!("expected a cuda device, got {device}")));
    }
    let d = checked_driver()?;
    let i = if device.index < 0 { current_index() } else { device.index as usize };
    if i >= d.device_count() {
        return Err(crate::driver::invalid_device(i, d.device_count()));
    }
    Ok(i)
}

thread_local! {
    /// This thread's current device and, per device, its current stream.
    static CURRENT: RefCell<(usize, Vec<u64>)> = const { RefCell::new((0, Vec::new())) };
}

fn current_index() -> usize {
    CURRENT.with(|c| c.borrow().0)
}

fn stream_of(i: usize) -> u64 {
    CURRENT.with(|c| c.borrow().1.get(i).copied().unwrap_or(0))
}

/// The current device (`torch.cuda.current_device()`).
pub fn current_device() -> Result<Device> {
    checked_driver()?;
    Ok(Device::cuda(current_index() as i8))
}

/// Makes `device` current on this thread (`torch.cuda.set_device`).
pub fn set_device(device: Device) -> Result<()> {
    let i = index(device)?;
    CURRENT.with(|c| c.borrow_mut().0 = i);
    Ok(())
}

/// The current stream of `device` on this thread (`torch.cuda.current_stream`).
pub fn current_stream(device: Device) -> Result<Stream> {
    let i = index(device)?;
    Ok(Stream { device: Device::cuda(i as i8), id: stream_of(i) })
}

/// Blocks until all work on `device` finished (`torch.cuda.synchronize`).
pub fn synchronize(device: Device) -> Result<()> {
    let i = index(device)?;
    checked_driver()?.device_synchronize(i)
}

/// The c10 device guard of CUDA.
struct CudaGuard;
static CUDA_GUARD: CudaGuard = CudaGuard;

impl DeviceGuardImpl for CudaGuard {
    fn device_type(&self) -> DeviceType {
        DeviceType::Cuda
    }
    fn device_count(&self) -> Result<usize> {
        Ok(device_count())
    }
    fn current_device(&self) -> Result<Device> {
        current_device()
    }
    fn set_device(&self, device: Device) -> Result<()> {
        set_device(device)
    }
    fn current_stream(&self, device: Device) -> Result<Stream> {
        current_stream(device)
    }
    fn exchange_stream(&self, stream: Stream) -> Result<Stream> {
        let i = index(stream.device)?;
        let old = CURRENT.with(|c| {
            let mut c = c.borrow_mut();
            if c.1.len() <= i {
                c.1.resize(i + 1, 0);
            }
            std::mem::replace(&mut c.1[i], stream.id)
        });
        Ok(Stream { device: Device::cuda(i as i8), id: old })
    }
    fn new_stream(&self, device: Device) -> Result<Stream> {
        let i = index(device)?;
        let id = checked_driver()?.stream_create(i)?;
        Ok(Stream { device: Device::cuda(i as i8), id: id.0 })
    }
    fn synchronize_stream(&self, stream: Stream) -> Result<()> {
        let i = index(stream.device)?;
        checked_driver()?.stream_synchronize(i, StreamId(stream.id))
    }
    fn synchronize_device(&self, device: Device) -> Result<()> {
        synchronize(device)
    }
    fn create_event(&self, device: Device, timing: bool) -> Result<u64> {
        let i = index(device)?;
        Ok(checked_driver()?.event_create(i, timing)?.0)
    }
    fn destroy_event(&self, event: u64) {
        if let Ok(d) = driver() {
            d.event_destroy(EventId(event));
        }
    }
    fn record_event(&self, event: u64, stream: Stream) -> Result<()> {
        let i = index(stream.device)?;
        checked_driver()?.event_record(EventId(event), i, StreamId(stream.id))
    }
    fn block(&self, event: u64, stream: Stream) -> Result<()> {
        let i = index(stream.device)?;
        checked_driver()?.stream_wait_event(i, StreamId(stream.id), EventId(event))
    }
    fn query_event(&self, event: u64) -> Result<bool> {
        checked_driver()?.event_query(EventId(event))
    }
    fn synchronize_event(&self, event: u64) -> Result<()> {
        checked_driver()?.event_synchronize(EventId(event))
    }
    fn elapsed_ms(&self, start: u64, end: u64) -> Result<f64> {
        Ok(checked_driver()?.event_elapsed_ms(EventId(start), EventId(end))? as f64)
    }
}

/// The driver as the caching allocator's device memory.
struct DriverMemory(&'static dyn Driver);

impl DeviceMemory for DriverMemory {
    fn malloc(&self, device: i8, nbytes: usize) -> std::result::Result<u64, DriverError> {
        self.0.malloc(device as usize, nbytes)
    }
    fn free(&self, device: i8, ptr: u64) {
        self.0.free(device as usize, ptr)
    }
    fn mem_info(&self, device: i8) -> (usize, usize) {
        self.0.mem_info(device as usize).unwrap_or((0, 0))
    }
    fn record_event(&self, device: i8, stream: AllocStream) -> u64 {
        // An event that cannot be created or recorded is reported complete: the allocator then
        // reuses the block at once, which is what happens without record_stream.
        let Ok(e) = self.0.event_create(device as usize, false) else { return 0 };
        if self.0.event_record(e, device as usize, StreamId(stream)).is_err() {
            return 0;
        }
        e.0
    }
    fn event_query(&self, event: u64) -> bool {
        event == 0 || self.0.event_query(EventId(event)).unwrap_or(true)
    }
    fn event_destroy(&self, event: u64) {
        if event != 0 {
            self.0.event_destroy(EventId(event));
        }
    }
    fn event_synchronize(&self, event: u64) {
        if event != 0 {
            let _ = self.0.event_synchronize(EventId(event));
        }
    }
}

/// The process's caching allocator (created with the driver).
pub fn caching_allocator() -> Result<&'static CachingAllocator> {
    static ALLOC: OnceLock<std::result::Result<CachingAllocator, Error>> = OnceLock::new();
    ALLOC
        .get_or_init(|| {
            let d = checked_driver()?;
            Ok(CachingAllocator::new(Arc::new(DriverMemory(d)), d.device_count()))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// c10's allocator for CUDA: the caching allocator on the current device and stream.
struct CudaAllocator;
static CUDA_ALLOCATOR: CudaAllocator = CudaAllocator;

impl Allocator for CudaAllocator {
    fn allocate(&self, nbytes: usize) -> Result<DataPtr> {
        self.allocate_on(Device::cuda(-1), nbytes)
    }
    /// On `device` (the current one for index -1), ordered on that device's current stream.
    fn allocate_on(&self, device: Device, nbytes: usize) -> Result<DataPtr> {
        let i = index(device)?;
        Ok(caching_allocator()?.allocate(i as i8, nbytes, stream_of(i))?.into_data_ptr())
    }
}

/// Pinned host memory from the driver (`Tensor::pin_memory`): every live block is recorded
/// (start → size) so `is_pinned` can answer for any address inside one.
struct Pinned {
    blocks: c10::sync::Mutex<std::collections::BTreeMap<usize, usize>>,
}
static PINNED: Pinned = Pinned { blocks: c10::sync::Mutex::new(std::collections::BTreeMap::new()) };

/// The deleter of pinned blocks.
unsafe fn free_pinned(data: *mut u8, _ctx: *mut ()) {
    PINNED.blocks.lock().unwrap_or_else(|e| e.into_inner()).remove(&(data as usize));
    if let Ok(d) = driver() {
        // SAFETY: `data` came from this driver's host_alloc (PINNED.allocate) and is released
        // once, by its DataPtr.
        unsafe { d.host_free(data) };
    }
}

impl c10::allocator::PinnedMemory for Pinned {
    fn allocate(&self, nbytes: usize) -> Result<DataPtr> {
        let p = checked_driver()?.host_alloc(nbytes.max(1))?;
        self.blocks.lock().unwrap_or_else(|e| e.into_inner()).insert(p as usize, nbytes.max(1));
        let ptr = std::ptr::NonNull::new(p).ok_or_else(|| Error::Cuda("cuMemHostAlloc returned null".into()))?;
        // SAFETY: `p` is a live pinned block of at least `nbytes` bytes, freed by the deleter.
        Ok(unsafe { DataPtr::from_raw(ptr, std::ptr::null_mut(), Some(free_pinned), Device::CPU) })
    }

    fn is_pinned(&self, ptr: *const u8) -> bool {
        let a = ptr as usize;
        let blocks = self.blocks.lock().unwrap_or_else(|e| e.into_inner());
        blocks.range(..=a).next_back().is_some_and(|(&start, &len)| a < start + len)
    }
}

/// `torch.cuda.memory_allocated(device)`.
pub fn memory_allocated(device: Device) -> Result<usize> {
    caching_allocator()?.memory_allocated(index(device)? as i8)
}

/// `torch.cuda.max_memory_allocated(device)`.
pub fn max_memory_allocated(device: Device) -> Result<usize> {
    caching_allocator()?.max_memory_allocated(index(device)? as i8)
}

/// `torch.cuda.memory_reserved(device)`.
pub fn memory_reserved(device: Device) -> Result<usize> {
    caching_allocator()?.memory_reserved(index(device)? as i8)
}

/// `torch.cuda.max_memory_reserved(device)`.
pub fn max_memory_reserved(device: Device) -> Result<usize> {
    caching_allocator()?.max_memory_reserved(index(device)? as i8)
}

/// `torch.cuda.reset_peak_memory_stats(device)`.
pub fn reset_peak_memory_stats(device: Device) -> Result<()> {
    caching_allocator()?.reset_peak_memory_stats(index(device)? as i8)
}

/// `torch.cuda.set_per_process_memory_fraction(fraction, device)`: the caching allocator
/// reserves at most `fraction` of the device's memory; an allocation past it fails with
/// `OutOfMemory`. 1 removes the limit.
pub fn set_per_process_memory_fraction(fraction: f64, device: Device) -> Result<()> {
    caching_allocator()?.set_memory_fraction(fraction, index(device)? as i8)
}

/// `torch.cuda.mem_get_info(device)`: the device's free and total bytes, from the driver.
pub fn mem_get_info(device: Device) -> Result<(usize, usize)> {
    let i = index(device)?;
    checked_driver()?.mem_info(i)
}

/// `torch.cuda.memory_stats(device)`.
pub fn memory_stats(device: Device) -> Result<MemoryStats> {
    caching_allocator()?.memory_stats(index(device)? as i8)
}

/// `torch.cuda.memory_summary(device)`: PyTorch's table of the device's allocator statistics.
pub fn memory_summary(device: Device) -> Result<String> {
    let i = index(device)? as i8;
    Ok(c10::cuda_caching_allocator::memory_summary(&caching_allocator()?.memory_stats(i)?, i))
}

/// `torch.cuda.empty_cache()`: returns every unused cached segment to the driver.
pub fn empty_cache() -> Result<()> {
    caching_allocator()?.empty_cache();
    Ok(())
}

/// Marks `data` as used by `stream`, so its memory is not reused before the work queued there
/// finished (`Tensor.record_stream`).
pub fn record_stream(data: &DataPtr, stream: Stream) -> Result<()> {
    caching_allocator()?.record_stream_data_ptr(data, stream.id);
    Ok(())
}
