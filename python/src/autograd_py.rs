//! Python code inside the autograd engine: tensor hooks (`x.register_hook(fn)`) and
//! `torch.autograd.Function` subclasses whose `forward`/`backward` are Python static methods.
//!
//! Note [Python exceptions through the engine]: a hook or a `backward` written in Python may
//! raise. The engine only carries our errors, so the Python exception is parked (in
//! [`PARKED`]) and an error naming it goes through the engine; when that error comes back to
//! Python ([`crate::errors::to_py`]) the parked exception is raised instead, unchanged (its
//! type, message and traceback), as PyTorch's engine does.
//!
//! Engine threads call in with the interpreter lock released by the caller (`backward` runs
//! under `py.detach`), so taking it here (`Python::attach`) cannot deadlock.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use aten::Tensor;
use autograd::{Function, FunctionCtx};
use c10::{Error, Result};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::errors::IntoPy;
use crate::tensor::{tensor_of, wrap, PyTensor};

/// The Python exception raised in engine code, waiting for its error to reach Python.
static PARKED: Mutex<Option<(u64, PyErr)>> = Mutex::new(None);
static NEXT_PARK: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// The text that marks an error as carrying a parked Python exception.
const MARK: &str = "python exception #";

/// Parks `e` and returns the error that carries it through the engine.
pub(crate) fn park(e: PyErr) -> Error {
    let id = NEXT_PARK.fetch_add(1, Ordering::Relaxed);
    let msg = Python::attach(|_| e.to_string());
    *PARKED.lock().unwrap_or_else(|p| p.into_inner()) = Some((id, e));
    Error::Autograd(format!("{MARK}{id}: {msg}"))
}

/// The parked exception an error carries, if any (taken: it is raised once).
pub fn unpark(e: &Error) -> Option<PyErr> {
    let Error::Autograd(msg) = e else { return None };
    let rest = msg.find(MARK).map(|at| &msg[at + MARK.len()..])?;
    let id: u64 = rest.split(':').next()?.parse().ok()?;
    let mut slot = PARKED.lock().unwrap_or_else(|p| p.into_inner());
    match slot.take() {
        Some((parked, err)) if parked == id => Some(err),
        other => {
            *slot = other;
            None
        }
    }
}

/// The handle `register_hook` returns: `remove()` turns the hook off.
#[pyclass(name = "RemovableHandle", module = "torchrs.utils.hooks", frozen)]
pub struct HookHandle {
    removed: Arc<AtomicBool>,
}

#[pymethods]
impl HookHandle {
    fn remove(&self) {
        self.removed.store(true, Ordering::Release);
    }
    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }
    fn __exit__(&self, _t: Py<PyAny>, _v: Py<PyAny>, _tb: Py<PyAny>) {
        self.remove();
    }
}

/// `x.register_hook(fn)`: `fn(grad)` runs when the gradient of `x` is computed and may return a
/// replacement (or None).
pub fn register_hook(py: Python<'_>, t: &Tensor, hook: Py<PyAny>) -> PyResult<Py<HookHandle>> {
    let removed = Arc::new(AtomicBool::new(false));
    let flag = removed.clone();
    autograd::meta::register_hook(t, move |g: &Tensor| {
        if flag.load(Ordering::Acquire) {
            return Ok(None);
        }
        Python::attach(|py| {
            let r = hook.call1(py, (wrap(py, g.clone()).map_err(park)?,)).map_err(park)?;
            if r.is_none(py) {
                return Ok(None);
            }
            match r.bind(py).cast::<PyTensor>() {
                Ok(t) => Ok(Some(t.get().tensor.clone())),
                Err(_) => Err(park(PyTypeError::new_err("hooks must return None or a Tensor"))),
            }
        })
    })
    .py()?;
    Py::new(py, HookHandle { removed })
}

/// The `ctx` of a Python `Function`: what `forward` asks for, what `backward` reads.
#[pyclass(name = "FunctionCtx", module = "torchrs.autograd.function", dict)]
pub struct PyCtx {
    to_save: Vec<Py<PyAny>>,
    dirty: Vec<Tensor>,
    non_differentiable: Vec<Tensor>,
    saved: Option<Vec<Tensor>>,
    needs_input_grad: Vec<bool>,
}

