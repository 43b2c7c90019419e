//! Our errors as PyTorch's exception classes.
//!
//! PyTorch raises `IndexError` for an index or a dimension out of range, `NotImplementedError`
//! for an operator without a kernel for the tensor's backend, `torch.OutOfMemoryError` (a
//! `RuntimeError`) when an allocation fails, `TypeError` for arguments no overload takes, and
//! `RuntimeError` for everything else a kernel refuses. The message is worded as PyTorch's
//! (`Error::pytorch_message`: without our operator-name prefix).

use pyo3::exceptions::{PyIndexError, PyNotImplementedError, PyRuntimeError};
use pyo3::PyErr;

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
        E::IndexOutOfRange { .. } | E::DimOutOfRange { .. } => PyIndexError::new_err(msg),
        E::MissingKernel { .. } | E::NotImplemented { .. } => PyNotImplementedError::new_err(msg),
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
