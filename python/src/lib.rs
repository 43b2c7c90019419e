//! `torchrs._C`: the extension module behind the `torchrs` Python package (`import torchrs as
//! torch`).
//!
//! What is here: the tensor class and its one-object-per-tensor cache ([`tensor`]), dtypes,
//! devices and generators ([`types`]), every operator of `native_functions.yaml` as a Python
//! function and method through one argument parser over a generated table ([`parser`],
//! Note [One parser for every operator]), indexing, numpy sharing and errors. The package's
//! Python code (`python/torchrs/`) adds what PyTorch writes in Python: the `Tensor` class's
//! operators, `torch.Size`, grad-mode context managers, `torch.linalg`/`fft`/`special`.
//!
//! The interpreter lock is released around every operator call and `backward`, so Python
//! threads run kernels in parallel.

// pyo3's macros expand to code clippy's pedantic lints do not expect.
#![allow(clippy::useless_conversion)]

mod autograd_py;
mod dlpack;
mod errors;
mod generated {
    pub mod bindings;
}
mod indexing;
mod jit_py;
mod numpy_interop;
mod parser;
mod tensor;
mod types;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyComplex, PyDict, PyFloat, PyInt, PyList, PyTuple, PyType};

use aten::Tensor;
use c10::ScalarType;
use errors::IntoPy;
use generated::bindings::BINDINGS;
use parser::Namespace;
use tensor::PyTensor;

/// Runs binding `idx` with the parsed arguments, the interpreter lock released.
fn call_binding(
    py: Python<'_>,
    idx: usize,
    self_: Option<&Bound<'_, PyAny>>,
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Py<PyAny>> {
    let r = parser::resolved(idx)?;
    let parser::Call { op, stack, out, requires_grad } = r.parse(BINDINGS[idx].name, self_, args, kwargs)?;
    let mut stack = stack;
    // The lock is released when the operands are big (Note [Operators in Rust]).
    let elements: i64 = stack
        .iter()
        .map(|v| match v {
            aten::IValue::Tensor(t) => t.numel(),
            aten::IValue::TensorList(ts) => ts.iter().map(Tensor::numel).sum(),
            _ => 0,
        })
        .sum();
    let stack = tensor::run_detached(py, elements, move || {
        op.call_boxed(&mut stack)?;
        Ok(stack)
    })?;
    if let Some(out) = out {
        return Ok(out);
    }
    let mut stack = stack;
    if requires_grad {
        if let Some(aten::IValue::Tensor(t)) = stack.first() {
            autograd::meta::set_requires_grad(t, true).py()?;
        }
    }
    match stack.len() {
        0 => Ok(py.None()),
        1 => parser::to_python(py, stack.pop().expect("one result")),
        _ => {
            let items = stack.into_iter().map(|v| parser::to_python(py, v)).collect::<PyResult<Vec<_>>>()?;
            match return_type(py, op)? {
                Some(cls) => Ok(cls.bind(py).call1(PyTuple::new(py, items)?)?.unbind()),
                None => Ok(PyTuple::new(py, items)?.into_any().unbind()),
            }
        }
    }
}

/// `torch.return_types.max`: the named tuple of an operator whose returns are named
/// (`(Tensor values, Tensor indices)`), made once per operator.
fn return_type(py: Python<'_>, op: &'static aten::OperatorEntry) -> PyResult<Option<Py<PyAny>>> {
    static TYPES: std::sync::Mutex<Vec<(usize, Option<Py<PyAny>>)>> = std::sync::Mutex::new(Vec::new());
    let key = op as *const aten::OperatorEntry as usize;
    if let Some((_, t)) = TYPES.lock().unwrap_or_else(|e| e.into_inner()).iter().find(|(k, _)| *k == key) {
        return Ok(t.as_ref().map(|t| t.clone_ref(py)));
    }
    let made = match op.schema() {
        Some(s) if s.returns.len() > 1 && s.returns.iter().all(|r| r.name.is_some()) => {
            let fields: Vec<&str> = s.returns.iter().map(|r| r.name.as_deref().unwrap_or_default()).collect();
            // A named tuple printed as PyTorch's structseq (`torch.return_types.max(...)`).
            let make = py.import("torchrs._tensor")?.getattr("_return_type")?;
            Some(make.call1((s.name.trim_end_matches('_'), fields))?.unbind())
        }
        _ => None,
    };
    TYPES.lock().unwrap_or_else(|e| e.into_inner()).push((key, made.as_ref().map(|t| t.clone_ref(py))));
    Ok(made)
}

/// A function bound from the schema (`torch.add`, `torch.linalg.norm`).
#[pyclass(name = "builtin_op", module = "torchrs._C", frozen)]
struct Op {
    idx: usize,
}

#[pymethods]
impl Op {
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        call_binding(py, self.idx, None, args, kwargs)
    }
    fn __repr__(&self) -> String {
        format!("<built-in function {}>", BINDINGS[self.idx].name)
    }
    #[getter]
    fn __name__(&self) -> &'static str {
        BINDINGS[self.idx].name
    }
    /// The signatures the parser tries, one per line.
    #[getter]
    fn __doc__(&self) -> PyResult<String> {
        let d = aten::dispatcher();
        let mut lines = Vec::new();
        for (name, _) in BINDINGS[self.idx].overloads {
            if let Ok((_, s)) = d.find_schema(name) {
                lines.push(s.to_string());
            }
        }
        Ok(lines.join("\n"))
    }
}

