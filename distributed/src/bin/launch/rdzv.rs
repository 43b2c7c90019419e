//! How the launchers of a job's nodes agree on who takes part, on each node's ranks and on
//! the workers' master, once at the start and again after every restart.
//!
//! Note [Elastic rendezvous]: torchrun's `--rdzv-backend c10d`, over our [`TcpStore`]
//! (its keys are ours: only our launchers read them).
//! - **The store.** Every launcher tries to serve it at the endpoint; the one that can bind the
//!   address serves, the others connect (a remote address, or one already in use, cannot be
//!   bound). Keys live under `rdzv/<run id>/`; `round` counts the rendezvous rounds.
//! - **A round.** A node joins round `r` by adding 1 to `r<r>/joined` (its ordinal) and
//!   publishing its worker count and address. The round closes at `--nnodes` MAX nodes, or at
//!   MIN or more once no node has joined for `last_call_timeout`. After a restart the round
//!   also waits for the previous round's nodes (they may still be stopping their workers),
//!   but not past `last_call_timeout` plus [`STRAGGLERS`], so a lost node does not stall it.
//!   Closing is a `compare_set` of `r<r>/closed` from empty to the count: the first node to
//!   decide wins, and every node reads the same count. Node ranks are join ordinals; the node of
//!   rank 0 picks a free port for the workers' store on its own address (`r<r>/master`).
//! - **Late nodes.** A node that joins a closed round (or above MAX) adds 1 to `r<r>/waiting` and
//!   waits for `round` to move on. The nodes of a round poll that counter: while the round has
//!   fewer than MAX nodes, a waiting node makes them restart their workers to admit it. Such a
//!   restart is a change of membership, not a failure: it does not count against
//!   `--max-restarts`.
//! - **Leaving a round.** A node whose workers failed, or that sees waiting nodes, proposes the
//!   reason with a `compare_set` of `r<r>/restart` from empty; every node polls that key,
//!   stops its workers, and acts on the reason that won, so all nodes count the same restarts
//!   and give up together. Leaving moves `round` from `r` to `r+1` (a `compare_set`: once).
//! - **The end.** A node whose workers succeeded sets `r<r>/done<node rank>`; the node that
//!   serves the store waits for every node's `done` (or a restart) before it exits, and after
//!   a failure it gives up last (`r<r>/left`), so no node loses the store while it still
//!   needs it. The store is a single point of failure, as torchrun's c10d backend: when the
//!   node serving it dies, the others stop with "the rendezvous store stopped answering".

use std::net::{TcpListener, UdpSocket};
use std::time::{Duration, Instant};

use distributed::{Store, TcpStore, TcpStoreOptions};

use crate::options::{Options, Rdzv};
use crate::workers::Assignment;

/// How long a round after a restart waits for the previous round's nodes beyond the last call.
const STRAGGLERS: Duration = Duration::from_secs(10);
/// How often a joining node looks at the store.
const POLL: Duration = Duration::from_millis(50);

/// Why the nodes leave a round.
pub enum Leave {
    /// A worker failed (on this node or another): counts against `--max-restarts`.
    Failure(String),
    /// Nodes are waiting to join.
    Membership(String),
}

impl Leave {
    fn encode(&self) -> String {
        match self {
            Leave::Failure(m) => format!("failure {m}"),
            Leave::Membership(m) => format!("membership {m}"),
        }
    }
    fn decode(v: &[u8]) -> Leave {
        let s = String::from_utf8_lossy(v);
        match s.split_once(' ') {
            Some(("membership", m)) => Leave::Membership(m.to_string()),
            Some((_, m)) => Leave::Failure(m.to_string()),
            None => Leave::Failure(s.into_owned()),
        }
    }
}

pub enum Rendezvous {
    Static { node_rank: usize, nnodes: usize, nproc: usize, master_addr: String, master_port: u16 },
    C10d(Box<C10d>),
}

pub struct C10d {
    store: TcpStore,
    serving: bool,
    endpoint: String,
    prefix: String,
    min: usize,
    max: usize,
    nproc: usize,
    join_timeout: Duration,
    last_call: Duration,
    addr: String,
}

