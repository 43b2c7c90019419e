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

/// A port nobody listens on now.
fn free_port() -> String {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string()
}

/// Runs a launcher to its end (at most `limit`): its exit code, stdout and stderr.
fn run(cmd: &mut Command, limit: Duration) -> (Option<i32>, String, String) {
    use std::process::Stdio;
    let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    let out = match rx.recv_timeout(limit) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            // SAFETY: signals the launcher this test started, which has not been waited for.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            let out = rx.recv().unwrap().unwrap();
            panic!(
                "the launcher did not end within {limit:?}:\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    };
    (out.status.code(), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

/// Two ranks of `sh -c script` with `--max-restarts max`, run to their end.
fn with_restarts(max: usize, script: &str) -> (Option<i32>, String, String) {
    let max = max.to_string();
    let args = ["--nproc-per-node", "2", "--max-restarts", &max, "--master-port", &free_port(), "sh", "-c", script];
    run(launch().args(args), Duration::from_secs(60))
}

#[test]
fn max_restarts_restarts_every_rank_after_a_failure() {
    // Attempt 0: rank 1 fails while rank 0 is still running; attempt 1 succeeds.
    let script = "echo \"attempt $TORCHELASTIC_RESTART_COUNT of $TORCHELASTIC_MAX_RESTARTS\"; \
                  if [ \"$TORCHELASTIC_RESTART_COUNT\" = 0 ]; then \
                  if [ \"$RANK\" = 1 ]; then sleep 0.2; echo 'rank one gives up' >&2; exit 3; fi; exec sleep 60; fi; \
                  echo \"ok $RANK/$WORLD_SIZE\"";
    let start = Instant::now();
    let (code, stdout, stderr) = with_restarts(2, script);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(start.elapsed() < Duration::from_secs(30), "rank 0 was stopped, not waited for");
    for r in 0..2 {
        assert!(stdout.contains(&format!("[rank {r}] attempt 0 of 2")), "{stdout}");
        assert!(stdout.contains(&format!("[rank {r}] attempt 1 of 2")), "{stdout}");
        assert!(stdout.contains(&format!("[rank {r}] ok {r}/2")), "{stdout}");
    }
    assert!(!stdout.contains("attempt 2"), "one restart is enough: {stdout}");
    assert!(stderr.contains("launch: rank 1 failed with exit code 3; stopped the other ranks"), "{stderr}");
    assert!(stderr.contains("  rank one gives up"), "{stderr}");
    assert!(stderr.contains("restarting the workers (restart 1 of 2)"), "{stderr}");
}

#[test]
fn past_max_restarts_the_launcher_exits_with_the_ranks_code() {
    let script =
        "echo \"attempt $TORCHELASTIC_RESTART_COUNT\"; if [ \"$RANK\" = 0 ]; then sleep 0.3; exit 4; fi; exec sleep 60";
    let (code, stdout, stderr) = with_restarts(1, script);
    assert_eq!(code, Some(4), "{stdout}{stderr}");
    assert!(stdout.contains("[rank 1] attempt 1") && !stdout.contains("attempt 2"), "{stdout}");
    assert_eq!(
        stderr.matches("launch: rank 0 failed with exit code 4; stopped the other ranks").count(),
        2,
        "{stderr}"
    );
    assert!(stderr.contains("no restarts are left (--max-restarts 1)"), "{stderr}");
}

/// `--rdzv-backend c10d` launchers (`extra` after the common flags), started together.
fn c10d_nodes(endpoint: &str, extra: &[&str], script: &str, nodes: usize) -> Vec<(Option<i32>, String, String)> {
    let handles: Vec<_> = (0..nodes)
        .map(|_| {
            let mut cmd = launch();
            cmd.args(["--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint, "--rdzv-id", "job7"])
                .args(extra)
                .args(["sh", "-c", script]);
            std::thread::spawn(move || run(&mut cmd, Duration::from_secs(90)))
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

#[test]
fn c10d_rendezvous_assigns_node_ranks_and_one_master() {
    let endpoint = format!("127.0.0.1:{}", free_port());
    let script =
        "echo \"$RANK/$WORLD_SIZE node $GROUP_RANK/$GROUP_WORLD_SIZE $MASTER_ADDR:$MASTER_PORT $TORCHELASTIC_RUN_ID\"";
    let runs = c10d_nodes(&endpoint, &["--nnodes", "2", "--nproc-per-node", "2"], script, 2);
    let mut lines = Vec::new();
    for (code, stdout, stderr) in &runs {
        assert_eq!(*code, Some(0), "{stdout}{stderr}");
        let mine: Vec<&str> = stdout.lines().filter(|l| l.contains(" node ")).collect();
        assert_eq!(mine.len(), 2, "{stdout}");
        // Both ranks of one launcher are on the same node, whose ranks are consecutive.
        let node: Vec<&str> =
            mine.iter().map(|l| l.split(" node ").nth(1).unwrap().split('/').next().unwrap()).collect();
        assert_eq!(node[0], node[1], "{stdout}");
        lines.extend(mine.into_iter().map(String::from));
    }
    for r in 0..4 {
        let line = lines.iter().find(|l| l.starts_with(&format!("[rank {r}] {r}/4 node {}/2", r / 2)));
        assert!(line.is_some(), "rank {r}: {lines:?}");
    }
    let masters: std::collections::HashSet<&str> = lines.iter().map(|l| l.split(' ').nth(5).unwrap()).collect();
    assert_eq!(masters.len(), 1, "one master for every rank: {lines:?}");
    assert!(masters.iter().next().unwrap().starts_with("127.0.0.1:"), "{lines:?}");
    assert!(lines.iter().all(|l| l.ends_with(" job7")), "{lines:?}");
}

#[test]
fn c10d_restarts_every_node_when_a_rank_on_one_fails() {
    let endpoint = format!("127.0.0.1:{}", free_port());
    let script = "if [ \"$TORCHELASTIC_RESTART_COUNT\" = 0 ]; then \
                  if [ \"$RANK\" = 3 ]; then sleep 0.5; exit 3; fi; exec sleep 60; fi; \
                  echo \"ok $RANK/$WORLD_SIZE after $TORCHELASTIC_RESTART_COUNT\"";
    let extra =
        ["--nnodes", "2", "--nproc-per-node", "2", "--max-restarts", "1", "--rdzv-conf", "last_call_timeout=0.5"];
    let runs = c10d_nodes(&endpoint, &extra, script, 2);
    let all: String = runs.iter().map(|(_, o, _)| o.as_str()).collect();
    for (code, stdout, stderr) in &runs {
        assert_eq!(*code, Some(0), "{stdout}{stderr}");
        assert!(stderr.contains("rank 3 failed with exit code 3: restarting the workers (restart 1 of 1)"), "{stderr}");
    }
    for r in 0..4 {
        assert!(all.contains(&format!("[rank {r}] ok {r}/4 after 1")), "{all}");
    }
}

#[test]
fn c10d_admits_a_node_that_joins_later() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let endpoint = format!("127.0.0.1:{}", free_port());
    let script =
        "if [ \"$WORLD_SIZE\" = 4 ]; then echo \"joined $RANK/$WORLD_SIZE after $TORCHELASTIC_RESTART_COUNT\"; \
                  else echo \"alone $RANK/$WORLD_SIZE\"; exec sleep 60; fi";
    let args = |cmd: &mut Command| {
        cmd.args(["--rdzv-backend", "c10d", "--rdzv-endpoint", &endpoint, "--nnodes", "1:2", "--nproc-per-node", "2"])
            .args(["--rdzv-conf", "last_call_timeout=0.5", "sh", "-c", script]);
    };
    // The first node runs alone until the second arrives.
    let mut first = launch();
    args(&mut first);
    let mut first = first.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut stdout = BufReader::new(first.stdout.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("alone 1/2") {
        let mut line = String::new();
        if stdout.read_line(&mut line).unwrap() == 0 {
            let _ = first.kill();
            panic!("the first node ended before running alone: {seen}");
        }
        seen.push_str(&line);
    }
    let mut second = launch();
    args(&mut second);
    let (code, out2, err2) = run(&mut second, Duration::from_secs(60));
    assert_eq!(code, Some(0), "{out2}{err2}");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    seen.push_str(&rest);
    let status = first.wait().unwrap();
    let mut err1 = String::new();
    std::io::Read::read_to_string(&mut first.stderr.take().unwrap(), &mut err1).unwrap();
    assert!(status.success(), "{seen}{err1}");
    assert!(err1.contains("1 node(s) waiting to join: restarting the workers to admit them"), "{err1}");
    let all = format!("{seen}{out2}");
    for r in 0..4 {
        // A change of membership is not a failure: the restart count stays 0.
        assert!(all.contains(&format!("[rank {r}] joined {r}/4 after 0")), "{all}");
    }
}

#[test]
fn standalone_is_one_node_on_a_free_port() {
    let (code, stdout, stderr) = run(
        launch().args(["--standalone", "--nproc-per-node", "2", "sh", "-c", "echo $RANK/$WORLD_SIZE $MASTER_ADDR"]),
        Duration::from_secs(60),
    );
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("[rank 0] 0/2 127.0.0.1") && stdout.contains("[rank 1] 1/2 127.0.0.1"), "{stdout}");
}
