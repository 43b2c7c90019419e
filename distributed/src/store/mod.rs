//! Key-value stores for rendezvous (c10d's `Store`): ranks publish and wait for small values
//! (addresses, unique ids, counters) through them before any collective runs.
//!
//! Note [Store semantics]: as PyTorch's stores.
//! - Values are bytes. `get` waits until the key exists, at most the store's timeout (default
//!   300 s, [`DEFAULT_STORE_TIMEOUT`]), then fails with [`Error::DistTimeout`]
//!   ("wait timeout after 100ms, keys: [a]"), never hangs forever.
//! - `add(key, n)` keeps the value as a decimal string: a missing key counts as 0, and the new
//!   sum is returned; `add(key, 0)` reads a counter without waiting.
//! - `compare_set(key, expected, desired)` sets `desired` when the current value is
//!   `expected` (a missing key matches an empty `expected`) and returns the value the key then
//!   has; a missing key with a non-empty `expected` is left missing and `expected` is returned.
//! - `append(key, v)` adds bytes to the end of the value (a missing key starts empty);
//!   `multi_get` waits for every key and returns their values in order; `multi_set` sets
//!   several keys (as many values as keys, else an error).
//! - `wait(keys)` waits for all of them; `check(keys)` tells without waiting; `delete_key`
//!   says whether the key existed; `num_keys` counts the user's keys (not the store's own
//!   bookkeeping keys) except in a `TcpStore`, whose server counts every key as PyTorch's
//!   does (the `init/` counter of stores that joined with a world size).

mod file;
mod hash;
mod prefix;
mod tcp;

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

pub use c10::{Error, Result};
pub use file::FileStore;
pub use hash::HashStore;
pub use prefix::PrefixStore;
pub use tcp::{TcpStore, TcpStoreOptions};

/// The default timeout of a store's blocking operations (PyTorch's `timedelta(seconds=300)`).
pub const DEFAULT_STORE_TIMEOUT: Duration = Duration::from_secs(300);

/// A key-value store shared by the ranks of a job (see Note [Store semantics]).
pub trait Store: Send + Sync {
    /// Sets `key` to `value`, waking everyone waiting for it.
    fn set(&self, key: &str, value: &[u8]) -> Result<()>;
    /// The value of `key`, waiting up to the store's timeout for it to be set.
    fn get(&self, key: &str) -> Result<Vec<u8>>;
    /// Adds `amount` to the integer at `key` (0 when missing) and returns the sum.
    fn add(&self, key: &str, amount: i64) -> Result<i64>;
    /// Sets `desired` if `key` holds `expected`; returns the value `key` then holds (see Note
    /// [Store semantics] for a missing key).
    fn compare_set(&self, key: &str, expected: &[u8], desired: &[u8]) -> Result<Vec<u8>>;
    /// Waits until every key exists, at most `timeout`.
    fn wait_timeout(&self, keys: &[&str], timeout: Duration) -> Result<()>;
    /// Whether every key exists, without waiting.
    fn check(&self, keys: &[&str]) -> Result<bool>;
    /// Removes `key`; whether it existed.
    fn delete_key(&self, key: &str) -> Result<bool>;
    /// The number of keys set by users of the store.
    fn num_keys(&self) -> Result<i64>;
    /// The timeout of `get` and `wait`.
    fn timeout(&self) -> Duration;
    /// Changes the timeout of `get` and `wait`.
    fn set_timeout(&self, timeout: Duration);

    /// Appends `value` to the value of `key` (a missing key starts empty), waking everyone
    /// waiting for it.
    fn append(&self, key: &str, value: &[u8]) -> Result<()>;

    /// A store with the same keys through a connection of its own (PyTorch's `Store.clone()`),
    /// so that a thread can use it while another blocks in this one; `None` when the store's
    /// operations do not hold each other up (or it cannot open another connection).
    fn clone_store(&self) -> Result<Option<Arc<dyn Store>>> {
        Ok(None)
    }

    /// Waits until every key exists, at most the store's timeout.
    fn wait(&self, keys: &[&str]) -> Result<()> {
        self.wait_timeout(keys, self.timeout())
    }

    /// The values of `keys`, in order, once all exist (at most the store's timeout).
    fn multi_get(&self, keys: &[&str]) -> Result<Vec<Vec<u8>>> {
        self.wait(keys)?;
        keys.iter().map(|k| self.get(k)).collect()
    }

    /// Sets `keys[i]` to `values[i]`; the two must be as long.
    fn multi_set(&self, keys: &[&str], values: &[&[u8]]) -> Result<()> {
        check_multi_set(keys, values)?;
        keys.iter().zip(values).try_for_each(|(k, v)| self.set(k, v))
    }
}

/// `multi_set`'s keys and values pair up.
pub(crate) fn check_multi_set(keys: &[&str], values: &[&[u8]]) -> Result<()> {
    if keys.len() != values.len() {
        return Err(Error::Distributed {
            op: "multi_set".into(),
            msg: format!("{} keys and {} values: each key needs a value", keys.len(), values.len()),
        });
    }
    Ok(())
}

/// Keys the stores use for their own bookkeeping start with this (never a user's key: users'
/// keys are text without NUL); `num_keys` leaves them out.
pub(crate) const INTERNAL_PREFIX: &str = "\0torch/";

