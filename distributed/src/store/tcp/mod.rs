//! `TcpStore`: a store served over TCP by the master rank (c10d's `TCPStore`), speaking
//! PyTorch's TCPStore protocol, so a PyTorch process can be the master and our ranks its
//! clients, or the reverse; every rank, the master included, is a client.
//!
//! Note [TcpStore client]: as PyTorch's client. Every key a user names goes on the wire as
//! `/key` (the store's own `init/` counter does not, so it never meets a user's key). A
//! connection opens with `VALIDATE` and a `PING` of the process id, which must come back. `get`
//! and `multi_get` first `WAIT` for their keys; a wait is timed out by the client: it sends
//! `CANCEL_WAIT` and reads `WAIT_CANCELED` (after a `STOP_WAITING` if the keys arrived in the
//! meantime), so the connection stays in step. `SET`, `APPEND` and `MULTI_SET` have no reply;
//! unlike PyTorch's client, ours follows each with a `PING` and waits for the echo, so that
//! when `set` returns every other client sees the value (PyTorch's `set` returns before the
//! server has it, and another client's `check` may not see it yet). The protocol has no error replies: the server
//! closes a connection on a request it cannot serve (an `add` on a value that is not an
//! integer), and the client then reconnects on its next request. A client that starts before
//! the server retries connecting until its timeout; when the master's store is dropped its
//! server stops and closes every connection, and clients get [`Error::DistNetwork`], not a
//! hang.

mod poll;
mod protocol;
mod server;

