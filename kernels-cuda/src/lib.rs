//! CUDA backend: `.cu` kernels (in `kernels/`) built by `build.rs` for the GPU with nvcc and for
//! the emulated device with the host compiler, the driver seam with its two implementations, and
//! the `CUDA` kernel registrations. Everything but the registrations needs the `cuda` feature;
//! without it nothing here needs nvcc or the CUDA headers.
//!
//! The `CUDA:` kernels named in `aten/native_functions.yaml` are registered by this crate, from
//! `generated/registrations.rs` (written by `cargo xtask codegen`, see `codegen::gen::BACKEND_CRATES`):
//! aten cannot name kernels that live here.
#![warn(missing_docs)]

pub mod generated;
pub mod native;

#[cfg(feature = "cuda")]
mod blas;
#[cfg(feature = "cuda")]
mod conv;
#[cfg(feature = "cuda")]
mod copies;
#[cfg(feature = "cuda")]
mod index;
#[cfg(feature = "cuda")]
mod loops;
#[cfg(feature = "cuda")]
mod optim;
#[cfg(feature = "cuda")]
mod pool;
#[cfg(feature = "cuda")]
mod sort;
#[cfg(feature = "cuda")]
mod sparse;

#[cfg(feature = "cuda")]
pub mod driver;
#[cfg(feature = "cuda")]
pub mod emu;
#[cfg(feature = "cuda")]
pub mod geometry;
#[cfg(feature = "cuda")]
mod real;
#[cfg(feature = "cuda")]
pub mod runtime;

/// The kernels' argument structs, mirrored from `kernels/args.h` by bindgen.
#[cfg(feature = "cuda")]
#[allow(missing_docs, non_camel_case_types, non_upper_case_globals, clippy::all)]
pub mod args {
    include!(concat!(env!("OUT_DIR"), "/args.rs"));
}

/// What nvcc built into the crate: the fatbins and the `ptxas -v` resource table.
#[cfg(feature = "cuda")]
pub mod device_code {
    /// Resources of one kernel on one architecture, from `ptxas -v`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct KernelResources {
        /// The kernel's name.
        pub kernel: &'static str,
        /// The SASS architecture (80 for sm_80).
        pub arch: u32,
        /// Registers per thread.
        pub registers: u32,
        /// Static shared memory per block, in bytes.
        pub shared_bytes: u32,
        /// Stack frame per thread, in bytes.
        pub stack_bytes: u32,
        /// Bytes of register spill stores (the build fails when not 0).
        pub spill_stores: u32,
        /// Bytes of register spill loads (the build fails when not 0).
        pub spill_loads: u32,
    }

    include!(concat!(env!("OUT_DIR"), "/device.rs"));
}

/// Registers this crate's kernels with the dispatcher (run once, at its first use).
fn register_kernels_cuda(d: &aten::Dispatcher) {
    #[cfg(feature = "cuda")]
    {
        runtime::init();
        loops::register();
    }
    generated::registrations::register_cuda(d);
}

inventory::submit! { aten::dispatcher::Registrar(register_kernels_cuda) }
