//! `PrefixStore`: a namespace inside another store (c10d's `PrefixStore`), so that process
//! groups sharing one store do not see each other's keys.

use std::sync::Arc;
use std::time::Duration;

use super::{Result, Store};

/// Every key becomes `prefix/key` in the underlying store.
pub struct PrefixStore {
    prefix: String,
    inner: Arc<dyn Store>,
}

impl PrefixStore {
    /// A view of `inner` under `prefix`.
    pub fn new(prefix: &str, inner: Arc<dyn Store>) -> Self {
        PrefixStore { prefix: prefix.to_string(), inner }
    }

    /// The underlying store.
    pub fn underlying_store(&self) -> &Arc<dyn Store> {
        &self.inner
    }

    fn key(&self, key: &str) -> String {
        format!("{}/{key}", self.prefix)
    }
}

impl Store for PrefixStore {
    fn set(&self, key: &str, value: &[u8]) -> Result<()> {
        self.inner.set(&self.key(key), value)
    }
    fn get(&self, key: &str) -> Result<Vec<u8>> {
        self.inner.get(&self.key(key))
    }
    fn add(&self, key: &str, amount: i64) -> Result<i64> {
        self.inner.add(&self.key(key), amount)
    }
    fn compare_set(&self, key: &str, expected: &[u8], desired: &[u8]) -> Result<Vec<u8>> {
        self.inner.compare_set(&self.key(key), expected, desired)
    }
    fn append(&self, key: &str, value: &[u8]) -> Result<()> {
        self.inner.append(&self.key(key), value)
    }
    fn multi_get(&self, keys: &[&str]) -> Result<Vec<Vec<u8>>> {
        let keys: Vec<String> = keys.iter().map(|k| self.key(k)).collect();
        self.inner.multi_get(&keys.iter().map(String::as_str).collect::<Vec<_>>())
    }
    fn multi_set(&self, keys: &[&str], values: &[&[u8]]) -> Result<()> {
        let keys: Vec<String> = keys.iter().map(|k| self.key(k)).collect();
        self.inner.multi_set(&keys.iter().map(String::as_str).collect::<Vec<_>>(), values)
    }
    fn wait_timeout(&self, keys: &[&str], timeout: Duration) -> Result<()> {
        let keys: Vec<String> = keys.iter().map(|k| self.key(k)).collect();
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        self.inner.wait_timeout(&refs, timeout)
    }
    fn check(&self, keys: &[&str]) -> Result<bool> {
        let keys: Vec<String> = keys.iter().map(|k| self.key(k)).collect();
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        self.inner.check(&refs)
    }
    fn delete_key(&self, key: &str) -> Result<bool> {
        self.inner.delete_key(&self.key(key))
    }
    /// The underlying store's count, as in PyTorch.
    fn num_keys(&self) -> Result<i64> {
        self.inner.num_keys()
    }
    fn timeout(&self) -> Duration {
        self.inner.timeout()
    }
    fn set_timeout(&self, timeout: Duration) {
        self.inner.set_timeout(timeout)
    }
    fn clone_store(&self) -> Result<Option<Arc<dyn Store>>> {
        Ok(self.inner.clone_store()?.map(|inner| Arc::new(PrefixStore::new(&self.prefix, inner)) as Arc<dyn Store>))
    }
}
