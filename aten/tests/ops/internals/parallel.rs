//! Tests of `parallel`'s regions (Note [The caller works too]), moved out of the crate: Note
//! [Tests outside aten].

use aten::parallel::{for_each, for_each_chunk_mut, try_for_each_init};
use c10::{Error, Result};

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// Every item runs exactly once, from the caller's thread (outside the pool) and from
/// workers, and the caller returns only after all of them: many short regions in a row,
/// so jobs that start after the items ran out meet regions that have already returned.
#[test]
fn regions_run_every_item_once_with_the_caller_working() {
    assert!(rayon::current_thread_index().is_none(), "the test thread is outside the pool");
    for round in 0..2000 {
        let n = 1 + round % 37;
        let hits: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
        for_each(n, |i| {
            hits[i].fetch_add(1, Relaxed);
        });
        assert!(hits.iter().all(|h| h.load(Relaxed) == 1), "round {round}");
    }
    // The caller takes items itself: with the workers busy elsewhere, it runs them all.
    let caller = std::thread::current().id();
    let by_caller = AtomicUsize::new(0);
    // A broadcast holds every worker until the barrier opens below.
    let threads = rayon::current_num_threads();
    let held = std::sync::Arc::new((AtomicUsize::new(0), std::sync::Barrier::new(threads + 1)));
    let h = held.clone();
    rayon::spawn_broadcast(move |_| {
        h.0.fetch_add(1, Relaxed);
        h.1.wait();
    });
    while held.0.load(Relaxed) < threads {
        std::thread::yield_now();
    }
    for_each(8, |_| {
        if std::thread::current().id() == caller {
            by_caller.fetch_add(1, Relaxed);
        }
    });
    assert_eq!(by_caller.load(Relaxed), 8);
    held.1.wait();
}

/// Per-participant state is made once per participating thread; the first error comes back
/// after the started items ended, and items not yet started are skipped.
#[test]
fn regions_return_the_first_error_and_make_state_per_thread() {
    let inits = AtomicUsize::new(0);
    let ran = AtomicUsize::new(0);
    let r: Result<()> = try_for_each_init(
        1000,
        || inits.fetch_add(1, Relaxed),
        |_, i| {
            ran.fetch_add(1, Relaxed);
            if i == 3 {
                return Err(Error::invalid("t", format!("item {i}")));
            }
            std::thread::sleep(std::time::Duration::from_micros(50));
            Ok(())
        },
    );
    let e = r.unwrap_err();
    assert!(e.to_string().contains("item 3"), "{e}");
    assert!(ran.load(Relaxed) < 1000, "items after the error were skipped");
    assert!((1..=rayon::current_num_threads()).contains(&inits.load(Relaxed)));
    // Nested regions (an item that runs a region of its own) complete.
    let total = AtomicUsize::new(0);
    for_each(4, |_| {
        for_each(5, |_| {
            total.fetch_add(1, Relaxed);
        })
    });
    assert_eq!(total.load(Relaxed), 20);
}

/// A panicking item panics the caller once every claimed item has ended (no hang, no
/// abort), wherever it ran.
#[test]
fn a_panicking_item_panics_the_caller() {
    for bad in [0usize, 7] {
        let r = std::panic::catch_unwind(|| {
            for_each(8, |i| {
                if i == bad {
                    panic!("item {i} fails");
                }
                std::thread::sleep(std::time::Duration::from_micros(200));
            })
        });
        assert!(r.is_err(), "item {bad}");
    }
    // The pool still works afterwards.
    let n = AtomicUsize::new(0);
    for_each(16, |_| {
        n.fetch_add(1, Relaxed);
    });
    assert_eq!(n.load(Relaxed), 16);
}

/// Pieces of a mutable slice go to their own calls, the last one shorter.
#[test]
fn chunks_of_a_slice_cover_it_once() {
    let mut v = vec![0u32; 1003];
    for_each_chunk_mut(&mut v, 10, |i, piece| {
        assert!(piece.len() == 10 || (i == 100 && piece.len() == 3));
        for (k, x) in piece.iter_mut().enumerate() {
            *x += (i * 10 + k) as u32 + 1;
        }
    });
    assert!(v.iter().enumerate().all(|(k, &x)| x == k as u32 + 1));
}