impl Rendezvous {
    pub fn new(o: &Options) -> Result<Rendezvous, String> {
        match &o.rdzv {
            Rdzv::Static { node_rank, master_addr, master_port } => Ok(Rendezvous::Static {
                node_rank: *node_rank,
                nnodes: o.max_nodes,
                nproc: o.nproc_per_node,
                master_addr: master_addr.clone(),
                master_port: *master_port,
            }),
            Rdzv::C10d { host, port, id, join_timeout, last_call, local_addr } => {
                let options = |is_master| TcpStoreOptions {
                    is_master,
                    world_size: None,
                    timeout: *join_timeout,
                    wait_for_workers: false,
                };
                let (store, serving) = match TcpStore::new(host, *port, options(true)) {
                    Ok(s) => (s, true),
                    Err(_) => (TcpStore::new(host, *port, options(false)).map_err(|e| e.to_string())?, false),
                };
                let endpoint = format!("{host}:{}", store.port());
                let addr = match local_addr {
                    Some(a) => a.clone(),
                    None => reaching(host, store.port())?,
                };
                Ok(Rendezvous::C10d(Box::new(C10d {
                    store,
                    serving,
                    endpoint,
                    prefix: format!("rdzv/{id}/"),
                    min: o.min_nodes,
                    max: o.max_nodes,
                    nproc: o.nproc_per_node,
                    join_timeout: *join_timeout,
                    last_call: *last_call,
                    addr,
                })))
            }
        }
    }

    /// Joins the next round and returns this node's place in it.
    pub fn next_round(&mut self) -> Result<Assignment, String> {
        match self {
            Rendezvous::Static { node_rank, nnodes, nproc, master_addr, master_port } => Ok(Assignment {
                node_rank: *node_rank,
                nnodes: *nnodes,
                first_rank: *node_rank * *nproc,
                world_size: *nnodes * *nproc,
                master_addr: master_addr.clone(),
                master_port: *master_port,
                round: 0,
            }),
            Rendezvous::C10d(c) => c.join().map_err(|e| format!("rendezvous at {}: {e}", c.endpoint)),
        }
    }

    /// Whether the nodes must leave round `a` (a peer's restart, or waiting nodes).
    pub fn poll(&mut self, a: &Assignment) -> Result<Option<Leave>, String> {
        match self {
            Rendezvous::Static { .. } => Ok(None),
            Rendezvous::C10d(c) => c.poll(a).map_err(|e| c.store_lost(e)),
        }
    }

    /// Leaves round `a`, proposing `why`; returns the reason all nodes act on.
    pub fn leave(&mut self, a: &Assignment, why: Leave) -> Result<Leave, String> {
        match self {
            Rendezvous::Static { .. } => Ok(why),
            Rendezvous::C10d(c) => c.leave(a, why).map_err(|e| c.store_lost(e)),
        }
    }

    /// This node gives up after round `a` failed: the node serving the store waits for the
    /// others to leave first.
    pub fn give_up(&mut self, a: &Assignment) {
        if let Rendezvous::C10d(c) = self {
            c.linger(a, false);
        }
    }

    /// This node's workers succeeded in round `a`.
    pub fn finished(&mut self, a: &Assignment) {
        if let Rendezvous::C10d(c) = self {
            // The workers succeeded whatever the store says; the node serving it then waits
            // for this node's `done` until the join timeout.
            if let Err(e) = c.store.set(&c.key(a.round, &format!("done{}", a.node_rank)), b"") {
                eprintln!("launch: {}", c.store_lost(e.to_string()));
            }
            c.linger(a, true);
        }
    }

    /// The run id the workers see (`TORCHELASTIC_RUN_ID`).
    pub fn run_id(&self) -> String {
        match self {
            Rendezvous::Static { .. } => "none".into(),
            Rendezvous::C10d(c) => c.prefix.trim_start_matches("rdzv/").trim_end_matches('/').into(),
        }
    }
}

