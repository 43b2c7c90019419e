//! Rendezvous: how the ranks of a job find their store, rank and world size from an
//! `init_method`, as `init_process_group` does (`torch.distributed.rendezvous`).
//!
//! - `env://` reads `MASTER_ADDR`, `MASTER_PORT`, `RANK` and `WORLD_SIZE` (what the `launch`
//!   binary and `torchrun` set); rank 0 serves a [`TcpStore`] there, the others connect.
//! - `tcp://host:port` is the same with the address in the URL; the rank and world size come
//!   from the arguments or from `?rank=R&world_size=N`.
//! - `file:///path` opens a [`FileStore`] at the path (removed when the last rank leaves).
//!
//! Arguments given explicitly win over the environment and the URL, as in PyTorch.

use std::sync::Arc;
use std::time::Duration;

use crate::store::{Error, FileStore, Result, Store, TcpStore, TcpStoreOptions};

/// What a rank learns at rendezvous.
pub struct Rendezvous {
    /// The store all ranks share.
    pub store: Arc<dyn Store>,
    /// This process's rank.
    pub rank: usize,
    /// The number of ranks.
    pub world_size: usize,
}

fn env_error(var: &str) -> Error {
    Error::Distributed {
        op: "rendezvous".into(),
        msg: format!(
            "Error initializing torch.distributed using env:// rendezvous: environment variable {var} expected, but not set"
        ),
    }
}

fn invalid(msg: String) -> Error {
    Error::Distributed { op: "rendezvous".into(), msg }
}

fn parse_number(what: &str, v: &str) -> Result<usize> {
    v.trim().parse::<usize>().map_err(|_| invalid(format!("{what} must be a non-negative integer, got {v:?}")))
}

/// The value of a `?key=value&...` query parameter.
fn query_param<'a>(query: &'a str, key: &str) -> Option<&'a str> {
    query.split('&').find_map(|kv| kv.split_once('=').filter(|(k, _)| *k == key).map(|(_, v)| v))
}

/// Connects this rank to the job named by `init_method` (see the module docs). `rank` and
/// `world_size` override what the method itself says; `timeout` bounds every wait.
pub fn rendezvous(
    init_method: &str,
    rank: Option<usize>,
    world_size: Option<usize>,
    timeout: Duration,
) -> Result<Rendezvous> {
    let (scheme, rest) = init_method.split_once("://").ok_or_else(|| {
        invalid(format!("init_method must be env://, tcp://host:port or file:///path, got {init_method:?}"))
    })?;
    let (location, query) = rest.split_once('?').unwrap_or((rest, ""));
    let from_query = |key: &str| query_param(query, key).map(|v| parse_number(key, v)).transpose();
    let need = |v: Option<usize>, name: &str| v.ok_or_else(|| invalid(format!("{name} parameter missing")));
    match scheme {
        "env" => {
            let var = |name: &str| std::env::var(name).map_err(|_| env_error(name));
            let rank = match rank {
                Some(r) => r,
                None => parse_number("RANK", &var("RANK")?)?,
            };
            let world_size = match world_size {
                Some(w) => w,
                None => parse_number("WORLD_SIZE", &var("WORLD_SIZE")?)?,
            };
            let addr = var("MASTER_ADDR")?;
            let port = var("MASTER_PORT")?;
            let port =
                port.trim().parse::<u16>().map_err(|_| invalid(format!("MASTER_PORT is not a port: {port:?}")))?;
            tcp(&addr, port, rank, world_size, timeout)
        }
        "tcp" => {
            let rank = need(rank.or(from_query("rank")?), "rank")?;
            let world_size = need(world_size.or(from_query("world_size")?), "world_size")?;
            let (host, port) = location
                .rsplit_once(':')
                .ok_or_else(|| invalid(format!("tcp:// needs host:port, got {location:?}")))?;
            let port = port.parse::<u16>().map_err(|_| invalid(format!("tcp://: not a port: {port:?}")))?;
            tcp(host.trim_start_matches('[').trim_end_matches(']'), port, rank, world_size, timeout)
        }
        "file" => {
            let rank = need(rank.or(from_query("rank")?), "rank")?;
            let world_size = need(world_size.or(from_query("world_size")?), "world_size")?;
            check_rank(rank, world_size)?;
            let store = FileStore::new(location, Some(world_size))?;
            store.set_timeout(timeout);
            Ok(Rendezvous { store: Arc::new(store), rank, world_size })
        }
        other => Err(invalid(format!("no rendezvous handler for {other}://"))),
    }
}

fn check_rank(rank: usize, world_size: usize) -> Result<()> {
    if world_size == 0 || rank >= world_size {
        return Err(invalid(format!("rank {rank} is not in a world of size {world_size}")));
    }
    Ok(())
}

/// Rank 0 serves the store at `host:port` and waits for every rank; the others connect.
fn tcp(host: &str, port: u16, rank: usize, world_size: usize, timeout: Duration) -> Result<Rendezvous> {
    check_rank(rank, world_size)?;
    let options =
        TcpStoreOptions { is_master: rank == 0, world_size: Some(world_size), timeout, wait_for_workers: true };
    let store = TcpStore::new(host, port, options)?;
    Ok(Rendezvous { store: Arc::new(store), rank, world_size })
}
