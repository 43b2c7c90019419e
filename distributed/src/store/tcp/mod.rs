//! `TcpStore`: a store served over TCP by the master rank (c10d's `TCPStore`); every rank,
//! the master included, is a client.
//!
//! Note [TcpStore protocol]: one request, one response, on a connection per client. A request
//! is a command byte and its fields; a field is a little-endian u64 length and that many bytes,
//! integers are 8 little-endian bytes. A response is a status byte (0 ok, 1 timed out, 2
//! failed) and the command's result, or a message. The server serves each connection on its
//! own thread from one [`Table`]; a `get` or `wait` blocks that thread on the table until the
//! keys exist or the client's timeout (sent with the request) passes, so the server decides
//! timeouts and the client's socket only guards against a server that went away.
//!
//! A client that starts before the server retries connecting until its timeout, as PyTorch's.
//! When the master's store is dropped the server stops and closes every connection: clients
//! then get [`Error::DistNetwork`], not a hang.

use std::collections::HashMap;
use std::io::{BufReader, BufWriter, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{Error, Result, Store, Table, TimeoutCell, DEFAULT_STORE_TIMEOUT, INTERNAL_PREFIX};

const SET: u8 = 1;
const GET: u8 = 2;
const ADD: u8 = 3;
const COMPARE_SET: u8 = 4;
const WAIT: u8 = 5;
const CHECK: u8 = 6;
const DELETE: u8 = 7;
const NUM_KEYS: u8 = 8;

const OK: u8 = 0;
const TIMED_OUT: u8 = 1;
const FAILED: u8 = 2;

/// The longest key or value a request may carry (PyTorch's libuv server takes values up to
/// 8 MiB); a longer one is a malformed request. Fields are read as their bytes arrive, so a
/// peer that announces a long field and sends little makes the server allocate little.
const MAX_FIELD: u64 = 8 << 20;

/// The most keys one `wait` or `check` may name (PyTorch's libuv server's bound).
const MAX_KEYS: i64 = 128 << 10;

/// How a [`TcpStore`] starts (PyTorch's `TCPStore` arguments).
#[derive(Clone, Debug)]
pub struct TcpStoreOptions {
    /// This rank runs the server.
    pub is_master: bool,
    /// The number of stores (ranks) that will connect, the master's included; with
    /// `wait_for_workers` the master's constructor waits for all of them.
    pub world_size: Option<usize>,
    /// The timeout of connecting, of `get` and `wait`, and of waiting for workers.
    pub timeout: Duration,
    /// Whether the master waits for `world_size` stores to connect before returning.
    pub wait_for_workers: bool,
}

impl Default for TcpStoreOptions {
    fn default() -> Self {
        TcpStoreOptions { is_master: false, world_size: None, timeout: DEFAULT_STORE_TIMEOUT, wait_for_workers: true }
    }
}

/// A store served over TCP (see Note [TcpStore protocol]).
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
    conn: Mutex<Connection>,
    timeout: TimeoutCell,
    server: Option<Server>,
}

struct Connection {
    reader: BufReader<TcpStream>,
    writer: BufWriter<TcpStream>,
}

/// The master's server: its listening thread stops when `stop` is set and it is woken.
struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    clients: Arc<Clients>,
}

/// The open connections of a server, by id, so that stopping the server can shut them down.
///
/// Note [Forgetting closed connections]: each entry is a second handle (`try_clone`) on a
/// client's socket, and a socket stays open while any handle does; so the thread serving a
/// connection removes its entry when it ends (the client left, or sent a malformed request),
/// else every connection ever accepted would keep its descriptor and, after `ulimit -n` of
/// them, every new client would be refused.
#[derive(Default)]
struct Clients {
    open: Mutex<HashMap<u64, TcpStream>>,
    next_id: std::sync::atomic::AtomicU64,
}

impl Clients {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, TcpStream>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a connection; `None` when it cannot be shared (it is then simply dropped).
    fn register(&self, stream: &TcpStream) -> Option<u64> {
        let handle = stream.try_clone().ok()?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(id, handle);
        Some(id)
    }

