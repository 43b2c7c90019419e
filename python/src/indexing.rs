//! Python's index expressions (`x[1:, ::2]`, `x[None, ..., 0]`, `x[mask]`, `x[[0, 2]]`) as
//! `aten::indexing`'s indices, and assignment through them (`x[idx] = v`).

use aten::indexing::{Slice, TensorIndex};
use aten::Tensor;
use c10::Result;
use pyo3::exceptions::{PyIndexError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyEllipsis, PyInt, PyList, PySlice, PyTuple};

use crate::tensor::PyTensor;

fn one(v: &Bound<'_, PyAny>) -> PyResult<TensorIndex> {
    if v.is_none() {
        return Ok(TensorIndex::NewAxis);
    }
    if v.is(PyEllipsis::get(v.py())) {
        return Ok(TensorIndex::Ellipsis);
    }
    if v.is_instance_of::<PyBool>() {
        return Ok(TensorIndex::Bool(v.extract()?));
    }
    if v.is_instance_of::<PyInt>() {
        return Ok(TensorIndex::Select(v.extract()?));
    }
    if let Ok(s) = v.cast::<PySlice>() {
        let get = |name: &str| -> PyResult<Option<i64>> {
            let x = s.getattr(name)?;
            if x.is_none() {
                Ok(None)
            } else {
                x.call_method0("__index__")?.extract().map(Some)
            }
        };
        let step = get("step")?.unwrap_or(1);
        if step <= 0 {
            return Err(pyo3::exceptions::PyValueError::new_err("step must be greater than zero"));
        }
        return Ok(TensorIndex::Slice(Slice::new(get("start")?, get("stop")?, step)));
    }
    if let Ok(t) = v.cast::<PyTensor>() {
        return Ok(TensorIndex::Tensor(t.get().tensor.clone()));
    }
    if let Ok(l) = v.cast::<PyList>() {
        // A list of integers (or bools) indexes like a tensor of them.
        if let Ok(ints) = l.extract::<Vec<i64>>() {
            if !l.iter().any(|i| i.is_instance_of::<PyBool>()) {
                let n = ints.len() as i64;
                return Ok(TensorIndex::Tensor(Tensor::from_vec(ints, &[n]).map_err(crate::errors::to_py)?));
            }
        }
        if let Ok(bools) = l.extract::<Vec<bool>>() {
            let n = bools.len() as i64;
            return Ok(TensorIndex::Tensor(Tensor::from_vec(bools, &[n]).map_err(crate::errors::to_py)?));
        }
    }
    // numpy integers and other objects with __index__.
    if let Ok(i) = v.call_method0("__index__") {
        return Ok(TensorIndex::Select(i.extract()?));
    }
    Err(PyIndexError::new_err(
        "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices (got \
         {})"
        .replace("{}", &crate::parser::py_type_name(v)),
    ))
}

/// The indices of a Python index expression (a tuple is several indices, anything else one).
pub fn indices(index: &Bound<'_, PyAny>) -> PyResult<Vec<TensorIndex>> {
    if let Ok(t) = index.cast::<PyTuple>() {
        return t.iter().map(|v| one(&v)).collect();
    }
    if index.is_instance_of::<pyo3::types::PyString>() {
        return Err(PyTypeError::new_err("string indices are not supported"));
    }
    Ok(vec![one(index)?])
}

/// `self[indices] = value`: basic indices write through the view they select; tensor indices
/// (with full slices around them) go through `index_put_`, as PyTorch's `index_put_` path.
pub fn index_put(self_: &Tensor, idx: &[TensorIndex], value: &Tensor) -> Result<()> {
    let basic = idx.iter().all(|i| !matches!(i, TensorIndex::Tensor(_)));
    if basic {
        let view = aten::indexing::index(self_, idx)?;
        aten::ops::copy_(&view, value, false)?;
        return Ok(());
    }
    // Advanced: full slices before the tensors stand for "all of that dimension"; other forms
    // are first applied as a view.
    let mut lead = Vec::new();
    let mut rest = idx;
    while let Some((first, tail)) = rest.split_first() {
        match first {
            TensorIndex::Slice(s) if s.start.is_none() && s.stop.is_none() && s.step == 1 => {
                lead.push(None);
                rest = tail;
            }
            _ => break,
        }
    }
    let mut list: Vec<Option<Tensor>> = lead;
    for i in rest {
        match i {
            TensorIndex::Tensor(t) => list.push(Some(t.clone())),
            TensorIndex::Select(k) => list.push(Some(Tensor::from_vec(vec![*k], &[])?)),
            _ => {
                return Err(c10::Error::invalid(
                    "index_put_",
                    "assignment mixing tensor indices with slices, None or ... after them is not supported yet",
                ))
            }
        }
    }
    aten::ops::index_put_(self_, &list, value, false)?;
    Ok(())
}