/// The timeout error of `op` waiting for `keys`.
pub(crate) fn timeout_error(op: &str, timeout: Duration, keys: &[&str]) -> Error {
    tracing::warn!(target: "torch::distributed", op, timeout_ms = timeout.as_millis() as u64, ?keys, "store wait timed out");
    Error::DistTimeout { op: op.into(), msg: format!("wait timeout after {}ms, keys: {keys:?}", timeout.as_millis()) }
}

/// An `add` on a value that is not a decimal integer.
pub(crate) fn not_an_integer(key: &str, value: &[u8]) -> Error {
    Error::Distributed {
        op: "add".into(),
        msg: format!("the value of key {key:?} is not an integer: {:?}", String::from_utf8_lossy(value)),
    }
}

/// The integer a value written by `add` holds.
pub(crate) fn parse_counter(key: &str, value: &[u8]) -> Result<i64> {
    std::str::from_utf8(value).ok().and_then(|s| s.parse::<i64>().ok()).ok_or_else(|| not_an_integer(key, value))
}

/// The sum `add(key, amount)` stores, from the key's current value (see Note [Store
/// semantics]); shared by every store's `add`.
pub(crate) fn added(current: Option<&[u8]>, key: &str, amount: i64) -> Result<i64> {
    let current = match current {
        Some(v) => parse_counter(key, v)?,
        None => 0,
    };
    Ok(current.wrapping_add(amount))
}

/// Whether `compare_set(key, expected, _)` swaps, given the key's current value, and
/// otherwise the value it returns.
pub(crate) fn compare_set_outcome(current: Option<&[u8]>, expected: &[u8]) -> Option<Vec<u8>> {
    match current {
        None if expected.is_empty() => None,
        None => Some(expected.to_vec()),
        Some(current) if current == expected => None,
        Some(current) => Some(current.to_vec()),
    }
}

/// The in-memory table behind [`HashStore`]: the map, and a
/// condition variable notified on every change so waiters re-check.
#[derive(Default)]
pub(crate) struct Table {
    map: Mutex<HashMap<String, Vec<u8>>>,
    changed: Condvar,
}

impl Table {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Vec<u8>>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn set(&self, key: &str, value: &[u8]) {
        self.lock().insert(key.to_string(), value.to_vec());
        self.changed.notify_all();
    }

    pub(crate) fn get(&self, key: &str, timeout: Duration) -> Result<Vec<u8>> {
        let map = self.wait_locked("get", &[key], timeout)?;
        Ok(map.get(key).cloned().unwrap_or_default())
    }

    pub(crate) fn add(&self, key: &str, amount: i64) -> Result<i64> {
        let mut map = self.lock();
        let sum = added(map.get(key).map(Vec::as_slice), key, amount)?;
        map.insert(key.to_string(), sum.to_string().into_bytes());
        drop(map);
        self.changed.notify_all();
        Ok(sum)
    }

    pub(crate) fn compare_set(&self, key: &str, expected: &[u8], desired: &[u8]) -> Vec<u8> {
        let mut map = self.lock();
        if let Some(kept) = compare_set_outcome(map.get(key).map(Vec::as_slice), expected) {
            return kept;
        }
        map.insert(key.to_string(), desired.to_vec());
        drop(map);
        self.changed.notify_all();
        desired.to_vec()
    }

    pub(crate) fn append(&self, key: &str, value: &[u8]) {
        self.lock().entry(key.to_string()).or_default().extend_from_slice(value);
        self.changed.notify_all();
    }

    pub(crate) fn wait(&self, keys: &[&str], timeout: Duration) -> Result<()> {
        self.wait_locked("wait", keys, timeout).map(|_| ())
    }

    /// The map once every key exists, or the timeout error.
    fn wait_locked(
        &self,
        op: &str,
        keys: &[&str],
        timeout: Duration,
    ) -> Result<MutexGuard<'_, HashMap<String, Vec<u8>>>> {
        let deadline = Instant::now().checked_add(timeout);
        let mut map = self.lock();
        loop {
            if keys.iter().all(|k| map.contains_key(*k)) {
                return Ok(map);
            }
            let left = match deadline {
                Some(d) => d.saturating_duration_since(Instant::now()),
                None => Duration::from_secs(3600),
            };
            if left.is_zero() {
                return Err(timeout_error(op, timeout, keys));
            }
            map = self.changed.wait_timeout(map, left).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    pub(crate) fn check(&self, keys: &[&str]) -> bool {
        let map = self.lock();
        keys.iter().all(|k| map.contains_key(*k))
    }

    pub(crate) fn delete(&self, key: &str) -> bool {
        let existed = self.lock().remove(key).is_some();
        self.changed.notify_all();
        existed
    }

    pub(crate) fn num_keys(&self) -> i64 {
        self.lock().keys().filter(|k| !k.starts_with(INTERNAL_PREFIX)).count() as i64
    }
}

/// A timeout that a `Mutex` holds, for stores whose timeout can change after construction.
pub(crate) struct TimeoutCell(Mutex<Duration>);

impl TimeoutCell {
    pub(crate) fn new(d: Duration) -> Self {
        TimeoutCell(Mutex::new(d))
    }
    pub(crate) fn get(&self) -> Duration {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
    pub(crate) fn set(&self, d: Duration) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = d;
    }
}