    fn forget(&self, id: u64) {
        self.lock().remove(&id);
    }
}

fn network(addr: SocketAddr, what: &str, e: impl std::fmt::Display) -> Error {
    Error::DistNetwork { op: "TCPStore".into(), msg: format!("{what} the store at {addr}: {e}") }
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
            addr = s.addr;
            Some(s)
        } else {
            None
        };
        let stream = connect(addr, host, options.timeout)?;
        let store = TcpStore {
            addr,
            conn: Mutex::new(Connection {
                reader: BufReader::new(stream.try_clone().map_err(|e| network(addr, "cannot use", e))?),
                writer: BufWriter::new(stream),
            }),
            timeout: TimeoutCell::new(options.timeout),
            server,
        };
        if let Some(n) = options.world_size {
            let joined_key = format!("{INTERNAL_PREFIX}init");
            let mut joined = store.add(&joined_key, 1)?;
            if options.is_master && options.wait_for_workers {
                let start = Instant::now();
                while joined < n as i64 {
                    if start.elapsed() >= options.timeout {
                        return Err(Error::DistTimeout {
                            op: "TCPStore".into(),
                            msg: format!(
                                "Timed out after {} seconds waiting for clients. {joined}/{n} clients joined.",
                                options.timeout.as_secs_f64()
                            ),
                        });
                    }
                    std::thread::sleep(Duration::from_millis(5));
                    joined = store.add(&joined_key, 0)?;
                }
            }
        }
        Ok(store)
    }

    /// The port the store is served on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Sends one request and reads its response; `wait` is how long the server may take.
    fn request(&self, cmd: u8, fields: &[Field<'_>], wait: Duration) -> Result<Response<'_>> {
        let mut conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let addr = self.addr;
        let mut msg = vec![cmd];
        for f in fields {
            f.encode(&mut msg);
        }
        conn.writer.write_all(&msg).and_then(|()| conn.writer.flush()).map_err(|e| network(addr, "cannot reach", e))?;
        // The server answers a wait within `wait`; beyond that (and a margin) it is gone.
        let guard = wait.saturating_add(Duration::from_secs(30));
        conn.reader.get_ref().set_read_timeout(Some(guard)).map_err(|e| network(addr, "cannot use", e))?;
        let status = read_u8(&mut conn.reader).map_err(|e| network(addr, "lost the connection to", e))?;
        match status {
            OK => Ok(Response(conn)),
            TIMED_OUT | FAILED => {
                let text = read_field(&mut conn.reader).map_err(|e| network(addr, "lost the connection to", e))?;
                let (op, msg) = split_message(&text);
                Err(if status == TIMED_OUT { Error::DistTimeout { op, msg } } else { Error::Distributed { op, msg } })
            }
            other => Err(network(addr, "got a bad response from", format!("status {other}"))),
        }
    }
}

/// An error's op and message, sent as `op\0msg`.
fn split_message(text: &[u8]) -> (String, String) {
    let text = String::from_utf8_lossy(text);
    match text.split_once('\0') {
        Some((op, msg)) => (op.to_string(), msg.to_string()),
        None => ("TCPStore".to_string(), text.to_string()),
    }
}

/// The reader of an OK response, holding the connection.
struct Response<'a>(std::sync::MutexGuard<'a, Connection>);

impl Response<'_> {
    fn bytes(mut self, addr: SocketAddr) -> Result<Vec<u8>> {
        read_field(&mut self.0.reader).map_err(|e| network(addr, "lost the connection to", e))
    }
    fn int(mut self, addr: SocketAddr) -> Result<i64> {
        read_i64(&mut self.0.reader).map_err(|e| network(addr, "lost the connection to", e))
    }
    fn flag(mut self, addr: SocketAddr) -> Result<bool> {
        read_u8(&mut self.0.reader).map(|b| b != 0).map_err(|e| network(addr, "lost the connection to", e))
    }
}

/// A request field.
enum Field<'a> {
    Bytes(&'a [u8]),
    Int(i64),
}

