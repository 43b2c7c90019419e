//! The operator code generator: PyTorch's schema grammar and `native_functions.yaml` model.
//!
//! [`schema`] parses function schemas such as
//! `add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor`; it has no
//! dependencies and is always built, because `aten` parses the schemas of operators registered
//! by strings at run time. The `generator` feature (on by default) adds [`yaml`], which loads
//! `native_functions.yaml` into checked [`yaml::NativeFunction`] records for the emitters.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "generator")]
pub mod autograd;
#[cfg(feature = "generator")]
pub mod gen;
pub mod schema;
#[cfg(feature = "generator")]
pub mod yaml;
