//! Copies that involve a CUDA tensor. Conversions and strides are handled on the device by the
//! `cast_<src>_<dst>` kernels; the host side of a transfer is always one contiguous run of the
//! destination's dtype, so the driver copies plain bytes.
//!
//! - device to the same device: one `cast` launch over both layouts (a plain `memcpy` when the
//!   two are contiguous with one dtype);
//! - device to another device: the source made contiguous on its device, a peer copy into a
//!   temporary on the destination, then the same-device case;
//! - host to device: the source converted and made contiguous on the host, uploaded into the
//!   destination (or into a temporary that a `cast` launch scatters into a strided destination);
//! - device to host: the source gathered and converted on the device into a contiguous
//!   temporary, downloaded, then written into the destination by the CPU copy.

use aten::native::tensor_iterator::TensorIteratorConfig;
use aten::Tensor;
use c10::{Device, Error, MemoryFormat, Result};

use crate::driver::{driver, KernelId, StreamId};
use aten::native::stub::{KernelCache, DTYPE_SLOTS};

fn stream(device: Device) -> Result<StreamId> {
    Ok(StreamId(crate::runtime::current_stream(device)?.id))
}

/// The bytes of a contiguous CPU tensor.
fn host_bytes(t: &Tensor) -> &[u8] {
    debug_assert!(t.device().is_cpu() && t.is_contiguous());
    let n = t.numel() as usize * t.dtype().size();
    if n == 0 {
        return &[];
    }
    // SAFETY: a contiguous CPU tensor's elements are `n` initialised bytes from its data pointer
    // (TensorImpl invariant); the slice lives no longer than the borrow of `t`.
    unsafe { std::slice::from_raw_parts(t.data_ptr(), n) }
}

/// The bytes of a contiguous CPU tensor, for writing. The caller owns `t` (a fresh temporary or
/// the user's destination, checked for internal overlap).
#[allow(clippy::mut_from_ref)]
fn host_bytes_mut(t: &Tensor) -> &mut [u8] {
    debug_assert!(t.device().is_cpu() && t.is_contiguous());
    let n = t.numel() as usize * t.dtype().size();
    if n == 0 {
        return &mut [];
    }
    // SAFETY: as in `host_bytes`; no other reference into these bytes exists during the copy.
    unsafe { std::slice::from_raw_parts_mut(t.data_ptr(), n) }
}

/// `dst.copy_(src)` with at least one of them on a CUDA device.
pub(crate) fn copy_(dst: &Tensor, src: &Tensor, _non_blocking: bool) -> Result<()> {
    const OP: &str = "copy_";
    if dst.is_same(src) || dst.numel() == 0 {
        return Ok(());
    }
    aten::memory_overlap::assert_no_internal_overlap(OP, dst)?;
    let src = aten::native::shape::expand(src, dst.sizes(), false).map_err(|_| {
        Error::shape(OP, format!("src with shape {:?} cannot be broadcast to {:?}", src.sizes(), dst.sizes()))
    })?;
    let (dd, sd) = (dst.device(), src.device());
    match (dd.is_cpu(), sd.is_cpu()) {
        (false, false) if dd == sd => {
            // As the CPU's copy: a source that partly overlaps the destination is an error.
            aten::memory_overlap::assert_no_partial_overlap(OP, dst, &src)?;
            same_device(dst, &src)
        }
        (false, false) => {
            // Contiguous on the source device, then a peer copy of its bytes.
            let contiguous = aten::ops::contiguous(&src, MemoryFormat::Contiguous)?;
            let tmp = Tensor::empty_uninit(src.sizes(), src.dtype(), dd)?;
            let nbytes = src.numel() as usize * src.dtype().size();
            // Work queued on either device before the copy must have finished.
            driver()?.stream_synchronize(sd.index as usize, stream(sd)?)?;
            driver()?.copy_peer(
                dd.index as usize,
                tmp.data_ptr() as u64,
                sd.index as usize,
                contiguous.data_ptr() as u64,
                nbytes,
            )?;
            same_device(dst, &tmp)
        }
        (false, true) => host_to_device(dst, &src),
        (true, false) => device_to_host(dst, &src),
        (true, true) => Err(Error::Cuda(format!("{OP}: the CUDA kernel was called with two CPU tensors"))),
    }
}

