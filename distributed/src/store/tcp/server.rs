//! The TCPStore server: one thread that serves every connection of the master's store with
//! PyTorch's TCPStore protocol (Note [TCPStore wire format]).
//!
//! Note [TCPStore server loop]: like PyTorch's libuv backend, one thread polls the listening
//! socket and every connection (non-blocking, `poll(2)`), buffers each connection's partial
//! requests and unsent replies, and owns the table; so a `WAIT` is a list entry, not a blocked
//! thread, and its `STOP_WAITING` is queued on the waiter's connection by whoever sets the
//! last key, always before the `WAIT_CANCELED` of a later `CANCEL_WAIT`. A connection is
//! forgotten (its socket closed, its waits dropped) when the client leaves or sends something
//! that is not a request (an unknown code, a bound passed, no `VALIDATE` first, a second wait
//! while one is pending, an `add` on a value that is not an integer). Per connection the
//! server keeps at most one request's bytes ([`MAX_REQUEST`]) and stops reading while more
//! than [`OUT_HIGH`] bytes of replies wait to be sent.

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::thread::JoinHandle;
use std::time::Duration;

use super::poll::{poll, pollfd};
use super::protocol::{
    parse_request, Encoder, Parsed, Request, MAX_REQUEST, NOT_READY, READY, STOP_WAITING, VALIDATION_MAGIC,
    WAIT_CANCELED,
};
use crate::store::{added, compare_set_outcome, Error, Result};

/// Above this many unsent reply bytes a connection is not read from until they drain.
const OUT_HIGH: usize = 1 << 20;
/// The largest reply the server builds (a `MULTI_GET` of many large values); a request whose
/// reply would be larger is refused as malformed.
const MAX_REPLY: usize = 256 << 20;
/// The most bytes read from one connection per turn of the loop, so one busy client does not
/// starve the others.
const READ_PER_TURN: usize = 1 << 20;

/// A running server; dropping it stops the thread and closes every connection.
pub(super) struct Server {
    addr: SocketAddr,
    /// Dropping this end wakes the loop, which then returns.
    stop: Option<UnixStream>,
    thread: Option<JoinHandle<()>>,
}

fn network(addr: SocketAddr, what: &str, e: impl std::fmt::Display) -> Error {
    Error::DistNetwork { op: "TCPStore".into(), msg: format!("{what} the store at {addr}: {e}") }
}

impl Server {
    /// Listens on `addr` (port 0: a free port) and serves from a thread of its own.
    pub(super) fn start(addr: SocketAddr) -> Result<Server> {
        let listener = TcpListener::bind(addr).map_err(|e| network(addr, "cannot serve", e))?;
        let addr = listener.local_addr().map_err(|e| network(addr, "cannot serve", e))?;
        let (stop, stopped) = UnixStream::pair().map_err(|e| network(addr, "cannot serve", e))?;
        for nonblocking in [listener.set_nonblocking(true), stopped.set_nonblocking(true)] {
            nonblocking.map_err(|e| network(addr, "cannot serve", e))?;
        }
        let thread = std::thread::Builder::new()
            .name("tcpstore-server".into())
            .spawn(move || Loop::default().run(&listener, &stopped))
            .map_err(|e| network(addr, "cannot start a thread for", e))?;
        Ok(Server { addr, stop: Some(stop), thread: Some(thread) })
    }

    pub(super) fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One client's connection.
struct Conn {
    stream: TcpStream,
    /// Received bytes not yet parsed (at most one request's).
    input: Vec<u8>,
    /// Parse again once `input` holds this many bytes.
    need: usize,
    /// Replies not yet sent.
    output: Vec<u8>,
    validated: bool,
    /// The keys of this connection's pending `WAIT` that do not exist yet (with repeats).
    waiting_for: Vec<Vec<u8>>,
    /// How many of them are still missing; 0 when no wait is pending.
    missing: usize,
    closed: bool,
}

impl Conn {
    fn new(stream: TcpStream) -> Self {
        Conn {
            stream,
            input: Vec::new(),
            need: 1,
            output: Vec::new(),
            validated: false,
            waiting_for: Vec::new(),
            missing: 0,
            closed: false,
        }
    }