use std::io::{BufReader, BufWriter, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::{timeout_error, Error, Result, Store, TimeoutCell, DEFAULT_STORE_TIMEOUT};
use protocol::{query, Encoder, NOT_READY, READY, STOP_WAITING, VALIDATION_MAGIC, WAIT_CANCELED};
use server::Server;

/// The key of the counter that ranks increment when they join (PyTorch's `initKey_`, not
/// prefixed like users' keys).
const INIT_KEY: &str = "init/";

/// How a [`TcpStore`] starts (PyTorch's `TCPStore` arguments).
#[derive(Clone, Debug)]
pub struct TcpStoreOptions {
    /// This rank runs the server.
    pub is_master: bool,
    /// The number of stores (ranks) that will connect, the master's included; with
    /// `wait_for_workers` each store counts itself in and the master's constructor waits for
    /// all of them.
    pub world_size: Option<usize>,
    /// The timeout of connecting, of every request, of `get` and `wait`, and of waiting for
    /// workers.
    pub timeout: Duration,
    /// Whether stores count themselves in and the master waits for `world_size` of them.
    pub wait_for_workers: bool,
}

impl Default for TcpStoreOptions {
    fn default() -> Self {
        TcpStoreOptions { is_master: false, world_size: None, timeout: DEFAULT_STORE_TIMEOUT, wait_for_workers: true }
    }
}

/// A store served over TCP, wire-compatible with PyTorch's `TCPStore` (see Note [TcpStore
/// client] and Note [TCPStore wire format]).
///
/// ```
/// use distributed::{Store, TcpStore, TcpStoreOptions};
/// // Port 0: the system picks a free port; `port()` tells which.
/// let master = TcpStore::new("127.0.0.1", 0, TcpStoreOptions { is_master: true, ..Default::default() }).unwrap();
/// let worker = TcpStore::new("127.0.0.1", master.port(), TcpStoreOptions::default()).unwrap();
/// worker.set("rank1/addr", b"10.0.0.2").unwrap();
/// assert_eq!(master.get("rank1/addr").unwrap(), b"10.0.0.2");
/// ```
pub struct TcpStore {
    addr: SocketAddr,
    host: String,
    /// `None` after the connection broke: the next request reconnects.
    conn: Mutex<Option<Connection>>,
    timeout: TimeoutCell,
    server: Option<Server>,
}

struct Connection {
    reader: BufReader<TcpStream>,
    writer: BufWriter<TcpStream>,
}

fn network(addr: SocketAddr, what: &str, e: impl std::fmt::Display) -> Error {
    Error::DistNetwork { op: "TCPStore".into(), msg: format!("{what} the store at {addr}: {e}") }
}

/// A key as it goes on the wire (see Note [TcpStore client]).
fn wire_key(key: &str) -> String {
    format!("/{key}")
}

/// A request of `code` naming `keys`: their count, then each key.
fn keys_request(code: u8, keys: &[&str]) -> Encoder {
    let mut req = Encoder::new(code);
    req.u64(keys.len() as u64);
    for k in keys {
        req.bytes(wire_key(k).as_bytes());
    }
    req
}

/// How a request ended, short of an I/O error.
enum Outcome<T> {
    Done(T),
    TimedOut,
}

impl TcpStore {
    /// Connects to the store at `host:port`; with `is_master`, first starts its server there
    /// (port 0 picks a free port).
    pub fn new(host: &str, port: u16, options: TcpStoreOptions) -> Result<TcpStore> {
        let bad_host = |e: String| Error::DistNetwork { op: "TCPStore".into(), msg: format!("{host}:{port}: {e}") };
        let mut addr = (host, port)
            .to_socket_addrs()
            .map_err(|e| bad_host(e.to_string()))?
            .next()
            .ok_or_else(|| bad_host("the host name has no address".into()))?;
        let server = if options.is_master {
            let s = Server::start(addr)?;
            addr = s.addr();
            Some(s)
        } else {
            None
        };
        let stream = connect(addr, host, options.timeout)?;
        let conn = Connection::open(stream, addr, options.timeout)?;
        let store = TcpStore {
            addr,
            host: host.to_string(),
            conn: Mutex::new(Some(conn)),
            timeout: TimeoutCell::new(options.timeout),
            server,
        };
        if let (Some(n), true) = (options.world_size, options.wait_for_workers) {
            store.wait_for_workers(n, options.is_master, options.timeout)?;
        }
        Ok(store)
    }

    /// Counts this store in, and on the master waits until `n` have (PyTorch's
    /// `waitForWorkers`).
    fn wait_for_workers(&self, n: usize, is_master: bool, timeout: Duration) -> Result<()> {
        let mut joined = self.add_wire(INIT_KEY, 1)?;
        if !is_master {
            return Ok(());
        }
        let start = Instant::now();
        while joined < n as i64 {
            if start.elapsed() >= timeout {
                return Err(Error::DistTimeout {
                    op: "TCPStore".into(),
                    msg: format!(
                        "Timed out after {} seconds waiting for clients. {joined}/{n} clients joined.",
                        timeout.as_secs_f64()
                    ),
                });
            }
            std::thread::sleep(Duration::from_millis(10));
            joined = self.add_wire(INIT_KEY, 0)?;
        }
        Ok(())
    }

    /// The port the store is served on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Runs `exchange` on the connection (reconnecting first if the last one broke). An I/O
    /// error drops the connection: what was in flight on it is unknown.
    fn call<T>(&self, exchange: impl FnOnce(&mut Connection) -> std::io::Result<T>) -> Result<T> {
        let mut guard = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let conn = self.connection(&mut guard)?;
        exchange(conn).map_err(|e| {
            *guard = None;
            network(self.addr, "lost the connection to", e)
        })
    }

    /// The open connection, or a new one (a single try: the server was up before).
    fn connection<'g>(&self, guard: &'g mut MutexGuard<'_, Option<Connection>>) -> Result<&'g mut Connection> {
        if guard.is_none() {
            let timeout = self.timeout();
            let stream = TcpStream::connect_timeout(&self.addr, timeout.max(Duration::from_millis(1)))
                .map_err(|e| network(self.addr, &format!("cannot reconnect ({}) to", self.host), e))?;
            stream.set_nodelay(true).map_err(|e| network(self.addr, "cannot use", e))?;
            **guard = Some(Connection::open(stream, self.addr, timeout)?);
        }
        guard.as_mut().ok_or_else(|| network(self.addr, "cannot reach", "no connection"))
    }

    /// Sends a request that has no reply, then a `PING` whose echo says the server has
    /// applied it (see Note [TcpStore client]).
    fn send(&self, request: &Encoder) -> Result<()> {
        let timeout = self.timeout();
        self.call(|c| {
            c.send(request)?;
            c.ping(timeout)
        })
    }

    /// `ADD` on a key as it goes on the wire.
    fn add_wire(&self, key: &str, amount: i64) -> Result<i64> {
        let timeout = self.timeout();
        let mut req = Encoder::new(query::ADD);
        req.bytes(key.as_bytes()).i64(amount);
        self.call(|c| {
            c.send(&req)?;
            c.read_i64(timeout)
        })
    }

    /// Sends a `WAIT` request and waits for its answer, at most `timeout` (see Note [TcpStore
    /// client]).
    fn wait_wire(&self, req: &Encoder, timeout: Duration) -> Result<Outcome<()>> {
        let store_timeout = self.timeout();
        self.call(|c| {
            c.send(req)?;
            match c.read_u8(timeout) {
                Ok(STOP_WAITING) => return Ok(Outcome::Done(())),
                Ok(other) => return Err(bad_reply("WAIT", other)),
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                Err(e) => return Err(e),
            }
            c.send(&Encoder::new(query::CANCEL_WAIT))?;
            let mut reply = c.read_u8(store_timeout)?;
            if reply == STOP_WAITING {
                reply = c.read_u8(store_timeout)?;
            }
            if reply != WAIT_CANCELED {
                return Err(bad_reply("CANCEL_WAIT", reply));
            }
            Ok(Outcome::TimedOut)
        })
    }

    /// Waits for `keys`, or the timeout error of `op`.
    fn wait_for(&self, op: &str, keys: &[&str], timeout: Duration) -> Result<()> {
        match self.wait_wire(&keys_request(query::WAIT, keys), timeout)? {
            Outcome::Done(()) => Ok(()),
            Outcome::TimedOut => Err(timeout_error(op, timeout, keys)),
        }
    }

    /// Sends a request whose reply is one byte string.
    fn request_bytes(&self, req: &Encoder) -> Result<Vec<u8>> {
        let timeout = self.timeout();
        self.call(|c| {
            c.send(req)?;
            c.read_bytes(timeout)
        })
    }
}

fn bad_reply(request: &str, byte: u8) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, format!("a reply {byte} to {request}"))
}

