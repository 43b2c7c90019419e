//! Copies and dtype conversions: `copy_` (broadcasting, converting), `_to_copy`, `to.dtype`,
//! `clone`, `contiguous`, and the internal helpers the TensorIterator uses to cast operands.

use c10::{Device, Element, Error, Layout, MemoryFormat, Result, ScalarType};

use crate::native::cpu::loops::unary_loop;
use crate::native::tensor_iterator::TensorIteratorConfig;
use crate::Tensor;

/// Writes `src` (broadcast to `dst`'s shape, converted to its dtype) into `dst`. No version
/// bump: callers that are operators get it from the ADInplaceOrView layer.
pub fn copy_into(dst: &Tensor, src: &Tensor) -> Result<()> {
    if dst.numel() == 0 {
        return Ok(());
    }
    if !dst.device().is_cpu() || !src.device().is_cpu() {
        // The copy kernel of the device (Note [Device-generic operators]).
        crate::ops::copy_(dst, src, false)?;
        return Ok(());
    }
    let src = crate::native::shape::expand(src, dst.sizes(), false).map_err(|_| {
        Error::shape("copy_", format!("src with shape {:?} cannot be broadcast to {:?}", src.sizes(), dst.sizes()))
    })?;
    let complex = dst.dtype().is_complex() || src.dtype().is_complex();
    let mut cfg = TensorIteratorConfig::new("copy_")
        .add_output(Some(dst))
        .add_input(&src)
        .check_all_same_dtype(false)
        .static_output_dtype(dst.dtype())
        .common_dtype(src.dtype());
    if complex {
        cfg = cfg.allow_complex();
    }
    let iter = cfg.build()?;
    if complex {
        return crate::native::complex::copy_loop(&iter, dst.dtype(), src.dtype());
    }
    c10::dispatch_all_types!(dst.dtype(), O => {
        c10::dispatch_all_types!(src.dtype(), I => unary_loop::<O, I>(&iter, |x: I| x.cast::<O>()))
    });
    Ok(())
}

/// A new tensor with `t`'s values converted to `dtype`, laid out like `t` when it is dense.
pub fn to_dtype(t: &Tensor, dtype: ScalarType) -> Result<Tensor> {
    let out = empty_like_layout(t, dtype)?;
    copy_into(&out, t)?;
    Ok(out)
}

/// An uninitialised tensor of `t`'s shape laid out like `t` (`empty_like` with the preserve
/// rule: `t`'s strides when dense and non-overlapping, else dense strides in `t`'s order).
pub fn empty_like_layout(t: &Tensor, dtype: ScalarType) -> Result<Tensor> {
    crate::native::factory::empty_like(t, Some(dtype), None, None, None, None)
}

/// `copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)` on the CPU (both
/// tensors on the CPU: a copy that involves another device dispatches to that device's kernel).
pub fn copy_(self_: &Tensor, src: &Tensor, _non_blocking: bool) -> Result<Tensor> {
    copy_into(self_, src)?;
    Ok(self_.clone())
}

/// `copy_` on the meta device (Note [Meta loops]): a copy into a meta tensor checks that `src`
/// broadcasts to it and writes nothing; a copy out of a meta tensor into real memory is
/// PyTorch's error, since there are no values to copy.
pub fn copy_meta(self_: &Tensor, src: &Tensor, _non_blocking: bool) -> Result<Tensor> {
    if !self_.device().is_meta() {
        return Err(Error::NotImplemented {
            op: "copy_".into(),
            msg: "Cannot copy out of meta tensor; no data!".into(),
        });
    }
    crate::native::shape::expand(src, self_.sizes(), false).map_err(|_| {
        Error::shape("copy_", format!("src with shape {:?} cannot be broadcast to {:?}", src.sizes(), self_.sizes()))
    })?;
    Ok(self_.clone())
}

/// `_to_copy(Tensor self, *, ScalarType? dtype, Layout? layout, Device? device, bool? pin_memory,
/// bool non_blocking=False, MemoryFormat? memory_format) -> Tensor`: a new tensor on `device`
/// (default: `self`'s) then `copy_`, which dispatches to the kernel that reaches both devices.
/// Registered for every backend that has a `copy_` (Note [Device-generic operators]).
pub fn to_copy(
    self_: &Tensor,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
    non_blocking: bool,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    const OP: &str = "_to_copy";
    crate::native::factory::check_layout_and_pinning(OP, layout, pin_memory)?;
    let dtype = dtype.unwrap_or(self_.dtype());
    let device = device.unwrap_or(self_.device());
    let out = match memory_format {
        None | Some(MemoryFormat::Preserve) => {
            crate::native::factory::empty_like(self_, Some(dtype), None, Some(device), None, None)?
        }
        Some(MemoryFormat::Contiguous) => Tensor::empty_uninit(self_.sizes(), dtype, device)?,
        Some(m) => {
            crate::native::factory::empty_memory_format(self_.sizes(), Some(dtype), None, Some(device), None, Some(m))?
        }
    };
    if device.is_cpu() && self_.device().is_cpu() {
        copy_into(&out, self_)?;
    } else {
        crate::ops::copy_(&out, self_, non_blocking)?;
    }
    Ok(out)
}

/// `clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor`
pub fn clone(self_: &Tensor, memory_format: Option<MemoryFormat>) -> Result<Tensor> {
    to_copy(self_, None, None, None, None, false, memory_format)
}

