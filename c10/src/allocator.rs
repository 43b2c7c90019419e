//! The `Allocator` trait, `DataPtr` (a pointer that knows how to free itself), the 64-byte
//! aligned CPU allocator and the per-device-type allocator registry.

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, Ordering};

use crate::{Device, DeviceType, Error, Result};

/// Alignment of every CPU allocation: one cache line, and enough for AVX-512 loads.
pub const CPU_ALIGNMENT: usize = 64;

/// Frees the memory behind a [`DataPtr`]. Receives the data pointer and the context word given
/// at construction.
pub type DeleterFn = unsafe fn(data: *mut u8, ctx: *mut ());

/// An owned pointer to device memory plus the function that releases it. Dropping the
/// `DataPtr` runs the deleter exactly once.
pub struct DataPtr {
    ptr: NonNull<u8>,
    ctx: *mut (),
    deleter: Option<DeleterFn>,
    device: Device,
}

// SAFETY: a DataPtr owns its allocation (or a handle to external memory whose owner promised,
// through `DataPtr::from_raw`'s contract, that it may be freed from any thread); it exposes
// the address only as a raw pointer, so sharing it adds no aliasing of Rust references.
unsafe impl Send for DataPtr {}
// SAFETY: see the Send impl; `&DataPtr` only reads the pointer value and device.
unsafe impl Sync for DataPtr {}

impl DataPtr {
    /// Wraps memory together with its deleter.
    ///
    /// # Safety
    /// `ptr` must stay valid for the lifetime of the returned value and of every storage built
    /// from it; `deleter`, if any, must be safe to call once with `(ptr, ctx)` from any thread
    /// after the last use of the memory.
    pub unsafe fn from_raw(ptr: NonNull<u8>, ctx: *mut (), deleter: Option<DeleterFn>, device: Device) -> DataPtr {
        DataPtr { ptr, ctx, deleter, device }
    }

    /// The address of the first byte.
    #[inline]
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The device the memory lives on.
    #[inline]
    pub fn device(&self) -> Device {
        self.device
    }
}

impl Drop for DataPtr {
    fn drop(&mut self) {
        if let Some(d) = self.deleter.take() {
            // SAFETY: `from_raw`'s contract: the deleter may be called once with these values
            // after the last use; `take()` guarantees once, and dropping means last use.
            unsafe { d(self.ptr.as_ptr(), self.ctx) }
        }
    }
}

impl std::fmt::Debug for DataPtr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DataPtr({:p} on {})", self.ptr, self.device)
    }
}

/// Hands out device memory. One allocator per device type is registered in the registry.
pub trait Allocator: Send + Sync {
    /// Allocates `nbytes` bytes (contents unspecified). Zero bytes gives a valid dangling pointer.
    fn allocate(&self, nbytes: usize) -> Result<DataPtr>;

    /// Allocates `nbytes` on `device` (an index of -1 means the current device). Allocators of
    /// device types with one device (the CPU) keep this default.
    fn allocate_on(&self, device: Device, nbytes: usize) -> Result<DataPtr> {
        let _ = device;
        self.allocate(nbytes)
    }
}

/// The default CPU allocator: `std::alloc` with 64-byte alignment.
#[derive(Debug, Default)]
pub struct CpuAllocator;

/// Frees a CPU block; `ctx` holds the byte size the block was allocated with.
///
/// # Safety
/// `data` must come from [`CpuAllocator::allocate`] with the size stored in `ctx`.
unsafe fn cpu_free(data: *mut u8, ctx: *mut ()) {
    let nbytes = ctx as usize;
    if nbytes == 0 {
        return;
    }
    // SAFETY: the layout is the one used in `allocate` (same size, CPU_ALIGNMENT), which was
    // valid then, and the pointer came from `std::alloc::alloc` with it.
    unsafe { std::alloc::dealloc(data, Layout::from_size_align_unchecked(nbytes, CPU_ALIGNMENT)) }
}

impl Allocator for CpuAllocator {
    fn allocate(&self, nbytes: usize) -> Result<DataPtr> {
        if nbytes == 0 {
            let dangling = NonNull::new(CPU_ALIGNMENT as *mut u8).expect("non-zero");
            // SAFETY: a zero-size block is never dereferenced and has no deleter.
            return Ok(unsafe { DataPtr::from_raw(dangling, std::ptr::null_mut(), None, Device::CPU) });
        }
        let layout = Layout::from_size_align(nbytes, CPU_ALIGNMENT)
            .map_err(|_| Error::OutOfMemory { device: DeviceType::Cpu, nbytes })?;
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { std::alloc::alloc(layout) };
        let p = NonNull::new(p).ok_or(Error::OutOfMemory { device: DeviceType::Cpu, nbytes })?;
        // SAFETY: `cpu_free` receives the size as ctx and frees with the same layout.
        Ok(unsafe { DataPtr::from_raw(p, nbytes as *mut (), Some(cpu_free), Device::CPU) })
    }
}