#[pymethods]
impl PyCtx {
    #[pyo3(signature = (*tensors))]
    fn save_for_backward(&mut self, tensors: &Bound<'_, PyTuple>) -> PyResult<()> {
        for t in tensors.iter() {
            if !t.is_none() && t.cast::<PyTensor>().is_err() {
                return Err(PyTypeError::new_err(
                    "save_for_backward can only save variables, but argument 0 is not a Variable",
                ));
            }
        }
        self.to_save = tensors.iter().map(|t| t.unbind()).collect();
        Ok(())
    }
    /// The saved tensors, checked against in-place changes since they were saved.
    #[getter]
    fn saved_tensors(&self, py: Python<'_>) -> PyResult<Py<PyTuple>> {
        match &self.saved {
            Some(ts) => {
                let items = ts.iter().map(|t| wrap(py, t.clone())).collect::<PyResult<Vec<_>>>()?;
                Ok(PyTuple::new(py, items)?.unbind())
            }
            None => Err(PyRuntimeError::new_err("saved_tensors is only available in backward")),
        }
    }
    #[getter]
    fn needs_input_grad(&self, py: Python<'_>) -> PyResult<Py<PyTuple>> {
        Ok(PyTuple::new(py, &self.needs_input_grad)?.unbind())
    }
    #[pyo3(signature = (*tensors))]
    fn mark_dirty(&mut self, tensors: &Bound<'_, PyTuple>) -> PyResult<()> {
        for t in tensors.iter() {
            self.dirty.push(tensor_of(&t, "mark_dirty")?);
        }
        Ok(())
    }
    #[pyo3(signature = (*tensors))]
    fn mark_non_differentiable(&mut self, tensors: &Bound<'_, PyTuple>) -> PyResult<()> {
        for t in tensors.iter() {
            self.non_differentiable.push(tensor_of(&t, "mark_non_differentiable")?);
        }
        Ok(())
    }
}

/// A Python `Function` subclass as our [`Function`].
struct PyFunction {
    cls: Py<PyAny>,
    name: String,
    /// The Python arguments of `apply`: a tensor's slot holds its index among the inputs.
    args: Vec<Arg>,
    ctx: Py<PyCtx>,
    /// `forward` returned a tuple (so does `apply`), not a lone tensor.
    returned_tuple: AtomicBool,
}

enum Arg {
    Tensor(usize),
    Other(Py<PyAny>),
}

impl PyFunction {
    fn forward_py(&self, py: Python<'_>, ctx: &mut FunctionCtx, inputs: &[Tensor]) -> PyResult<Vec<Tensor>> {
        let mut args: Vec<Py<PyAny>> = vec![self.ctx.clone_ref(py).into_any()];
        for a in &self.args {
            args.push(match a {
                Arg::Tensor(i) => wrap(py, inputs[*i].clone())?,
                Arg::Other(o) => o.clone_ref(py),
            });
        }
        let out = self.cls.call_method1(py, "forward", PyTuple::new(py, args)?)?;
        let out = out.bind(py);
        let outs: Vec<Tensor> = if let Ok(t) = out.cast::<PyTensor>() {
            vec![t.get().tensor.clone()]
        } else if let Ok(t) = out.cast::<PyTuple>() {
            self.returned_tuple.store(true, Ordering::Relaxed);
            t.iter().map(|o| tensor_of(&o, "forward's outputs")).collect::<PyResult<_>>()?
        } else {
            return Err(PyTypeError::new_err(format!(
                "{}.forward must return a Tensor or a tuple of Tensors",
                self.name
            )));
        };
        let mut c = self.ctx.borrow_mut(py);
        let to_save =
            c.to_save.iter().map(|o| tensor_of(o.bind(py), "save_for_backward")).collect::<PyResult<Vec<_>>>()?;
        ctx.save_for_backward(&to_save);
        ctx.mark_dirty(&std::mem::take(&mut c.dirty));
        ctx.mark_non_differentiable(&std::mem::take(&mut c.non_differentiable));
        Ok(outs)
    }

    fn backward_py(
        &self,
        py: Python<'_>,
        ctx: &FunctionCtx,
        grads: &[Option<Tensor>],
    ) -> PyResult<Vec<Option<Tensor>>> {
        self.ctx.borrow_mut(py).saved = Some(ctx.saved_tensors().py()?);
        let mut args: Vec<Py<PyAny>> = vec![self.ctx.clone_ref(py).into_any()];
        for g in grads {
            args.push(match g {
                Some(g) => wrap(py, g.clone())?,
                None => py.None(),
            });
        }
        let r = self.cls.call_method1(py, "backward", PyTuple::new(py, args)?)?;
        let r = r.bind(py);
        let items: Vec<Bound<'_, PyAny>> = match r.cast::<PyTuple>() {
            Ok(t) => t.iter().collect(),
            Err(_) => vec![r.clone()],
        };
        let n_args = self.args.len();
        if items.len() != n_args {
            return Err(PyRuntimeError::new_err(format!(
                "function {}Backward returned an incorrect number of gradients (expected {n_args}, got {})",
                self.name,
                items.len()
            )));
        }
        // One gradient per tensor input, in order; the others must be None.
        let mut out = Vec::new();
        for (a, g) in self.args.iter().zip(items) {
            match a {
                Arg::Tensor(_) if g.is_none() => out.push(None),
                Arg::Tensor(_) => out.push(Some(tensor_of(&g, "backward's gradients")?)),
                Arg::Other(_) if g.is_none() => {}
                Arg::Other(_) => {
                    return Err(PyRuntimeError::new_err(format!(
                        "function {}Backward returned a gradient different than None for an input that is not a Tensor",
                        self.name
                    )))
                }
            }
        }
        Ok(out)
    }
}