/// The address this machine reaches `host:port` from (no packet is sent: a UDP socket is only
/// connected, which picks the route).
fn reaching(host: &str, port: u16) -> Result<String, String> {
    let socket = UdpSocket::bind(if host.contains(':') { "[::]:0" } else { "0.0.0.0:0" })
        .map_err(|e| format!("cannot find this machine's address: {e}"))?;
    socket
        .connect((host, port))
        .and_then(|()| socket.local_addr())
        .map(|a| a.ip().to_string())
        .map_err(|e| format!("cannot find the address this machine reaches {host}:{port} from: {e}"))
}

fn number(v: &[u8]) -> Result<usize, String> {
    String::from_utf8_lossy(v).trim().parse().map_err(|_| format!("a malformed count {:?} in the store", v))
}

impl C10d {
    fn key(&self, round: u64, name: &str) -> String {
        format!("{}r{round}/{name}", self.prefix)
    }

    fn store_lost(&self, e: String) -> String {
        format!("the rendezvous store at {} stopped answering: {e}", self.endpoint)
    }

    fn round(&self) -> Result<u64, String> {
        self.store.add(&format!("{}round", self.prefix), 0).map(|r| r as u64).map_err(|e| e.to_string())
    }

    fn counter(&self, round: u64, name: &str) -> Result<usize, String> {
        self.store.add(&self.key(round, name), 0).map(|n| n as usize).map_err(|e| e.to_string())
    }

    fn value(&self, round: u64, name: &str) -> Result<Option<Vec<u8>>, String> {
        let key = self.key(round, name);
        match self.store.check(&[&key]).map_err(|e| e.to_string())? {
            true => self.store.get(&key).map(Some).map_err(|e| e.to_string()),
            false => Ok(None),
        }
    }

    /// Ends a wait at the join timeout, or when the launcher got a signal.
    fn out_of_time(&self, start: Instant, what: String) -> Result<(), String> {
        if crate::RECEIVED.load(std::sync::atomic::Ordering::SeqCst) != 0 {
            return Err(format!("interrupted {what}"));
        }
        if start.elapsed() >= self.join_timeout {
            return Err(format!("timed out after {:?} {what}", self.join_timeout));
        }
        Ok(())
    }

    /// Waits as a late node of `round` for the next round to open.
    fn wait_for_next(&self, round: u64, start: Instant) -> Result<(), String> {
        self.store.add(&self.key(round, "waiting"), 1).map_err(|e| e.to_string())?;
        eprintln!("launch: rendezvous round {round} is full or closed; waiting for the next round");
        while self.round()? <= round {
            self.out_of_time(start, format!("waiting for round {round} to end"))?;
            std::thread::sleep(POLL);
        }
        Ok(())
    }

    fn join(&self) -> Result<Assignment, String> {
        let start = Instant::now();
        loop {
            let round = self.round()?;
            if self.value(round, "closed")?.is_some() {
                self.wait_for_next(round, start)?;
                continue;
            }
            let me = self.store.add(&self.key(round, "joined"), 1).map_err(|e| e.to_string())? as usize;
            if me > self.max {
                self.wait_for_next(round, start)?;
                continue;
            }
            let node = format!("{} {}", self.nproc, self.addr);
            self.store.set(&self.key(round, &format!("node{}", me - 1)), node.as_bytes()).map_err(|e| e.to_string())?;
            let previous = match round {
                0 => None,
                r => self.value(r - 1, "closed")?.map(|v| number(&v)).transpose()?,
            };
            let n = self.close(round, previous, start)?;
            if me > n {
                self.wait_for_next(round, start)?;
                continue;
            }
            return self.assign(round, me - 1, n);
        }
    }

    /// Waits for round `round` to close (deciding it when this node is the first to see the
    /// condition); the number of nodes in it.
    fn close(&self, round: u64, previous: Option<usize>, start: Instant) -> Result<usize, String> {
        let opened = Instant::now();
        let mut seen = (0, Instant::now());
        loop {
            if let Some(v) = self.value(round, "closed")? {
                return number(&v);
            }
            let joined = self.counter(round, "joined")?;
            if joined != seen.0 {
                seen = (joined, Instant::now());
            }
            let quiet = seen.1.elapsed() >= self.last_call;
            let everyone_back =
                previous.is_none_or(|p| joined >= p.min(self.max)) || opened.elapsed() >= self.last_call + STRAGGLERS;
            if joined >= self.max || (joined >= self.min && quiet && everyone_back) {
                let n = joined.min(self.max).to_string();
                let agreed = self.store.compare_set(&self.key(round, "closed"), b"", n.as_bytes());
                return number(&agreed.map_err(|e| e.to_string())?);
            }
            self.out_of_time(
                start,
                format!("in rendezvous round {round}: {joined} node(s) joined, at least {} needed", self.min),
            )?;
            std::thread::sleep(POLL);
        }
    }

