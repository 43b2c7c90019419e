//! CUDA backend: `.cu` sources compiled by nvcc in `build.rs` (feature `cuda`), registered on
//! the `CUDA` dispatch key. Filled by the CUDA issue; without the `cuda` feature nothing here
//! needs nvcc.
#![warn(missing_docs)]