/// A strided, converting copy within one device: one `cast_<src>_<dst>` launch, or a plain
/// device `memcpy` when both are contiguous with one dtype.
fn same_device(dst: &Tensor, src: &Tensor) -> Result<()> {
    let device = dst.device();
    if dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous() {
        let nbytes = dst.numel() as usize * dst.dtype().size();
        return driver()?.copy_dtod(
            device.index as usize,
            dst.data_ptr() as u64,
            src.data_ptr() as u64,
            nbytes,
            stream(device)?,
        );
    }
    // The iterator sorts and coalesces the dims of both layouts; `copy_` names its loop `cast`.
    let iter = TensorIteratorConfig::new("copy_")
        .add_output(Some(dst))
        .add_input(src)
        .check_all_same_dtype(false)
        .static_output_dtype(dst.dtype())
        .common_dtype(src.dtype())
        .build()?;
    cast(&iter)
}

/// The `cast_<src>_<dst>` launch over a built copy iterator, its kernel resolved once per pair
/// of dtypes (Note [Kernel handles] in `aten::native::stub`).
fn cast(iter: &aten::native::tensor_iterator::TensorIterator<'_>) -> Result<()> {
    static CASTS: KernelCache<{ DTYPE_SLOTS * DTYPE_SLOTS }> = KernelCache::new();
    let (s, d) = (iter.input_dtype(0), iter.output_dtype());
    let resolve = || {
        let name = format!("cast_{}_{}", crate::loops::suffix(s), crate::loops::suffix(d));
        KernelId::find(&name).map(|k| k.index() as u32)
    };
    let id = CASTS
        .get_or_resolve(s as usize * DTYPE_SLOTS + d as usize, resolve)
        .ok_or_else(|| Error::NotImplemented { op: "copy_".into(), msg: format!("a CUDA copy from {s} to {d}") })?;
    crate::loops::launch_plain(iter, KernelId::from_index(id))
}

/// Host to device: the host side converted to the destination's dtype and made contiguous.
fn host_to_device(dst: &Tensor, src: &Tensor) -> Result<()> {
    let device = dst.device();
    let host = if src.dtype() == dst.dtype() && src.is_contiguous() {
        src.clone()
    } else {
        aten::ops::_to_copy(src, Some(dst.dtype()), None, None, None, false, Some(MemoryFormat::Contiguous))?
    };
    let target =
        if dst.is_contiguous() { dst.clone() } else { Tensor::empty_uninit(dst.sizes(), dst.dtype(), device)? };
    driver()?.copy_htod(device.index as usize, target.data_ptr() as u64, host_bytes(&host), stream(device)?)?;
    if !target.is_same(dst) {
        same_device(dst, &target)?;
    }
    Ok(())
}

/// Device to host: gathered and converted on the device into a contiguous temporary of the
/// destination's dtype, downloaded, then written into the destination's layout on the host.
fn device_to_host(dst: &Tensor, src: &Tensor) -> Result<()> {
    let device = src.device();
    let staged = if src.dtype() == dst.dtype() && src.is_contiguous() {
        src.clone()
    } else {
        let t = Tensor::empty_uninit(src.sizes(), dst.dtype(), device)?;
        same_device(&t, src)?;
        t
    };
    let host =
        if dst.is_contiguous() { dst.clone() } else { Tensor::empty_uninit(dst.sizes(), dst.dtype(), Device::CPU)? };
    driver()?.copy_dtoh(device.index as usize, host_bytes_mut(&host), staged.data_ptr() as u64, stream(device)?)?;
    if !host.is_same(dst) {
        aten::native::copy::copy_into(dst, &host)?;
    }
    Ok(())
}
