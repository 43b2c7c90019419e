//! This node's workers: started with their environment, their output forwarded a line at a time
//! with a `[rank N]` prefix, watched, and stopped.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::options::Options;

/// How long workers get to exit after SIGTERM before SIGKILL.
pub const GRACE: Duration = Duration::from_secs(5);
/// How many of a worker's last stderr lines the failure report shows.
const TAIL: usize = 20;

/// Where this node's workers sit in the job, for one round of the rendezvous.
pub struct Assignment {
    /// This node's rank among the nodes, and their number.
    pub node_rank: usize,
    pub nnodes: usize,
    /// The global rank of this node's first worker.
    pub first_rank: usize,
    pub world_size: usize,
    /// Where the workers' own store is served (by global rank 0: `env://`).
    pub master_addr: String,
    pub master_port: u16,
    /// The rendezvous round (0 under the static rendezvous): the prefix of the round's keys
    /// in the rendezvous store, and the launcher's messages.
    pub round: u64,
}

/// What the workers are doing.
pub enum State {
    Running,
    Succeeded,
    /// The first worker that failed: its global rank and status.
    Failed(usize, ExitStatus),
}

struct Worker {
    rank: usize,
    child: Child,
    running: bool,
    tail: Arc<Mutex<VecDeque<String>>>,
    forwarders: Vec<JoinHandle<()>>,
}

pub struct Group {
    workers: Vec<Worker>,
    failure: Option<(usize, ExitStatus)>,
}

fn send(child: &Child, sig: libc::c_int) {
    // SAFETY: plain FFI call; the pid is our own child's, not yet reaped (we only reap it by
    // `try_wait`/`wait`, after which we stop signalling it).
    unsafe { libc::kill(child.id() as libc::pid_t, sig) };
}

/// Copies a worker's stream to ours, a line at a time with its prefix; keeps the last lines of
/// stderr for the failure report.
fn forward(
    rank: usize,
    stream: impl std::io::Read + Send + 'static,
    tail: Option<Arc<Mutex<VecDeque<String>>>>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            match &tail {
                Some(tail) => {
                    let _ = writeln!(std::io::stderr().lock(), "[rank {rank}] {line}");
                    let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
                    if t.len() == TAIL {
                        t.pop_front();
                    }
                    t.push_back(line);
                }
                None => {
                    let _ = writeln!(std::io::stdout().lock(), "[rank {rank}] {line}");
                }
            }
        }
    })
}

pub fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(s)) => format!("signal {s}"),
        _ => "an unknown status".into(),
    }
}

pub fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0)).max(1)
}

impl Group {
    /// Starts this node's workers with torchrun's environment (`restarts`: how many times the
    /// job has restarted so far).
    pub fn spawn(o: &Options, a: &Assignment, restarts: usize, run_id: &str) -> Result<Group, String> {
        let mut group = Group { workers: Vec::new(), failure: None };
        for local in 0..o.nproc_per_node {
            let rank = a.first_rank + local;
            let mut cmd = Command::new(&o.program);
            cmd.args(&o.args)
                .env("MASTER_ADDR", &a.master_addr)
                .env("MASTER_PORT", a.master_port.to_string())
                .env("RANK", rank.to_string())
                .env("WORLD_SIZE", a.world_size.to_string())
                .env("LOCAL_RANK", local.to_string())
                .env("LOCAL_WORLD_SIZE", o.nproc_per_node.to_string())
                .env("GROUP_RANK", a.node_rank.to_string())
                .env("GROUP_WORLD_SIZE", a.nnodes.to_string())
                .env("ROLE_NAME", "default")
                .env("ROLE_RANK", rank.to_string())
                .env("ROLE_WORLD_SIZE", a.world_size.to_string())
                .env("TORCHELASTIC_RESTART_COUNT", restarts.to_string())
                .env("TORCHELASTIC_MAX_RESTARTS", o.max_restarts.to_string())
                .env("TORCHELASTIC_RUN_ID", run_id)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            // SAFETY: the closure runs in the forked child before exec and only makes one
            // async-signal-safe system call. PR_SET_PDEATHSIG: a worker is killed when the
            // launcher dies (even by SIGKILL), instead of living on as an orphan that holds
            // its peers in their collectives.
            unsafe {
                cmd.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
                    Ok(())
                });
            }
            let mut child = match cmd.spawn() {
                Ok(c) => c,
                Err(e) => {
                    group.stop(None);
                    return Err(format!("cannot start {}: {e}", o.program));
                }
            };
            let tail = Arc::new(Mutex::new(VecDeque::new()));
            let mut forwarders = Vec::new();
            if let Some(out) = child.stdout.take() {
                forwarders.push(forward(rank, out, None));
            }
            if let Some(err) = child.stderr.take() {
                forwarders.push(forward(rank, err, Some(tail.clone())));
            }
            group.workers.push(Worker { rank, child, running: true, tail, forwarders });
        }
        Ok(group)
    }

    /// Reaps the workers that exited; the first that failed fails the group.
    pub fn poll(&mut self) -> State {
        for w in self.workers.iter_mut().filter(|w| w.running) {
            if let Ok(Some(status)) = w.child.try_wait() {
                w.running = false;
                if !status.success() && self.failure.is_none() {
                    self.failure = Some((w.rank, status));
                }
            }
        }
        match self.failure {
            Some((rank, status)) => State::Failed(rank, status),
            None if self.workers.iter().any(|w| w.running) => State::Running,
            None => State::Succeeded,
        }
    }

    /// Stops the workers still running: `signal` (SIGTERM when `None`), then SIGKILL to those
    /// alive after [`GRACE`]; returns once every worker is reaped and its output forwarded.
    pub fn stop(&mut self, signal: Option<libc::c_int>) {
        for w in self.workers.iter().filter(|w| w.running) {
            send(&w.child, signal.unwrap_or(libc::SIGTERM));
        }
        let start = Instant::now();
        while self.workers.iter().any(|w| w.running) {
            for w in self.workers.iter_mut().filter(|w| w.running) {
                if let Ok(Some(_)) = w.child.try_wait() {
                    w.running = false;
                } else if start.elapsed() > GRACE {
                    let _ = w.child.kill();
                    let _ = w.child.wait();
                    w.running = false;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.drain();
    }

    /// Waits for the forwarding threads to copy what the workers wrote last (a worker's
    /// children may hold its pipes open: at most a second).
    fn drain(&mut self) {
        let start = Instant::now();
        for w in &mut self.workers {
            for f in std::mem::take(&mut w.forwarders) {
                while !f.is_finished() && start.elapsed() < Duration::from_secs(1) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                if f.is_finished() {
                    let _ = f.join();
                }
            }
        }
    }

    /// Prints which worker failed and the last lines it wrote to stderr.
    pub fn report(&self, rank: usize, status: ExitStatus) {
        eprintln!("launch: rank {rank} failed with {}; stopped the other ranks", describe(status));
        let lines: Vec<String> = self
            .workers
            .iter()
            .find(|w| w.rank == rank)
            .map(|w| w.tail.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned().collect())
            .unwrap_or_default();
        if !lines.is_empty() {
            eprintln!("launch: the last lines rank {rank} wrote to stderr:");
            for l in lines {
                eprintln!("  {l}");
            }
        }
    }

    /// Once every worker exited successfully: wait for their output.
    pub fn finish(&mut self) {
        self.drain();
    }
}
