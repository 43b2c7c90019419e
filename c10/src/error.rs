//! The one error type of the framework. Variants are grouped by kind and carry the operator
//! name and the offending shapes, dtypes or devices, with messages a PyTorch user recognises.

use crate::cuda_caching_allocator::format_size;
use crate::{DeviceType, ScalarType};

/// Result alias used by every fallible API in the workspace.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every error the framework reports. Public operators return these as values; they never panic
/// on bad input.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    // ---- shapes -------------------------------------------------------------------------------
    /// Two shapes cannot be broadcast together.
    #[error("{op}: The size of tensor a ({a}) must match the size of tensor b ({b}) at non-singleton dimension {dim}")]
    Broadcast {
        /// Operator name.
        op: String,
        /// Size in the first operand.
        a: i64,
        /// Size in the second operand.
        b: i64,
        /// The (right-aligned) dimension that clashed.
        dim: usize,
    },
    /// A shape argument or the shape of an operand is invalid for the operator.
    #[error("{}", prefixed(op, msg))]
    Shape {
        /// Operator name.
        op: String,
        /// What is wrong, with the shapes involved.
        msg: String,
    },
    /// A dimension index is outside `[-ndim, ndim-1]`.
    #[error("{op}: Dimension out of range (expected to be in range of [{min}, {max}], but got {dim})")]
    DimOutOfRange {
        /// Operator name.
        op: String,
        /// The dimension that was asked for.
        dim: i64,
        /// Smallest accepted value.
        min: i64,
        /// Largest accepted value.
        max: i64,
    },
    /// An index is outside the size of a dimension.
    #[error("{op}: index {index} is out of bounds for dimension {dim} with size {size}")]
    IndexOutOfRange {
        /// Operator name.
        op: String,
        /// The index asked for.
        index: i64,
        /// The dimension indexed.
        dim: i64,
        /// The size of that dimension.
        size: i64,
    },
    /// `view` was asked for a shape that the strides cannot express.
    #[error("{op}: view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.")]
    ViewStride {
        /// Operator name.
        op: String,
    },

    // ---- dtypes -------------------------------------------------------------------------------
    /// The computed result dtype cannot be written into the given output.
    #[error("{op}: result type {from} can't be cast to the desired output type {to}")]
    UnsafeCast {
        /// Operator name.
        op: String,
        /// The computed dtype.
        from: ScalarType,
        /// The output's dtype.
        to: ScalarType,
    },
    /// The operator does not support this dtype.
    #[error("{op}: \"{op}\" not implemented for '{dtype}'")]
    UnsupportedDtype {
        /// Operator name.
        op: String,
        /// The dtype that is not supported.
        dtype: ScalarType,
    },
    /// Element type requested by a typed accessor differs from the tensor's dtype.
    #[error("{op}: expected dtype {expected}, but the tensor has dtype {actual}")]
    DtypeMismatch {
        /// Operator or accessor name.
        op: String,
        /// The dtype that was requested.
        expected: ScalarType,
        /// The tensor's dtype.
        actual: ScalarType,
    },

    // ---- devices ------------------------------------------------------------------------------
    /// Operands live on different devices.
    #[error("{op}: Expected all tensors to be on the same device, but found at least two devices, {a} and {b}!")]
    DeviceMismatch {
        /// Operator name.
        op: String,
        /// First device.
        a: String,
        /// Second device.
        b: String,
    },
    /// No allocator or runtime is available for a device type.
    #[error("no allocator registered for device type {0}")]
    NoAllocator(DeviceType),
    /// Memory allocation failed.
    #[error("{}", oom_message(*device, *nbytes))]
    OutOfMemory {
        /// The device type.
        device: DeviceType,
        /// Bytes requested.
        nbytes: usize,
    },

    /// The CUDA caching allocator found no room on the device, even after returning its cached
    /// segments to the driver (See Note [CUDA caching allocator policy]). PyTorch's message.
    #[error(
        "CUDA out of memory. Tried to allocate {}. GPU {device} has a total capacity of {} of which {} is free. {}Of the allocated memory {} is allocated by PyTorch, and {} is reserved by PyTorch but unallocated.",
        format_size(*requested),
        format_size(*total),
        format_size(*free),
        allowed.map(|a| format!("{} allowed; ", format_size(a))).unwrap_or_default(),
        format_size(*allocated),
        format_size(*reserved_unallocated)
    )]
    CudaOutOfMemory {
        /// The device index.
        device: i8,
        /// Bytes the allocator asked the driver for: the segment size for the request, which is
        /// what PyTorch reports (2 MiB for a small request).
        requested: usize,
        /// Total memory of the device.
        total: usize,
        /// Free memory of the device as the driver reports it.
        free: usize,
        /// The limit set by `set_memory_fraction`, if any.
        allowed: Option<usize>,
        /// Bytes in blocks the allocator has handed out.
        allocated: usize,
        /// Bytes the allocator holds from the driver but has not handed out.
        reserved_unallocated: usize,
    },
    /// A CUDA driver call, kernel launch or device selection failed for a reason other than the
    /// caching allocator running out of memory; the message is complete ("CUDA error: invalid
    /// device ordinal", "Found no NVIDIA driver on your system...").
    #[error("{0}")]
    Cuda(String),

    // ---- dispatcher ---------------------------------------------------------------------------
    /// No operator of that name is registered.
    #[error("unknown operator '{0}'")]
    UnknownOperator(String),
    /// The dispatch table has no kernel for the computed key.
    #[error("Could not run '{op}' with arguments from the '{key}' backend. '{op}' is only available for these backends: [{available}].")]
    MissingKernel {
        /// `aten::name.overload`.
        op: String,
        /// The dispatch key that was selected.
        key: String,
        /// Keys that do have kernels, comma separated.
        available: String,
    },
    /// A schema string did not parse or a registration conflicts with an existing schema.
    #[error("schema error: {0}")]
    Schema(String),
    /// Arguments passed through the boxed calling convention do not fit the schema.
    #[error("{op}: {msg}")]
    BoxedArgument {
        /// Operator name.
        op: String,
        /// What is wrong.
        msg: String,
    },

    // ---- everything else ----------------------------------------------------------------------
    /// An argument value is not accepted by the operator.
    #[error("{}", prefixed(op, msg))]
    InvalidArgument {
        /// Operator name.
        op: String,
        /// What is wrong.
        msg: String,
    },
    /// An argument has a value PyTorch refuses as a value error (`TORCH_CHECK_VALUE`: Python's
    /// `ValueError`), such as an empty list where tensors are needed.
    #[error("{}", prefixed(op, msg))]
    Value {
        /// Operator name.
        op: String,
        /// What is wrong.
        msg: String,
    },
    /// An index PyTorch refuses with its own wording (`TORCH_CHECK_INDEX`: Python's
    /// `IndexError`), where [`Error::IndexOutOfRange`]'s does not apply.
    #[error("{}", prefixed(op, msg))]
    Index {
        /// Operator name.
        op: String,
        /// What is wrong.
        msg: String,
    },
    /// A linear-algebra function could not complete on its input (singular, not
    /// positive-definite, no convergence): PyTorch's `torch.linalg.LinAlgError`, whose message
    /// starts with the function's name (`linalg.inv: ...`).
    #[error("{op}: {msg}")]
    LinAlg {
        /// The function, as PyTorch names it (`linalg.inv`).
        op: String,
        /// What went wrong.
        msg: String,
    },
    /// A feature that exists in PyTorch is not available in this build.
    #[error("{op}: not implemented: {msg}")]
    NotImplemented {
        /// Operator or feature name.
        op: String,
        /// What is missing.
        msg: String,
    },
    /// Autograd reported a problem (used by the `autograd` crate).
    #[error("{0}")]
    Autograd(String),
    /// I/O, parsing or serialisation problems, with the file involved.
    #[error("{0}")]
    Io(String),

    // ---- distributed (the `distributed` crate) -----------------------------------------------
    /// A store or collective did not complete within its timeout (PyTorch's `DistStoreError`
    /// from a store's `wait`/`get`).
    #[error("{op}: {msg}")]
    DistTimeout {
        /// The operation (`get`, `wait`, `TCPStore`).
        op: String,
        /// What was waited for, and how long.
        msg: String,
    },
    /// A peer could not be reached, or the connection to it broke (`DistNetworkError`).
    #[error("{op}: {msg}")]
    DistNetwork {
        /// The operation.
        op: String,
        /// The address and what went wrong.
        msg: String,
    },
    /// Any other distributed failure (`DistError`, `DistStoreError`).
    #[error("{op}: {msg}")]
    Distributed {
        /// The operation.
        op: String,
        /// What is wrong.
        msg: String,
    },
}

