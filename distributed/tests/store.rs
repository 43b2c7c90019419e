//! The stores against Note [Store semantics] (PyTorch's store behaviour): every store type runs
//! the same checks, then what is particular to each (TCP clients and servers, several
//! `FileStore`s on one file).

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use c10::Error;
use distributed::{FileStore, HashStore, PrefixStore, Store, TcpStore, TcpStoreOptions};

fn master() -> TcpStore {
    TcpStore::new("127.0.0.1", 0, TcpStoreOptions { is_master: true, ..Default::default() }).unwrap()
}

fn client(port: u16) -> TcpStore {
    TcpStore::new("127.0.0.1", port, TcpStoreOptions::default()).unwrap()
}

/// A port no one listens on (the system's pick, released again).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn temp_path(name: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("torch-filestore-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

/// The behaviour every store shares; `other` is a second handle on the same store (another
/// "rank"), which sees what `store` writes.
fn semantics(store: &dyn Store, other: &dyn Store) {
    assert_eq!(store.num_keys().unwrap(), 0);
    store.set("a", b"1").unwrap();
    assert_eq!(other.get("a").unwrap(), b"1");
    store.set("a", b"").unwrap();
    assert_eq!(other.get("a").unwrap(), b"", "an empty value is a value");

    // add: a missing key counts as 0; values are decimal strings.
    assert_eq!(store.add("n", 5).unwrap(), 5);
    assert_eq!(other.add("n", -2).unwrap(), 3);
    assert_eq!(store.add("n", 0).unwrap(), 3);
    assert_eq!(other.get("n").unwrap(), b"3");
    store.set("text", b"abc").unwrap();
    // Over TCP the protocol has no error replies: the server closes the connection, and the
    // client reconnects for its next request.
    let err = other.add("text", 1).unwrap_err();
    assert!(matches!(err, Error::Distributed { .. } | Error::DistNetwork { .. }), "{err:?}");
    assert_eq!(store.get("text").unwrap(), b"abc", "a failed add leaves the value");
    assert_eq!(other.get("text").unwrap(), b"abc", "and the store still serves");

    // compare_set.
    assert_eq!(store.compare_set("c", b"", b"first").unwrap(), b"first", "missing + empty expected: set");
    assert_eq!(other.compare_set("c", b"nope", b"second").unwrap(), b"first", "mismatch: the current value");
    assert_eq!(other.compare_set("c", b"first", b"second").unwrap(), b"second", "match: swapped");
    assert_eq!(store.get("c").unwrap(), b"second");
    assert_eq!(store.compare_set("d", b"x", b"y").unwrap(), b"x", "missing + non-empty expected: expected back");
    assert!(!store.check(&["d"]).unwrap(), "and the key stays missing");

    // append, multi_get, multi_set.
    store.append("log", b"ab").unwrap();
    other.append("log", b"cd").unwrap();
    assert_eq!(store.get("log").unwrap(), b"abcd", "append creates, then appends");
    other.multi_set(&["m1", "m2"], &[b"one", b""]).unwrap();
    assert_eq!(store.multi_get(&["m2", "log", "m1"]).unwrap(), [&b""[..], b"abcd", b"one"]);
    assert!(matches!(store.multi_set(&["m3"], &[]), Err(Error::Distributed { .. })));
    assert!(!store.check(&["m3"]).unwrap());
    for k in ["log", "m1", "m2"] {
        assert!(store.delete_key(k).unwrap());
    }

    // check, wait, delete_key, num_keys.
    assert!(store.check(&["a", "n", "c"]).unwrap());
    assert!(!store.check(&["a", "zz"]).unwrap());
    store.wait(&["a", "n"]).unwrap();
    assert_eq!(store.num_keys().unwrap(), 4);
    assert!(other.delete_key("a").unwrap());
    assert!(!store.delete_key("a").unwrap());
    assert!(!store.check(&["a"]).unwrap());
    assert_eq!(store.num_keys().unwrap(), 3);

    // get and wait time out with the store's timeout, or the one given.
    store.set_timeout(Duration::from_millis(150));
    assert_eq!(store.timeout(), Duration::from_millis(150));
    let start = Instant::now();
    let err = store.get("never").unwrap_err();
    let waited = start.elapsed();
    assert!(matches!(err, Error::DistTimeout { .. }), "{err:?}");
    assert!(err.to_string().contains("wait timeout after 150ms"), "{err}");
    assert!(waited >= Duration::from_millis(150) && waited < Duration::from_secs(10), "waited {waited:?}");
    let err = store.wait_timeout(&["n", "never"], Duration::from_millis(60)).unwrap_err();
    assert!(matches!(err, Error::DistTimeout { .. }) && err.to_string().contains("never"), "{err}");
    let err = store.multi_get(&["n", "never"]).unwrap_err();
    assert!(matches!(err, Error::DistTimeout { .. }), "{err}");
    // A store that timed out still serves.
    other.set("never", b"now").unwrap();
    assert_eq!(store.get("never").unwrap(), b"now");
}