impl Connection {
    /// Wraps a connected socket and opens the session: `VALIDATE`, then a `PING` that must
    /// come back.
    fn open(stream: TcpStream, addr: SocketAddr, timeout: Duration) -> Result<Connection> {
        let reader = BufReader::new(stream.try_clone().map_err(|e| network(addr, "cannot use", e))?);
        let mut conn = Connection { reader, writer: BufWriter::new(stream) };
        let mut hello = Encoder::new(query::VALIDATE);
        hello.u32(VALIDATION_MAGIC);
        conn.send(&hello)
            .and_then(|()| conn.ping(timeout))
            .map_err(|e| network(addr, "cannot validate the connection to", e))?;
        Ok(conn)
    }

    /// `PING` of the process id, which must come back.
    fn ping(&mut self, timeout: Duration) -> std::io::Result<()> {
        let nonce = std::process::id();
        let mut ping = Encoder::new(query::PING);
        ping.u32(nonce);
        self.send(&ping)?;
        match u32::from_ne_bytes(self.read_array(timeout)?) {
            echo if echo == nonce => Ok(()),
            echo => {
                Err(std::io::Error::new(std::io::ErrorKind::InvalidData, format!("a PING reply {echo}, not {nonce}")))
            }
        }
    }

    fn send(&mut self, req: &Encoder) -> std::io::Result<()> {
        self.writer.write_all(&req.0)?;
        self.writer.flush()
    }

    /// Reads `N` bytes, waiting at most `timeout` for each part of them.
    fn read_array<const N: usize>(&mut self, timeout: Duration) -> std::io::Result<[u8; N]> {
        self.reader.get_ref().set_read_timeout(Some(timeout.max(Duration::from_millis(1))))?;
        let mut b = [0u8; N];
        self.reader.read_exact(&mut b)?;
        Ok(b)
    }

    fn read_u8(&mut self, timeout: Duration) -> std::io::Result<u8> {
        self.read_array::<1>(timeout).map(|[b]| b)
    }

    fn read_i64(&mut self, timeout: Duration) -> std::io::Result<i64> {
        self.read_array(timeout).map(i64::from_ne_bytes)
    }

    /// A u64 length and that many bytes; grows with the bytes that arrive, so a bad length
    /// costs no more than what the peer sends.
    fn read_bytes(&mut self, timeout: Duration) -> std::io::Result<Vec<u8>> {
        let len = u64::from_ne_bytes(self.read_array(timeout)?);
        let mut v = Vec::new();
        if (&mut self.reader).take(len).read_to_end(&mut v)? as u64 != len {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        Ok(v)
    }
}

/// Connects to `addr`, retrying until `timeout` (the server may not be up yet).
fn connect(addr: SocketAddr, host: &str, timeout: Duration) -> Result<TcpStream> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(10);
    loop {
        match TcpStream::connect_timeout(&addr, timeout.max(Duration::from_millis(1))) {
            Ok(s) => {
                s.set_nodelay(true).map_err(|e| network(addr, "cannot use", e))?;
                return Ok(s);
            }
            Err(e) if start.elapsed() >= timeout => {
                return Err(Error::DistNetwork {
                    op: "TCPStore".into(),
                    msg: format!(
                        "The client socket has timed out after {}s while trying to connect to ({host}, {}): {e}",
                        timeout.as_secs_f64(),
                        addr.port()
                    ),
                })
            }
            Err(_) => {
                std::thread::sleep(pause.min(timeout.saturating_sub(start.elapsed())));
                pause = (pause * 2).min(Duration::from_millis(200));
            }
        }
    }
}

