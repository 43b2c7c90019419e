//! The MPI process groups, run for real: each test starts `mpirun -np N` on this test binary,
//! whose ranks run one of the `rank_*` tests (ignored in a normal run: they need mpirun), the
//! bodies in `ranks/mod.rs` (shared with the Gloo tests).
//! Needs the `mpi` feature and Open MPI (`.ci/run` installs `openmpi-bin libopenmpi-dev`):
//! `cargo test --workspace --features distributed/mpi --test mpi`.
#![cfg(feature = "mpi")]

mod ranks;

use std::process::{Command, Stdio};
use std::time::Duration;

use aten::Tensor;
use distributed::{self as dist, ReduceOp};

/// Runs the ignored test `rank_test` on `np` ranks under mpirun and checks that every rank
/// ran it to the end ([`done`]).
fn mpirun(np: usize, rank_test: &str) {
    let dir = std::env::temp_dir().join(format!("torch-mpi-test-{}-{rank_test}-{np}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (ok, out) = mpirun_status(np, rank_test, &dir, Duration::from_secs(300));
    let finished = (0..np).filter(|r| dir.join(format!("rank{r}")).exists()).count();
    std::fs::remove_dir_all(&dir).ok();
    assert!(ok, "mpirun -np {np} {rank_test} failed:\n{out}");
    assert_eq!(finished, np, "expected {np} ranks to finish {rank_test}:\n{out}");
}

/// Runs `rank_test` on `np` ranks; whether mpirun succeeded, and its output. Fails the test if
/// mpirun does not end within `limit`.
fn mpirun_status(np: usize, rank_test: &str, dir: &std::path::Path, limit: Duration) -> (bool, String) {
    let exe = std::env::current_exe().unwrap();
    let child = Command::new("mpirun")
        .args(["-np", &np.to_string(), "--oversubscribe", "--bind-to", "none"])
        .arg(exe)
        .args([rank_test, "--exact", "--ignored", "--nocapture", "--test-threads", "1"])
        // Containers run as root; Open MPI refuses that unless told.
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        // Shared memory without cross-memory attach, which containers often forbid.
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
        .env("TORCH_DIST_TEST_RANKS", np.to_string())
        .env("TORCH_DIST_TEST_BACKEND", "mpi")
        .env("TORCH_DIST_TEST_DIR", dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mpirun is needed for the MPI tests (Debian: openmpi-bin)");
    ranks::finish(child, &format!("mpirun {rank_test}"), limit)
}

// ---- the mpirun launches -------------------------------------------------------------------

#[test]
fn collectives_on_2_ranks() {
    mpirun(2, "rank_collectives");
}

#[test]
fn collectives_on_4_ranks() {
    mpirun(4, "rank_collectives");
}

#[test]
fn point_to_point_async_and_objects_on_4_ranks() {
    mpirun(4, "rank_point_to_point");
}

#[test]
fn groups_and_errors_on_4_ranks() {
    mpirun(4, "rank_groups_and_errors");
}

#[test]
fn a_rank_that_does_not_arrive_is_a_timeout() {
    mpirun(2, "rank_timeout");
}

#[test]
fn a_rank_that_dies_ends_the_job_with_an_error() {
    let dir = std::env::temp_dir().join(format!("torch-mpi-test-{}-rank_dies", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (ok, out) = mpirun_status(2, "rank_dies", &dir, Duration::from_secs(120));
    std::fs::remove_dir_all(&dir).ok();
    assert!(!ok, "mpirun succeeded although rank 1 exited with status 3:\n{out}");
}

// ---- the ranks (tests/ranks/mod.rs) --------------------------------------------------------

#[test]
#[ignore = "one rank of collectives_on_N_ranks (started by mpirun)"]
fn rank_collectives() {
    ranks::collectives();
}

#[test]
#[ignore = "one rank of point_to_point_async_and_objects_on_4_ranks (started by mpirun)"]
fn rank_point_to_point() {
    ranks::point_to_point();
}

#[test]
#[ignore = "one rank of groups_and_errors_on_4_ranks (started by mpirun)"]
fn rank_groups_and_errors() {
    ranks::groups_and_errors();
}

#[test]
#[ignore = "one rank of a_rank_that_does_not_arrive_is_a_timeout (started by mpirun)"]
fn rank_timeout() {
    ranks::timeout();
}

#[test]
#[ignore = "one rank of a_rank_that_dies_ends_the_job_with_an_error (started by mpirun)"]
fn rank_dies() {
    let (rank, _) = ranks::init();
    if rank == 1 {
        std::process::exit(3);
    }
    let t = Tensor::from_vec(vec![1f32; 3], &[3]).unwrap();
    // Never completes: mpirun ends the job when rank 1 exits.
    let _ = dist::all_reduce(&t, ReduceOp::Sum);
}

#[test]
fn ddp_matches_one_process_on_2_ranks() {
    mpirun(2, "rank_ddp");
}

#[test]
fn ddp_comm_hooks_on_2_ranks() {
    mpirun(2, "rank_comm_hooks");
}

#[test]
fn ddp_powersgd_matches_pytorch_on_2_ranks() {
    mpirun(2, "rank_powersgd");
}

#[test]
#[ignore = "one rank of ddp_matches_one_process_on_2_ranks (started by mpirun)"]
fn rank_ddp() {
    ranks::ddp();
}

#[test]
#[ignore = "one rank of ddp_comm_hooks_on_2_ranks (started by mpirun)"]
fn rank_comm_hooks() {
    ranks::comm_hooks();
}

#[test]
#[ignore = "one rank of ddp_powersgd_matches_pytorch_on_2_ranks (started by mpirun)"]
fn rank_powersgd() {
    ranks::powersgd();
}

// ---- CUDA tensors through MPI ---------------------------------------------------------------

#[cfg(feature = "cuda")]
#[test]
fn cuda_tensors_are_staged_through_host_memory_on_2_ranks() {
    mpirun(2, "rank_cuda_staging");
}

#[cfg(feature = "cuda")]
#[test]
#[ignore = "one rank of cuda_tensors_are_staged_through_host_memory_on_2_ranks (started by mpirun)"]
fn rank_cuda_staging() {
    ranks::cuda_staging();
}
