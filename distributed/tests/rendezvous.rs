//! Rendezvous through each init method: the ranks get one shared store, their rank and the
//! world size; bad methods and missing parameters are errors in PyTorch's words.

use std::thread;
use std::time::Duration;

use c10::Error;
use distributed::rendezvous::rendezvous;

const T: Duration = Duration::from_secs(30);

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Every rank writes its rank under its own key and reads everyone else's.
fn all_ranks_meet(method: impl Fn(usize) -> (String, Option<usize>, Option<usize>) + Send + Sync + 'static, n: usize) {
    let method = std::sync::Arc::new(method);
    let handles: Vec<_> = (0..n)
        .map(|r| {
            let method = method.clone();
            thread::spawn(move || {
                let (m, rank, world) = method(r);
                let rv = rendezvous(&m, rank, world, T).unwrap();
                assert_eq!((rv.rank, rv.world_size), (r, n));
                rv.store.set(&format!("rank{r}"), r.to_string().as_bytes()).unwrap();
                let seen: Vec<Vec<u8>> = (0..n).map(|k| rv.store.get(&format!("rank{k}")).unwrap()).collect();
                // Rank 0 serves the TCP store: it leaves last, once everyone is done with it.
                rv.store.add("left", 1).unwrap();
                while r == 0 && rv.store.add("left", 0).unwrap() < n as i64 {
                    thread::sleep(Duration::from_millis(5));
                }
                seen
            })
        })
        .collect();
    for h in handles {
        let seen = h.join().unwrap();
        assert_eq!(seen, (0..n).map(|k| k.to_string().into_bytes()).collect::<Vec<_>>());
    }
}

#[test]
fn tcp_rendezvous_with_arguments_or_url_parameters() {
    let port = free_port();
    all_ranks_meet(move |r| (format!("tcp://127.0.0.1:{port}"), Some(r), Some(3)), 3);
    let port = free_port();
    all_ranks_meet(move |r| (format!("tcp://127.0.0.1:{port}?rank={r}&world_size=2"), None, None), 2);
}

#[test]
fn file_rendezvous_removes_the_file_after_the_job() {
    let path = std::env::temp_dir().join(format!("torch-rendezvous-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let p = path.display().to_string();
    all_ranks_meet(move |r| (format!("file://{p}"), Some(r), Some(3)), 3);
    assert!(!path.exists());
}

#[test]
fn env_rendezvous_reads_the_launcher_variables() {
    // The only test of this binary that touches the environment.
    for var in ["MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"] {
        std::env::remove_var(var);
    }
    let err = rendezvous("env://", None, None, T).err().unwrap();
    assert!(err.to_string().contains("environment variable RANK expected, but not set"), "{err}");
    std::env::set_var("RANK", "0");
    std::env::set_var("WORLD_SIZE", "1");
    std::env::set_var("MASTER_ADDR", "127.0.0.1");
    let err = rendezvous("env://", None, None, T).err().unwrap();
    assert!(err.to_string().contains("environment variable MASTER_PORT expected"), "{err}");
    std::env::set_var("MASTER_PORT", free_port().to_string());
    let rv = rendezvous("env://", None, None, T).unwrap();
    assert_eq!((rv.rank, rv.world_size), (0, 1));
    rv.store.set("k", b"v").unwrap();
    assert_eq!(rv.store.get("k").unwrap(), b"v");
}

#[test]
fn bad_init_methods_are_errors() {
    let cases = [
        ("localhost:29500", "init_method must be"),
        ("udp://x:1", "no rendezvous handler for udp://"),
        ("tcp://127.0.0.1:1", "rank parameter missing"),
        ("tcp://127.0.0.1:1?rank=0", "world_size parameter missing"),
        ("tcp://127.0.0.1?rank=0&world_size=1", "needs host:port"),
        ("tcp://127.0.0.1:1?rank=2&world_size=2", "rank 2 is not in a world of size 2"),
        ("file:///tmp/x?rank=a&world_size=1", "rank must be a non-negative integer"),
    ];
    for (m, want) in cases {
        let err = rendezvous(m, None, None, T).err().unwrap_or_else(|| panic!("{m} should fail"));
        assert!(matches!(err, Error::Distributed { .. }) && err.to_string().contains(want), "{m}: {err}");
    }
}
