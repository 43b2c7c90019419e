//! The Gloo process groups, run for real: each test starts N ranks of this test binary with the
//! `launch` binary (no MPI involved), and each rank runs one of the ignored `rank_*` tests, whose
//! bodies are shared with the MPI tests (`ranks/mod.rs`). Needs the `gloo` feature and Gloo
//! (`.ci/run` installs Debian's `libgloo-dev`):
//! `cargo test -p distributed --features gloo --test gloo`.
#![cfg(feature = "gloo")]

mod ranks;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A port nobody listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Runs the ignored test `rank_test` on `np` ranks under the launcher; whether the job
/// succeeded, its output, and how many ranks reached [`ranks::done`]. Fails the test if the
/// job does not end within `limit`.
fn launch_status(np: usize, rank_test: &str, limit: Duration) -> (bool, String, usize) {
    let dir = std::env::temp_dir().join(format!("torch-gloo-test-{}-{rank_test}-{np}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_launch"))
        .args(["--nproc-per-node", &np.to_string(), "--master-port", &free_port().to_string()])
        .arg(std::env::current_exe().unwrap())
        .args([rank_test, "--exact", "--ignored", "--nocapture", "--test-threads", "1"])
        .env("TORCH_DIST_TEST_RANKS", np.to_string())
        .env("TORCH_DIST_TEST_BACKEND", "gloo")
        .env("TORCH_DIST_TEST_DIR", &dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the launch binary");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{rank_test} on {np} ranks did not end within {limit:?}:\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let finished = (0..np).filter(|r| dir.join(format!("rank{r}")).exists()).count();
    std::fs::remove_dir_all(&dir).ok();
    (out.status.success(), text, finished)
}

/// Runs `rank_test` on `np` ranks and checks that every rank ran it to the end.
fn launch(np: usize, rank_test: &str) {
    let (ok, out, finished) = launch_status(np, rank_test, Duration::from_secs(300));
    assert!(ok, "{rank_test} on {np} ranks failed:\n{out}");
    assert_eq!(finished, np, "expected {np} ranks to finish {rank_test}:\n{out}");
}

// ---- the launches ----------------------------------------------------------------------------

#[test]
fn collectives_on_2_ranks() {
    launch(2, "rank_collectives");
}

#[test]
fn collectives_on_4_ranks() {
    launch(4, "rank_collectives");
}

#[test]
fn point_to_point_async_and_objects_on_4_ranks() {
    launch(4, "rank_point_to_point");
}

#[test]
fn groups_and_errors_on_4_ranks() {
    launch(4, "rank_groups_and_errors");
}

#[test]
fn a_rank_that_does_not_arrive_is_a_timeout() {
    launch(2, "rank_timeout");
}

#[test]
fn ddp_matches_one_process_on_2_ranks() {
    launch(2, "rank_ddp");
}

#[cfg(feature = "cuda")]
#[test]
fn cuda_tensors_are_staged_through_host_memory_on_2_ranks() {
    launch(2, "rank_cuda_staging");
}

// ---- the ranks (ranks/mod.rs) ------------------------------------------------------------------

#[test]
#[ignore = "one rank of collectives_on_N_ranks (started by the launcher)"]
fn rank_collectives() {
    ranks::collectives();
}

#[test]
#[ignore = "one rank of point_to_point_async_and_objects_on_4_ranks (started by the launcher)"]
fn rank_point_to_point() {
    ranks::point_to_point();
}

#[test]
#[ignore = "one rank of groups_and_errors_on_4_ranks (started by the launcher)"]
fn rank_groups_and_errors() {
    ranks::groups_and_errors();
}

#[test]
#[ignore = "one rank of a_rank_that_does_not_arrive_is_a_timeout (started by the launcher)"]
fn rank_timeout() {
    ranks::timeout();
}

#[test]
#[ignore = "one rank of ddp_matches_one_process_on_2_ranks (started by the launcher)"]
fn rank_ddp() {
    ranks::ddp();
}

#[cfg(feature = "cuda")]
#[test]
#[ignore = "one rank of cuda_tensors_are_staged_through_host_memory_on_2_ranks (started by the launcher)"]
fn rank_cuda_staging() {
    ranks::cuda_staging();
}
