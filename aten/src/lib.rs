//! `aten`: the `Tensor` type, the dispatcher, the generated operator API and the native CPU
//! kernels.
//!
//! A call such as `a.add(&b)` goes through the generated method in `generated/methods.rs`, the
//! typed operator handle in `generated/ops.rs` (key-set computation and table lookup in
//! [`dispatcher`]), and lands in a kernel under [`native`]. See the book chapter "Life of an
//! operator call" in `docs/`.
#![warn(missing_docs)]

pub mod dispatcher;
pub mod generator;
pub mod ivalue;
pub mod native;
pub mod tensor;

pub use dispatcher::{dispatcher, Dispatcher, KernelFunction, OperatorEntry};
pub use generator::{default_generator, manual_seed, Generator};
pub use ivalue::{IValue, Stack};
pub use tensor::Tensor;

use c10::{Error, Result};

/// Turns a possibly negative dimension into an index in `0..ndim` (`maybe_wrap_dim`). A
/// zero-dim tensor accepts `0` and `-1`, as in PyTorch.
pub fn wrap_dim(op: &str, dim: i64, ndim: usize) -> Result<usize> {
    let n = (ndim as i64).max(1);
    if dim < -n || dim >= n {
        return Err(Error::DimOutOfRange { op: op.to_string(), dim, min: -n, max: n - 1 });
    }
    Ok(if dim < 0 { (dim + n) as usize } else { dim as usize })
}