impl Store for TcpStore {
    fn set(&self, key: &str, value: &[u8]) -> Result<()> {
        let mut req = Encoder::new(query::SET);
        req.bytes(wire_key(key).as_bytes()).bytes(value);
        self.send(&req)
    }
    fn clone_store(&self) -> Result<Option<Arc<dyn Store>>> {
        let options = TcpStoreOptions {
            is_master: false,
            world_size: None,
            timeout: self.timeout.get(),
            wait_for_workers: false,
        };
        Ok(Some(Arc::new(TcpStore::new(&self.host, self.addr.port(), options)?)))
    }
    fn get(&self, key: &str) -> Result<Vec<u8>> {
        self.wait_for("get", &[key], self.timeout())?;
        let mut req = Encoder::new(query::GET);
        req.bytes(wire_key(key).as_bytes());
        self.request_bytes(&req)
    }
    fn add(&self, key: &str, amount: i64) -> Result<i64> {
        self.add_wire(&wire_key(key), amount)
    }
    fn compare_set(&self, key: &str, expected: &[u8], desired: &[u8]) -> Result<Vec<u8>> {
        let mut req = Encoder::new(query::COMPARE_SET);
        req.bytes(wire_key(key).as_bytes()).bytes(expected).bytes(desired);
        self.request_bytes(&req)
    }
    fn wait_timeout(&self, keys: &[&str], timeout: Duration) -> Result<()> {
        self.wait_for("wait", keys, timeout)
    }
    fn check(&self, keys: &[&str]) -> Result<bool> {
        let req = keys_request(query::CHECK, keys);
        let timeout = self.timeout();
        self.call(|c| {
            c.send(&req)?;
            match c.read_u8(timeout)? {
                READY => Ok(true),
                NOT_READY => Ok(false),
                other => Err(bad_reply("CHECK", other)),
            }
        })
    }
    fn delete_key(&self, key: &str) -> Result<bool> {
        let mut req = Encoder::new(query::DELETE_KEY);
        req.bytes(wire_key(key).as_bytes());
        let timeout = self.timeout();
        let deleted = self.call(|c| {
            c.send(&req)?;
            c.read_i64(timeout)
        })?;
        Ok(deleted == 1)
    }
    /// Every key on the server, as PyTorch's: the `init/` counter of stores that joined with a
    /// world size included.
    fn num_keys(&self) -> Result<i64> {
        let timeout = self.timeout();
        self.call(|c| {
            c.send(&Encoder::new(query::GETNUMKEYS))?;
            c.read_i64(timeout)
        })
    }
    fn append(&self, key: &str, value: &[u8]) -> Result<()> {
        let mut req = Encoder::new(query::APPEND);
        req.bytes(wire_key(key).as_bytes()).bytes(value);
        self.send(&req)
    }
    fn multi_get(&self, keys: &[&str]) -> Result<Vec<Vec<u8>>> {
        self.wait_for("multi_get", keys, self.timeout())?;
        let req = keys_request(query::MULTI_GET, keys);
        let timeout = self.timeout();
        self.call(|c| {
            c.send(&req)?;
            keys.iter().map(|_| c.read_bytes(timeout)).collect()
        })
    }
    fn multi_set(&self, keys: &[&str], values: &[&[u8]]) -> Result<()> {
        super::check_multi_set(keys, values)?;
        let mut req = Encoder::new(query::MULTI_SET);
        req.u64(keys.len() as u64);
        for (k, v) in keys.iter().zip(values) {
            req.bytes(wire_key(k).as_bytes()).bytes(v);
        }
        self.send(&req)
    }
    fn timeout(&self) -> Duration {
        self.timeout.get()
    }
    fn set_timeout(&self, timeout: Duration) {
        self.timeout.set(timeout)
    }
}

impl Drop for TcpStore {
    fn drop(&mut self) {
        // Close our own connection before the server (if ours) stops.
        if let Some(conn) = self.conn.get_mut().unwrap_or_else(|e| e.into_inner()) {
            let _ = conn.writer.get_ref().shutdown(Shutdown::Both);
        }
        self.server.take();
    }
}
