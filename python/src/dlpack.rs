//! DLPack (v1.1 structures): `Tensor.__dlpack__`/`__dlpack_device__` and `torch.from_dlpack`,
//! so a CPU tensor moves to and from PyTorch, numpy and any other DLPack consumer or producer
//! without a copy (the same data pointer).
//!
//! Export hands out a capsule named `dltensor` (legacy `DLManagedTensor`) or
//! `dltensor_versioned` (`DLManagedTensorVersioned`, when the consumer passes `max_version`
//! with major version 1 or more) whose manager context keeps our tensor alive; a consumer
//! renames the capsule to `used_...` and calls the deleter when done, and a capsule never
//! consumed is freed by its destructor. Import takes such a capsule, renames it, and makes a
//! tensor over its memory whose storage calls the producer's deleter when it is freed.

use std::ffi::{c_void, CStr};
use std::ptr::NonNull;

use aten::Tensor;
use c10::{DataPtr, Device, ScalarType, Storage};
use pyo3::exceptions::{PyBufferError, PyRuntimeError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
struct DLPackVersion {
    major: u32,
    minor: u32,
}

#[repr(C)]
struct DLManagedTensorVersioned {
    version: DLPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
}

const CPU: i32 = 1;
const CUDA_HOST: i32 = 3;
const LEGACY: &CStr = c"dltensor";
const VERSIONED: &CStr = c"dltensor_versioned";
const USED_LEGACY: &CStr = c"used_dltensor";
const USED_VERSIONED: &CStr = c"used_dltensor_versioned";

fn dl_dtype(st: ScalarType) -> DLDataType {
    let (code, bits) = match st {
        ScalarType::Bool => (6, 8),
        ScalarType::U8 => (1, 8),
        ScalarType::I8 => (0, 8),
        ScalarType::I16 => (0, 16),
        ScalarType::I32 => (0, 32),
        ScalarType::I64 => (0, 64),
        ScalarType::F16 => (2, 16),
        ScalarType::F32 => (2, 32),
        ScalarType::F64 => (2, 64),
        ScalarType::BF16 => (4, 16),
        ScalarType::C64 => (5, 64),
        ScalarType::C128 => (5, 128),
    };
    DLDataType { code, bits, lanes: 1 }
}

fn scalar_type(d: DLDataType) -> Option<ScalarType> {
    if d.lanes != 1 {
        return None;
    }
    Some(match (d.code, d.bits) {
        (6, 8) => ScalarType::Bool,
        (1, 8) => ScalarType::U8,
        (0, 8) => ScalarType::I8,
        (0, 16) => ScalarType::I16,
        (0, 32) => ScalarType::I32,
        (0, 64) => ScalarType::I64,
        (2, 16) => ScalarType::F16,
        (2, 32) => ScalarType::F32,
        (2, 64) => ScalarType::F64,
        (4, 16) => ScalarType::BF16,
        (5, 64) => ScalarType::C64,
        (5, 128) => ScalarType::C128,
        _ => return None,
    })
}

/// What an exported capsule's manager context owns.
struct Holder {
    _tensor: Tensor,
    shape: Vec<i64>,
    strides: Vec<i64>,
}

unsafe extern "C" fn delete_legacy(m: *mut DLManagedTensor) {
    if m.is_null() {
        return;
    }
    // SAFETY: `m` and its context were made by `export` with Box::into_raw, and a deleter runs
    // once (DLPack's contract).
    unsafe {
        let m = Box::from_raw(m);
        drop(Box::from_raw(m.manager_ctx.cast::<Holder>()));
    }
}

unsafe extern "C" fn delete_versioned(m: *mut DLManagedTensorVersioned) {
    if m.is_null() {
        return;
    }
    // SAFETY: as in `delete_legacy`.
    unsafe {
        let m = Box::from_raw(m);
        drop(Box::from_raw(m.manager_ctx.cast::<Holder>()));
    }
}

/// Frees an exported capsule that no consumer took (its name is still the unused one).
unsafe extern "C" fn capsule_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: called by Python with the capsule; the pointer is ours while the name is unused.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, LEGACY.as_ptr()) == 1 {
            delete_legacy(ffi::PyCapsule_GetPointer(capsule, LEGACY.as_ptr()).cast());
        } else if ffi::PyCapsule_IsValid(capsule, VERSIONED.as_ptr()) == 1 {
            delete_versioned(ffi::PyCapsule_GetPointer(capsule, VERSIONED.as_ptr()).cast());
        }
    }
}

