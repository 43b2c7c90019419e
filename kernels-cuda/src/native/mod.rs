//! The `CUDA:` kernels named in `aten/native_functions.yaml`, as the generated registrations
//! (`generated/registrations.rs`) name them: `CUDA: binary::add` is `crate::native::binary::add`.
//!
//! Most of them are aten's device-generic operators (Note [Device-generic operators] in
//! `aten::native::stub`), re-exported here: their checks, type promotion and allocation are
//! shared with the CPU, and only their loops are CUDA launches ([`crate::loops`]). The kernels
//! that are CUDA's own live in this module's submodules.

pub use aten::native::{
    attention, binary, compare, complex, conv, factory, indexing, join, linalg, loss, norm, normalization, pointwise,
    pool, random, reduce, shape, shape_ops, sort, ternary, unary,
};

pub mod copy;
