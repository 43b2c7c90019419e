//! The default process group's API without a running job: the errors a user sees before
//! `init_process_group`, for an unknown backend, and (without the `gloo`, `mpi` or `cuda`
//! feature) for Gloo, MPI and NCCL.

use aten::Tensor;
use distributed::{self as dist, ReduceOp};

#[test]
fn errors_before_and_without_a_backend() {
    assert!(!dist::is_initialized());
    let err = dist::get_rank().unwrap_err().to_string();
    assert!(err.contains("Default process group has not been initialized"), "{err}");
    let t = Tensor::from_vec(vec![1f32], &[1]).unwrap();
    assert!(dist::all_reduce(&t, ReduceOp::Sum).is_err());
    assert_eq!(t.item::<f32>().unwrap(), 1.0);
    assert!(dist::destroy_process_group().is_err());
    let err = dist::init_process_group("carrier-pigeon").unwrap_err().to_string();
    assert!(err.contains("Invalid backend: 'carrier-pigeon'"), "{err}");
    let err = dist::init_process_group("ucc").unwrap_err().to_string();
    assert!(err.contains("the ucc backend is not available"), "{err}");
    let err = dist::init_process_group("gloo").unwrap_err().to_string();
    if dist::is_gloo_available() {
        // Built in: env:// needs torchrun's variables.
        assert!(err.contains("environment variable RANK expected"), "{err}");
    } else {
        assert!(err.contains("doesn't have Gloo built in"), "{err}");
    }
    if !dist::is_nccl_available() {
        let err = dist::init_process_group("nccl").unwrap_err().to_string();
        assert!(err.contains("doesn't have NCCL built in"), "{err}");
    }
    if !dist::is_mpi_available() {
        let err = dist::init_process_group("mpi").unwrap_err().to_string();
        assert!(err.contains("doesn't have MPI built in"), "{err}");
    }
    assert!(!dist::is_initialized());
    assert_eq!(ReduceOp::BXor.name(), "BXOR");
}

/// With the `cuda` feature, NCCL is built in but needs a real GPU: on the emulated device,
/// `init_process_group("nccl")` says so, and leaves no default group behind.
#[cfg(feature = "cuda")]
#[test]
fn nccl_needs_a_real_gpu() {
    use std::sync::Arc;
    assert!(dist::is_nccl_available());
    kernels_cuda::driver::select(kernels_cuda::driver::DriverKind::Emulator).unwrap();
    let options = dist::InitOptions::new("nccl").store(Arc::new(dist::HashStore::new())).rank(0).world_size(1);
    let err = dist::init_process_group_with(options).unwrap_err().to_string();
    assert!(err.contains("the NCCL backend needs a real CUDA device; the emulator driver has no NCCL"), "{err}");
    // Without a store, rank and world size the rendezvous is env://, which needs its variables.
    let err = dist::init_process_group_with(dist::InitOptions::new("nccl").store(Arc::new(dist::HashStore::new())))
        .unwrap_err()
        .to_string();
    assert!(err.contains("rank must be given with an explicit store"), "{err}");
    assert!(!dist::is_initialized());
}
