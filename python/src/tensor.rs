//! `torch.Tensor`: one Python object per tensor, kept in the TensorImpl's Python slot.
//!
//! Note [One object per tensor]: PyTorch's `THPVariable_Wrap` returns the object already in the
//! TensorImpl's `PyObjectSlot` when there is one, so `x.grad is x.grad` and a tensor that goes
//! through Rust and back is the same object (with its `__dict__` and Python subclass, such as
//! `nn.Parameter`). [`wrap`] does the same with c10's slot (Note [The Python slot]): the object
//! stores its own address there when it is made and clears it when it dies. The slot does not
//! own the object: while Python holds the object, every wrap of the tensor returns it; once
//! Python lets it go, the next wrap makes a new one. (PyTorch 2.15 goes further and keeps the
//! object alive while C++ still holds the tensor, so attributes set on `x.grad` survive its
//! last Python reference; ours do not.)

use std::sync::atomic::{AtomicPtr, Ordering};

use aten::Tensor;
use autograd::NodeRef;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use crate::errors::IntoPy;
use crate::types;

/// `torch.Tensor` (the package adds its Python-level methods; `nn.Parameter` subclasses it).
#[pyclass(name = "Tensor", module = "torchrs", subclass, dict, weakref, frozen)]
pub struct PyTensor {
    /// The tensor.
    pub tensor: Tensor,
    /// This object's address, as stored in the tensor's slot (cleared on drop).
    me: AtomicPtr<pyo3::ffi::PyObject>,
}

impl Drop for PyTensor {
    fn drop(&mut self) {
        let me = self.me.load(Ordering::Relaxed);
        if !me.is_null() {
            self.tensor.imp().clear_pyobj(me.cast());
        }
    }
}

thread_local! {
    /// The tensor the next `Tensor.__new__` wraps (set by [`new_object`] for subclasses).
    static PENDING: std::cell::RefCell<Option<Tensor>> = const { std::cell::RefCell::new(None) };
}

/// Makes a new object for `t` (of `cls`, a subclass of Tensor, when given) and stores it in
/// the tensor's slot.
fn new_object(py: Python<'_>, t: Tensor, cls: Option<&Bound<'_, pyo3::types::PyType>>) -> PyResult<Py<PyAny>> {
    let obj: Bound<'_, PyTensor> = match cls {
        // A Python subclass: its instance is made by the base's `__new__` (no `__init__`),
        // which takes the tensor from PENDING.
        Some(cls) => {
            PENDING.with(|p| *p.borrow_mut() = Some(t.clone()));
            let made = py.get_type::<PyTensor>().call_method1("__new__", (cls,));
            PENDING.with(|p| p.borrow_mut().take());
            made?.cast_into::<PyTensor>()?
        }
        None => Bound::new(py, PyTensor { tensor: t.clone(), me: AtomicPtr::new(std::ptr::null_mut()) })?,
    };
    let raw = obj.as_ptr();
    obj.get().me.store(raw, Ordering::Relaxed);
    // A tensor made for a subclass is fresh; otherwise, under the interpreter lock no one else
    // can have filled the slot since `wrap` looked at it.
    let prev = t.imp().set_pyobj(raw.cast());
    if !prev.is_null() {
        obj.get().me.store(std::ptr::null_mut(), Ordering::Relaxed);
    }
    Ok(obj.into_any().unbind())
}

/// The Python object of `t` (Note [One object per tensor]).
pub fn wrap(py: Python<'_>, t: Tensor) -> PyResult<Py<PyAny>> {
    let p = t.imp().pyobj() as *mut pyo3::ffi::PyObject;
    // SAFETY: a non-null slot names a live object (Note [The Python slot]): objects clear the
    // slot in their destructor, which runs with the interpreter lock, which we hold. An object
    // whose count already reached zero (its destructor is running) is not handed out.
    if !p.is_null() && unsafe { pyo3::ffi::Py_REFCNT(p) } > 0 {
        // SAFETY: as above, `p` is a live object; the new reference is ours.
        return Ok(unsafe { Bound::from_borrowed_ptr(py, p) }.unbind());
    }
    new_object(py, t, None)
}

fn grad_fn_object(py: Python<'_>, node: Option<NodeRef>) -> PyResult<Py<PyAny>> {
    match node {
        Some(n) => Ok(Py::new(py, PyNode { node: n })?.into_any()),
        None => Ok(py.None()),
    }
}

