//! `launch`: starts the ranks of a job on this machine, as `torchrun` does.
//!
//! ```text
//! cargo run -p distributed --bin launch -- --nproc-per-node 2 PROGRAM [ARGS...]
//! ```
//!
//! Every rank gets `MASTER_ADDR`, `MASTER_PORT`, `RANK`, `WORLD_SIZE`, `LOCAL_RANK` and
//! `LOCAL_WORLD_SIZE` (what `init_process_group("env://")` reads). A rank's output lines are
//! prefixed with `[rank N]`. When one rank fails, the others get SIGTERM (SIGKILL after a grace
//! period), and the launcher exits with the failing rank's exit code after printing which rank
//! failed and the last lines it wrote to stderr. SIGINT and SIGTERM sent to the launcher are
//! forwarded to the ranks.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const USAGE: &str = "usage: launch [--nproc-per-node N] [--nnodes N] [--node-rank R] [--master-addr ADDR] \
                     [--master-port PORT] PROGRAM [ARGS...]";
/// How long the other ranks get to exit after SIGTERM before SIGKILL.
const GRACE: Duration = Duration::from_secs(5);
/// How many of a rank's last stderr lines the failure report shows.
const TAIL: usize = 20;

struct Options {
    nproc_per_node: usize,
    nnodes: usize,
    node_rank: usize,
    master_addr: String,
    master_port: u16,
    program: String,
    args: Vec<String>,
}

fn parse(mut argv: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut o = Options {
        nproc_per_node: 1,
        nnodes: 1,
        node_rank: 0,
        master_addr: "127.0.0.1".into(),
        master_port: 29500,
        program: String::new(),
        args: Vec::new(),
    };
    while let Some(a) = argv.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        let mut value = |name: &str| -> Result<String, String> {
            inline.clone().or_else(|| argv.next()).ok_or_else(|| format!("{name} needs a value"))
        };
        let number = |name: &str, v: String| v.parse::<usize>().map_err(|_| format!("{name}: not a number: {v}"));
        match flag.replace('_', "-").as_str() {
            "--nproc-per-node" => o.nproc_per_node = number(&flag, value(&flag)?)?,
            "--nnodes" => o.nnodes = number(&flag, value(&flag)?)?,
            "--node-rank" => o.node_rank = number(&flag, value(&flag)?)?,
            "--master-addr" => o.master_addr = value(&flag)?,
            "--master-port" => {
                let v = value(&flag)?;
                o.master_port = v.parse().map_err(|_| format!("--master-port: not a port: {v}"))?;
            }
            "--help" | "-h" => return Err(String::new()),
            f if f.starts_with('-') => return Err(format!("unknown option {f}")),
            _ => {
                o.program = a;
                o.args = argv.collect();
                break;
            }
        }
    }
    if o.program.is_empty() {
        return Err("no program to launch".into());
    }
    if o.nproc_per_node == 0 || o.nnodes == 0 || o.node_rank >= o.nnodes {
        return Err(format!(
            "need --nproc-per-node >= 1, --nnodes >= 1 and --node-rank < --nnodes (got {}, {}, {})",
            o.nproc_per_node, o.nnodes, o.node_rank
        ));
    }
    Ok(o)
}

/// The last stderr lines of a rank.
type Tail = Arc<Mutex<VecDeque<String>>>;

/// The signal the launcher received and forwards (0: none).
static RECEIVED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    RECEIVED.store(sig, Ordering::SeqCst);
}

fn install_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: `on_signal` is async-signal-safe (one atomic store) and has the C ABI that
        // `signal` expects; replacing the default disposition of SIGINT/SIGTERM is all this does.
        unsafe { libc::signal(sig, on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t) };
    }
}

fn send(child: &Child, sig: libc::c_int) {
    // SAFETY: plain FFI call; the pid is our own child's, not yet reaped (we only reap it by
    // `try_wait`/`wait`, after which we stop signalling it).
    unsafe { libc::kill(child.id() as libc::pid_t, sig) };
}