/// PyTorch's out-of-memory wording per device type.
fn oom_message(device: DeviceType, nbytes: usize) -> String {
    match device {
        DeviceType::Cpu => format!("DefaultCPUAllocator: can't allocate memory: you tried to allocate {nbytes} bytes."),
        other => format!("{other}: out of memory: tried to allocate {nbytes} bytes"),
    }
}

/// `op: msg`, or `msg` alone when it already starts with `op: ` (PyTorch's own message for
/// some checks names the function: `mm: mat1 and mat2 shapes cannot be multiplied ...`).
fn prefixed(op: &str, msg: &str) -> String {
    match msg.strip_prefix(op) {
        Some(rest) if rest.starts_with(": ") => msg.to_string(),
        _ => format!("{op}: {msg}"),
    }
}

impl Error {
    /// The message as PyTorch words it, for front ends that show PyTorch's errors (the Python
    /// package): PyTorch's messages for shapes, indices, dimensions, casts, devices and
    /// argument values do not start with the operator's name, ours do (`add: The size of
    /// tensor a ...`), so that prefix goes; a missing dtype kernel names the dtype as PyTorch
    /// does (`"add" not implemented for 'Half'`). Other errors keep their text.
    pub fn pytorch_message(&self) -> String {
        match self {
            Error::UnsupportedDtype { op, dtype } => format!("\"{op}\" not implemented for '{}'", dtype.legacy_name()),
            // The message alone: where PyTorch's starts with a function name (`mm: mat1 and
            // mat2 ...`), so does ours.
            Error::Shape { msg, .. }
            | Error::InvalidArgument { msg, .. }
            | Error::BoxedArgument { msg, .. }
            | Error::Value { msg, .. }
            | Error::Index { msg, .. } => msg.clone(),
            Error::Broadcast { op, .. }
            | Error::DimOutOfRange { op, .. }
            | Error::IndexOutOfRange { op, .. }
            | Error::ViewStride { op }
            | Error::UnsafeCast { op, .. }
            | Error::DeviceMismatch { op, .. } => {
                let text = self.to_string();
                match text.strip_prefix(op.as_str()).and_then(|r| r.strip_prefix(": ")) {
                    Some(rest) => rest.to_string(),
                    None => text,
                }
            }
            _ => self.to_string(),
        }
    }