/// A backward function (`x.grad_fn`): its name and `next_functions`.
#[pyclass(name = "Node", module = "torchrs._C", frozen)]
pub struct PyNode {
    node: NodeRef,
}

#[pymethods]
impl PyNode {
    fn name(&self) -> String {
        self.node.name()
    }
    /// `((node or None, input_nr), ...)`, one per input of the forward function.
    #[getter]
    fn next_functions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let items = self
            .node
            .core()
            .next_edges()
            .iter()
            .map(|e| {
                PyTuple::new(
                    py,
                    [grad_fn_object(py, e.function.clone())?, e.input_nr.into_pyobject(py)?.into_any().unbind()],
                )
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyTuple::new(py, items)
    }
    /// The leaf an `AccumulateGrad` accumulates into.
    #[getter]
    fn variable(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self.node.accumulated_variable() {
            Some(t) => wrap(py, t),
            None => Err(pyo3::exceptions::PyAttributeError::new_err(format!(
                "'{}' object has no attribute 'variable'",
                self.node.name()
            ))),
        }
    }
    fn __repr__(&self) -> String {
        format!("<{} object at {:p}>", self.node.name(), std::sync::Arc::as_ptr(&self.node) as *const ())
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<PyNode>().is_ok_and(|o| std::sync::Arc::ptr_eq(&self.node, &o.get().node))
    }
    fn __hash__(&self) -> u64 {
        std::sync::Arc::as_ptr(&self.node) as *const () as usize as u64
    }
}

/// The tensor of a Python argument that must be a tensor.
pub fn tensor_of(v: &Bound<'_, PyAny>, what: &str) -> PyResult<Tensor> {
    v.cast::<PyTensor>()
        .map(|t| t.get().tensor.clone())
        .map_err(|_| PyTypeError::new_err(format!("{what} must be Tensor, not {}", crate::parser::py_type_name(v))))
}

#[pymethods]
impl PyTensor {
    /// Only for subclasses made by `_make_subclass`; tensors are made by `torch.tensor` and
    /// the operators.
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn py_new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, pyo3::types::PyDict>>) -> PyResult<Self> {
        match PENDING.with(|p| p.borrow_mut().take()) {
            Some(tensor) => Ok(PyTensor { tensor, me: AtomicPtr::new(std::ptr::null_mut()) }),
            None => Err(PyTypeError::new_err("Tensor(): use torch.tensor(data) or a factory such as torch.zeros")),
        }
    }
    /// `Tensor._make_subclass(cls, data, require_grad=False)`: a new tensor object of `cls` that
    /// shares `data`'s storage (a detached alias), as `nn.Parameter` is made.
    #[staticmethod]
    #[pyo3(signature = (cls, data, require_grad = false))]
    fn _make_subclass(
        py: Python<'_>,
        cls: &Bound<'_, pyo3::types::PyType>,
        data: &Bound<'_, PyAny>,
        require_grad: bool,
    ) -> PyResult<Py<PyAny>> {
        let t = autograd::TensorAutograd::detach(&tensor_of(data, "data")?);
        autograd::meta::set_requires_grad(&t, require_grad).py()?;
        new_object(py, t, Some(cls))
    }

    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::size(py, self.tensor.sizes())
    }
    #[getter]
    fn dtype(&self, py: Python<'_>) -> Py<PyAny> {
        types::dtype_object(py, self.tensor.dtype())
    }
    #[getter]
    fn device(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        types::device_object(py, self.tensor.device())
    }
    #[getter]
    fn layout(&self, py: Python<'_>) -> Py<PyAny> {
        types::layout_object(py, self.tensor.layout())
    }
    #[getter]
    fn is_sparse(&self) -> bool {
        self.tensor.is_sparse()
    }
    #[getter]
    fn is_sparse_csr(&self) -> bool {
        self.tensor.is_sparse_csr()
    }
    #[getter]
    fn is_cuda(&self) -> bool {
        self.tensor.device().ty == c10::DeviceType::Cuda
    }
    #[getter]
    fn ndim(&self) -> usize {
        self.tensor.dim()
    }
    #[getter]
    fn requires_grad(&self) -> bool {
        autograd::meta::requires_grad(&self.tensor)
    }
    #[setter]
    fn set_requires_grad(&self, flag: bool) -> PyResult<()> {
        autograd::meta::set_requires_grad(&self.tensor, flag).py()
    }
    #[pyo3(signature = (requires_grad = true))]
    fn requires_grad_<'py>(slf: Bound<'py, Self>, requires_grad: bool) -> PyResult<Bound<'py, Self>> {
        autograd::meta::set_requires_grad(&slf.get().tensor, requires_grad).py()?;
        Ok(slf)
    }
    #[getter]
    fn is_leaf(&self) -> bool {
        autograd::meta::is_leaf(&self.tensor)
    }
    #[getter]
    fn grad(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match autograd::meta::grad(&self.tensor) {
            Some(g) => wrap(py, g),
            None => Ok(py.None()),
        }
    }
    #[setter]
    fn set_grad(&self, g: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let g = match g {
            Some(g) if !g.is_none() => Some(tensor_of(g, "assigned grad")?),
            _ => None,
        };
        autograd::meta::set_grad(&self.tensor, g).py()
    }
    #[getter]
    fn grad_fn(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        grad_fn_object(py, autograd::meta::grad_fn(&self.tensor))
    }
    #[getter]
    fn data(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        wrap(py, autograd::TensorAutograd::detach(&self.tensor))
    }
    fn detach(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        wrap(py, autograd::TensorAutograd::detach(&self.tensor))
    }
    /// `register_hook(fn)`: `fn(grad)` may return a replacement; the handle's `remove()` turns
    /// it off.
    fn register_hook(&self, py: Python<'_>, hook: Py<PyAny>) -> PyResult<Py<crate::autograd_py::HookHandle>> {
        crate::autograd_py::register_hook(py, &self.tensor, hook)
    }
    fn retain_grad(&self) -> PyResult<()> {
        autograd::TensorAutograd::retain_grad(&self.tensor).py()
    }
    #[getter]
    fn retains_grad(&self) -> bool {
        autograd::TensorAutograd::retains_grad(&self.tensor)
    }
    /// `backward(gradient=None, retain_graph=None, create_graph=False, inputs=None)`.
    #[pyo3(signature = (gradient = None, retain_graph = None, create_graph = false, inputs = None))]
    fn backward(
        &self,
        py: Python<'_>,
        gradient: Option<&Bound<'_, PyAny>>,
        retain_graph: Option<bool>,
        create_graph: bool,
        inputs: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let g = match gradient {
            Some(g) if !g.is_none() => Some(tensor_of(g, "gradient")?),
            _ => None,
        };
        let inputs: Vec<Tensor> = match inputs {
            None => Vec::new(),
            Some(i) if i.cast::<PyTensor>().is_ok() => vec![tensor_of(i, "inputs")?],
            Some(i) => i.try_iter()?.map(|x| tensor_of(&x?, "inputs")).collect::<PyResult<_>>()?,
        };
        let t = self.tensor.clone();
        py.detach(move || autograd::engine::backward(&[t], &[g], retain_graph, create_graph, &inputs)).py()
    }
    fn dim(&self) -> usize {
        self.tensor.dim()
    }
    fn numel(&self) -> i64 {
        self.tensor.numel()
    }
    fn nelement(&self) -> i64 {
        self.tensor.numel()
    }
    fn element_size(&self) -> usize {
        self.tensor.dtype().size()
    }
    /// `size()` as a `torch.Size`, `size(d)` as an int.
    #[pyo3(signature = (dim = None))]
    fn size<'py>(&self, py: Python<'py>, dim: Option<i64>) -> PyResult<Bound<'py, PyAny>> {
        match dim {
            None => crate::size(py, self.tensor.sizes()),
            Some(d) => Ok(self.tensor.size(d).py()?.into_pyobject(py)?.into_any()),
        }
    }
    #[pyo3(signature = (dim = None))]
    fn stride<'py>(&self, py: Python<'py>, dim: Option<i64>) -> PyResult<Bound<'py, PyAny>> {
        let strides = self.tensor.strides();
        match dim {
            None => Ok(PyTuple::new(py, strides)?.into_any()),
            Some(d) => {
                let n = strides.len() as i64;
                let i = if d < 0 { d + n } else { d };
                if i < 0 || i >= n {
                    return Err(pyo3::exceptions::PyIndexError::new_err(format!(
                        "Dimension out of range (expected to be in range of [{}, {}], but got {d})",
                        -n.max(1),
                        n.max(1) - 1
                    )));
                }
                Ok(strides[i as usize].into_pyobject(py)?.into_any())
            }
        }
    }
    fn storage_offset(&self) -> i64 {
        self.tensor.storage_offset()
    }
    fn data_ptr(&self) -> usize {
        self.tensor.data_ptr() as usize
    }
    fn is_contiguous(&self) -> bool {
        self.tensor.is_contiguous()
    }
    fn is_floating_point(&self) -> bool {
        self.tensor.is_floating_point()
    }
    fn is_complex(&self) -> bool {
        self.tensor.dtype().is_complex()
    }
    /// The one element as a Python number.
    fn item(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if self.tensor.numel() != 1 {
            return Err(PyRuntimeError::new_err(format!(
                "a Tensor with {} elements cannot be converted to Scalar",
                self.tensor.numel()
            )));
        }
        let st = self.tensor.dtype();
        Ok(if st.is_complex() {
            let v = self.tensor.to_complex_vec::<f64>().py()?;
            pyo3::types::PyComplex::from_doubles(py, v[0].re, v[0].im).into_any().unbind()
        } else if st == c10::ScalarType::Bool {
            pyo3::types::PyBool::new(py, self.tensor.item::<bool>().py()?).to_owned().into_any().unbind()
        } else if st.is_floating_point() {
            self.tensor.item::<f64>().py()?.into_pyobject(py)?.into_any().unbind()
        } else {
            self.tensor.item::<i64>().py()?.into_pyobject(py)?.into_any().unbind()
        })
    }
    /// Nested lists of Python numbers.
    fn tolist(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let t = self.tensor.clone();
        let st = t.dtype();
        let flat: Vec<Py<PyAny>> = if st.is_complex() {
            t.to_complex_vec::<f64>()
                .py()?
                .into_iter()
                .map(|c| pyo3::types::PyComplex::from_doubles(py, c.re, c.im).into_any().unbind())
                .collect()
        } else if st == c10::ScalarType::Bool {
            t.to_vec::<bool>()
                .py()?
                .into_iter()
                .map(|b| pyo3::types::PyBool::new(py, b).to_owned().into_any().unbind())
                .collect()
        } else if st.is_floating_point() {
            t.to_vec::<f64>()
                .py()?
                .into_iter()
                .map(|x| x.into_pyobject(py).map(|o| o.into_any().unbind()))
                .collect::<Result<_, _>>()?
        } else {
            t.to_vec::<i64>()
                .py()?
                .into_iter()
                .map(|x| x.into_pyobject(py).map(|o| o.into_any().unbind()))
                .collect::<Result<_, _>>()?
        };
        nest(py, &flat, t.sizes())
    }
    // Note [Operators in Rust].
    fn __add__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.binary(py, other, false, |a, b| aten::ops::add(a, b, c10::Scalar::Int(1)))
    }
    fn __radd__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.binary(py, other, true, |a, b| aten::ops::add(a, b, c10::Scalar::Int(1)))
    }
    fn __sub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.binary(py, other, false, |a, b| aten::ops::sub(a, b, c10::Scalar::Int(1)))
    }
    fn __rsub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.binary(py, other, true, |a, b| aten::ops::sub(a, b, c10::Scalar::Int(1)))
    }
    fn __mul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.binary(py, other, false, aten::ops::mul)
    }
    fn __rmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.binary(py, other, true, aten::ops::mul)
    }
    fn __truediv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.binary(py, other, false, aten::ops::div)
    }
    fn __rtruediv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.binary(py, other, true, aten::ops::div)
    }
    fn __matmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.binary(py, other, false, aten::ops::matmul)
    }
    fn __rmatmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.binary(py, other, true, aten::ops::matmul)
    }
    fn __neg__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let a = &self.tensor;
        let r = run_detached(py, a.numel(), || aten::ops::neg(a))?;
        wrap(py, r)
    }
    fn __len__(&self) -> PyResult<usize> {
        match self.tensor.sizes().first() {
            Some(&n) => Ok(n as usize),
            None => Err(PyTypeError::new_err("len() of a 0-d tensor")),
        }
    }
    fn __bool__(&self) -> PyResult<bool> {
        if self.tensor.numel() != 1 {
            return Err(PyRuntimeError::new_err(format!(
                "Boolean value of Tensor with {} value{} is ambiguous",
                if self.tensor.numel() == 0 { "no" } else { "more than one" },
                if self.tensor.numel() == 0 { "s" } else { "" }
            )));
        }
        if self.tensor.dtype().is_complex() {
            let v = self.tensor.to_complex_vec::<f64>().py()?;
            return Ok(v[0].re != 0.0 || v[0].im != 0.0);
        }
        Ok(self.tensor.item::<f64>().py()? != 0.0)
    }
    fn __float__(&self) -> PyResult<f64> {
        self.one("float")?;
        self.tensor.item::<f64>().py()
    }
    fn __int__(&self) -> PyResult<i64> {
        self.one("int")?;
        self.tensor.item::<i64>().py()
    }
    fn __index__(&self) -> PyResult<i64> {
        let st = self.tensor.dtype();
        if self.tensor.numel() != 1 || st.is_floating_point() || st.is_complex() || st == c10::ScalarType::Bool {
            return Err(PyTypeError::new_err("only integer tensors of a single element can be converted to an index"));
        }
        self.tensor.item::<i64>().py()
    }
    /// PyTorch's format, with `requires_grad=True` or `grad_fn=<...>` (the tensor's Display).
    fn __repr__(&self) -> String {
        let text = self.tensor.to_string();
        // The Display (in aten) knows requires_grad; a result with history shows its grad_fn
        // instead, as PyTorch's repr does.
        match (autograd::meta::grad_fn(&self.tensor), text.rfind("requires_grad=True")) {
            (Some(f), Some(at)) => {
                format!("{}grad_fn=<{}>{}", &text[..at], f.name(), &text[at + "requires_grad=True".len()..])
            }
            _ => text,
        }
    }
    /// A DLPack capsule over this tensor's memory (no copy unless `copy=True`).
    #[pyo3(signature = (*, stream = None, max_version = None, dl_device = None, copy = None))]
    fn __dlpack__(
        &self,
        py: Python<'_>,
        stream: Option<Py<PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Py<PyAny>> {
        if stream.as_ref().is_some_and(|s| !s.is_none(py) && s.extract::<i64>(py).ok() != Some(-1)) {
            return Err(pyo3::exceptions::PyBufferError::new_err("stream must be None or -1 for CPU tensors"));
        }
        if dl_device.is_some_and(|d| d != self.__dlpack_device__()) {
            return Err(pyo3::exceptions::PyBufferError::new_err("DLPack export to another device is not supported"));
        }
        crate::dlpack::export(py, &self.tensor, max_version, copy)
    }
    fn __dlpack_device__(&self) -> (i32, i32) {
        let d = self.tensor.device();
        if d.ty == c10::DeviceType::Cuda {
            (2, d.index.max(0) as i32)
        } else {
            (1, 0)
        }
    }
    /// The indexing of `x[...]` (Python's index forms; views where PyTorch gives views).
    fn __getitem__(&self, py: Python<'_>, index: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let idx = crate::indexing::indices(index)?;
        let t = self.tensor.clone();
        let r = py.detach(move || aten::indexing::index(&t, &idx)).py()?;
        wrap(py, r)
    }
    fn __setitem__(&self, py: Python<'_>, index: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let idx = crate::indexing::indices(index)?;
        let v = match value.cast::<PyTensor>() {
            Ok(v) => v.get().tensor.clone(),
            Err(_) => {
                let s = crate::parser::convert(value, &schema::Type::Scalar, false)?.ok_or_else(|| {
                    PyTypeError::new_err(format!(
                        "can't assign a {} to a {}",
                        crate::parser::py_type_name(value),
                        self.type_name()
                    ))
                })?;
                let aten::IValue::Scalar(s) = s else { unreachable!("a Scalar conversion gives a Scalar") };
                Tensor::wrapped_scalar(s)
            }
        };
        let t = self.tensor.clone();
        py.detach(move || crate::indexing::index_put(&t, &idx, &v)).py()
    }
    fn __iter__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let t = &slf.get().tensor;
        if t.dim() == 0 {
            return Err(PyTypeError::new_err("iteration over a 0-d tensor"));
        }
        let n = t.sizes()[0];
        let items = (0..n).map(|i| wrap(py, aten::ops::select(t, 0, i).py()?)).collect::<PyResult<Vec<_>>>()?;
        Ok(PyList::new(py, items)?.as_any().try_iter()?.into_any().unbind())
    }
    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        slf.as_ptr() as isize
    }
    /// The Python type name PyTorch's errors print (`torch.FloatTensor`).
    fn type_name(&self) -> String {
        let cuda = if self.tensor.device().ty == c10::DeviceType::Cuda { "cuda." } else { "" };
        format!("torch.{cuda}{}Tensor", self.tensor.dtype().legacy_name())
    }
    /// A numpy array over this tensor's memory (`Tensor.numpy()`, which adds `force=`).
    fn _numpy_shared<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::numpy_interop::to_numpy(py, &self.tensor)
    }
    fn __getstate__(&self) -> PyResult<()> {
        Err(PyValueError::new_err("pickling tensors is not supported yet; use torchrs.save"))
    }
}

