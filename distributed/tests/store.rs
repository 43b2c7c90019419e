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
    assert!(matches!(other.add("text", 1), Err(Error::Distributed { .. })));
    assert_eq!(store.get("text").unwrap(), b"abc", "a failed add leaves the value");

    // compare_set.
    assert_eq!(store.compare_set("c", b"", b"first").unwrap(), b"first", "missing + empty expected: set");
    assert_eq!(other.compare_set("c", b"nope", b"second").unwrap(), b"first", "mismatch: the current value");
    assert_eq!(other.compare_set("c", b"first", b"second").unwrap(), b"second", "match: swapped");
    assert_eq!(store.get("c").unwrap(), b"second");
    assert_eq!(store.compare_set("d", b"x", b"y").unwrap(), b"x", "missing + non-empty expected: expected back");
    assert!(!store.check(&["d"]).unwrap(), "and the key stays missing");

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
    assert_eq!(m.num_keys().unwrap(), 5, "counter, ranks, done1..3 (not the store's own keys)");
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

#[test]
fn tcp_store_closes_a_connection_that_sends_garbage() {
    use std::io::Write;
    let m = master();
    let garbage: [&[u8]; 3] = [
        &[0xEE, 1, 2, 3],
        // A set whose key announces u64::MAX bytes.
        &[1, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, b'k'],
        // A key longer than any value the server takes (1 GiB), announced, never sent.
        &[1, 0, 0, 0, 0x40, 0, 0, 0, 0],
    ];
    for bytes in garbage {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", m.port())).unwrap();
        s.write_all(bytes).unwrap();
        let answer = read_until_closed(&mut s, Duration::from_secs(5));
        assert_eq!(answer, Ok(vec![]), "{bytes:?}: closed, unanswered");
    }
    // The server still serves others.
    let c = client(m.port());
    c.set("after", b"garbage").unwrap();
    assert_eq!(m.get("after").unwrap(), b"garbage");
}
