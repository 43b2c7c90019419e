//! `SetOnce<T>`: a cell written at most once and read without locking.
//!
//! Note [SetOnce instead of OnceLock]: per-operation metadata (a tensor's autograd metadata, a
//! node's input metadata) is written once, right after the object is made, by the thread that
//! made it, and read many times afterwards. `std::sync::OnceLock` reads with one load too, but
//! its write goes through `Once::call`: a boxed closure, a compare-and-swap, an atomic swap to
//! mark completion and a check for sleeping waiters, about 100 instructions on the hot path of
//! every recorded operation. `SetOnce` writes with one compare-and-swap and one release store;
//! there is no waiting initialiser, because the value is made before the cell is claimed, so a
//! thread that loses the race only waits for a plain memory write to finish.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU8, Ordering};

const EMPTY: u8 = 0;
const WRITING: u8 = 1;
const READY: u8 = 2;

/// A value set at most once, then shared by reference.
pub struct SetOnce<T> {
    state: AtomicU8,
    value: UnsafeCell<MaybeUninit<T>>,
}

// SAFETY: the value is written by one thread (the one whose compare-and-swap claimed the cell)
// before the release store of READY, and only read after an acquire load sees READY, so every
// reader sees the whole write; shared access hands out `&T` across threads, hence `T: Sync`,
// and the value may be dropped on another thread, hence `T: Send`.
unsafe impl<T: Send + Sync> Sync for SetOnce<T> {}
// SAFETY: moving the cell moves the value it owns.
unsafe impl<T: Send> Send for SetOnce<T> {}

impl<T> Default for SetOnce<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> SetOnce<T> {
    /// An empty cell.
    pub const fn new() -> Self {
        SetOnce { state: AtomicU8::new(EMPTY), value: UnsafeCell::new(MaybeUninit::uninit()) }
    }

    /// A cell holding `v`.
    pub fn with(v: T) -> Self {
        SetOnce { state: AtomicU8::new(READY), value: UnsafeCell::new(MaybeUninit::new(v)) }
    }

    /// The value, if set.
    #[inline]
    pub fn get(&self) -> Option<&T> {
        if self.state.load(Ordering::Acquire) == READY {
            // SAFETY: READY is stored (release) only after the value was written, and the
            // value is never written again while the cell is shared.
            Some(unsafe { (*self.value.get()).assume_init_ref() })
        } else {
            None
        }
    }

    /// Stores `v` if the cell is empty and returns the stored value; otherwise gives `v` back.
    #[inline]
    pub fn set(&self, v: T) -> Result<&T, T> {
        match self.state.compare_exchange(EMPTY, WRITING, Ordering::Acquire, Ordering::Acquire) {
            Ok(_) => {
                // SAFETY: the compare-and-swap gave this thread the only right to write, and
                // no reader looks at the value before READY.
                let r = unsafe { (*self.value.get()).write(v) };
                self.state.store(READY, Ordering::Release);
                Ok(r)
            }
            Err(_) => Err(v),
        }
    }

    /// The value, storing `make()` first if the cell is empty. When two threads race, one value
    /// is stored and the other dropped; both get the stored one.
    #[inline]
    pub fn get_or_set_with(&self, make: impl FnOnce() -> T) -> &T {
        if let Some(v) = self.get() {
            return v;
        }
        match self.set(make()) {
            Ok(v) => v,
            Err(_) => loop {
                // The winner is between its compare-and-swap and its release store: a plain
                // memory write, so this wait is short.
                if let Some(v) = self.get() {
                    return v;
                }
                std::hint::spin_loop();
            },
        }
    }
}

impl<T> Drop for SetOnce<T> {
    fn drop(&mut self) {
        if *self.state.get_mut() == READY {
            // SAFETY: READY means the value was written and is dropped only here.
            unsafe { self.value.get_mut().assume_init_drop() }
        }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for SetOnce<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.get() {
            Some(v) => f.debug_tuple("SetOnce").field(v).finish(),
            None => f.write_str("SetOnce(<unset>)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    #[test]
    fn set_once_then_read() {
        let c = SetOnce::new();
        assert!(c.get().is_none());
        assert_eq!(c.set(3), Ok(&3));
        assert_eq!(c.set(4), Err(4));
        assert_eq!(c.get(), Some(&3));
        assert_eq!(*c.get_or_set_with(|| 5), 3);
        let d = SetOnce::with(String::from("ab"));
        assert_eq!(d.get().map(String::as_str), Some("ab"));
        assert_eq!(d.set(String::from("c")), Err(String::from("c")));
        assert_eq!(format!("{d:?}"), "SetOnce(\"ab\")");
        assert_eq!(format!("{:?}", SetOnce::<u8>::new()), "SetOnce(<unset>)");
    }

    #[test]
    fn racing_writers_store_one_value_and_drop_the_rest() {
        struct Counted(usize, Arc<AtomicUsize>);
        impl Drop for Counted {
            fn drop(&mut self) {
                self.1.fetch_add(1, Ordering::SeqCst);
            }
        }
        for _ in 0..50 {
            let drops = Arc::new(AtomicUsize::new(0));
            let cell = Arc::new(SetOnce::new());
            let seen: Vec<usize> = std::thread::scope(|s| {
                let hs: Vec<_> = (0..4)
                    .map(|i| {
                        let (cell, drops) = (cell.clone(), drops.clone());
                        s.spawn(move || cell.get_or_set_with(|| Counted(i, drops)).0)
                    })
                    .collect();
                hs.into_iter().map(|h| h.join().unwrap()).collect()
            });
            // Everyone saw the same stored value; the losers' values were dropped.
            assert!(seen.iter().all(|&v| v == seen[0]));
            let losers = drops.load(Ordering::SeqCst);
            drop(Arc::try_unwrap(cell).ok().expect("last handle"));
            assert_eq!(drops.load(Ordering::SeqCst), losers + 1);
            assert!(losers <= 3);
        }
    }
}
