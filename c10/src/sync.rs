//! Locks that count how often the calling thread takes them.
//!
//! Note [Counted locks]: a kernel launch must take no lock on its hot path (Note [Kernel
//! handles] in `aten::native::stub`). The locks of the CUDA backend, its caching allocator and
//! the device-loop registry are these wrappers of `std::sync`'s, which add one to a
//! thread-local counter per acquisition (a few instructions, no shared write), so a test reads
//! [`lock_acquisitions`] before and after a launch and sees every lock the launch took. They
//! behave exactly as the standard locks otherwise, poisoning included.

use std::cell::Cell;
use std::sync::{LockResult, MutexGuard, RwLockReadGuard, RwLockWriteGuard, TryLockResult};

thread_local! {
    static ACQUIRED: Cell<u64> = const { Cell::new(0) };
}

#[inline]
fn count() {
    ACQUIRED.with(|c| c.set(c.get() + 1));
}

/// How many counted locks the calling thread has taken so far.
pub fn lock_acquisitions() -> u64 {
    ACQUIRED.with(Cell::get)
}

/// `std::sync::Mutex`, counted (Note [Counted locks]).
#[derive(Debug, Default)]
pub struct Mutex<T: ?Sized>(std::sync::Mutex<T>);

impl<T> Mutex<T> {
    /// A mutex holding `value`.
    pub const fn new(value: T) -> Mutex<T> {
        Mutex(std::sync::Mutex::new(value))
    }

    /// The value, consuming the mutex.
    pub fn into_inner(self) -> LockResult<T> {
        self.0.into_inner()
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Takes the lock, blocking (`std::sync::Mutex::lock`).
    #[inline]
    pub fn lock(&self) -> LockResult<MutexGuard<'_, T>> {
        count();
        self.0.lock()
    }

    /// Takes the lock if it is free (`std::sync::Mutex::try_lock`).
    #[inline]
    pub fn try_lock(&self) -> TryLockResult<MutexGuard<'_, T>> {
        count();
        self.0.try_lock()
    }

    /// The value through an exclusive borrow (no locking).
    pub fn get_mut(&mut self) -> LockResult<&mut T> {
        self.0.get_mut()
    }
}

/// `std::sync::RwLock`, counted (Note [Counted locks]).
#[derive(Debug, Default)]
pub struct RwLock<T: ?Sized>(std::sync::RwLock<T>);

impl<T> RwLock<T> {
    /// A lock holding `value`.
    pub const fn new(value: T) -> RwLock<T> {
        RwLock(std::sync::RwLock::new(value))
    }
}

impl<T: ?Sized> RwLock<T> {
    /// Takes a shared lock (`std::sync::RwLock::read`).
    #[inline]
    pub fn read(&self) -> LockResult<RwLockReadGuard<'_, T>> {
        count();
        self.0.read()
    }

    /// Takes the exclusive lock (`std::sync::RwLock::write`).
    #[inline]
    pub fn write(&self) -> LockResult<RwLockWriteGuard<'_, T>> {
        count();
        self.0.write()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_acquisition_is_counted_on_its_thread() {
        let (m, rw) = (Mutex::new(1), RwLock::new(2));
        let before = lock_acquisitions();
        *m.lock().unwrap() += 1;
        assert_eq!(*rw.read().unwrap(), 2);
        *rw.write().unwrap() = 3;
        drop(m.try_lock().unwrap());
        assert_eq!(lock_acquisitions() - before, 4);
        let other = std::thread::spawn(move || {
            let start = lock_acquisitions();
            drop(m.lock().unwrap());
            lock_acquisitions() - start
        });
        assert_eq!(other.join().unwrap(), 1);
        assert_eq!(lock_acquisitions() - before, 4, "another thread's locks are not this thread's");
        assert_eq!(*rw.read().unwrap(), 3);
    }
}