/// `contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format) -> Tensor(a)`:
/// the tensor itself when already contiguous, else a contiguous copy.
pub fn contiguous(self_: &Tensor, memory_format: MemoryFormat) -> Result<Tensor> {
    if memory_format != MemoryFormat::Contiguous {
        return Err(Error::NotImplemented { op: "contiguous".into(), msg: format!("memory format {memory_format:?}") });
    }
    if self_.is_contiguous() {
        return Ok(self_.clone());
    }
    crate::ops::clone(self_, Some(MemoryFormat::Contiguous))
}

/// `to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool copy=False,
/// MemoryFormat? memory_format=None) -> Tensor(a)`: the tensor itself when nothing changes.
pub fn to_dtype_op(
    self_: &Tensor,
    dtype: ScalarType,
    non_blocking: bool,
    copy: bool,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    if dtype == self_.dtype() && !copy && matches!(memory_format, None | Some(MemoryFormat::Preserve)) {
        return Ok(self_.clone());
    }
    crate::ops::_to_copy(self_, Some(dtype), None, None, None, non_blocking, memory_format)
}

/// `to.device(Tensor(a) self, Device device, ScalarType dtype, bool non_blocking=False, bool
/// copy=False, MemoryFormat? memory_format=None) -> Tensor(a)`: the tensor itself when device,
/// dtype and layout already match.
pub fn to_device_op(
    self_: &Tensor,
    device: Device,
    dtype: ScalarType,
    non_blocking: bool,
    copy: bool,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    if same_device(self_.device(), device)
        && dtype == self_.dtype()
        && !copy
        && matches!(memory_format, None | Some(MemoryFormat::Preserve))
    {
        return Ok(self_.clone());
    }
    crate::ops::_to_copy(self_, Some(dtype), None, Some(device), None, non_blocking, memory_format)
}

/// Whether a tensor on `have` is already on the requested device (`cuda` without an index
/// means the current device, as in PyTorch's `to`).
fn same_device(have: Device, want: Device) -> bool {
    if have.ty != want.ty {
        false
    } else if have.ty == c10::DeviceType::Cpu {
        true
    } else if want.index >= 0 {
        have.index == want.index
    } else {
        c10::stream::device_guard_impl(want.ty).and_then(|g| g.current_device()).is_ok_and(|cur| cur == have)
    }
}

impl Tensor {
    /// `self` on `device` (PyTorch's `tensor.to(device)`): the tensor itself when it is there
    /// already, else a copy with the same dtype and layout.
    pub fn to_device(&self, device: Device) -> Result<Tensor> {
        crate::ops::to_device(self, device, self.dtype(), false, false, None)
    }

    /// `self` on the current CUDA device (PyTorch's `tensor.cuda()`): the tensor itself when it
    /// is there already. Without a CUDA backend (aten alone links none) it is the error every
    /// move to a missing device is, a value:
    ///
    /// ```
    /// let t = aten::Tensor::from_slice(&[1.0f32]);
    /// assert!(t.cuda().is_err());
    /// assert!(t.cuda_on(0).is_err());
    /// assert!(t.cpu().unwrap().is_same(&t));
    /// ```
    pub fn cuda(&self) -> Result<Tensor> {
        self.to_device(Device::cuda(-1))
    }

    /// `self` on CUDA device `index` (PyTorch's `tensor.cuda(index)`).
    pub fn cuda_on(&self, index: i8) -> Result<Tensor> {
        self.to_device(Device::cuda(index))
    }

    /// `self` on the CPU (PyTorch's `tensor.cpu()`).
    pub fn cpu(&self) -> Result<Tensor> {
        self.to_device(Device::CPU)
    }

    /// Whether `self` lives in page-locked host memory (PyTorch's `is_pinned()`); false without
    /// an accelerator backend.
    pub fn is_pinned(&self) -> bool {
        self.device().is_cpu()
            && c10::allocator::pinned_memory().is_some_and(|p| p.is_pinned(self.storage().data_ptr()))
    }

    /// A copy of `self` in page-locked host memory, or `self` when it is pinned already
    /// (PyTorch's `pin_memory()`): copies from it to a device need no staging. A contiguous
    /// copy; differentiable like any copy.
    pub fn pin_memory(&self) -> Result<Tensor> {
        const OP: &str = "pin_memory";
        if !self.device().is_cpu() {
            return Err(Error::invalid(
                OP,
                format!("cannot pin '{}' only dense CPU tensors can be pinned", self.device()),
            ));
        }
        if self.is_pinned() {
            return Ok(self.clone());
        }
        let pinned = c10::allocator::pinned_memory().ok_or_else(|| Error::NotImplemented {
            op: OP.into(),
            msg: "Cannot access accelerator device when none is available.".into(),
        })?;
        let nbytes = c10::size::contiguous_nbytes(OP, self.sizes(), self.dtype().size())?;
        let storage = c10::Storage::from_data_ptr(pinned.allocate(nbytes)?, nbytes);
        let out = Tensor::from_storage(
            storage,
            self.sizes(),
            c10::tensor_impl::contiguous_strides(self.sizes()),
            0,
            self.dtype(),
        );
        crate::ops::copy_(&out, self, false)?;
        Ok(out)
    }

    /// A deep copy (PyTorch's `clone()`), laid out like `self` when dense. (`clone()` itself is
    /// `Clone::clone`, which shares the data like a new Python reference.)
    pub fn clone_tensor(&self) -> Result<Tensor> {
        crate::ops::clone(self, None)
    }
}
