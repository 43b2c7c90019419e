//! The layers, one file per family (as `torch/nn/modules/`), each with PyTorch's constructor
//! arguments, defaults, initialisation and state_dict names.

pub mod activation;
pub mod attention;
pub mod container;
pub mod conv;
pub mod dropout;
pub mod embedding;
pub mod interpolate;
pub mod linear;
pub mod loss;
pub mod norm;
pub mod pool;
pub mod rnn;
pub mod shape;
pub mod transformer;

pub use activation::*;
pub use attention::*;
pub use container::*;
pub use conv::*;
pub use dropout::*;
pub use embedding::*;
pub use interpolate::interpolate;
pub use linear::*;
pub use loss::*;
pub use norm::*;
pub use pool::*;
pub use rnn::*;
pub use shape::*;
pub use transformer::*;

use c10::Error;

pub(crate) fn invalid(op: &str, msg: impl Into<String>) -> Error {
    Error::InvalidArgument { op: op.into(), msg: msg.into() }
}

/// Expands a size argument given once (`kernel_size=3`) or per spatial dimension to `n` values,
/// as PyTorch's `_single` / `_pair` / `_triple`.
pub(crate) fn expand_arg(op: &str, name: &str, v: &[i64], n: usize) -> c10::Result<Vec<i64>> {
    match v.len() {
        1 => Ok(vec![v[0]; n]),
        k if k == n => Ok(v.to_vec()),
        k => Err(invalid(op, format!("{name} must be a single int or a tuple of {n} ints, got {k} values"))),
    }
}