/// A method bound from the schema (`Tensor.add`): a descriptor giving [`BoundOp`]s.
#[pyclass(name = "method_descriptor", module = "torchrs._C", frozen)]
struct Method {
    idx: usize,
}

#[pymethods]
impl Method {
    fn __get__(&self, py: Python<'_>, obj: Option<Py<PyAny>>, _ty: Option<Py<PyAny>>) -> PyResult<Py<PyAny>> {
        match obj {
            Some(o) if !o.is_none(py) => Ok(Py::new(py, BoundOp { idx: self.idx, self_: o })?.into_any()),
            _ => Ok(Py::new(py, Method { idx: self.idx })?.into_any()),
        }
    }
    /// `Tensor.add(x, y)`: the unbound form takes the tensor first.
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let Some(first) = args.iter().next() else {
            return Err(PyTypeError::new_err(format!(
                "descriptor '{}' of 'torch._C.TensorBase' object needs an argument",
                BINDINGS[self.idx].name
            )));
        };
        let rest = args.get_slice(1, args.len());
        call_binding(py, self.idx, Some(&first), &rest, kwargs)
    }
    fn __repr__(&self) -> String {
        format!("<method '{}' of 'torch._C.TensorBase' objects>", BINDINGS[self.idx].name)
    }
}

/// A method bound to its tensor.
#[pyclass(name = "builtin_method", module = "torchrs._C", frozen)]
struct BoundOp {
    idx: usize,
    self_: Py<PyAny>,
}

#[pymethods]
impl BoundOp {
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        call_binding(py, self.idx, Some(self.self_.bind(py)), args, kwargs)
    }
    fn __repr__(&self) -> String {
        format!("<built-in method {} of Tensor object>", BINDINGS[self.idx].name)
    }
}

static SIZE_CLASS: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// `torch.Size` of `sizes` (a plain tuple until the package sets the class).
pub(crate) fn size<'py>(py: Python<'py>, sizes: &[i64]) -> PyResult<Bound<'py, PyAny>> {
    let t = PyTuple::new(py, sizes)?;
    match SIZE_CLASS.get(py) {
        Some(cls) => cls.bind(py).call1((t,)),
        None => Ok(t.into_any()),
    }
}

#[pyfunction]
fn _set_size_class(py: Python<'_>, cls: Bound<'_, PyType>) -> PyResult<()> {
    SIZE_CLASS.set(py, cls.unbind()).map_err(|_| pyo3::exceptions::PyRuntimeError::new_err("Size is already set"))
}

