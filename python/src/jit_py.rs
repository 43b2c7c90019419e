//! `torch.jit` from Python: `trace` (a Python function or module run once under the tracer),
//! `load` (our archives and PyTorch's `torch.jit.save` archives of traced models) and `save`.

use aten::{IValue, Tensor};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::errors::IntoPy;
use crate::tensor::{tensor_of, wrap, PyTensor};

/// `torch.jit.ScriptModule`: a graph with its parameters and buffers.
#[pyclass(name = "ScriptModule", module = "torchrs.jit")]
pub struct PyScriptModule {
    m: jit::ScriptModule,
}

fn outputs(py: Python<'_>, mut vals: Vec<IValue>) -> PyResult<Py<PyAny>> {
    if vals.len() == 1 {
        return crate::parser::to_python(py, vals.remove(0));
    }
    let items = vals.into_iter().map(|v| crate::parser::to_python(py, v)).collect::<PyResult<Vec<_>>>()?;
    Ok(PyTuple::new(py, items)?.into_any().unbind())
}

#[pymethods]
impl PyScriptModule {
    /// Runs the graph on the tensors given.
    #[pyo3(signature = (*inputs))]
    fn forward(&self, py: Python<'_>, inputs: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let ins: Vec<IValue> = inputs
            .iter()
            .map(|t| tensor_of(&t, "a ScriptModule input").map(IValue::Tensor))
            .collect::<PyResult<_>>()?;
        let m = &self.m;
        let vals = py.detach(|| m.forward_values(&ins)).py()?;
        outputs(py, vals)
    }
    #[pyo3(signature = (*inputs))]
    fn __call__(&self, py: Python<'_>, inputs: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        self.forward(py, inputs)
    }
    /// Writes our archive (a zip that `torch.jit.load` here reads back).
    fn save(&self, path: std::path::PathBuf) -> PyResult<()> {
        self.m.save(&path).py()
    }
    /// The graph in PyTorch's text form.
    #[getter]
    fn graph(&self) -> String {
        self.m.graph().to_string()
    }
    /// Warnings recorded while tracing (values the trace depends on).
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.m.warnings.clone()
    }
    /// `(name, tensor)` for every parameter and buffer, in the module's order.
    fn state_dict(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        use nn::Module;
        let d = py.import("collections")?.getattr("OrderedDict")?.call0()?;
        for (name, t) in self.m.state_dict().iter() {
            d.set_item(name, wrap(py, t.clone())?)?;
        }
        Ok(d.unbind())
    }
    fn named_parameters(&self, py: Python<'_>) -> PyResult<Vec<(String, Py<PyAny>)>> {
        use nn::Module;
        self.m.named_parameters().into_iter().map(|(n, p)| Ok((n, wrap(py, p.tensor().clone())?))).collect()
    }
    fn parameters(&self, py: Python<'_>) -> PyResult<Vec<Py<PyAny>>> {
        Ok(self.named_parameters(py)?.into_iter().map(|(_, t)| t).collect())
    }
    fn __repr__(&self) -> String {
        format!("ScriptModule({} inputs)", self.m.num_inputs())
    }
}

/// `torch.jit.load(path)`.
#[pyfunction]
pub fn _jit_load(py: Python<'_>, path: std::path::PathBuf) -> PyResult<PyScriptModule> {
    let m = py.detach(|| jit::load(&path)).py()?;
    Ok(PyScriptModule { m })
}

/// `torch.jit.trace(func, example_inputs)`: runs `func` once on the inputs under the tracer;
/// `params` and `buffers` (`(name, tensor)`, a module's) become the module's own.
#[pyfunction]
pub fn _jit_trace(
    py: Python<'_>,
    func: Bound<'_, PyAny>,
    inputs: Vec<Bound<'_, PyAny>>,
    params: Vec<(String, Bound<'_, PyAny>)>,
    buffers: Vec<(String, Bound<'_, PyAny>)>,
) -> PyResult<PyScriptModule> {
    let ins = inputs.iter().map(|t| tensor_of(t, "an example input")).collect::<PyResult<Vec<Tensor>>>()?;
    let params = params
        .into_iter()
        .map(|(n, t)| Ok((n, nn::Parameter::new(tensor_of(&t, "a parameter")?).py()?)))
        .collect::<PyResult<Vec<_>>>()?;
    let buffers = buffers
        .into_iter()
        .map(|(n, t)| Ok((n, tensor_of(&t, "a buffer")?)))
        .collect::<PyResult<Vec<(String, Tensor)>>>()?;
    let mut extra: Vec<(String, Tensor)> = params.iter().map(|(n, p)| (n.clone(), p.tensor().clone())).collect();
    extra.extend(buffers.iter().cloned());
    let run = |xs: &[Tensor]| -> c10::Result<Vec<Tensor>> {
        let args =
            xs.iter().map(|t| wrap(py, t.clone())).collect::<PyResult<Vec<_>>>().map_err(crate::autograd_py::park)?;
        let out =
            func.call1(PyTuple::new(py, args).map_err(crate::autograd_py::park)?).map_err(crate::autograd_py::park)?;
        if let Ok(t) = out.cast::<PyTensor>() {
            return Ok(vec![t.get().tensor.clone()]);
        }
        out.try_iter()
            .and_then(|it| it.map(|o| tensor_of(&o?, "a traced output")).collect::<PyResult<Vec<_>>>())
            .map_err(crate::autograd_py::park)
    };
    let trace = jit::trace_with(&ins, &extra, run).py()?;
    if trace.graph.inputs().len() - ins.len() != extra.len() {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(
            "jit.trace: a parameter or buffer is also an input of the traced function",
        ));
    }
    let buffers = buffers.into_iter().map(|(n, t)| (n, nn::Buffer::new(t))).collect();
    let mut m = jit::ScriptModule::new(trace.graph, params, buffers).py()?;
    m.warnings = trace.warnings;
    Ok(PyScriptModule { m })
}
