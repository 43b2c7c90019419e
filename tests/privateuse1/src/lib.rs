//! An out-of-tree backend on the `PrivateUse1` dispatch key, written only against aten's public
//! API: it registers an allocator for `DeviceType::PrivateUse1` (host memory standing in for a
//! device) and an `add.Tensor` kernel, through an `inventory` registrar — no change to aten and
//! no init call. The integration test `tests/tests/privateuse1.rs` uses it.

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

use aten::dispatcher::{Dispatcher, Registrar};
use aten::Tensor;
use c10::allocator::{set_allocator, Allocator, DataPtr};
use c10::tensor_impl::contiguous_strides;
use c10::{Device, DeviceType, DispatchKey, Error, Result, Scalar, ScalarType, Storage};

/// The device of this backend.
pub const DEVICE: Device = Device::new(DeviceType::PrivateUse1, 0);

/// Number of `add` kernel calls on this backend (for tests).
pub static ADD_CALLS: AtomicUsize = AtomicUsize::new(0);
/// Number of allocations made by this backend's allocator.
pub static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

const ALIGN: usize = 64;

/// Frees a block of this allocator; `ctx` is the byte size.
///
/// # Safety
/// `data` must come from [`HostAllocator::allocate`] with the size stored in `ctx`.
unsafe fn free_block(data: *mut u8, ctx: *mut ()) {
    // SAFETY: same size and alignment as the allocation (the contract above); size is non-zero
    // because zero-size blocks have no deleter.
    unsafe { std::alloc::dealloc(data, Layout::from_size_align_unchecked(ctx as usize, ALIGN)) }
}

/// Host memory labelled as PrivateUse1 memory.
struct HostAllocator;

impl Allocator for HostAllocator {
    fn allocate(&self, nbytes: usize) -> Result<DataPtr> {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        let oom = || Error::OutOfMemory { device: DeviceType::PrivateUse1, nbytes };
        if nbytes == 0 {
            let p = NonNull::new(ALIGN as *mut u8).ok_or_else(oom)?;
            // SAFETY: a zero-size block is never dereferenced and has no deleter.
            return Ok(unsafe { DataPtr::from_raw(p, std::ptr::null_mut(), None, DEVICE) });
        }
        let layout = Layout::from_size_align(nbytes, ALIGN).map_err(|_| oom())?;
        // SAFETY: the layout has a non-zero size.
        let p = NonNull::new(unsafe { std::alloc::alloc(layout) }).ok_or_else(oom)?;
        // SAFETY: `free_block` frees with the same layout, once, when the DataPtr drops.
        Ok(unsafe { DataPtr::from_raw(p, nbytes as *mut (), Some(free_block), DEVICE) })
    }
}

static ALLOCATOR: HostAllocator = HostAllocator;

/// Copies a CPU f32 tensor to the device.
pub fn to_device(t: &Tensor) -> Result<Tensor> {
    let v = t.to_vec::<f32>()?;
    let storage = Storage::new(v.len() * 4, DEVICE)?;
    // SAFETY: the storage was just allocated with room for v.len() f32 values, 64-byte aligned.
    unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), storage.data_ptr() as *mut f32, v.len()) };
    Ok(Tensor::from_storage(storage, t.sizes(), contiguous_strides(t.sizes()), 0, ScalarType::F32))
}

/// Reads a contiguous f32 device tensor back to the host.
pub fn to_host(t: &Tensor) -> Result<Vec<f32>> {
    if t.device() != DEVICE || t.dtype() != ScalarType::F32 || !t.is_contiguous() {
        return Err(Error::invalid("to_host", "expected a contiguous float32 privateuseone tensor"));
    }
    let n = t.numel() as usize;
    let mut out = vec![0f32; n];
    // SAFETY: a contiguous f32 tensor of n elements starts at data_ptr (checked above).
    unsafe { std::ptr::copy_nonoverlapping(t.data_ptr() as *const f32, out.as_mut_ptr(), n) };
    Ok(out)
}

/// `add.Tensor` for same-shape contiguous f32 tensors on the device.
fn add(a: &Tensor, b: &Tensor, alpha: Scalar) -> Result<Tensor> {
    ADD_CALLS.fetch_add(1, Ordering::Relaxed);
    for t in [a, b] {
        if t.device() != DEVICE {
            return Err(Error::DeviceMismatch { op: "add".into(), a: DEVICE.to_string(), b: t.device().to_string() });
        }
    }
    if a.sizes() != b.sizes() || a.dtype() != ScalarType::F32 || b.dtype() != ScalarType::F32 {
        return Err(Error::NotImplemented {
            op: "add".into(),
            msg: "this test backend adds same-shape float32 tensors only".into(),
        });
    }
    let (x, y) = (to_host(a)?, to_host(b)?);
    let al = alpha.to_f64() as f32;
    let sum: Vec<f32> = x.iter().zip(&y).map(|(p, q)| p + al * q).collect();
    to_device(&Tensor::from_vec(sum, a.sizes())?)
}

fn register(d: &Dispatcher) {
    set_allocator(DeviceType::PrivateUse1, &ALLOCATOR);
    d.register_kernel(
        aten::handles::add_tensor::NAME,
        DispatchKey::PrivateUse1,
        aten::handles::add_tensor::kernel(|_ks, a, b, alpha| add(a, b, alpha)),
    )
    .expect("PrivateUse1 is a runtime key");
}

inventory::submit! { Registrar(register) }