/// A nested list of numbers: its shape and its leaves, checking that it is not ragged.
fn flatten<'py>(
    v: &Bound<'py, PyAny>,
    depth: usize,
    shape: &mut Vec<i64>,
    leaves: &mut Vec<Bound<'py, PyAny>>,
) -> PyResult<()> {
    let items: Option<Vec<Bound<'py, PyAny>>> = if let Ok(l) = v.cast::<PyList>() {
        Some(l.iter().collect())
    } else if let Ok(t) = v.cast::<PyTuple>() {
        Some(t.iter().collect())
    } else {
        None
    };
    match items {
        Some(items) => {
            if shape.len() == depth {
                shape.push(items.len() as i64);
            } else if shape.len() < depth || shape[depth] != items.len() as i64 {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "expected sequence of length {} at dim {depth} (got {})",
                    shape.get(depth).copied().unwrap_or(0),
                    items.len()
                )));
            }
            for i in &items {
                flatten(i, depth + 1, shape, leaves)?;
            }
        }
        None => {
            if shape.len() != depth {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "expected sequence of length {} at dim {depth} (got a number)",
                    shape.get(depth).copied().unwrap_or(0)
                )));
            }
            leaves.push(v.clone());
        }
    }
    Ok(())
}

/// `torch.tensor(data, *, dtype=None, device=None, requires_grad=False)`: a copy of nested
/// lists of numbers, a numpy array or a tensor, with PyTorch's dtype inference (bool, then
/// int64, then the default float32, then complex64).
#[pyfunction]
#[pyo3(name = "tensor", signature = (data, *, dtype = None, device = None, requires_grad = false))]
fn tensor_fn(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<Py<PyAny>> {
    let want = match dtype {
        Some(d) if !d.is_none() => {
            Some(types::dtype_of(d).ok_or_else(|| PyTypeError::new_err("dtype must be torch.dtype"))?)
        }
        _ => None,
    };
    let mut t: Tensor = if let Ok(src) = data.cast::<PyTensor>() {
        autograd::TensorAutograd::detach(&src.get().tensor)
    } else if data.cast::<numpy::PyUntypedArray>().is_ok() {
        let shared = numpy_interop::from_numpy(py, data)?;
        shared.bind(py).cast::<PyTensor>()?.get().tensor.clone()
    } else {
        let mut shape = Vec::new();
        let mut leaves = Vec::new();
        flatten(data, 0, &mut shape, &mut leaves)?;
        let mut kind = 0; // 0 bool, 1 int, 2 float, 3 complex
        for l in &leaves {
            let k = if l.is_instance_of::<PyBool>() {
                0
            } else if l.is_instance_of::<PyInt>() {
                1
            } else if l.is_instance_of::<PyFloat>() {
                2
            } else if l.is_instance_of::<PyComplex>() {
                3
            } else if let Ok(t) = l.cast::<PyTensor>() {
                let st = t.get().tensor.dtype();
                if st.is_complex() {
                    3
                } else if st.is_floating_point() {
                    2
                } else if st == ScalarType::Bool {
                    0
                } else {
                    1
                }
            } else {
                return Err(PyTypeError::new_err(format!("new(): invalid data type '{}'", parser::py_type_name(l))));
            };
            kind = kind.max(k);
        }
        if leaves.is_empty() {
            kind = 2;
        }
        match kind {
            0 => Tensor::from_vec(leaves.iter().map(|l| l.is_truthy()).collect::<PyResult<Vec<bool>>>()?, &shape),
            1 => Tensor::from_vec(leaves.iter().map(|l| l.extract::<i64>()).collect::<PyResult<Vec<i64>>>()?, &shape),
            // Python floats are doubles: kept as such until the dtype asked for (or the default
            // float32) is made from them, so `dtype=torch.float64` loses nothing.
            2 => Tensor::from_vec(leaves.iter().map(|l| l.extract::<f64>()).collect::<PyResult<Vec<f64>>>()?, &shape)
                .and_then(|t| aten::ops::to(&t, want.unwrap_or(ScalarType::F32), false, false, None)),
            _ => {
                let v: Vec<c10::Complex<f64>> = leaves
                    .iter()
                    .map(|l| {
                        let c: (f64, f64) = match l.cast::<PyComplex>() {
                            Ok(c) => (c.real(), c.imag()),
                            Err(_) => (l.extract::<f64>()?, 0.0),
                        };
                        Ok(c10::Complex::new(c.0, c.1))
                    })
                    .collect::<PyResult<_>>()?;
                Tensor::from_complex_vec(v, &shape)
                    .and_then(|t| aten::ops::to(&t, want.unwrap_or(ScalarType::C64), false, false, None))
            }
        }
        .py()?
    };
    if let Some(st) = want {
        t = aten::ops::to(&t, st, false, true, None).py()?;
    } else if data.is_instance_of::<PyTensor>() || data.cast::<numpy::PyUntypedArray>().is_ok() {
        t = aten::ops::clone(&t, None).py()?;
    }
    if let Some(d) = device {
        if !d.is_none() {
            let dev = types::device_of(d).ok_or_else(|| PyTypeError::new_err("device must be torch.device"))?;
            t = aten::ops::to_device(&t, dev, t.dtype(), false, false, None).py()?;
        }
    }
    if requires_grad {
        autograd::meta::set_requires_grad(&t, true).py()?;
    }
    tensor::wrap(py, t)
}

/// A Python number as a wrapped-number tensor (what `2 - x` subtracts from: it does not take
/// part in type promotion as a tensor would).
#[pyfunction]
fn _wrapped_number(py: Python<'_>, v: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    match parser::convert(v, &schema::Type::Scalar, false)? {
        Some(aten::IValue::Scalar(s)) => tensor::wrap(py, Tensor::wrapped_scalar(s)),
        _ => Err(PyTypeError::new_err(format!("expected a number, not {}", parser::py_type_name(v)))),
    }
}