    /// Reads what has arrived (up to [`READ_PER_TURN`]); marks the connection closed at end
    /// of stream or on an error.
    fn receive(&mut self) {
        let mut chunk = [0u8; 64 << 10];
        let mut got = 0;
        while got < READ_PER_TURN && !self.closed {
            match self.stream.read(&mut chunk) {
                Ok(0) => self.closed = true,
                Ok(n) => {
                    self.input.extend_from_slice(&chunk[..n]);
                    got += n;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => self.closed = true,
            }
        }
    }

    /// Sends what the socket takes now.
    fn send(&mut self) {
        let mut sent = 0;
        while sent < self.output.len() && !self.closed {
            match self.stream.write(&self.output[sent..]) {
                Ok(0) => self.closed = true,
                Ok(n) => sent += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => self.closed = true,
            }
        }
        self.output.drain(..sent);
        if self.output.capacity() > OUT_HIGH && self.output.len() < OUT_HIGH / 4 {
            self.output.shrink_to(OUT_HIGH / 4);
        }
    }
}

/// The server's state: the table, the connections, and who waits for which key.
#[derive(Default)]
struct Loop {
    table: HashMap<Vec<u8>, Vec<u8>>,
    conns: HashMap<u64, Conn>,
    next_id: u64,
    /// Key -> the connections whose pending wait needs it (a connection once per mention).
    waiters: HashMap<Vec<u8>, Vec<u64>>,
}

/// A request that closes its connection, and why.
struct Refused(String);

impl Loop {
    fn run(mut self, listener: &TcpListener, stopped: &UnixStream) {
        let mut fds: Vec<libc::pollfd> = Vec::new();
        let mut ids: Vec<u64> = Vec::new();
        let mut accept_paused = false;
        loop {
            fds.clear();
            ids.clear();
            fds.push(pollfd(stopped.as_raw_fd(), libc::POLLIN));
            fds.push(pollfd(listener.as_raw_fd(), if accept_paused { 0 } else { libc::POLLIN }));
            for (&id, c) in &self.conns {
                let mut events = 0;
                if c.output.len() <= OUT_HIGH {
                    events |= libc::POLLIN;
                }
                if !c.output.is_empty() {
                    events |= libc::POLLOUT;
                }
                fds.push(pollfd(c.stream.as_raw_fd(), events));
                ids.push(id);
            }
            // Out of descriptors, accepting fails until some close: look again in 10 ms.
            let wait_ms = if accept_paused { 10 } else { -1 };
            if poll(&mut fds, wait_ms).is_err() {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            if fds[0].revents != 0 {
                return;
            }
            accept_paused = false;
            if fds[1].revents != 0 {
                accept_paused = !self.accept(listener);
            }
            for (fd, &id) in fds[2..].iter().zip(&ids) {
                if fd.revents == 0 {
                    continue;
                }
                let Some(c) = self.conns.get_mut(&id) else { continue };
                if fd.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
                    c.receive();
                }
                self.serve(id);
            }
            // Replies, STOP_WAITINGs queued for others included, go out now where they can.
            let (mut gone, mut resume) = (Vec::new(), Vec::new());
            for (&id, c) in &mut self.conns {
                if !c.output.is_empty() {
                    c.send();
                }
                if c.closed {
                    gone.push(id);
                } else if c.output.len() <= OUT_HIGH && !c.input.is_empty() && c.input.len() >= c.need {
                    // Requests left unanswered while replies were backed up: no new bytes
                    // may come to trigger them.
                    resume.push(id);
                }
            }
            for id in gone {
                self.forget(id);
            }
            for id in resume {
                self.serve(id);
            }
        }
    }

