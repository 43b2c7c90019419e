//! The default process group's API without a running job: the errors a user sees before
//! `init_process_group`, for an unknown backend, and (without the `mpi` feature) for MPI.

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
    let err = dist::init_process_group("nccl").unwrap_err().to_string();
    assert!(err.contains("not available"), "{err}");
    if !dist::is_mpi_available() {
        let err = dist::init_process_group("mpi").unwrap_err().to_string();
        assert!(err.contains("doesn't have MPI built in"), "{err}");
    }
    assert!(!dist::is_initialized());
    assert_eq!(ReduceOp::BXor.name(), "BXOR");
}
