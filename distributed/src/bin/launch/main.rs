//! `launch`: starts the ranks of a job on this machine, as `torchrun` does.
//!
//! ```text
//! cargo run -p distributed --bin launch -- --nproc-per-node 2 PROGRAM [ARGS...]
//! ```
//!
//! Every rank gets `MASTER_ADDR`, `MASTER_PORT`, `RANK`, `WORLD_SIZE`, `LOCAL_RANK` and
//! `LOCAL_WORLD_SIZE` (what `init_process_group("env://")` reads), and torchrun's `GROUP_RANK`,
//! `GROUP_WORLD_SIZE`, `ROLE_*` and `TORCHELASTIC_RESTART_COUNT`/`_MAX_RESTARTS`/`_RUN_ID`. A
//! rank's output lines are prefixed with `[rank N]`. When one rank fails, the others get SIGTERM
//! (SIGKILL after a grace period) and the launcher prints which rank failed and the last lines
//! it wrote to stderr. With `--max-restarts N` it then starts every rank again, at most N times
//! (a job resumes from its own checkpoint: `TORCHELASTIC_RESTART_COUNT` says which attempt
//! it is); past them it exits with the failing rank's exit code. SIGINT and SIGTERM sent to the
//! launcher are forwarded to the ranks. A rank dies with its launcher.
//!
//! Several machines: `--nnodes N --node-rank R --master-addr A` on each (the static
//! rendezvous), or `--rdzv-backend c10d --rdzv-endpoint HOST:PORT --nnodes MIN:MAX` on each,
//! which lets the launchers agree on node ranks and the master, restart every node together,
//! and admit nodes that join later (Note [Elastic rendezvous] in rdzv.rs). `--standalone` is a
//! c10d rendezvous of this machine alone on a free port.

mod options;
mod rdzv;
mod workers;

use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use options::USAGE;
use rdzv::{Leave, Rendezvous};
use workers::{describe, exit_code, Group, State};

/// The signal the launcher received and forwards (0: none).
pub(crate) static RECEIVED: AtomicI32 = AtomicI32::new(0);

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

/// How long between two looks at the rendezvous store while the workers run.
const RDZV_POLL: Duration = Duration::from_millis(250);

/// How a round of workers ended.
enum Outcome {
    Succeeded,
    Failed(usize, std::process::ExitStatus),
    /// Another node, or waiting nodes, ended the round.
    Peer(Leave),
    Signal(i32),
}

fn fail(msg: &str) -> ! {
    eprintln!("launch: {msg}");
    std::process::exit(1);
}

fn main() {
    let o = match options::parse(std::env::args().skip(1)) {
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
    let mut rdzv = Rendezvous::new(&o).unwrap_or_else(|e| fail(&e));
    let elastic = matches!(rdzv, Rendezvous::C10d(_));
    let run_id = rdzv.run_id();
    let mut restarts = 0;
    loop {
        let a = match rdzv.next_round() {
            Ok(a) => a,
            Err(e) => match RECEIVED.load(Ordering::SeqCst) {
                0 => fail(&e),
                sig => std::process::exit(128 + sig),
            },
        };
        if elastic {
            eprintln!(
                "launch: rendezvous round {}: node {} of {}, ranks {}..{} of {}, master {}:{}",
                a.round,
                a.node_rank,
                a.nnodes,
                a.first_rank,
                a.first_rank + o.nproc_per_node,
                a.world_size,
                a.master_addr,
                a.master_port
            );
        }
        let mut group = match Group::spawn(&o, &a, restarts, &run_id) {
            Ok(g) => g,
            Err(msg) => {
                eprintln!("launch: {msg}");
                let _ = rdzv.leave(&a, Leave::Failure(format!("node {}: {msg}", a.node_rank)));
                rdzv.give_up(&a);
                std::process::exit(1);
            }
        };
        let mut last_poll = Instant::now();
        let outcome = loop {
            let sig = RECEIVED.swap(0, Ordering::SeqCst);
            if sig != 0 {
                break Outcome::Signal(sig);
            }
            match group.poll() {
                State::Running => {}
                State::Succeeded => break Outcome::Succeeded,
                State::Failed(rank, status) => break Outcome::Failed(rank, status),
            }
            if last_poll.elapsed() >= RDZV_POLL {
                last_poll = Instant::now();
                match rdzv.poll(&a) {
                    Ok(None) => {}
                    Ok(Some(why)) => break Outcome::Peer(why),
                    Err(e) => {
                        group.stop(None);
                        fail(&e);
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // What ends the round, and the exit code if the job ends with it.
        let (why, code) = match outcome {
            Outcome::Succeeded => {
                group.finish();
                rdzv.finished(&a);
                return;
            }
            Outcome::Signal(sig) => {
                eprintln!("launch: got signal {sig}, passing it to the ranks");
                group.stop(Some(sig));
                let _ =
                    rdzv.leave(&a, Leave::Failure(format!("the launcher of node {} got signal {sig}", a.node_rank)));
                rdzv.give_up(&a);
                std::process::exit(128 + sig);
            }
            Outcome::Failed(rank, status) => {
                group.stop(None);
                group.report(rank, status);
                (Leave::Failure(format!("rank {rank} failed with {}", describe(status))), exit_code(status))
            }
            Outcome::Peer(why) => {
                group.stop(None);
                (why, 1)
            }
        };
        match rdzv.leave(&a, why) {
            Err(e) => fail(&e),
            Ok(Leave::Membership(msg)) => eprintln!("launch: {msg}: restarting the workers to admit them"),
            Ok(Leave::Failure(msg)) if restarts < o.max_restarts => {
                restarts += 1;
                eprintln!("launch: {msg}: restarting the workers (restart {restarts} of {})", o.max_restarts);
            }
            Ok(Leave::Failure(msg)) => {
                if o.max_restarts > 0 {
                    eprintln!("launch: {msg}, and no restarts are left (--max-restarts {})", o.max_restarts);
                } else if elastic {
                    eprintln!("launch: {msg}");
                }
                rdzv.give_up(&a);
                std::process::exit(code);
            }
        }
    }
}