/// A `get` blocked on a key returns as soon as another handle sets it.
fn get_waits_for_a_later_set(store: Arc<dyn Store>, other: Arc<dyn Store>) {
    store.set_timeout(Duration::from_secs(30));
    let start = Instant::now();
    // The setter's handle stays alive here too: a TCP master that is dropped stops serving.
    let setter_handle = other.clone();
    let setter = thread::spawn(move || {
        thread::sleep(Duration::from_millis(100));
        setter_handle.set("late", b"here").unwrap();
    });
    assert_eq!(store.get("late").unwrap(), b"here");
    assert!(start.elapsed() >= Duration::from_millis(100) && start.elapsed() < Duration::from_secs(20));
    setter.join().unwrap();
}

#[test]
fn hash_store_semantics() {
    let s = Arc::new(HashStore::new());
    semantics(&*s, &*s);
    let s = Arc::new(HashStore::new());
    get_waits_for_a_later_set(s.clone(), s);
}

#[test]
fn tcp_store_semantics_between_clients() {
    let m = master();
    let c = client(m.port());
    semantics(&c, &m);
    let m = Arc::new(master());
    let c = Arc::new(client(m.port()));
    get_waits_for_a_later_set(c, m);
}

#[test]
fn file_store_semantics_between_two_opens() {
    let path = temp_path("semantics");
    let a = FileStore::new(&path, None).unwrap();
    let b = FileStore::new(&path, None).unwrap();
    semantics(&a, &b);
    drop((a, b));
    std::fs::remove_file(&path).unwrap();
    let path = temp_path("late-set");
    get_waits_for_a_later_set(
        Arc::new(FileStore::new(&path, None).unwrap()),
        Arc::new(FileStore::new(&path, None).unwrap()),
    );
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn prefix_store_semantics_and_isolation() {
    let base: Arc<dyn Store> = Arc::new(HashStore::new());
    let p = PrefixStore::new("pg0", base.clone());
    semantics(&p, &PrefixStore::new("pg0", base.clone()));
    let q = PrefixStore::new("pg1", base.clone());
    q.set("c", b"other group").unwrap();
    assert_eq!(p.get("c").unwrap(), b"second", "each prefix has its own keys");
    assert_eq!(base.get("pg1/c").unwrap(), b"other group");
    assert_eq!(p.num_keys().unwrap(), base.num_keys().unwrap(), "num_keys is the underlying store's");
}

#[test]
fn tcp_store_with_many_clients_counts_and_waits_for_workers() {
    // A master that waits for 4 ranks returns once the 3 others connected.
    let port = free_port();
    let opts = |is_master| TcpStoreOptions {
        is_master,
        world_size: Some(4),
        timeout: Duration::from_secs(30),
        ..Default::default()
    };
    // The workers start before the server exists: they retry until it is up.
    let workers: Vec<_> = (0..3)
        .map(|_| {
            thread::spawn(move || {
                let s = TcpStore::new("127.0.0.1", port, opts(false)).unwrap();
                for _ in 0..100 {
                    s.add("counter", 1).unwrap();
                }
                s.set(&format!("done{}", s.add("ranks", 1).unwrap()), b"").unwrap();
                s.wait(&["go"]).unwrap();
                s.get("go").unwrap()
            })
        })
        .collect();
    thread::sleep(Duration::from_millis(200));
    let m = TcpStore::new("127.0.0.1", port, opts(true)).unwrap();
    m.wait(&["done1", "done2", "done3"]).unwrap();
    assert_eq!(m.add("counter", 0).unwrap(), 300, "adds from concurrent clients are atomic");
    assert_eq!(m.num_keys().unwrap(), 6, "counter, ranks, done1..3 and, as in PyTorch, init/");
    m.set("go", b"now").unwrap();
    for w in workers {
        assert_eq!(w.join().unwrap(), b"now");
    }
}

#[test]
fn tcp_store_failures_are_errors_within_the_timeout() {
    // No server: connecting gives up after the timeout.
    let port = free_port();
    let start = Instant::now();
    let opts = TcpStoreOptions { timeout: Duration::from_millis(300), ..Default::default() };
    let err = TcpStore::new("127.0.0.1", port, opts).err().expect("no server to connect to");
    assert!(matches!(err, Error::DistNetwork { .. }), "{err:?}");
    assert!(err.to_string().contains("timed out after"), "{err}");
    assert!(start.elapsed() >= Duration::from_millis(300) && start.elapsed() < Duration::from_secs(10));

    // A master waiting for 2 workers when only itself arrives.
    let opts = TcpStoreOptions {
        is_master: true,
        world_size: Some(2),
        timeout: Duration::from_millis(200),
        ..Default::default()
    };
    let err = TcpStore::new("127.0.0.1", 0, opts).err().expect("the second rank never comes");
    assert!(err.to_string().contains("1/2 clients joined"), "{err}");

    // The server goes away while a client waits: the client gets an error, not a hang.
    let m = master();
    let c = client(m.port());
    c.set("k", b"v").unwrap();
    let waiter = thread::spawn(move || {
        let start = Instant::now();
        (c.wait_timeout(&["never"], Duration::from_secs(60)), start.elapsed(), c)
    });
    thread::sleep(Duration::from_millis(100));
    drop(m);
    let (result, waited, c) = waiter.join().unwrap();
    assert!(matches!(result, Err(Error::DistNetwork { .. })), "{result:?}");
    assert!(waited < Duration::from_secs(30), "waited {waited:?}");
    assert!(matches!(c.get("k"), Err(Error::DistNetwork { .. })));
}

#[test]
fn file_store_removes_its_file_when_the_last_rank_leaves() {
    let path = temp_path("cleanup");
    let ranks: Vec<FileStore> = (0..3).map(|_| FileStore::new(&path, Some(3)).unwrap()).collect();
    ranks[0].set("k", b"v").unwrap();
    assert_eq!(ranks[2].get("k").unwrap(), b"v");
    assert_eq!(ranks[1].num_keys().unwrap(), 1, "the reference counts are not users' keys");
    let mut ranks = ranks.into_iter();
    drop(ranks.next());
    drop(ranks.next());
    assert!(path.exists(), "a rank is still using it");
    drop(ranks.next());
    assert!(!path.exists(), "the last rank removed it");
    // The next job on the same path starts empty.
    let again = FileStore::new(&path, Some(1)).unwrap();
    assert!(!again.check(&["k"]).unwrap());
    drop(again);
    assert!(!path.exists());

    // Concurrent adds from stores on several threads are atomic (the file lock).
    let path = temp_path("adds");
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let path = path.clone();
            thread::spawn(move || {
                let s = FileStore::new(&path, None).unwrap();
                for _ in 0..50 {
                    s.add("n", 1).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(FileStore::new(&path, None).unwrap().add("n", 0).unwrap(), 200);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_file_that_is_not_a_store_log_is_an_error() {
    let path = temp_path("garbage");
    std::fs::write(&path, [9u8, 1, 2, 3]).unwrap();
    let s = FileStore::new(&path, None).unwrap();
    let err = s.get("k").unwrap_err();
    assert!(matches!(err, Error::Distributed { .. }) && err.to_string().contains("not a FileStore log"), "{err}");
    std::fs::remove_file(&path).unwrap();
}

/// Reads until the peer closes; `Ok` with the bytes read when it does within `limit`.
fn read_until_closed(stream: &mut std::net::TcpStream, limit: Duration) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let start = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        let left = limit.saturating_sub(start.elapsed());
        if left.is_zero() {
            return Err(format!("still open after {limit:?}, {} bytes read", got.len()));
        }
        stream.set_read_timeout(Some(left)).unwrap();
        match stream.read(&mut buf) {
            Ok(0) => return Ok(got),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            // A reset is a close too (the server closed with our bytes unread).
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Ok(got),
            Err(e) => return Err(format!("{e} after {:?}", start.elapsed())),
        }
    }
}

/// The protocol's bytes (host order: little-endian), written out by hand from PyTorch's
/// TCPStore protocol (reference/formats-and-protocols.md §4), not produced by our encoder.
mod wire {
    /// A u64 length or count.
    pub fn n(v: u64) -> Vec<u8> {
        v.to_le_bytes().to_vec()
    }
    /// A string or byte field: u64 length, then the bytes.
    pub fn s(v: &[u8]) -> Vec<u8> {
        [n(v.len() as u64), v.to_vec()].concat()
    }
    /// VALIDATE (0) and the magic 0x3C85F7CE.
    pub const VALIDATE: [u8; 5] = [0x00, 0xCE, 0xF7, 0x85, 0x3C];
}

/// A raw connection to a store server.
struct Raw(std::net::TcpStream);

impl Raw {
    fn connect(port: u16) -> Raw {
        let s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        Raw(s)
    }
    fn send(&mut self, parts: &[&[u8]]) {
        use std::io::Write;
        self.0.write_all(&parts.concat()).unwrap();
    }
    fn recv(&mut self, n: usize) -> Vec<u8> {
        use std::io::Read;
        let mut b = vec![0u8; n];
        self.0.read_exact(&mut b).unwrap();
        b
    }
    /// Nothing more arrives for a while.
    fn quiet(&mut self) -> bool {
        use std::io::Read;
        self.0.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
        let quiet = matches!(self.0.read(&mut [0u8; 1]), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
        self.0.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        quiet
    }
}

#[test]
fn tcp_store_server_speaks_pytorchs_protocol() {
    use wire::{n, s, VALIDATE};
    let m = master();
    let mut c = Raw::connect(m.port());
    // VALIDATE has no reply; PING (13) echoes its u32.
    c.send(&[&VALIDATE, &[13, 0x78, 0x56, 0x34, 0x12]]);
    assert_eq!(c.recv(4), [0x78, 0x56, 0x34, 0x12]);
    // SET (1) "/a" = "xy": no reply. GET (3) "/a" -> "xy".
    c.send(&[&[1], &s(b"/a"), &s(b"xy")]);
    c.send(&[&[3], &s(b"/a")]);
    assert_eq!(c.recv(10), s(b"xy"));
    assert_eq!(m.get("a").unwrap(), b"xy", "our client prefixes keys with / as TCPStore does");
    // GET of a missing key: empty (the libuv server's answer).
    c.send(&[&[3], &s(b"/missing")]);
    assert_eq!(c.recv(8), n(0));
    // ADD (4) "/n" 5 -> 5, then -7 -> -2; stored as ASCII decimal.
    c.send(&[&[4], &s(b"/n"), &5i64.to_le_bytes()]);
    assert_eq!(c.recv(8), 5i64.to_le_bytes());
    c.send(&[&[4], &s(b"/n"), &(-7i64).to_le_bytes()]);
    assert_eq!(c.recv(8), (-2i64).to_le_bytes());
    assert_eq!(m.get("n").unwrap(), b"-2");
    // CHECK (5) n keys -> READY 0 / NOT_READY 1.
    c.send(&[&[5], &n(2), &s(b"/a"), &s(b"/n")]);
    assert_eq!(c.recv(1), [0]);
    c.send(&[&[5], &n(2), &s(b"/a"), &s(b"/zz")]);
    assert_eq!(c.recv(1), [1]);
    // COMPARE_SET (2): missing + empty expected sets desired; missing + non-empty returns
    // expected; present swaps when equal and returns the value held.
    c.send(&[&[2], &s(b"/c"), &s(b""), &s(b"d1")]);
    assert_eq!(c.recv(10), s(b"d1"));
    c.send(&[&[2], &s(b"/e"), &s(b"x"), &s(b"y")]);
    assert_eq!(c.recv(9), s(b"x"));
    c.send(&[&[2], &s(b"/c"), &s(b"no"), &s(b"d2")]);
    assert_eq!(c.recv(10), s(b"d1"));
    c.send(&[&[2], &s(b"/c"), &s(b"d1"), &s(b"d2")]);
    assert_eq!(c.recv(10), s(b"d2"));
    // APPEND (9): creates, then appends; no reply.
    c.send(&[&[9], &s(b"/log"), &s(b"ab")]);
    c.send(&[&[9], &s(b"/log"), &s(b"c")]);
    // MULTI_SET (11) n (key, value) pairs: no reply. MULTI_GET (10) n keys -> n values.
    c.send(&[&[11], &n(2), &s(b"/m1"), &s(b"one"), &s(b"/m2"), &s(b"two")]);
    c.send(&[&[10], &n(3), &s(b"/m2"), &s(b"/log"), &s(b"/m1")]);
    assert_eq!(c.recv(8 * 3 + 9), [s(b"two"), s(b"abc"), s(b"one")].concat());
    assert!(c.quiet(), "SET, APPEND and MULTI_SET are not answered");
    // GETNUMKEYS (7) -> i64: /a /n /c /log /m1 /m2.
    c.send(&[&[7]]);
    assert_eq!(c.recv(8), 6i64.to_le_bytes());
    // DELETE_KEY (8) -> i64 1 / 0.
    c.send(&[&[8], &s(b"/m2")]);
    assert_eq!(c.recv(8), 1i64.to_le_bytes());
    c.send(&[&[8], &s(b"/m2")]);
    assert_eq!(c.recv(8), 0i64.to_le_bytes());
    // LIST_KEYS (17) -> i64 n, then n strings (in no set order).
    c.send(&[&[17]]);
    assert_eq!(c.recv(8), 5i64.to_le_bytes());
    let mut keys: Vec<Vec<u8>> = (0..5)
        .map(|_| {
            let len = u64::from_le_bytes(c.recv(8).try_into().unwrap());
            c.recv(len as usize)
        })
        .collect();
    keys.sort();
    assert_eq!(keys, [&b"/a"[..], b"/c", b"/log", b"/m1", b"/n"]);

    // WAIT (6) n keys: STOP_WAITING (0) once all exist, from whoever sets the last one.
    c.send(&[&[6], &n(1), &s(b"/a")]);
    assert_eq!(c.recv(1), [0], "the key exists: at once");
    c.send(&[&[6], &n(2), &s(b"/a"), &s(b"/later")]);
    assert!(c.quiet(), "no answer while /later is missing");
    m.set("later", b"").unwrap();
    assert_eq!(c.recv(1), [0]);
    // CANCEL_WAIT (12): WAIT_CANCELED (1); the wait is forgotten.
    c.send(&[&[6], &n(1), &s(b"/never")]);
    assert!(c.quiet());
    c.send(&[&[12]]);
    assert_eq!(c.recv(1), [1]);
    m.set("never", b"").unwrap();
    assert!(c.quiet(), "a canceled wait is not answered");
    // A request cut in pieces is answered once whole.
    let get = [&[3][..], &s(b"/a")].concat();
    for b in &get {
        c.send(&[std::slice::from_ref(b)]);
    }
    assert_eq!(c.recv(10), s(b"xy"));
}

/// A fake server: accepts one connection and checks the handshake of our client.
fn fake_server() -> (std::net::TcpListener, u16) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    (l, port)
}

#[test]
fn tcp_store_client_speaks_pytorchs_protocol() {
    use wire::{n, s, VALIDATE};
    let (listener, port) = fake_server();
    let server = thread::spawn(move || {
        let mut c = Raw(listener.accept().unwrap().0);
        c.0.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        // VALIDATE, then PING of the process id.
        assert_eq!(c.recv(5), VALIDATE);
        let pid = std::process::id().to_le_bytes();
        assert_eq!(c.recv(5), [&[13][..], &pid].concat());
        c.send(&[&pid]);
        // set("a", "xy") -> SET "/a" "xy", and a PING to know it is applied.
        let ping = [&[13][..], &pid].concat();
        let set = [&[1][..], &s(b"/a"), &s(b"xy")].concat();
        assert_eq!(c.recv(set.len()), set);
        assert_eq!(c.recv(5), ping);
        c.send(&[&pid]);
        // get("a") -> WAIT 1 "/a", STOP_WAITING, then GET "/a".
        let wait = [&[6][..], &n(1), &s(b"/a")].concat();
        assert_eq!(c.recv(wait.len()), wait);
        c.send(&[&[0]]);
        let get = [&[3][..], &s(b"/a")].concat();
        assert_eq!(c.recv(get.len()), get);
        c.send(&[&s(b"xy")]);
        // add("n", -3) -> ADD "/n" -3 -> i64.
        let add = [&[4][..], &s(b"/n"), &(-3i64).to_le_bytes()].concat();
        assert_eq!(c.recv(add.len()), add);
        c.send(&[&(-3i64).to_le_bytes()]);
        // check(["a", "b"]) -> CHECK 2 "/a" "/b" -> NOT_READY.
        let check = [&[5][..], &n(2), &s(b"/a"), &s(b"/b")].concat();
        assert_eq!(c.recv(check.len()), check);
        c.send(&[&[1]]);
        // wait_timeout(["w"], 100ms): WAIT, no answer, CANCEL_WAIT; a late STOP_WAITING
        // comes before the WAIT_CANCELED.
        let wait = [&[6][..], &n(1), &s(b"/w")].concat();
        assert_eq!(c.recv(wait.len()), wait);
        assert_eq!(c.recv(1), [12], "CANCEL_WAIT after the timeout");
        c.send(&[&[0, 1]]);
        // compare_set, delete_key, num_keys, append, multi_set, multi_get.
        let cas = [&[2][..], &s(b"/c"), &s(b"e"), &s(b"d")].concat();
        assert_eq!(c.recv(cas.len()), cas);
        c.send(&[&s(b"d")]);
        let del = [&[8][..], &s(b"/c")].concat();
        assert_eq!(c.recv(del.len()), del);
        c.send(&[&1i64.to_le_bytes()]);
        assert_eq!(c.recv(1), [7]);
        c.send(&[&42i64.to_le_bytes()]);
        let append = [&[9][..], &s(b"/l"), &s(b"z")].concat();
        assert_eq!(c.recv(append.len()), append);
        assert_eq!(c.recv(5), ping);
        c.send(&[&pid]);
        let mset = [&[11][..], &n(2), &s(b"/p"), &s(b"1"), &s(b"/q"), &s(b"2")].concat();
        assert_eq!(c.recv(mset.len()), mset);
        assert_eq!(c.recv(5), ping);
        c.send(&[&pid]);
        let wait = [&[6][..], &n(2), &s(b"/p"), &s(b"/q")].concat();
        assert_eq!(c.recv(wait.len()), wait);
        c.send(&[&[0]]);
        let mget = [&[10][..], &n(2), &s(b"/p"), &s(b"/q")].concat();
        assert_eq!(c.recv(mget.len()), mget);
        c.send(&[&s(b"1"), &s(b"2")]);
    });
    let store = client(port);
    store.set("a", b"xy").unwrap();
    assert_eq!(store.get("a").unwrap(), b"xy");
    assert_eq!(store.add("n", -3).unwrap(), -3);
    assert!(!store.check(&["a", "b"]).unwrap());
    let err = store.wait_timeout(&["w"], Duration::from_millis(100)).unwrap_err();
    assert!(matches!(err, Error::DistTimeout { .. }), "{err:?}");
    assert_eq!(store.compare_set("c", b"e", b"d").unwrap(), b"d", "the connection stayed in step");
    assert!(store.delete_key("c").unwrap());
    assert_eq!(store.num_keys().unwrap(), 42);
    store.append("l", b"z").unwrap();
    store.multi_set(&["p", "q"], &[b"1", b"2"]).unwrap();
    assert_eq!(store.multi_get(&["p", "q"]).unwrap(), [b"1", b"2"]);
    server.join().unwrap();
}

#[test]
fn tcp_store_closes_a_connection_that_sends_garbage() {
    use wire::{n, s, VALIDATE};
    let m = master();
    let huge_key = [&[1][..], &n(u64::MAX), b"k"].concat();
    let long_key = [&[1][..], &n(1 << 30)].concat();
    let too_many_keys = [&[5][..], &n(1 << 40)].concat();
    let get = [&[3][..], &s(b"/a")].concat();
    let cases: [(&str, Vec<u8>); 8] = [
        ("an unknown code", vec![0xEE, 1, 2, 3]),
        ("a request before VALIDATE", get.clone()),
        ("a bad magic", vec![0, 1, 2, 3, 4]),
        ("a key announcing u64::MAX bytes", [&VALIDATE[..], &huge_key].concat()),
        ("a key announcing 1 GiB, never sent", [&VALIDATE[..], &long_key].concat()),
        ("2^40 keys", [&VALIDATE[..], &too_many_keys].concat()),
        ("a second WAIT while one is pending", [&VALIDATE[..], &[6], &n(1), &s(b"/x"), &[6], &n(0)].concat()),
        (
            "add on a value that is not an integer",
            [&VALIDATE[..], &[1], &s(b"/t"), &s(b"abc"), &[4], &s(b"/t"), &n(1)].concat(),
        ),
    ];
    for (what, bytes) in cases {
        let mut c = Raw::connect(m.port());
        c.send(&[&bytes]);
        let answer = read_until_closed(&mut c.0, Duration::from_secs(5));
        assert_eq!(answer, Ok(vec![]), "{what}: closed, unanswered");
    }
    // The server still serves others.
    let c = client(m.port());
    c.set("after", b"garbage").unwrap();
    assert_eq!(m.get("after").unwrap(), b"garbage");
    assert_eq!(m.get("t").unwrap(), b"abc", "the failed add left the value");
}

#[test]
fn tcp_store_answers_pipelined_requests_whose_replies_back_up() {
    use wire::{s, VALIDATE};
    // Replies past the server's ~1 MiB of unsent bytes per connection pause the reading of
    // that connection's requests; once the client reads, the rest are still answered.
    let m = master();
    let big = vec![7u8; 4 << 20];
    let mut c = Raw::connect(m.port());
    let get = [&[3][..], &s(b"/big")].concat();
    c.send(&[&VALIDATE, &[1], &s(b"/big"), &s(&big), &get, &get, &get, &get]);
    for i in 0..4 {
        assert_eq!(c.recv(8 + big.len()), s(&big), "reply {i}");
    }
}
