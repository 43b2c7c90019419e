//! CUDA backend: `.cu` sources compiled by nvcc in `build.rs` (feature `cuda`), registered on
//! the `CUDA` dispatch key. Filled by the CUDA issue; without the `cuda` feature nothing here
//! needs nvcc.
//!
//! The `CUDA:` kernels named in `aten/native_functions.yaml` are registered by this crate, from
//! `generated/registrations.rs` (written by `cargo xtask codegen`, see `codegen::gen::BACKEND_CRATES`):
//! aten cannot name kernels that live here.
#![warn(missing_docs)]

pub mod generated;

/// Registers this crate's kernels with the dispatcher (run once, at its first use).
fn register_kernels_cuda(d: &aten::Dispatcher) {
    generated::registrations::register_cuda(d);
}

inventory::submit! { aten::dispatcher::Registrar(register_kernels_cuda) }