#[pyfunction]
fn _cuda_is_available() -> bool {
    torch::cuda::is_available()
}

#[pyfunction]
fn _cuda_device_count() -> usize {
    torch::cuda::device_count()
}

/// `torch.load`'s reader: a `.pt` archive PyTorch's `torch.save` wrote (a dict of tensors, a
/// model's `state_dict()`), or a safetensors file; an `OrderedDict` of name to tensor in the
/// file's order.
#[pyfunction]
fn _load_tensors(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Py<PyAny>> {
    let head = {
        use std::io::Read;
        let mut f = std::fs::File::open(&path)
            .map_err(|e| pyo3::exceptions::PyFileNotFoundError::new_err(format!("{}: {e}", path.display())))?;
        let mut b = [0u8; 2];
        let n = f.read(&mut b).unwrap_or(0);
        b[..n].to_vec()
    };
    let state = py
        .detach(|| if head == b"PK" { nn::load_pt(&path) } else { nn::serialize::load_file(&path).map(|l| l.tensors) })
        .py()?;
    let d = py.import("collections")?.getattr("OrderedDict")?.call0()?;
    for (name, t) in state.iter() {
        d.set_item(name, tensor::wrap(py, t.clone())?)?;
    }
    Ok(d.unbind())
}

/// `torch.save`'s writer for a dict of tensors: a safetensors file (written whole or not at
/// all), which `torch.load` reads back.
#[pyfunction]
fn _save_tensors(py: Python<'_>, items: Vec<(String, Bound<'_, PyAny>)>, path: std::path::PathBuf) -> PyResult<()> {
    let tensors = items
        .iter()
        .map(|(k, v)| Ok((k.clone(), tensor::tensor_of(v, "a saved value")?)))
        .collect::<PyResult<Vec<_>>>()?;
    py.detach(|| nn::serialize::save_file(tensors.iter().map(|(k, t)| (k.as_str(), t)), None, &path)).py()
}

