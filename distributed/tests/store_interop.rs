//! Our `TcpStore` against PyTorch's (`tcpstore_interop.py` beside this file): a PyTorch master
//! (libuv and classic backends) with our clients, and our master with PyTorch clients, each
//! side using every request type, waits with timeouts and concurrent adds included.
//!
//! Needs Python with PyTorch, so the tests are ignored by default; CI runs them with
//! `cargo test -p distributed --test store_interop -- --ignored` (`PYTHON` names the
//! interpreter, `python3` by default). An ignored test reports as ignored, never as passed.

use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use c10::Error;
use distributed::{Store, TcpStore, TcpStoreOptions};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn options(is_master: bool, world_size: Option<usize>) -> TcpStoreOptions {
    TcpStoreOptions { is_master, world_size, timeout: Duration::from_secs(60), wait_for_workers: true }
}

/// Starts the PyTorch side (see the script's docstring).
fn python(port: u16, master: bool, libuv: bool) -> Child {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/tcpstore_interop.py");
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    Command::new(&python)
        .arg(script)
        .args(["--port", &port.to_string(), "--master", &(master as u8).to_string()])
        .args(["--libuv", &(libuv as u8).to_string()])
        // Not the repository root: its `torch/` crate folder would shadow the torch package.
        .current_dir(std::env::temp_dir())
        // Closed by `finished` when our side has no more requests (see below).
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e}"))
}

/// Tells the PyTorch side that our stores are done (the end of its stdin), waits for it (at most
/// 120 s) and fails with its output unless it passed.
///
/// A PyTorch master must serve until then, not merely until `rs/done` is set: our `set` is
/// followed by a `PING` whose echo it reads (Note [TcpStore client]), and a master that exited
/// on seeing the key reset that connection before the echo ("Connection reset by peer").
fn finished(mut child: Child) {
    drop(child.stdin.take());
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            break;
        }
        thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the PyTorch side failed ({}):\n{text}", out.status);
    assert!(text.contains("tcpstore_interop.py: OK"), "{text}");
}

/// Our side: `store` is the rank that counts itself in (master or not).
fn our_part(store: &TcpStore, port: u16) {
    store.set("rs/key", b"world").unwrap();
    store.append("rs/log", b"ru").unwrap();
    store.append("rs/log", b"st").unwrap();
    store.multi_set(&["rs/m1", "rs/m2"], &[b"1", b"22"]).unwrap();
    assert_eq!(store.compare_set("rs/cas", b"", b"first").unwrap(), b"first");
    assert_eq!(store.compare_set("rs/cas", b"nope", b"x").unwrap(), b"first");
    assert_eq!(store.compare_set("rs/cas", b"first", b"second").unwrap(), b"second");
    assert_eq!(store.compare_set("rs/missing", b"x", b"y").unwrap(), b"x");
    assert!(!store.check(&["rs/missing"]).unwrap());
    store.set("rs/del", b"d").unwrap();

    // 4 stores adding at once, beside the PyTorch side's 2.
    let adders: Vec<_> = (0..4)
        .map(|_| {
            thread::spawn(move || {
                let s = TcpStore::new("127.0.0.1", port, options(false, None)).unwrap();
                for _ in 0..100 {
                    s.add("counter", 1).unwrap();
                }
            })
        })
        .collect();
    store.set("rs/ready", b"").unwrap();

    // What the PyTorch side wrote.
    store.wait(&["py/ready"]).unwrap();
    assert_eq!(store.get("py/key").unwrap(), b"hello");
    assert_eq!(store.get("py/log").unwrap(), b"abcd");
    assert_eq!(store.multi_get(&["py/m1", "py/m2"]).unwrap(), [&b"x"[..], b""]);
    assert_eq!(store.get("py/cas").unwrap(), b"two");
    assert!(store.check(&["py/key", "py/m2"]).unwrap());

    // A wait that times out, then the store still serves.
    let start = Instant::now();
    let err = store.wait_timeout(&["never"], Duration::from_millis(200)).unwrap_err();
    assert!(matches!(err, Error::DistTimeout { .. }), "{err:?}");
    assert!(start.elapsed() >= Duration::from_millis(200) && start.elapsed() < Duration::from_secs(30));
    assert_eq!(store.get("py/key").unwrap(), b"hello");

    // The PyTorch side's get is blocked on rs/late until we set it.
    store.wait(&["py/want_late"]).unwrap();
    thread::sleep(Duration::from_millis(100));
    store.set("rs/late", b"late").unwrap();

    for a in adders {
        a.join().unwrap();
    }
    store.set("rs/adds_done", b"").unwrap();
    store.wait(&["py/done"]).unwrap();
    assert_eq!(store.add("counter", 0).unwrap(), 500);
    let theirs: i64 = String::from_utf8(store.get("py/num_keys").unwrap()).unwrap().parse().unwrap();
    assert_eq!(store.num_keys().unwrap(), theirs + 2, "the same count, py/num_keys and py/done since");
    assert!(store.delete_key("py/key").unwrap());
    store.set("rs/done", b"").unwrap();
}

/// A PyTorch master (`libuv`: which backend) with our stores as clients.
fn pytorch_master(libuv: bool) {
    let port = free_port();
    let py = python(port, true, libuv);
    // Counts itself in under init/, which the PyTorch master waits for.
    let store = TcpStore::new("127.0.0.1", port, options(false, Some(2))).unwrap();
    our_part(&store, port);
    finished(py);
}

#[test]
#[ignore = "needs Python with PyTorch: cargo test -p distributed --test store_interop -- --ignored"]
fn pytorch_libuv_master_with_our_clients() {
    pytorch_master(true);
}

#[test]
#[ignore = "needs Python with PyTorch: cargo test -p distributed --test store_interop -- --ignored"]
fn pytorch_classic_master_with_our_clients() {
    pytorch_master(false);
}

#[test]
#[ignore = "needs Python with PyTorch: cargo test -p distributed --test store_interop -- --ignored"]
fn our_master_with_pytorch_clients() {
    let port = free_port();
    let py = python(port, false, true);
    // Waits until the PyTorch client has counted itself in.
    let store = TcpStore::new("127.0.0.1", port, options(true, Some(2))).unwrap();
    our_part(&store, port);
    finished(py);
}
