//! `Tensor.numpy()` and `torch.from_numpy`: both share memory (a write on one side is seen on
//! the other), and each side keeps the other's memory alive: the array's base object is the
//! tensor's Python object, and the tensor's storage holds a reference to the array.

use std::ptr::NonNull;

use aten::Tensor;
use c10::{DataPtr, Device, ScalarType, Storage};
use numpy::npyffi::{self, npy_intp, PY_ARRAY_API};
use numpy::{PyArrayDescr, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;

/// numpy's name of a dtype (PyTorch's, which numpy shares), `None` for bfloat16 (numpy has none).
fn numpy_name(st: ScalarType) -> Option<&'static str> {
    (st != ScalarType::BF16).then(|| st.name())
}

/// `t.numpy()`: an array over the tensor's memory, whose base is the tensor's object.
pub fn to_numpy<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    if autograd::meta::requires_grad(t) {
        return Err(PyRuntimeError::new_err(
            "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.",
        ));
    }
    if t.device().ty != c10::DeviceType::Cpu {
        return Err(PyTypeError::new_err(format!(
            "can't convert {} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.",
            t.device()
        )));
    }
    let Some(name) = numpy_name(t.dtype()) else {
        return Err(PyTypeError::new_err("Got unsupported ScalarType BFloat16"));
    };
    let descr = PyArrayDescr::new(py, name)?;
    let item = t.dtype().size() as npy_intp;
    let mut dims: Vec<npy_intp> = t.sizes().iter().map(|&s| s as npy_intp).collect();
    let mut strides: Vec<npy_intp> = t.strides().iter().map(|&s| s as npy_intp * item).collect();
    let owner = crate::tensor::wrap(py, t.clone())?;
    // SAFETY: the array describes memory of the tensor's storage (sizes and strides within it)
    // and takes a reference to the tensor's object as its base, which keeps the storage alive
    // for as long as the array lives. SetBaseObject steals the reference passed.
    unsafe {
        let arr = PY_ARRAY_API.PyArray_NewFromDescr(
            py,
            npyffi::get_type_object(py, npyffi::NpyTypes::PyArray_Type),
            descr.into_dtype_ptr(),
            dims.len() as std::os::raw::c_int,
            dims.as_mut_ptr(),
            strides.as_mut_ptr(),
            t.data_ptr().cast(),
            npyffi::NPY_ARRAY_WRITEABLE,
            std::ptr::null_mut(),
        );
        if arr.is_null() {
            return Err(PyErr::fetch(py));
        }
        if PY_ARRAY_API.PyArray_SetBaseObject(py, arr.cast(), owner.into_ptr()) != 0 {
            pyo3::ffi::Py_DECREF(arr);
            return Err(PyErr::fetch(py));
        }
        Ok(Bound::from_owned_ptr(py, arr))
    }
}

fn dtype_of_array(d: &Bound<'_, PyArrayDescr>) -> Option<ScalarType> {
    let size = d.itemsize();
    Some(match (d.kind(), size) {
        (b'b', 1) => ScalarType::Bool,
        (b'u', 1) => ScalarType::U8,
        (b'i', 1) => ScalarType::I8,
        (b'i', 2) => ScalarType::I16,
        (b'i', 4) => ScalarType::I32,
        (b'i', 8) => ScalarType::I64,
        (b'f', 2) => ScalarType::F16,
        (b'f', 4) => ScalarType::F32,
        (b'f', 8) => ScalarType::F64,
        (b'c', 8) => ScalarType::C64,
        (b'c', 16) => ScalarType::C128,
        _ => return None,
    })
}

/// Releases the array reference a tensor's storage holds.
unsafe fn release_array(_data: *mut u8, ctx: *mut ()) {
    // SAFETY: ctx is the Box<Py<PyAny>> made in `from_numpy`, released once.
    let obj = unsafe { Box::from_raw(ctx.cast::<Py<PyAny>>()) };
    Python::attach(move |_| drop(obj));
}

