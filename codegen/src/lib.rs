//! The operator code generator: the `native_functions.yaml` / `derivatives.yaml` model and the
//! Rust emitters.
//!
//! [`yaml`] loads `native_functions.yaml` into checked [`yaml::NativeFunction`] records whose
//! schemas are parsed by the `schema` crate (PyTorch's grammar, shared with `aten`'s
//! dispatcher, re-exported here as [`schema`]); [`gen`] and [`autograd`] emit the Rust glue,
//! [`front_rust`] the Rust front end and [`front_python`] the Python bindings' table.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod autograd;
pub mod front_python;
pub mod front_rust;
pub mod frontend;
pub mod gen;
pub mod yaml;

/// PyTorch's function-schema grammar (the `schema` crate).
pub use ::schema;