/// Copies a rank's stream to ours, a line at a time with its prefix; keeps the last lines of
/// stderr for the failure report.
fn forward(
    rank: usize,
    stream: impl std::io::Read + Send + 'static,
    to_stderr: bool,
    tail: Arc<Mutex<VecDeque<String>>>,
) {
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            if to_stderr {
                let _ = writeln!(std::io::stderr().lock(), "[rank {rank}] {line}");
                let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
                if t.len() == TAIL {
                    t.pop_front();
                }
                t.push_back(line);
            } else {
                let _ = writeln!(std::io::stdout().lock(), "[rank {rank}] {line}");
            }
        }
    });
}

fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(s)) => format!("signal {s}"),
        _ => "an unknown status".into(),
    }
}

fn main() {
    let o = match parse(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(msg) => {
            if !msg.is_empty() {
                eprintln!("launch: {msg}");
            }
            eprintln!("{USAGE}");
            std::process::exit(2);
        }
    };
    install_handlers();
    let world = o.nproc_per_node * o.nnodes;
    let mut ranks: Vec<(usize, Child, Tail)> = Vec::new();
    for local in 0..o.nproc_per_node {
        let rank = o.node_rank * o.nproc_per_node + local;
        let spawned = Command::new(&o.program)
            .args(&o.args)
            .env("MASTER_ADDR", &o.master_addr)
            .env("MASTER_PORT", o.master_port.to_string())
            .env("RANK", rank.to_string())
            .env("WORLD_SIZE", world.to_string())
            .env("LOCAL_RANK", local.to_string())
            .env("LOCAL_WORLD_SIZE", o.nproc_per_node.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) => {
                eprintln!("launch: cannot start {}: {e}", o.program);
                for (_, c, _) in &mut ranks {
                    send(c, libc::SIGKILL);
                    let _ = c.wait();
                }
                std::process::exit(1);
            }
        };
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        if let Some(out) = child.stdout.take() {
            forward(rank, out, false, tail.clone());
        }
        if let Some(err) = child.stderr.take() {
            forward(rank, err, true, tail.clone());
        }
        ranks.push((rank, child, tail));
    }

    // Wait for all ranks; the first failure (or a signal to us) stops the others.
    let mut failure: Option<(usize, ExitStatus)> = None;
    let mut running: Vec<bool> = vec![true; ranks.len()];
    let mut stopping_since: Option<Instant> = None;
    let mut forwarded: Option<i32> = None;
    while running.iter().any(|&r| r) {
        let sig = RECEIVED.swap(0, Ordering::SeqCst);
        if sig != 0 {
            eprintln!("launch: got signal {sig}, passing it to the ranks");
            for (i, (_, c, _)) in ranks.iter().enumerate() {
                if running[i] {
                    send(c, sig);
                }
            }
            stopping_since.get_or_insert_with(Instant::now);
            forwarded.get_or_insert(sig);
        }
        for (i, (rank, c, _)) in ranks.iter_mut().enumerate() {
            if !running[i] {
                continue;
            }
            if let Ok(Some(status)) = c.try_wait() {
                running[i] = false;
                if !status.success() && failure.is_none() && stopping_since.is_none() {
                    failure = Some((*rank, status));
                }
            }
        }
        if failure.is_some() && stopping_since.is_none() {
            for (i, (_, c, _)) in ranks.iter().enumerate() {
                if running[i] {
                    send(c, libc::SIGTERM);
                }
            }
            stopping_since = Some(Instant::now());
        }
        if stopping_since.is_some_and(|t| t.elapsed() > GRACE) {
            for (i, (_, c, _)) in ranks.iter_mut().enumerate() {
                if running[i] {
                    let _ = c.kill();
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // Let the forwarding threads drain what the ranks wrote last.
    std::thread::sleep(Duration::from_millis(50));
    if let Some((rank, status)) = failure {
        let tail = ranks.iter().find(|(r, _, _)| *r == rank).map(|(_, _, t)| t.clone());
        let lines: Vec<String> =
            tail.map(|t| t.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned().collect()).unwrap_or_default();
        eprintln!("launch: rank {rank} failed with {}; stopped the other ranks", describe(status));
        if !lines.is_empty() {
            eprintln!("launch: the last lines rank {rank} wrote to stderr:");
            for l in lines {
                eprintln!("  {l}");
            }
        }
        std::process::exit(exit_code(status).max(1));
    }
    if let Some(sig) = forwarded {
        std::process::exit(128 + sig);
    }
}