    /// This node's place in closed round `round` of `n` nodes, where it is node `node`.
    fn assign(&self, round: u64, node: usize, n: usize) -> Result<Assignment, String> {
        let mut nprocs = Vec::with_capacity(n);
        let mut addrs = Vec::with_capacity(n);
        for i in 0..n {
            let v = self.store.get(&self.key(round, &format!("node{i}"))).map_err(|e| e.to_string())?;
            let v = String::from_utf8_lossy(&v).into_owned();
            let (nproc, addr) = v.split_once(' ').ok_or_else(|| format!("a malformed node entry {v:?}"))?;
            nprocs.push(number(nproc.as_bytes())?);
            addrs.push(addr.to_string());
        }
        let master_key = self.key(round, "master");
        if node == 0 {
            // A free port on this node for the workers' store, which global rank 0 serves.
            let port = TcpListener::bind((addrs[0].as_str(), 0))
                .and_then(|l| l.local_addr())
                .map_err(|e| format!("cannot find a free port on {}: {e}", addrs[0]))?
                .port();
            self.store.set(&master_key, port.to_string().as_bytes()).map_err(|e| e.to_string())?;
        }
        let port = self.store.get(&master_key).map_err(|e| e.to_string())?;
        let master_port = String::from_utf8_lossy(&port)
            .parse()
            .map_err(|_| format!("a malformed master port {port:?} in the store"))?;
        Ok(Assignment {
            node_rank: node,
            nnodes: n,
            first_rank: nprocs[..node].iter().sum(),
            world_size: nprocs.iter().sum(),
            master_addr: addrs[0].clone(),
            master_port,
            round,
        })
    }

    fn poll(&self, a: &Assignment) -> Result<Option<Leave>, String> {
        if let Some(v) = self.value(a.round, "restart")? {
            return Ok(Some(Leave::decode(&v)));
        }
        if a.nnodes < self.max {
            let waiting = self.counter(a.round, "waiting")?;
            if waiting > 0 {
                return Ok(Some(Leave::Membership(format!("{waiting} node(s) waiting to join"))));
            }
        }
        Ok(None)
    }

    fn leave(&self, a: &Assignment, why: Leave) -> Result<Leave, String> {
        let key = self.key(a.round, "restart");
        let agreed = self.store.compare_set(&key, b"", why.encode().as_bytes()).map_err(|e| e.to_string())?;
        let r = a.round.to_string();
        let next = (a.round + 1).to_string();
        self.store
            .compare_set(&format!("{}round", self.prefix), r.as_bytes(), next.as_bytes())
            .map_err(|e| e.to_string())?;
        self.store.add(&self.key(a.round, "left"), 1).map_err(|e| e.to_string())?;
        Ok(Leave::decode(&agreed))
    }

    /// On the node serving the store: waits until every node of round `a` has left it, or (with
    /// `done`) has finished or left, at most the join timeout.
    fn linger(&self, a: &Assignment, done: bool) {
        if !self.serving {
            return;
        }
        let start = Instant::now();
        let over = || -> Result<bool, String> {
            if self.counter(a.round, "left")? >= a.nnodes {
                return Ok(true);
            }
            if !done {
                return Ok(false);
            }
            if self.value(a.round, "restart")?.is_some() {
                return Ok(true);
            }
            for i in 0..a.nnodes {
                if self.value(a.round, &format!("done{i}"))?.is_none() {
                    return Ok(false);
                }
            }
            Ok(true)
        };
        // A store error cannot happen on the node serving it short of the machine failing;
        // either way there is nothing to wait for.
        while start.elapsed() < self.join_timeout && matches!(over(), Ok(false)) {
            std::thread::sleep(POLL);
        }
    }
}