/// Note [Operators in Rust]: `a + b` is the most frequent call a Python program makes, so the
/// arithmetic operators are slots of the class written here, calling the operators' unboxed
/// entry points directly (a Python number is a wrapped number, as PyTorch's parser makes it),
/// rather than going through a Python-level method and the generic parser. Anything else than
/// a tensor or a number gives `NotImplemented`, so Python tries the other operand's method.
fn operand(other: &Bound<'_, PyAny>) -> Option<Tensor> {
    if let Ok(t) = other.cast::<PyTensor>() {
        return Some(t.get().tensor.clone());
    }
    use pyo3::types::{PyBool, PyFloat, PyInt};
    let s = if other.is_instance_of::<PyBool>() {
        c10::Scalar::Bool(other.extract().ok()?)
    } else if other.is_instance_of::<PyInt>() {
        c10::Scalar::Int(other.extract().ok()?)
    } else if other.is_instance_of::<PyFloat>() {
        c10::Scalar::Float(other.extract().ok()?)
    } else {
        return None;
    };
    Some(Tensor::wrapped_scalar(s))
}

/// Runs a kernel call, releasing the interpreter lock when the operands are big enough for the
/// kernel to take longer than the release itself (a few hundred nanoseconds).
pub(crate) fn run_detached<T: Send>(
    py: Python<'_>,
    elements: i64,
    f: impl FnOnce() -> c10::Result<T> + Send,
) -> PyResult<T> {
    if elements >= DETACH_ELEMENTS {
        py.detach(f).py()
    } else {
        f().py()
    }
}

