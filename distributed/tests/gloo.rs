//! The Gloo process groups, run for real: each test starts N ranks of this test binary with the
//! `launch` binary (no MPI involved), and each rank runs one of the ignored `rank_*` tests, whose
//! bodies are shared with the MPI tests (`ranks/mod.rs`). Needs the `gloo` feature and Gloo
//! (`.ci/run` installs Debian's `libgloo-dev`):
//! `cargo test -p distributed --features gloo --test gloo`.
#![cfg(feature = "gloo")]

mod ranks;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use aten::Tensor;
use distributed::{self as dist, ReduceOp};

/// A port nobody listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Starts the launcher (with `flags`) on `np` ranks of the ignored test `rank_test`, with `dir`
/// for the ranks' files.
fn launcher(np: usize, flags: &[&str], rank_test: &str, dir: &std::path::Path) -> Child {
    launcher_env(np, flags, rank_test, dir, &[])
}

/// [`launcher`] with more environment variables for the ranks.
fn launcher_env(np: usize, flags: &[&str], rank_test: &str, dir: &std::path::Path, env: &[(&str, &str)]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_launch"))
        .envs(env.iter().copied())
        .args(["--nproc-per-node", &np.to_string(), "--master-port", &free_port().to_string()])
        .args(flags)
        .arg(std::env::current_exe().unwrap())
        .args([rank_test, "--exact", "--ignored", "--nocapture", "--test-threads", "1"])
        .env("TORCH_DIST_TEST_RANKS", np.to_string())
        .env("TORCH_DIST_TEST_BACKEND", "gloo")
        .env("TORCH_DIST_TEST_DIR", dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the launch binary")
}

/// Runs the ignored test `rank_test` on `np` ranks under the launcher; whether the job
/// succeeded, its output, and how many ranks reached [`ranks::done`]. Fails the test if the
/// job does not end within `limit`.
fn launch_status(np: usize, rank_test: &str, limit: Duration) -> (bool, String, usize) {
    let dir = std::env::temp_dir().join(format!("torch-gloo-test-{}-{rank_test}-{np}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let child = launcher(np, &[], rank_test, &dir);
    let (ok, text) = ranks::finish(child, &format!("{rank_test} on {np} ranks"), limit);
    let finished = (0..np).filter(|r| dir.join(format!("rank{r}")).exists()).count();
    std::fs::remove_dir_all(&dir).ok();
    (ok, text, finished)
}

/// Runs `rank_test` on `np` ranks and checks that every rank ran it to the end.
fn launch(np: usize, rank_test: &str) {
    let (ok, out, finished) = launch_status(np, rank_test, Duration::from_secs(120));
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

#[test]
fn ddp_comm_hooks_on_2_ranks() {
    launch(2, "rank_comm_hooks");
}

#[test]
fn ddp_powersgd_matches_pytorch_on_2_ranks() {
    launch(2, "rank_powersgd");
}

/// Runs `rank_test` on `np` ranks with `TORCH_DIST_TEST_CKPT` naming `ckpt`; the job's output.
fn launch_with_checkpoint(np: usize, rank_test: &str, ckpt: &std::path::Path) -> String {
    let dir = std::env::temp_dir().join(format!("torch-gloo-test-{}-{rank_test}-{np}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let child = launcher_env(np, &[], rank_test, &dir, &[("TORCH_DIST_TEST_CKPT", ckpt.to_str().unwrap())]);
    let (ok, out) = ranks::finish(child, &format!("{rank_test} on {np} ranks"), Duration::from_secs(300));
    let finished = (0..np).filter(|r| dir.join(format!("rank{r}")).exists()).count();
    std::fs::remove_dir_all(&dir).ok();
    assert!(ok && finished == np, "{rank_test} on {np} ranks failed ({finished} finished):\n{out}");
    out
}

/// FSDP on 4 ranks matches one process under a memory cap the model exceeds (each rank prints
/// its peak); its checkpoint loads on 2 ranks with the same outputs, and consolidates into an
/// ordinary state dict here, in a process with no group.
#[test]
fn fsdp_trains_under_a_memory_cap_and_its_checkpoint_reshards_from_4_to_2_ranks() {
    let ckpt = std::env::temp_dir().join(format!("torch-fsdp-ckpt-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&ckpt);
    let out = launch_with_checkpoint(4, "rank_fsdp", &ckpt);
    let peaks: Vec<&str> = out.lines().filter(|l| l.contains("FULL_SHARD peak")).collect();
    assert_eq!(peaks.len(), 4, "{out}");
    for p in peaks {
        println!("{p}");
    }
    let files: Vec<String> = {
        let mut v: Vec<String> =
            std::fs::read_dir(&ckpt).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    };
    assert_eq!(
        files,
        [".metadata", "__0_0.safetensors", "__1_0.safetensors", "__2_0.safetensors", "__3_0.safetensors"]
    );
    launch_with_checkpoint(2, "rank_reshard", &ckpt);

    use nn::{Forward, Module};
    let (_, want) = ranks::sharded::reference();
    let state = dist::checkpoint::consolidate(&ckpt).unwrap();
    let mut plain = ranks::sharded::make(ranks::sharded::W).unwrap();
    plain.load_state_dict(&state, true).unwrap();
    let probe = ranks::sharded::probe();
    ranks::sharded::assert_close("consolidated", &plain.call(&probe).unwrap(), &want.call(&probe).unwrap());

    // A checkpoint whose metadata declares another format version, and one missing a rank's file.
    let meta = std::fs::read_to_string(ckpt.join(".metadata")).unwrap();
    std::fs::write(ckpt.join(".metadata"), meta.replacen("\"version\": 1", "\"version\": 7", 1)).unwrap();
    let err = dist::checkpoint::consolidate(&ckpt).unwrap_err().to_string();
    assert!(err.contains("format version 7"), "{err}");
    std::fs::write(ckpt.join(".metadata"), meta).unwrap();
    std::fs::remove_file(ckpt.join("__2_0.safetensors")).unwrap();
    let err = dist::checkpoint::consolidate(&ckpt).unwrap_err().to_string();
    assert!(err.contains("__2_0.safetensors"), "{err}");
    std::fs::remove_dir_all(&ckpt).ok();
}

#[test]
fn zero_redundancy_optimizer_matches_one_process_on_2_ranks() {
    launch(2, "rank_zero");
}

#[cfg(feature = "cuda")]
#[test]
fn cuda_tensors_are_staged_through_host_memory_on_2_ranks() {
    launch(2, "rank_cuda_staging");
}

/// Note [FSDP CPU offload]: 4 ranks on Gloo, each computing on its emulated CUDA device under a
/// cap of a quarter of the model's bytes set on the device's caching allocator; the shards stay
/// on the CPU and the losses match one process within 1e-5 for 20 steps. Each rank reports its
/// device peak.
#[cfg(feature = "cuda")]
#[test]
fn fsdp_with_cpu_offload_trains_a_model_4x_the_device_cap_on_4_ranks() {
    let (ok, out, finished) = launch_status(4, "rank_fsdp_offload", Duration::from_secs(240));
    assert!(ok && finished == 4, "{out}");
    let peaks: Vec<&str> = out.lines().filter(|l| l.contains("CPU offload device peak")).collect();
    assert_eq!(peaks.len(), 4, "{out}");
    for p in peaks {
        println!("{p}");
    }
}

/// Note [Noticing a dead rank]: one of 4 ranks is killed (SIGKILL) in the middle of an
/// all-reduce loop, with no launcher to stop the others: each of them gets an error naming
/// rank 2 and exits cleanly within 10 s.
#[test]
fn a_killed_rank_is_named_and_the_others_exit_within_10_s() {
    let dir = std::env::temp_dir().join(format!("torch-gloo-test-{}-dead-peer", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let port = free_port().to_string();
    let mut ranks: Vec<Child> = (0..4)
        .map(|r| {
            Command::new(std::env::current_exe().unwrap())
                .args(["rank_dead_peer", "--exact", "--ignored", "--nocapture", "--test-threads", "1"])
                .env("RANK", r.to_string())
                .env("WORLD_SIZE", "4")
                .env("MASTER_ADDR", "127.0.0.1")
                .env("MASTER_PORT", &port)
                .env("TORCH_DIST_TEST_RANKS", "4")
                .env("TORCH_DIST_TEST_BACKEND", "gloo")
                .env("TORCH_DIST_TEST_DIR", &dir)
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(dir.join(format!("stderr{r}"))).unwrap())
                .spawn()
                .unwrap()
        })
        .collect();
    let stderr = |r: usize| std::fs::read_to_string(dir.join(format!("stderr{r}"))).unwrap_or_default();
    let fail = |ranks: &mut Vec<Child>, why: String| -> ! {
        for c in ranks.iter_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
        panic!("{why}\n{}", (0..4).map(|r| format!("rank {r}:\n{}", stderr(r))).collect::<String>());
    };
    // Every rank is in the loop.
    let start = Instant::now();
    while !(0..4).all(|r| dir.join(format!("ready{r}")).exists()) {
        if start.elapsed() > Duration::from_secs(120) {
            fail(&mut ranks, "the ranks did not start their loops within 120 s".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    ranks[2].kill().unwrap();
    ranks[2].wait().unwrap();
    let killed = Instant::now();
    for r in [0, 1, 3] {
        loop {
            if let Some(status) = ranks[r].try_wait().unwrap() {
                if !status.success() {
                    fail(&mut ranks, format!("rank {r} exited with {status}"));
                }
                break;
            }
            if killed.elapsed() > Duration::from_secs(10) {
                fail(&mut ranks, format!("rank {r} did not exit within 10 s of rank 2's death"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let waited = killed.elapsed();
    for r in [0, 1, 3] {
        let err = std::fs::read_to_string(dir.join(format!("error{r}"))).unwrap_or_default();
        if !err.contains("rank 2 has died") {
            fail(&mut ranks, format!("rank {r}'s error does not name rank 2: {err:?}"));
        }
    }
    eprintln!("the three other ranks exited {waited:?} after rank 2 was killed");
    std::fs::remove_dir_all(&dir).ok();
}

/// The acceptance run of `--max-restarts`: one of 4 ranks is killed (SIGKILL) in the middle of
/// an all-reduce loop that rank 0 checkpoints after every step; the others notice (Note
/// [Noticing a dead rank]) and fail, the launcher restarts every rank, and the job finishes
/// from the checkpoint with the sum of one uninterrupted run.
#[test]
fn max_restarts_resumes_a_killed_job_from_its_checkpoint() {
    let dir = std::env::temp_dir().join(format!("torch-gloo-test-{}-restart", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let start = Instant::now();
    let child = launcher(4, &["--max-restarts", "1"], "rank_checkpointed_loop", &dir);
    let (ok, out) = ranks::finish(child, "the checkpointed loop on 4 ranks", Duration::from_secs(120));
    std::fs::remove_dir_all(&dir).ok();
    assert!(ok, "{out}");
    assert!(out.contains("launch: rank 2 failed with signal 9"), "{out}");
    assert!(out.contains("restarting the workers (restart 1 of 1)"), "{out}");
    // Steps 0..10 of sum over ranks of (rank + 1 + step): 10 + 4 step each, 280 in all; the
    // second attempt starts at step 5, where the first one was killed (at 4 if the launcher
    // stopped rank 0 between step 4's all-reduce and its checkpoint, a window of microseconds).
    // (The test harness's "test rank_checkpointed_loop ... " may start a rank's line.)
    let said = |r: usize, what: &str| out.lines().any(|l| l.starts_with(&format!("[rank {r}] ")) && l.contains(what));
    assert!(said(0, "resumed at step 5 of attempt 1") || said(0, "resumed at step 4 of attempt 1"), "{out}");
    for r in 0..4 {
        assert!(said(r, "finished: total 280 on attempt 1"), "{out}");
    }
    eprintln!("killed, restarted and finished in {:?}", start.elapsed());
}

/// With the `gloo` feature, a world of one process through a store: collectives work, and the
/// default backend for CPU tensors is Gloo.
#[test]
fn a_gloo_world_of_one() {
    use std::sync::Arc;
    assert_eq!(dist::default_backend(c10::DeviceType::Cpu), "gloo");
    assert_eq!(dist::default_backend(c10::DeviceType::Cuda), "nccl");
    let store = Arc::new(dist::HashStore::new());
    dist::init_process_group_with(dist::InitOptions::new("gloo").store(store).rank(0).world_size(1)).unwrap();
    assert_eq!(dist::get_backend().unwrap(), "gloo");
    // Note [Gloo's loop thread]: the device's loop thread runs under SCHED_BATCH (3), and the
    // thread that created it is back under SCHED_OTHER (0).
    let policy = |stat: &str| -> u32 {
        let (_, rest) = stat.rsplit_once(')').unwrap();
        rest.split_whitespace().nth(38).unwrap().parse().unwrap()
    };
    assert_eq!(policy(&std::fs::read_to_string("/proc/thread-self/stat").unwrap()), 0);
    let batch = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.unwrap().path().join("stat")).ok())
        .filter(|stat| policy(stat) == 3)
        .count();
    assert!(batch >= 1, "no thread of this process runs under SCHED_BATCH");
    let t = Tensor::from_vec(vec![1.5f32, -2.0], &[2]).unwrap();
    dist::all_reduce(&t, ReduceOp::Sum).unwrap();
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![1.5, -2.0]);
    dist::barrier().unwrap();
    dist::destroy_process_group().unwrap();

    // A backend per device type, as PyTorch's `"cpu:gloo,cuda:gloo"`: one Gloo instance serves
    // both (CUDA tensors are staged through the host); sub-groups keep the mapping.
    let store = Arc::new(dist::HashStore::new());
    dist::init_process_group_with(dist::InitOptions::new("CPU:gloo, cuda:gloo").store(store).rank(0).world_size(1))
        .unwrap();
    assert_eq!(dist::get_backend().unwrap(), "cpu:gloo,cuda:gloo");
    let t = Tensor::from_vec(vec![3.0f64, 4.0], &[2]).unwrap();
    dist::all_reduce(&t, ReduceOp::Max).unwrap();
    assert_eq!(t.to_vec::<f64>().unwrap(), vec![3.0, 4.0]);
    let sub = dist::new_group(&[0]).unwrap();
    assert_eq!(sub.backend_name(), Some("cpu:gloo,cuda:gloo"));
    sub.broadcast(&t, 0).unwrap().wait().unwrap();
    dist::destroy_process_group().unwrap();

    // Malformed strings are errors before anything is created.
    for (spec, want) in [
        ("cpu:gloo;cuda:gloo", "Invalid backend: 'gloo;cuda:gloo'"),
        ("cpu:gloo,cuda", "The custom backend string argument is invalid"),
        ("cpu:gloo,cpu:gloo", "The custom backend string argument is invalid"),
        ("tpu:gloo", "Invalid device type 'tpu'"),
        ("cpu:nccl,cuda:nccl", "the nccl backend does not take CPU tensors"),
        ("cpu:gloo,cuda:fancy", "Invalid backend: 'fancy'"),
    ] {
        let store = Arc::new(dist::HashStore::new());
        let err = dist::init_process_group_with(dist::InitOptions::new(spec).store(store).rank(0).world_size(1))
            .unwrap_err()
            .to_string();
        assert!(err.contains(want), "{spec}: {err}");
        assert!(!dist::is_initialized());
    }
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

#[test]
#[ignore = "one rank of fsdp_trains_under_a_memory_cap_and_its_checkpoint_reshards_from_4_to_2_ranks"]
fn rank_fsdp() {
    ranks::sharded::fsdp();
}

#[test]
#[ignore = "one rank of fsdp_trains_under_a_memory_cap_and_its_checkpoint_reshards_from_4_to_2_ranks"]
fn rank_reshard() {
    ranks::sharded::reshard();
}

#[test]
#[ignore = "one rank of zero_redundancy_optimizer_matches_one_process_on_2_ranks (started by the launcher)"]
fn rank_zero() {
    ranks::sharded::zero();
}

#[test]
#[ignore = "one rank of ddp_comm_hooks_on_2_ranks (started by the launcher)"]
fn rank_comm_hooks() {
    ranks::comm_hooks();
}

#[test]
#[ignore = "one rank of ddp_powersgd_matches_pytorch_on_2_ranks (started by the launcher)"]
fn rank_powersgd() {
    ranks::powersgd();
}

#[cfg(feature = "cuda")]
#[test]
#[ignore = "one rank of cuda_tensors_are_staged_through_host_memory_on_2_ranks (started by the launcher)"]
fn rank_cuda_staging() {
    ranks::cuda_staging();
}

#[cfg(feature = "cuda")]
#[test]
#[ignore = "one rank of fsdp_with_cpu_offload_trains_a_model_4x_the_device_cap_on_4_ranks (started by the launcher)"]
fn rank_fsdp_offload() {
    ranks::sharded::fsdp_offload();
}

#[test]
#[ignore = "one rank of a_killed_rank_is_named_and_the_others_exit_within_10_s (started by it)"]
fn rank_dead_peer() {
    let (rank, _) = ranks::init();
    let dir = std::path::PathBuf::from(std::env::var("TORCH_DIST_TEST_DIR").unwrap());
    let t = Tensor::from_vec(vec![1f32; 1 << 16], &[1 << 16]).unwrap();
    let mut done = 0u64;
    let err = loop {
        match dist::all_reduce(&t, ReduceOp::Max) {
            Ok(()) => {
                done += 1;
                if done == 20 {
                    std::fs::write(dir.join(format!("ready{rank}")), b"").unwrap();
                }
            }
            Err(e) => break e,
        }
    };
    std::fs::write(dir.join(format!("error{rank}")), err.to_string()).unwrap();
    let _ = dist::destroy_process_group();
}

#[test]
#[ignore = "one rank of max_restarts_resumes_a_killed_job_from_its_checkpoint (started by the launcher)"]
fn rank_checkpointed_loop() {
    let attempt: usize = std::env::var("TORCHELASTIC_RESTART_COUNT").unwrap().parse().unwrap();
    let dir = std::path::PathBuf::from(std::env::var("TORCH_DIST_TEST_DIR").unwrap());
    let (rank, _) = ranks::init();
    // The checkpoint: the next step and the running total, written by rank 0 after each step
    // (through a rename, so a reader never sees half of it).
    let checkpoint = dir.join("checkpoint");
    let (mut step, mut total) = match std::fs::read_to_string(&checkpoint) {
        Ok(s) => {
            let (a, b) = s.split_once(' ').unwrap();
            (a.parse::<usize>().unwrap(), b.parse::<f64>().unwrap())
        }
        Err(_) => (0, 0.0),
    };
    if rank == 0 && attempt > 0 {
        println!("resumed at step {step} of attempt {attempt}");
    }
    while step < 10 {
        if attempt == 0 && rank == 2 && step == 5 {
            // SAFETY: plain FFI call killing this process.
            unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
        }
        let t = Tensor::from_vec(vec![(rank + 1 + step) as f64], &[1]).unwrap();
        dist::all_reduce(&t, ReduceOp::Sum).unwrap();
        total += t.to_vec::<f64>().unwrap()[0];
        step += 1;
        if rank == 0 {
            let tmp = dir.join("checkpoint.tmp");
            std::fs::write(&tmp, format!("{step} {total}")).unwrap();
            std::fs::rename(&tmp, &checkpoint).unwrap();
        }
    }
    println!("finished: total {total} on attempt {attempt}");
    dist::destroy_process_group().unwrap();
}