/// `F.embedding_bag`'s computation (`nn::embedding_bag`), after the Python function's checks:
/// `mode` is "sum", "mean" or "max"; `max_norm` was applied by the caller.
#[pyfunction]
#[pyo3(signature = (weight, input, offsets, per_sample_weights, mode, include_last_offset, padding_idx, sparse = false))]
#[allow(clippy::too_many_arguments)]
fn _embedding_bag(
    py: Python<'_>,
    weight: &Bound<'_, PyAny>,
    input: &Bound<'_, PyAny>,
    offsets: Option<&Bound<'_, PyAny>>,
    per_sample_weights: Option<&Bound<'_, PyAny>>,
    mode: &str,
    include_last_offset: bool,
    padding_idx: Option<i64>,
    sparse: bool,
) -> PyResult<Py<PyAny>> {
    let mode = match mode {
        "sum" => nn::BagMode::Sum,
        "mean" => nn::BagMode::Mean,
        "max" => nn::BagMode::Max,
        _ => return Err(pyo3::exceptions::PyValueError::new_err("mode has to be one of sum, mean or max")),
    };
    let weight = tensor::tensor_of(weight, "weight")?;
    let input = tensor::tensor_of(input, "input")?;
    let offsets = offsets.map(|o| tensor::tensor_of(o, "offsets")).transpose()?;
    let psw = per_sample_weights.map(|w| tensor::tensor_of(w, "per_sample_weights")).transpose()?;
    let options = nn::BagOptions { mode, padding_idx, include_last_offset, sparse, ..Default::default() };
    let out = py.detach(|| nn::embedding_bag(&weight, &input, offsets.as_ref(), psw.as_ref(), &options)).py()?;
    tensor::wrap(py, out)
}

/// The arguments of an operator's schema (`"add.Tensor"`), as `(name, keyword_only, type)`:
/// what a caller needs to turn a schema-order argument list into a Python call.
#[pyfunction]
fn _schema_arguments(name: &str) -> PyResult<Vec<(String, bool, String)>> {
    let (_, s) = aten::dispatcher().find_schema(name).py()?;
    Ok(s.arguments.iter().map(|a| (a.name.clone(), a.kwarg_only, a.ty.to_string())).collect())
}

/// `torch.set_num_threads(n)`: the intra-op thread count.
#[pyfunction]
fn set_num_threads(n: usize) -> PyResult<()> {
    aten::set_num_threads(n).py()
}

#[pyfunction]
fn get_num_threads() -> usize {
    aten::get_num_threads()
}

#[pyfunction]
fn manual_seed(seed: u64) {
    aten::manual_seed(seed);
}

#[pyfunction]
fn _set_grad_enabled(enabled: bool) -> bool {
    c10::grad_mode::set_enabled(enabled)
}

#[pyfunction]
fn is_grad_enabled() -> bool {
    c10::grad_mode::is_enabled()
}

/// `torch.autograd.grad(outputs, inputs, grad_outputs=None, retain_graph=None,
/// create_graph=False, allow_unused=False)`.
#[pyfunction]
#[pyo3(signature = (outputs, inputs, grad_outputs = None, retain_graph = None, create_graph = false, allow_unused = false))]
fn _autograd_grad(
    py: Python<'_>,
    outputs: Vec<Bound<'_, PyAny>>,
    inputs: Vec<Bound<'_, PyAny>>,
    grad_outputs: Option<Vec<Bound<'_, PyAny>>>,
    retain_graph: Option<bool>,
    create_graph: bool,
    allow_unused: bool,
) -> PyResult<Py<PyAny>> {
    let outs = outputs.iter().map(|o| tensor::tensor_of(o, "outputs")).collect::<PyResult<Vec<_>>>()?;
    let ins = inputs.iter().map(|o| tensor::tensor_of(o, "inputs")).collect::<PyResult<Vec<_>>>()?;
    let gos: Vec<Option<Tensor>> = match grad_outputs {
        None => vec![None; outs.len()],
        Some(g) => g
            .iter()
            .map(|o| if o.is_none() { Ok(None) } else { tensor::tensor_of(o, "grad_outputs").map(Some) })
            .collect::<PyResult<_>>()?,
    };
    let grads =
        py.detach(move || autograd::engine::grad(&outs, &ins, &gos, retain_graph, create_graph, allow_unused)).py()?;
    let items = grads
        .into_iter()
        .map(|g| match g {
            Some(g) => tensor::wrap(py, g),
            None => Ok(py.None()),
        })
        .collect::<PyResult<Vec<_>>>()?;
    Ok(PyTuple::new(py, items)?.into_any().unbind())
}