/// Operand elements from which a call releases the interpreter lock (Note [Operators in Rust]).
pub(crate) const DETACH_ELEMENTS: i64 = 1 << 12;

impl PyTensor {
    /// A binary operator slot: `self op other`, or `other op self` when `reflected`.
    fn binary(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        reflected: bool,
        f: impl FnOnce(&Tensor, &Tensor) -> c10::Result<Tensor> + Send,
    ) -> PyResult<Py<PyAny>> {
        let Some(o) = operand(other) else { return Ok(py.NotImplemented()) };
        let (a, b) = if reflected { (&o, &self.tensor) } else { (&self.tensor, &o) };
        let r = run_detached(py, a.numel() + b.numel(), || f(a, b))?;
        wrap(py, r)
    }

    fn one(&self, what: &str) -> PyResult<()> {
        if self.tensor.numel() != 1 {
            return Err(PyRuntimeError::new_err(format!(
                "only one element tensors can be converted to Python {what}s"
            )));
        }
        Ok(())
    }
}

/// Nested lists of `flat` in the shape `sizes` (a bare value for 0-dim).
fn nest(py: Python<'_>, flat: &[Py<PyAny>], sizes: &[i64]) -> PyResult<Py<PyAny>> {
    match sizes.split_first() {
        None => Ok(flat[0].clone_ref(py)),
        Some((&n, rest)) => {
            let step: usize = rest.iter().product::<i64>() as usize;
            let items = (0..n as usize)
                .map(|i| nest(py, &flat[i * step..(i + 1) * step], rest))
                .collect::<PyResult<Vec<_>>>()?;
            Ok(PyList::new(py, items)?.into_any().unbind())
        }
    }
}
