//! Our errors as PyTorch's exception classes.
//!
//! PyTorch raises `IndexError` for an index or a dimension out of range, `NotImplementedError`
//! for an operator without a kernel for the tensor's backend, `torch.OutOfMemoryError` (a
//! `RuntimeError`) when an allocation fails, `TypeError` for arguments no overload takes,
//! `ValueError` for the values its checks call value errors, `NotImplementedError` for a dtype
//! an operator has no kernel for, `torch.linalg.LinAlgError` (a `RuntimeError`, `_LinAlgError`
//! in `torch._C`) when a factorization fails on its input, and `RuntimeError` for everything
//! else a kernel refuses. The message is worded as PyTorch's (`Error::pytorch_message`: without
//! our operator-name prefix).

use pyo3::exceptions::{PyIndexError, PyNotImplementedError, PyRuntimeError, PyValueError};
use pyo3::PyErr;

pyo3::create_exception!(
    _C,
    _LinAlgError,
    PyRuntimeError,
    "A linear-algebra function could not complete on its input (torch.linalg.LinAlgError)."
);

/// The Python exception for one of our errors.
pub fn to_py(e: c10::Error) -> PyErr {
    use c10::Error as E;
    // A Python exception raised in a hook or a custom Function, unchanged (Note [Python
    // exceptions through the engine]).
    if let Some(parked) = crate::autograd_py::unpark(&e) {
        return parked;
    }
    let msg = e.pytorch_message();
    match e {
        E::IndexOutOfRange { .. } | E::DimOutOfRange { .. } | E::Index { .. } => PyIndexError::new_err(msg),
        E::MissingKernel { .. } | E::NotImplemented { .. } | E::UnsupportedDtype { .. } => {
            PyNotImplementedError::new_err(msg)
        }
        E::Value { .. } => PyValueError::new_err(msg),
        E::LinAlg { .. } => _LinAlgError::new_err(msg),
        _ => PyRuntimeError::new_err(msg),
    }
}

/// `?` for our results inside functions returning `PyResult`.
pub trait IntoPy<T> {
    /// The value, or the error as a Python exception.
    fn py(self) -> pyo3::PyResult<T>;
}

impl<T> IntoPy<T> for c10::Result<T> {
    #[inline]
    fn py(self) -> pyo3::PyResult<T> {
        self.map_err(to_py)
    }
}
