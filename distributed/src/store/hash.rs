//! `HashStore`: a store in this process's memory (c10d's `HashStore`), for threads that play
//! ranks, and for tests.

use std::time::Duration;

use super::{Result, Store, Table, TimeoutCell, DEFAULT_STORE_TIMEOUT};

/// A store in memory, shared by reference between the threads of one process.
///
/// ```
/// use distributed::{HashStore, Store};
/// let store = HashStore::new();
/// store.set("addr", b"10.0.0.1:29500").unwrap();
/// assert_eq!(store.get("addr").unwrap(), b"10.0.0.1:29500");
/// assert_eq!(store.add("joined", 1).unwrap(), 1);
/// ```
pub struct HashStore {
    table: Table,
    timeout: TimeoutCell,
}

impl HashStore {
    /// An empty store with the default timeout.
    pub fn new() -> Self {
        HashStore { table: Table::default(), timeout: TimeoutCell::new(DEFAULT_STORE_TIMEOUT) }
    }
}

impl Default for HashStore {
    fn default() -> Self {
        Self::new()
    }
}

impl Store for HashStore {
    fn set(&self, key: &str, value: &[u8]) -> Result<()> {
        self.table.set(key, value);
        Ok(())
    }
    fn get(&self, key: &str) -> Result<Vec<u8>> {
        self.table.get(key, self.timeout())
    }
    fn add(&self, key: &str, amount: i64) -> Result<i64> {
        self.table.add(key, amount)
    }
    fn compare_set(&self, key: &str, expected: &[u8], desired: &[u8]) -> Result<Vec<u8>> {
        Ok(self.table.compare_set(key, expected, desired))
    }
    fn append(&self, key: &str, value: &[u8]) -> Result<()> {
        self.table.append(key, value);
        Ok(())
    }
    fn wait_timeout(&self, keys: &[&str], timeout: Duration) -> Result<()> {
        self.table.wait(keys, timeout)
    }
    fn check(&self, keys: &[&str]) -> Result<bool> {
        Ok(self.table.check(keys))
    }
    fn delete_key(&self, key: &str) -> Result<bool> {
        Ok(self.table.delete(key))
    }
    fn num_keys(&self) -> Result<i64> {
        Ok(self.table.num_keys())
    }
    fn timeout(&self) -> Duration {
        self.timeout.get()
    }
    fn set_timeout(&self, timeout: Duration) {
        self.timeout.set(timeout)
    }
}
