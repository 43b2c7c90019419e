//! The TCP store's server forgets closed connections (Note [TCPStore server loop]):
//! under a low descriptor limit it serves connection after connection, and the process's
//! descriptor count returns to where it started.
//!
//! A test binary of its own: it lowers the process's descriptor limit and counts the process's
//! descriptors, which tests running beside it would disturb.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use distributed::{Store, TcpStore, TcpStoreOptions};

/// The number of descriptors this process has open.
fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Waits (at most 10 s) for the descriptor count to come back to `baseline`: the server's
/// threads close their side of a connection just after the client sees it close.
fn settles_to(baseline: usize) -> usize {
    let start = Instant::now();
    loop {
        let n = open_descriptors();
        if n <= baseline || start.elapsed() > Duration::from_secs(10) {
            return n;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Sets the soft limit on open descriptors (`ulimit -n`).
fn limit_descriptors(n: u64) {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `lim` is a valid rlimit for getrlimit to fill and setrlimit to read.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        lim.rlim_cur = n.min(lim.rlim_max);
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
    }
}

/// Reads until the server closes the connection (or resets it); false if it stays open 5 s.
fn closed_by_server(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; 64];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) => return e.kind() == std::io::ErrorKind::ConnectionReset,
        }
    }
}

#[test]
fn the_server_serves_10000_connections_under_256_descriptors() {
    limit_descriptors(256);
    let opts = |is_master| TcpStoreOptions { is_master, timeout: Duration::from_secs(30), ..Default::default() };
    let master = TcpStore::new("127.0.0.1", 0, opts(true)).unwrap();
    let port = master.port();
    master.set("k", b"v").unwrap();
    let baseline = open_descriptors();

    let start = Instant::now();
    let mut requests = 0;
    for i in 0..10_000 {
        match i % 3 {
            // Garbage: the server closes the connection unanswered.
            0 => {
                let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
                s.write_all(&[0xEE; 9]).unwrap();
                assert!(closed_by_server(&mut s), "cycle {i}: garbage left the connection open");
            }
            // A store that makes a request and leaves.
            1 => {
                let c = TcpStore::new("127.0.0.1", port, opts(false)).unwrap();
                requests += 1;
                assert_eq!(c.add("cycles", 1).unwrap(), requests);
            }
            // Connect and close at once.
            _ => drop(TcpStream::connect(("127.0.0.1", port)).unwrap()),
        }
    }
    let cycles = start.elapsed();

    // A burst of 40 stores open at once (each holds 3 descriptors: 2 in its client, 1 in the
    // server), then closed.
    let burst: Vec<TcpStore> = (0..40).map(|_| TcpStore::new("127.0.0.1", port, opts(false)).unwrap()).collect();
    for c in &burst {
        assert_eq!(c.get("k").unwrap(), b"v");
    }
    drop(burst);

    let after = settles_to(baseline);
    assert!(after <= baseline, "{after} descriptors open after the cycles, {baseline} before");
    // And a new client is served.
    let c = TcpStore::new("127.0.0.1", port, opts(false)).unwrap();
    assert_eq!(c.add("cycles", 0).unwrap(), 3333);
    assert_eq!(c.get("k").unwrap(), b"v");
    eprintln!("10000 cycles in {cycles:?}; descriptors {baseline} before, {after} after");
}