impl Field<'_> {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Field::Bytes(b) => {
                out.extend_from_slice(&(b.len() as u64).to_le_bytes());
                out.extend_from_slice(b);
            }
            Field::Int(i) => out.extend_from_slice(&i.to_le_bytes()),
        }
    }
}

fn read_u8(r: &mut impl Read) -> std::io::Result<u8> {
    let mut b = [0u8; 1];
    r.read_exact(&mut b)?;
    Ok(b[0])
}

fn read_i64(r: &mut impl Read) -> std::io::Result<i64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    Ok(i64::from_le_bytes(b))
}

fn read_field(r: &mut impl Read) -> std::io::Result<Vec<u8>> {
    let len = read_i64(r)? as u64;
    if len > MAX_FIELD {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, format!("a field of {len} bytes")));
    }
    // Grows with the bytes that arrive, not with the length announced.
    let mut v = Vec::new();
    if r.take(len).read_to_end(&mut v)? as u64 != len {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    Ok(v)
}

fn read_key(r: &mut impl Read) -> std::io::Result<String> {
    String::from_utf8(read_field(r)?)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "a key is not UTF-8"))
}

fn millis(d: Duration) -> i64 {
    d.as_millis().min(i64::MAX as u128) as i64
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

impl Server {
    fn start(addr: SocketAddr) -> Result<Server> {
        let listener = TcpListener::bind(addr).map_err(|e| network(addr, "cannot serve", e))?;
        let addr = listener.local_addr().map_err(|e| network(addr, "cannot serve", e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let clients: Arc<Clients> = Arc::default();
        let table = Arc::new(Table::default());
        let (stop2, clients2) = (stop.clone(), clients.clone());
        std::thread::Builder::new()
            .name("tcpstore-server".into())
            .spawn(move || {
                for stream in listener.incoming() {
                    if stop2.load(Ordering::Acquire) {
                        break;
                    }
                    let stream = match stream {
                        Ok(s) => s,
                        Err(_) => {
                            // Out of descriptors or threads (EMFILE, ENOBUFS): wait for
                            // connections to close rather than spin.
                            std::thread::sleep(Duration::from_millis(10));
                            continue;
                        }
                    };
                    let _ = stream.set_nodelay(true);
                    // See Note [Forgetting closed connections].
                    let Some(id) = clients2.register(&stream) else { continue };
                    if stop2.load(Ordering::Acquire) {
                        // Stopped while registering: Drop may have shut the others down already.
                        clients2.forget(id);
                        break;
                    }
                    let (table, clients) = (table.clone(), clients2.clone());
                    let spawned = std::thread::Builder::new().name("tcpstore-conn".into()).spawn(move || {
                        serve(stream, &table);
                        clients.forget(id);
                    });
                    if spawned.is_err() {
                        clients2.forget(id);
                    }
                }
            })
            .map_err(|e| network(addr, "cannot start a thread for", e))?;
        Ok(Server { addr, stop, clients })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wake the accept loop so it sees `stop`, then close every client's connection.
        let _ = TcpStream::connect(self.addr);
        for (_, s) in self.clients.lock().drain() {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

/// Serves one client until it disconnects or sends something that is not a request (an
/// unknown command, a field too long): the connection is then closed, unanswered.
fn serve(stream: TcpStream, table: &Table) {
    let Ok(read_half) = stream.try_clone() else { return };
    let mut r = BufReader::new(read_half);
    let mut w = BufWriter::new(stream);
    while let Ok(cmd) = read_u8(&mut r) {
        let Ok(reply) = answer(cmd, &mut r, table) else { return };
        if w.write_all(&reply).and_then(|()| w.flush()).is_err() {
            return;
        }
    }
}

/// Reads one request's fields and computes its response bytes.
fn answer(cmd: u8, r: &mut impl Read, table: &Table) -> std::io::Result<Vec<u8>> {
    let mut out = vec![OK];
    let result: Result<()> = match cmd {
        SET => {
            let (k, v) = (read_key(r)?, read_field(r)?);
            table.set(&k, &v);
            Ok(())
        }
        GET => {
            let (k, ms) = (read_key(r)?, read_i64(r)?);
            table.get(&k, Duration::from_millis(ms.max(0) as u64)).map(|v| Field::Bytes(&v).encode(&mut out))
        }
        ADD => {
            let (k, n) = (read_key(r)?, read_i64(r)?);
            table.add(&k, n).map(|s| Field::Int(s).encode(&mut out))
        }
        COMPARE_SET => {
            let (k, e, d) = (read_key(r)?, read_field(r)?, read_field(r)?);
            Field::Bytes(&table.compare_set(&k, &e, &d)).encode(&mut out);
            Ok(())
        }
        WAIT | CHECK => {
            let n = read_i64(r)?;
            if !(0..=MAX_KEYS).contains(&n) {
                return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "a bad key count"));
            }
            let keys = (0..n).map(|_| read_key(r)).collect::<std::io::Result<Vec<_>>>()?;
            let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
            if cmd == WAIT {
                let ms = read_i64(r)?;
                table.wait(&refs, Duration::from_millis(ms.max(0) as u64))
            } else {
                out.push(table.check(&refs) as u8);
                Ok(())
            }
        }
        DELETE => {
            let k = read_key(r)?;
            out.push(table.delete(&k) as u8);
            Ok(())
        }
        NUM_KEYS => {
            Field::Int(table.num_keys()).encode(&mut out);
            Ok(())
        }
        _ => return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "an unknown command")),
    };
    if let Err(e) = result {
        let (status, op, msg) = match e {
            Error::DistTimeout { op, msg } => (TIMED_OUT, op, msg),
            Error::Distributed { op, msg } => (FAILED, op, msg),
            other => (FAILED, "TCPStore".to_string(), other.to_string()),
        };
        out = vec![status];
        Field::Bytes(format!("{op}\0{msg}").as_bytes()).encode(&mut out);
    }
    Ok(out)
}

impl Store for TcpStore {
    fn set(&self, key: &str, value: &[u8]) -> Result<()> {
        self.request(SET, &[Field::Bytes(key.as_bytes()), Field::Bytes(value)], Duration::ZERO).map(|_| ())
    }
    fn get(&self, key: &str) -> Result<Vec<u8>> {
        let t = self.timeout();
        self.request(GET, &[Field::Bytes(key.as_bytes()), Field::Int(millis(t))], t)?.bytes(self.addr)
    }
    fn add(&self, key: &str, amount: i64) -> Result<i64> {
        self.request(ADD, &[Field::Bytes(key.as_bytes()), Field::Int(amount)], Duration::ZERO)?.int(self.addr)
    }
    fn compare_set(&self, key: &str, expected: &[u8], desired: &[u8]) -> Result<Vec<u8>> {
        let fields = [Field::Bytes(key.as_bytes()), Field::Bytes(expected), Field::Bytes(desired)];
        self.request(COMPARE_SET, &fields, Duration::ZERO)?.bytes(self.addr)
    }
    fn wait_timeout(&self, keys: &[&str], timeout: Duration) -> Result<()> {
        let mut fields = vec![Field::Int(keys.len() as i64)];
        fields.extend(keys.iter().map(|k| Field::Bytes(k.as_bytes())));
        fields.push(Field::Int(millis(timeout)));
        self.request(WAIT, &fields, timeout).map(|_| ())
    }
    fn check(&self, keys: &[&str]) -> Result<bool> {
        let mut fields = vec![Field::Int(keys.len() as i64)];
        fields.extend(keys.iter().map(|k| Field::Bytes(k.as_bytes())));
        self.request(CHECK, &fields, Duration::ZERO)?.flag(self.addr)
    }
    fn delete_key(&self, key: &str) -> Result<bool> {
        self.request(DELETE, &[Field::Bytes(key.as_bytes())], Duration::ZERO)?.flag(self.addr)
    }
    fn num_keys(&self) -> Result<i64> {
        self.request(NUM_KEYS, &[], Duration::ZERO)?.int(self.addr)
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
        let conn = self.conn.get_mut().unwrap_or_else(|e| e.into_inner());
        let _ = conn.writer.get_ref().shutdown(Shutdown::Both);
        self.server.take();
    }
}