/// `t.__dlpack__(...)`: a capsule over `t`'s memory.
pub fn export(py: Python<'_>, t: &Tensor, max_version: Option<(u32, u32)>, copy: Option<bool>) -> PyResult<Py<PyAny>> {
    if autograd::meta::requires_grad(t) {
        return Err(PyBufferError::new_err("Can't export tensors that require gradient, use tensor.detach()"));
    }
    if t.device().ty != c10::DeviceType::Cpu {
        return Err(PyBufferError::new_err(format!("DLPack export of {} tensors is not supported yet", t.device())));
    }
    let t = if copy == Some(true) { aten::ops::clone(t, None).map_err(crate::errors::to_py)? } else { t.clone() };
    let mut holder = Box::new(Holder { shape: t.sizes().to_vec(), strides: t.strides().to_vec(), _tensor: t.clone() });
    let dl = DLTensor {
        data: t.data_ptr().cast(),
        device: DLDevice { device_type: CPU, device_id: 0 },
        ndim: t.dim() as i32,
        dtype: dl_dtype(t.dtype()),
        shape: holder.shape.as_mut_ptr(),
        strides: holder.strides.as_mut_ptr(),
        byte_offset: 0,
    };
    let ctx = Box::into_raw(holder).cast::<c_void>();
    let versioned = max_version.is_some_and(|(major, _)| major >= 1);
    // SAFETY: the capsule owns the boxed managed tensor until a consumer renames it (then the
    // consumer calls the deleter) or until its destructor frees it.
    let capsule = unsafe {
        if versioned {
            let flags = if copy == Some(true) { 2 } else { 0 };
            let m = Box::into_raw(Box::new(DLManagedTensorVersioned {
                version: DLPackVersion { major: 1, minor: 1 },
                manager_ctx: ctx,
                deleter: Some(delete_versioned),
                flags,
                dl_tensor: dl,
            }));
            ffi::PyCapsule_New(m.cast(), VERSIONED.as_ptr(), Some(capsule_destructor))
        } else {
            let m = Box::into_raw(Box::new(DLManagedTensor {
                dl_tensor: dl,
                manager_ctx: ctx,
                deleter: Some(delete_legacy),
            }));
            ffi::PyCapsule_New(m.cast(), LEGACY.as_ptr(), Some(capsule_destructor))
        }
    };
    if capsule.is_null() {
        return Err(PyErr::fetch(py));
    }
    // SAFETY: a new reference from PyCapsule_New.
    Ok(unsafe { Bound::from_owned_ptr(py, capsule) }.unbind())
}

/// The producer's managed tensor, released by our storage.
struct Imported {
    legacy: *mut DLManagedTensor,
    versioned: *mut DLManagedTensorVersioned,
}

unsafe fn release_imported(_data: *mut u8, ctx: *mut ()) {
    // SAFETY: ctx is the Box<Imported> made by `import`; released once. The producer's deleter
    // may touch Python objects, so it runs with the interpreter lock.
    let imp = unsafe { Box::from_raw(ctx.cast::<Imported>()) };
    // SAFETY: the pointers are the producer's managed tensor, whose deleter runs once, here.
    Python::attach(|_| unsafe {
        if !imp.legacy.is_null() {
            if let Some(d) = (*imp.legacy).deleter {
                d(imp.legacy);
            }
        } else if !imp.versioned.is_null() {
            if let Some(d) = (*imp.versioned).deleter {
                d(imp.versioned);
            }
        }
    });
}