    /// Accepts what is pending; false when accepting failed (out of descriptors).
    fn accept(&mut self, listener: &TcpListener) -> bool {
        loop {
            match listener.accept() {
                Ok((stream, _)) => {
                    if stream.set_nonblocking(true).is_err() {
                        continue;
                    }
                    let _ = stream.set_nodelay(true);
                    self.next_id += 1;
                    self.conns.insert(self.next_id, Conn::new(stream));
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == ErrorKind::Interrupted || e.kind() == ErrorKind::ConnectionAborted => {}
                Err(_) => return false,
            }
        }
    }

    /// Answers the complete requests in a connection's input, while its replies fit.
    fn serve(&mut self, id: u64) {
        let Some(c) = self.conns.get_mut(&id) else { return };
        if c.closed || c.input.len() < c.need {
            return;
        }
        let input = std::mem::take(&mut c.input);
        let mut at = 0;
        let mut need = 0;
        let mut refused = None;
        while at < input.len() {
            if self.conns.get(&id).is_some_and(|c| c.output.len() > OUT_HIGH) {
                break;
            }
            match parse_request(&input[at..]) {
                Parsed::Request(r, n) => {
                    at += n;
                    if let Err(Refused(why)) = self.answer(id, r) {
                        refused = Some(why);
                        break;
                    }
                }
                Parsed::Incomplete { need: n } => {
                    need = n;
                    break;
                }
                Parsed::Malformed(why) => {
                    refused = Some(why);
                    break;
                }
            }
        }
        let Some(c) = self.conns.get_mut(&id) else { return };
        if refused.is_some() {
            c.closed = true;
            return;
        }
        c.input = input;
        c.input.drain(..at);
        c.need = if c.input.is_empty() { 1 } else { need.min(MAX_REQUEST) };
        if c.input.capacity() > 2 * c.input.len() + (64 << 10) {
            c.input.shrink_to_fit();
        }
    }

    /// Applies one request and queues its reply on the connection.
    fn answer(&mut self, id: u64, r: Request<'_>) -> std::result::Result<(), Refused> {
        let validated = self.conns.get(&id).is_some_and(|c| c.validated);
        let mut reply = Encoder::default();
        match r {
            Request::Validate(magic) if magic == VALIDATION_MAGIC => {
                if let Some(c) = self.conns.get_mut(&id) {
                    c.validated = true;
                }
            }
            Request::Validate(magic) => return Err(Refused(format!("a bad VALIDATE magic {magic:#x}"))),
            _ if !validated => return Err(Refused("a request before VALIDATE".into())),
            Request::Set(k, v) => self.set(k, v.to_vec()),
            Request::CompareSet { key, expected, desired } => {
                let current = self.table.get(key).map(Vec::as_slice);
                match compare_set_outcome(current, expected) {
                    Some(kept) => reply.bytes(&kept),
                    None => {
                        self.set(key, desired.to_vec());
                        reply.bytes(desired)
                    }
                };
            }
            Request::Get(k) => {
                // As PyTorch's libuv server: a missing key reads as empty (clients wait first).
                reply.bytes(self.table.get(k).map_or(&[][..], Vec::as_slice));
            }
            Request::Add(k, n) => {
                let current = self.table.get(k).map(Vec::as_slice);
                let sum = added(current, &String::from_utf8_lossy(k), n).map_err(|e| Refused(e.to_string()))?;
                self.set(k, sum.to_string().into_bytes());
                reply.i64(sum);
            }
            Request::Check(keys) => {
                reply.u8(if keys.iter().all(|k| self.table.contains_key(*k)) { READY } else { NOT_READY });
            }
            Request::Wait(keys) => self.wait(id, &keys)?,
            Request::NumKeys => {
                reply.i64(self.table.len() as i64);
            }
            Request::DeleteKey(k) => {
                reply.i64(self.table.remove(k).is_some() as i64);
            }
            Request::Append(k, v) => {
                let mut value = self.table.remove(k).unwrap_or_default();
                value.extend_from_slice(v);
                self.set(k, value);
            }
            Request::MultiGet(keys) => {
                let size: usize = keys.iter().map(|k| 8 + self.table.get(*k).map_or(0, Vec::len)).sum();
                if size > MAX_REPLY {
                    return Err(Refused(format!("a multi_get reply of {size} bytes (at most {MAX_REPLY})")));
                }
                for k in keys {
                    reply.bytes(self.table.get(k).map_or(&[][..], Vec::as_slice));
                }
            }
            Request::MultiSet(pairs) => {
                for (k, v) in pairs {
                    self.set(k, v.to_vec());
                }
            }
            Request::CancelWait => {
                self.cancel_wait(id);
                reply.u8(WAIT_CANCELED);
            }
            Request::Ping(nonce) => {
                reply.u32(nonce);
            }
            Request::ListKeys => {
                let size: usize = self.table.keys().map(|k| 8 + k.len()).sum();
                if size > MAX_REPLY {
                    return Err(Refused(format!("a list_keys reply of {size} bytes (at most {MAX_REPLY})")));
                }
                reply.i64(self.table.len() as i64);
                for k in self.table.keys() {
                    reply.bytes(k);
                }
            }
        }
        if let Some(c) = self.conns.get_mut(&id) {
            c.output.extend_from_slice(&reply.0);
        }
        Ok(())
    }

    /// Sets a key and ends the waits that needed only it.
    fn set(&mut self, key: &[u8], value: Vec<u8>) {
        self.table.insert(key.to_vec(), value);
        for id in self.waiters.remove(key).unwrap_or_default() {
            let Some(c) = self.conns.get_mut(&id) else { continue };
            c.missing = c.missing.saturating_sub(1);
            if c.missing == 0 {
                c.waiting_for.clear();
                c.output.push(STOP_WAITING);
            }
        }
    }

    /// Starts a wait: `STOP_WAITING` now if every key exists, else when the last one is set.
    fn wait(&mut self, id: u64, keys: &[&[u8]]) -> std::result::Result<(), Refused> {
        let missing: Vec<Vec<u8>> = keys.iter().filter(|k| !self.table.contains_key(**k)).map(|k| k.to_vec()).collect();
        let Some(c) = self.conns.get_mut(&id) else { return Ok(()) };
        if c.missing > 0 {
            return Err(Refused("a second WAIT while one is pending".into()));
        }
        if missing.is_empty() {
            c.output.push(STOP_WAITING);
            return Ok(());
        }
        c.missing = missing.len();
        for k in &missing {
            self.waiters.entry(k.clone()).or_default().push(id);
        }
        c.waiting_for = missing;
        Ok(())
    }

    /// Drops a connection's pending wait, if any.
    fn cancel_wait(&mut self, id: u64) {
        let Some(c) = self.conns.get_mut(&id) else { return };
        c.missing = 0;
        for k in std::mem::take(&mut c.waiting_for) {
            if let Some(ids) = self.waiters.get_mut(&k) {
                ids.retain(|&w| w != id);
                if ids.is_empty() {
                    self.waiters.remove(&k);
                }
            }
        }
    }

    /// Forgets a connection: its waits, its buffers, its socket (closed when dropped).
    fn forget(&mut self, id: u64) {
        self.cancel_wait(id);
        self.conns.remove(&id);
    }
}