/// Page-locked ("pinned") host memory, which an accelerator backend provides (CUDA's
/// `cuMemHostAlloc`): host-to-device copies from it need no staging buffer. Tensors in it are CPU
/// tensors (PyTorch's `pin_memory()` / `is_pinned()`).
pub trait PinnedMemory: Send + Sync {
    /// Allocates `nbytes` of pinned host memory (a CPU [`DataPtr`]).
    fn allocate(&self, nbytes: usize) -> Result<DataPtr>;
    /// Whether `ptr` points into pinned memory of this provider.
    fn is_pinned(&self, ptr: *const u8) -> bool;
}

static PINNED: AtomicPtr<&'static dyn PinnedMemory> = AtomicPtr::new(std::ptr::null_mut());

/// Registers the provider of pinned memory (the CUDA backend does at its initialisation).
pub fn set_pinned_memory(p: &'static dyn PinnedMemory) {
    let slot = Box::into_raw(Box::new(p));
    PINNED.store(slot, Ordering::Release);
}

/// The provider of pinned memory, if an accelerator backend registered one.
pub fn pinned_memory() -> Option<&'static dyn PinnedMemory> {
    let p = PINNED.load(Ordering::Acquire);
    // SAFETY: a non-null slot is a leaked Box written once by `set_pinned_memory`.
    (!p.is_null()).then(|| unsafe { *p })
}

static CPU_ALLOCATOR: crate::caching_allocator::CachingCpuAllocator = crate::caching_allocator::CachingCpuAllocator;

/// The allocator of the `meta` device: tensors with sizes, strides and a dtype but no data
/// (PyTorch's meta tensors), which operators with a `Meta` kernel take and return to compute
/// output shapes and dtypes without computing values.
///
/// Note [Meta storage]: a meta storage records its byte size, so views, `as_strided` bounds and
/// `untyped_storage().nbytes()` behave as on any device, but it owns no memory: its pointer is
/// the address 64, inside the never-mapped first page, so a kernel that wrongly reads a meta
/// tensor's data faults at once instead of reading someone else's memory. Kernels tell meta
/// tensors apart by their device, as they do CUDA ones (Note [Device-generic operators]).
#[derive(Debug, Default)]
pub struct MetaAllocator;

impl Allocator for MetaAllocator {
    fn allocate(&self, _nbytes: usize) -> Result<DataPtr> {
        let nowhere = NonNull::new(CPU_ALIGNMENT as *mut u8).expect("non-zero");
        // SAFETY: meta memory is never dereferenced (Note [Meta storage]) and has no deleter.
        Ok(unsafe { DataPtr::from_raw(nowhere, std::ptr::null_mut(), None, Device::META) })
    }
}

static META_ALLOCATOR: MetaAllocator = MetaAllocator;

/// One registry slot per device type: a leaked `&'static dyn Allocator` behind an atomic
/// pointer, so the hot path is a single load.
static REGISTRY: [AtomicPtr<&'static dyn Allocator>; DeviceType::COUNT] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; DeviceType::COUNT];

/// Registers the allocator for a device type, replacing any earlier one. Registration is rare,
/// so the small box holding the trait object is leaked on purpose.
pub fn set_allocator(ty: DeviceType, alloc: &'static dyn Allocator) {
    let slot = Box::into_raw(Box::new(alloc));
    REGISTRY[ty as usize].store(slot, Ordering::Release);
}

/// The allocator for a device type. The CPU always has one: the caching allocator (See Note
/// [CPU caching allocator]) unless another was registered; so has `meta` (Note [Meta storage]).
#[inline]
pub fn get_allocator(ty: DeviceType) -> Result<&'static dyn Allocator> {
    let p = REGISTRY[ty as usize].load(Ordering::Acquire);
    if p.is_null() {
        return match ty {
            DeviceType::Cpu => Ok(&CPU_ALLOCATOR),
            DeviceType::Meta => Ok(&META_ALLOCATOR),
            _ => Err(Error::NoAllocator(ty)),
        };
    }
    // SAFETY: non-null slots hold pointers from `Box::into_raw` in `set_allocator`, never freed.
    Ok(unsafe { *p })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_blocks_are_aligned() {
        for n in [1usize, 3, 64, 1000, 1 << 20] {
            let d = get_allocator(DeviceType::Cpu).unwrap().allocate(n).unwrap();
            assert_eq!(d.as_ptr() as usize % CPU_ALIGNMENT, 0);
            assert_eq!(d.device(), Device::CPU);
        }
        let z = CpuAllocator.allocate(0).unwrap();
        assert_eq!(z.as_ptr() as usize % CPU_ALIGNMENT, 0);
    }

    #[test]
    fn missing_allocator_is_an_error() {
        assert!(matches!(get_allocator(DeviceType::PrivateUse1), Err(Error::NoAllocator(DeviceType::PrivateUse1))));
    }

    #[test]
    fn meta_blocks_have_no_memory() {
        let d = get_allocator(DeviceType::Meta).unwrap().allocate(1 << 40).unwrap();
        assert_eq!(d.device(), Device::META);
        assert_eq!(d.as_ptr() as usize, CPU_ALIGNMENT);
    }
}