/// `torch.from_dlpack(obj)`: a tensor over the memory of any DLPack producer (an object with
/// `__dlpack__`, or a capsule).
#[pyfunction]
pub fn from_dlpack(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    if let Ok(t) = obj.cast::<crate::tensor::PyTensor>() {
        return crate::tensor::wrap(py, t.get().tensor.clone());
    }
    let capsule = if obj.hasattr("__dlpack__")? {
        if let Ok(dev) = obj.call_method0("__dlpack_device__") {
            let (ty, _): (i32, i32) = dev.extract()?;
            if ty != CPU && ty != CUDA_HOST {
                return Err(PyRuntimeError::new_err(format!(
                    "from_dlpack: DLPack device type {ty} is not supported yet (only CPU memory)"
                )));
            }
        }
        let kw = PyDict::new(py);
        kw.set_item("max_version", PyTuple::new(py, [1u32, 1])?)?;
        match obj.call_method("__dlpack__", (), Some(&kw)) {
            Ok(c) => c,
            Err(e) if e.is_instance_of::<PyTypeError>(py) => obj.call_method0("__dlpack__")?,
            Err(e) => return Err(e),
        }
    } else {
        obj.clone()
    };
    let raw = capsule.as_ptr();
    // SAFETY: the capsule's name tells which structure it holds; a valid unused capsule hands
    // its managed tensor to us, which we mark by renaming it (the producer's destructor then
    // leaves it alone), and release through its deleter when our storage is freed.
    unsafe {
        let (dl, imported) = if ffi::PyCapsule_IsValid(raw, VERSIONED.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(raw, VERSIONED.as_ptr()).cast::<DLManagedTensorVersioned>();
            if (*m).version.major > 1 {
                return Err(PyBufferError::new_err(format!(
                    "from_dlpack: DLPack major version {} is not supported (at most 1)",
                    (*m).version.major
                )));
            }
            ffi::PyCapsule_SetName(raw, USED_VERSIONED.as_ptr());
            (&(*m).dl_tensor as *const DLTensor, Imported { legacy: std::ptr::null_mut(), versioned: m })
        } else if ffi::PyCapsule_IsValid(raw, LEGACY.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(raw, LEGACY.as_ptr()).cast::<DLManagedTensor>();
            ffi::PyCapsule_SetName(raw, USED_LEGACY.as_ptr());
            (&(*m).dl_tensor as *const DLTensor, Imported { legacy: m, versioned: std::ptr::null_mut() })
        } else {
            return Err(PyTypeError::new_err(
                "from_dlpack: expected an object with __dlpack__ or an unused DLPack capsule",
            ));
        };
        let dl = &*dl;
        let ctx = Box::into_raw(Box::new(imported)).cast::<()>();
        let fail = |msg: String| {
            release_imported(std::ptr::null_mut(), ctx);
            Err(PyBufferError::new_err(msg))
        };
        if dl.device.device_type != CPU && dl.device.device_type != CUDA_HOST {
            return fail(format!("from_dlpack: device type {} is not supported yet", dl.device.device_type));
        }
        let Some(st) = scalar_type(dl.dtype) else {
            return fail(format!(
                "from_dlpack: unsupported DLPack dtype (code {}, bits {}, lanes {})",
                dl.dtype.code, dl.dtype.bits, dl.dtype.lanes
            ));
        };
        let ndim = dl.ndim.max(0) as usize;
        let sizes: Vec<i64> = if ndim == 0 { Vec::new() } else { std::slice::from_raw_parts(dl.shape, ndim).to_vec() };
        let strides: Vec<i64> = if dl.strides.is_null() || ndim == 0 {
            let mut s = vec![1i64; ndim];
            for i in (0..ndim.saturating_sub(1)).rev() {
                s[i] = s[i + 1] * sizes[i + 1].max(1);
            }
            s
        } else {
            std::slice::from_raw_parts(dl.strides, ndim).to_vec()
        };
        if sizes.iter().any(|&n| n < 0) {
            return fail(format!("from_dlpack: negative sizes {sizes:?}"));
        }
        if strides.iter().any(|&s| s < 0) {
            return fail("from_dlpack: negative strides are not supported".into());
        }
        let item = st.size() as i64;
        // The bytes the tensor spans, refused when they do not fit an i64.
        let extent = if sizes.contains(&0) {
            Some(0)
        } else {
            sizes
                .iter()
                .zip(&strides)
                .try_fold(item, |acc, (&n, &s)| (n - 1).checked_mul(s)?.checked_mul(item)?.checked_add(acc))
        };
        let Some(extent) = extent else {
            return fail(format!("from_dlpack: sizes {sizes:?} with strides {strides:?} overflow"));
        };
        let data = (dl.data as *mut u8).wrapping_add(dl.byte_offset as usize);
        // Our kernels read elements through typed pointers: a tensor with elements needs data
        // there, aligned for its element type. (PyTorch's efficient zero tensors, such as some
        // gradients, export a null pointer: materialise them before handing them over.)
        if extent > 0 && dl.data.is_null() {
            return fail(format!(
                "from_dlpack: the tensor has {} elements but a null data pointer",
                sizes.iter().product::<i64>()
            ));
        }
        // A complex element is aligned as its real parts.
        let align = if st.is_complex() { st.size() / 2 } else { st.size() };
        if extent > 0 && !(data as usize).is_multiple_of(align) {
            return fail(format!(
                "from_dlpack: the data at {data:p} is not aligned to {align} bytes, as its elements need"
            ));
        }
        let dp = DataPtr::from_raw(
            NonNull::new(data).unwrap_or(NonNull::dangling()),
            ctx,
            Some(release_imported),
            Device::CPU,
        );
        let storage = Storage::from_data_ptr(dp, extent as usize);
        let t = Tensor::from_storage(storage, &sizes, strides.iter().copied().collect(), 0, st);
        crate::tensor::wrap(py, t)
    }
}