/// The names of the functions of one namespace, with their callables; the package puts them
/// in its modules.
fn functions_of(py: Python<'_>, ns: Namespace) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for (i, b) in BINDINGS.iter().enumerate() {
        if b.namespace == ns && b.function {
            d.set_item(b.name, Py::new(py, Op { idx: i })?)?;
        }
    }
    Ok(d)
}

#[pymodule]
#[pyo3(name = "_C")]
fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<PyTensor>()?;
    m.add_class::<tensor::PyNode>()?;
    m.add_class::<types::PyDtype>()?;
    m.add_class::<types::PyDevice>()?;
    m.add_class::<types::PyLayout>()?;
    m.add_class::<types::PyMemoryFormat>()?;
    m.add_class::<types::PyGenerator>()?;
    m.add_class::<Op>()?;
    m.add_class::<jit_py::PyScriptModule>()?;
    m.add_function(wrap_pyfunction!(jit_py::_jit_load, m)?)?;
    m.add_function(wrap_pyfunction!(jit_py::_jit_trace, m)?)?;
    m.add_class::<Method>()?;
    m.add_function(wrap_pyfunction!(_set_size_class, m)?)?;
    m.add_function(wrap_pyfunction!(tensor_fn, m)?)?;
    m.add_function(wrap_pyfunction!(numpy_interop::from_numpy, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack::from_dlpack, m)?)?;
    m.add_function(wrap_pyfunction!(manual_seed, m)?)?;
    m.add_function(wrap_pyfunction!(set_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(get_num_threads, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("_LinAlgError", py.get_type::<errors::_LinAlgError>())?;
    m.add_function(wrap_pyfunction!(_schema_arguments, m)?)?;
    m.add_function(wrap_pyfunction!(_embedding_bag, m)?)?;
    m.add_function(wrap_pyfunction!(_load_tensors, m)?)?;
    m.add_function(wrap_pyfunction!(_save_tensors, m)?)?;
    m.add_function(wrap_pyfunction!(_wrapped_number, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_is_available, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_device_count, m)?)?;
    m.add_function(wrap_pyfunction!(_set_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(is_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_autograd_grad, m)?)?;
    m.add_function(wrap_pyfunction!(autograd_py::_function_apply, m)?)?;
    m.add_class::<autograd_py::PyCtx>()?;
    m.add_class::<autograd_py::HookHandle>()?;
    m.add_class::<autograd_py::InferenceMode>()?;
    m.add_function(wrap_pyfunction!(autograd_py::_enter_inference_mode, m)?)?;
    m.add_function(wrap_pyfunction!(autograd_py::is_inference_mode_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(autograd_py::_set_detect_anomaly, m)?)?;
    m.add_function(wrap_pyfunction!(autograd_py::is_anomaly_enabled, m)?)?;
    for (name, obj) in types::module_constants(py) {
        m.add(name, obj)?;
    }
    m.add("_torch_functions", functions_of(py, Namespace::Torch)?)?;
    m.add("_linalg_functions", functions_of(py, Namespace::Linalg)?)?;
    m.add("_fft_functions", functions_of(py, Namespace::Fft)?)?;
    m.add("_special_functions", functions_of(py, Namespace::Special)?)?;
    // Methods go on the base class, so Python subclasses (Tensor, Parameter) inherit them; a
    // method of the class itself (shape, size, backward, ...) wins over an operator's.
    let base = py.get_type::<PyTensor>();
    for (i, b) in BINDINGS.iter().enumerate() {
        if b.method && !base.hasattr(b.name)? {
            base.setattr(b.name, Py::new(py, Method { idx: i })?)?;
        }
    }
    Ok(())
}