/// `torch.from_numpy(a)`: a tensor over the array's memory (no copy).
#[pyfunction]
pub fn from_numpy(py: Python<'_>, a: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let arr = a
        .cast::<PyUntypedArray>()
        .map_err(|_| PyTypeError::new_err(format!("expected np.ndarray (got {})", crate::parser::py_type_name(a))))?;
    let descr = arr.dtype();
    let Some(st) = dtype_of_array(&descr) else {
        return Err(PyTypeError::new_err(format!(
            "can't convert np.ndarray of type numpy.{}. The only supported types are: float64, float32, float16, \
             complex64, complex128, int64, int32, int16, int8, uint8, and bool.",
            descr.typeobj().name()?
        )));
    };
    if descr.is_native_byteorder() == Some(false) {
        return Err(PyValueError::new_err(
            "given numpy array has byte order different from the native byte order. Conversion between byte orders \
             is currently not supported.",
        ));
    }
    let item = st.size() as isize;
    let sizes: Vec<i64> = arr.shape().iter().map(|&s| s as i64).collect();
    let mut strides = c10::tensor_impl::DimVec::new();
    let mut extent: isize = if sizes.contains(&0) { 0 } else { item };
    for (&s, &n) in arr.strides().iter().zip(arr.shape()) {
        if s < 0 {
            return Err(PyValueError::new_err(
                "At least one stride in the given numpy array is negative, and tensors with negative strides are not \
                 currently supported. (You can probably work around this by making a copy of your array  with \
                 array.copy().) ",
            ));
        }
        if s % item != 0 {
            return Err(PyValueError::new_err(
                "given numpy array strides not a multiple of the element byte size. Copy the numpy array to \
                 reallocate the memory.",
            ));
        }
        strides.push((s / item) as i64);
        if n > 0 && extent > 0 {
            extent += s * (n as isize - 1);
        }
    }
    if !arr.getattr("flags")?.getattr("writeable")?.extract::<bool>()? {
        static WARNED: std::sync::Once = std::sync::Once::new();
        let mut err = None;
        WARNED.call_once(|| {
            err = PyErr::warn(
                py,
                &py.get_type::<pyo3::exceptions::PyUserWarning>(),
                c"The given NumPy array is not writable, and PyTorch does not support non-writable tensors. This means writing to this tensor will result in undefined behavior. You may want to copy the array to protect its data or make it writable before converting it to a tensor. This type of warning will be suppressed for the rest of this program.",
                1,
            )
            .err();
        });
        if let Some(e) = err {
            return Err(e);
        }
    }
    // SAFETY: the array's data pointer and layout come from numpy; the storage holds a
    // reference to the array (released by `release_array`), so the memory outlives the tensor.
    let data = unsafe { (*arr.as_array_ptr()).fields.data as *mut u8 };
    // Our kernels read elements through typed pointers, which must be aligned (numpy can make
    // unaligned arrays: np.frombuffer(buf, offset=1)).
    // A complex element is aligned as its real parts.
    let align = if st.is_complex() { item / 2 } else { item } as usize;
    if extent > 0 && !(data as usize).is_multiple_of(align) {
        return Err(PyValueError::new_err(format!(
            "from_numpy: the array's data is not aligned to {align} bytes, as its elements need; copy it first \
             (numpy.require(a, requirements=\"A\"))"
        )));
    }
    let ptr = NonNull::new(data).unwrap_or(NonNull::dangling());
    let ctx = Box::into_raw(Box::new(arr.clone().into_any().unbind())).cast::<()>();
    // SAFETY: `ptr` stays valid while `ctx` (the array) is held, and `release_array` frees
    // `ctx` once, from any thread (it takes the interpreter lock to do so).
    let dp = unsafe { DataPtr::from_raw(ptr, ctx, Some(release_array), Device::CPU) };
    let storage = Storage::from_data_ptr(dp, extent as usize);
    let t = Tensor::from_storage(storage, &sizes, strides, 0, st);
    crate::tensor::wrap(py, t)
}