/// A [`PyFunction`] that reports, through the shared flag, whether `forward` returned a tuple
/// (the node owns the function, so `apply` learns it this way).
struct TupleFlag(PyFunction, Arc<AtomicBool>);

impl Function for TupleFlag {
    fn name(&self) -> String {
        self.0.name.clone()
    }
    fn forward(&self, ctx: &mut FunctionCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        let r = Python::attach(|py| self.0.forward_py(py, ctx, inputs)).map_err(park);
        self.1.store(self.0.returned_tuple.load(Ordering::Relaxed), Ordering::Relaxed);
        r
    }
    fn backward(&self, ctx: &FunctionCtx, grads: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
        Python::attach(|py| self.0.backward_py(py, ctx, grads)).map_err(park)
    }
}

/// `Function.apply(*args)` of the Python class `cls`.
#[pyfunction]
#[pyo3(signature = (cls, *args))]
pub fn _function_apply(py: Python<'_>, cls: Bound<'_, PyAny>, args: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
    let mut inputs = Vec::new();
    let mut slots = Vec::new();
    for a in args.iter() {
        match a.cast::<PyTensor>() {
            Ok(t) => {
                slots.push(Arg::Tensor(inputs.len()));
                inputs.push(t.get().tensor.clone());
            }
            Err(_) => slots.push(Arg::Other(a.unbind())),
        }
    }
    let ctx = Py::new(
        py,
        PyCtx {
            to_save: Vec::new(),
            dirty: Vec::new(),
            non_differentiable: Vec::new(),
            saved: None,
            needs_input_grad: args
                .iter()
                .map(|a| a.cast::<PyTensor>().is_ok_and(|t| autograd::meta::requires_grad(&t.get().tensor)))
                .collect(),
        },
    )?;
    let name: String = cls.getattr("__name__")?.extract()?;
    let tuple = Arc::new(AtomicBool::new(false));
    let f = PyFunction { cls: cls.unbind(), name, args: slots, ctx, returned_tuple: AtomicBool::new(false) };
    let outs = autograd::custom::apply(TupleFlag(f, tuple.clone()), &inputs).py()?;
    let mut objs = outs.into_iter().map(|t| wrap(py, t)).collect::<PyResult<Vec<_>>>()?;
    if !tuple.load(Ordering::Relaxed) && objs.len() == 1 {
        return Ok(objs.remove(0));
    }
    Ok(PyTuple::new(py, objs)?.into_any().unbind())
}

/// `torch.inference_mode()`'s state while its block runs: the Rust guard, dropped on exit (on
/// the thread that entered, as the guard is per thread).
#[pyclass(name = "_InferenceMode", module = "torchrs.autograd", unsendable)]
pub struct InferenceMode {
    guard: Option<autograd::grad_mode::InferenceModeGuard>,
}

#[pymethods]
impl InferenceMode {
    fn __exit__(&mut self, _t: Py<PyAny>, _v: Py<PyAny>, _tb: Py<PyAny>) {
        self.guard = None;
    }
}

/// Enters inference mode (`enabled=True`) or leaves nothing changed; the object's `__exit__`
/// restores the previous state.
#[pyfunction]
pub fn _enter_inference_mode(enabled: bool) -> InferenceMode {
    InferenceMode { guard: enabled.then(autograd::grad_mode::inference_mode) }
}

/// `torch.is_inference_mode_enabled()`.
#[pyfunction]
pub fn is_inference_mode_enabled() -> bool {
    c10::tensor_impl::is_inference_mode()
}

/// `torch.autograd.set_detect_anomaly(mode)`; returns the previous mode.
#[pyfunction]
pub fn _set_detect_anomaly(mode: bool) -> bool {
    autograd::set_detect_anomaly(mode)
}

/// `torch.is_anomaly_enabled()`.
#[pyfunction]
pub fn is_anomaly_enabled() -> bool {
    autograd::anomaly::is_enabled()
}
