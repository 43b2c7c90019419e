//! `aten`: the `Tensor` type, the dispatcher, the generated operator API and the native CPU
//! kernels.
//!
//! A call such as `a.add(&b)` goes through the generated method in `generated/methods.rs`, the
//! typed operator handle in `generated/handles.rs` (key-set computation and table lookup in
//! [`dispatcher`]), and lands in a kernel under [`native`]. See the book chapter "Life of an
//! operator call" in `docs/`.
#![warn(missing_docs)]

pub mod autocast;
pub mod dispatcher;
pub mod display;
pub mod front;
pub mod generated;
pub mod generator;
pub mod indexing;
pub mod ivalue;
pub mod literal;
pub mod mapped;
pub mod memory_overlap;
pub mod native;
pub mod parallel;
pub mod tensor;
mod tensor_ops;

pub use dispatcher::{dispatcher, Dispatcher, KernelFunction, OperatorEntry};
pub use generated::builders;
pub use generated::functions as ops;
pub use generated::handles;
pub use generator::{cuda_manual_seed, cuda_manual_seed_all, default_generator, manual_seed, Generator};
pub use indexing::{step, Ellipsis, IndexOp, NewAxis, Slice, TensorIndex};
pub use ivalue::{IValue, Stack};
pub use parallel::{get_num_threads, set_num_threads};
pub use tensor::{Tensor, WeakTensor};

use c10::tensor_impl::backend_of;
use c10::{Device, DispatchKey, DispatchKeySet, Error, Result};

/// The key set a factory dispatches to for a `device` argument (CPU when absent): what the
/// generated BackendSelect kernels redispatch with.
#[inline]
pub fn backend_key_set(device: Option<Device>) -> DispatchKeySet {
    let b = backend_of(device.unwrap_or(Device::CPU).ty);
    DispatchKeySet::from_key(DispatchKey::to_runtime_per_backend(DispatchKey::Dense, b))
}

/// Registers aten's operators and kernels, and the fallthrough fallbacks for the layers that
/// have no kernel for most operators (BackendSelect, ADInplaceOrView, and the autograd keys
/// when the `autograd` crate is not linked; registrars run in no fixed order, so a fallback
/// that crate registered first is kept).
fn register_aten(d: &Dispatcher) {
    for key in [DispatchKey::BackendSelect, DispatchKey::ADInplaceOrView] {
        d.register_fallback(key, KernelFunction::fallthrough()).expect("runtime or per-backend key");
    }
    for key in [DispatchKey::AutogradFunctionality, DispatchKey::AutogradOther] {
        if !d.has_fallback(key) {
            d.register_fallback(key, KernelFunction::fallthrough()).expect("runtime or per-backend key");
        }
    }
    autocast::register_fallbacks(d);
    generated::registrations::register_all(d);
    autocast::register_kernels(d);
}

inventory::submit! { dispatcher::Registrar(register_aten) }

/// Turns a possibly negative dimension into an index in `0..ndim` (`maybe_wrap_dim`). A
/// zero-dim tensor accepts `0` and `-1`, as in PyTorch.
pub fn wrap_dim(op: &str, dim: i64, ndim: usize) -> Result<usize> {
    let n = (ndim as i64).max(1);
    if dim < -n || dim >= n {
        return Err(Error::DimOutOfRange { op: op.to_string(), dim, min: -n, max: n - 1 });
    }
    Ok(if dim < 0 { (dim + n) as usize } else { dim as usize })
}
