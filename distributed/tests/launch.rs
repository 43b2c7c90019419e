//! The `launch` binary: the environment every rank gets, and the failure path (one rank exits
//! with an error: the others are stopped, the launcher exits non-zero and shows the message).

use std::process::Command;
use std::time::{Duration, Instant};

fn launch() -> Command {
    Command::new(env!("CARGO_BIN_EXE_launch"))
}

#[test]
fn every_rank_gets_its_environment() {
    let out = launch()
        .args(["--nproc-per-node", "3", "--master-port", "29612", "sh", "-c"])
        .arg("echo \"$RANK/$WORLD_SIZE/$LOCAL_RANK/$LOCAL_WORLD_SIZE $MASTER_ADDR:$MASTER_PORT\"")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    for r in 0..3 {
        assert!(stdout.contains(&format!("[rank {r}] {r}/3/{r}/3 127.0.0.1:29612")), "{stdout}");
    }
    // Two nodes of two: this node's ranks are 2 and 3.
    let out = launch()
        .args(["--nnodes=2", "--node-rank=1", "--nproc-per-node=2", "sh", "-c", "echo $RANK/$WORLD_SIZE"])
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("[rank 2] 2/4") && stdout.contains("[rank 3] 3/4"), "{stdout}");
}

#[test]
fn one_failing_rank_stops_the_others_and_the_launcher_exits_non_zero() {
    let start = Instant::now();
    let out = launch()
        .args(["--nproc-per-node", "3", "sh", "-c"])
        .arg("if [ \"$RANK\" = 1 ]; then sleep 0.2; echo 'boom: rank one gives up' >&2; exit 3; fi; sleep 60")
        .output()
        .unwrap();
    assert!(start.elapsed() < Duration::from_secs(30), "the other ranks were stopped, not waited for");
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("[rank 1] boom: rank one gives up"), "{stderr}");
    assert!(stderr.contains("launch: rank 1 failed with exit code 3"), "{stderr}");
    assert!(stderr.contains("  boom: rank one gives up"), "the failure report repeats the message: {stderr}");
}

#[test]
fn bad_usage_is_exit_code_2_with_the_usage() {
    for args in [&[][..], &["--nproc-per-node", "0", "true"][..], &["--bogus", "true"][..]] {
        let out = launch().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8(out.stderr).unwrap().contains("usage: launch"), "{args:?}");
    }
    let out = launch().args(["/nonexistent/program"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8(out.stderr).unwrap().contains("cannot start /nonexistent/program"));
}