    /// Shorthand for [`Error::UnsupportedDtype`].
    pub fn unsupported_dtype(op: impl Into<String>, dtype: ScalarType) -> Self {
        Error::UnsupportedDtype { op: op.into(), dtype }
    }

    /// [`Error::UnsupportedDtype`] named after the Rust function it was raised in, as
    /// `dispatch_all_types!` raises it for a complex dtype: `fname` is the path of an item
    /// declared in that function (`std::any::type_name_of_val`), whose last real segment is the
    /// kernel's name, like PyTorch's `"add_cpu" not implemented for 'ComplexFloat'`.
    pub fn not_implemented_in(fname: &str, dtype: ScalarType) -> Self {
        let op = fname.rsplit("::").skip(1).find(|seg| !seg.starts_with('{')).unwrap_or(fname);
        Error::UnsupportedDtype { op: op.to_string(), dtype }
    }

    /// Shorthand for [`Error::InvalidArgument`].
    pub fn invalid(op: impl Into<String>, msg: impl Into<String>) -> Self {
        Error::InvalidArgument { op: op.into(), msg: msg.into() }
    }

    /// Shorthand for [`Error::Shape`].
    pub fn shape(op: impl Into<String>, msg: impl Into<String>) -> Self {
        Error::Shape { op: op.into(), msg: msg.into() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pytorch_messages_drop_our_operator_prefix() {
        // PyTorch 2.15's messages for the same failures (torch.ones(2) + torch.ones(3), ...).
        let e = Error::Broadcast { op: "add".into(), a: 2, b: 3, dim: 0 };
        assert_eq!(
            e.to_string(),
            "add: The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"
        );
        assert_eq!(
            e.pytorch_message(),
            "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"
        );
        let e = Error::IndexOutOfRange { op: "select".into(), index: 5, dim: 0, size: 2 };
        assert_eq!(e.pytorch_message(), "index 5 is out of bounds for dimension 0 with size 2");
        let e = Error::DimOutOfRange { op: "sum".into(), dim: 5, min: -2, max: 1 };
        assert_eq!(e.pytorch_message(), "Dimension out of range (expected to be in range of [-2, 1], but got 5)");
        let e = Error::unsupported_dtype("addmm", ScalarType::F16);
        assert_eq!(e.pytorch_message(), "\"addmm\" not implemented for 'Half'");
        // An operator-free error keeps its text.
        assert_eq!(Error::Autograd("x".into()).pytorch_message(), "x");
    }
}
