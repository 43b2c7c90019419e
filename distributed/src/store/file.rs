//! `FileStore`: a store in a file that every rank opens (c10d's `FileStore`), for jobs on one
//! machine or on a shared file system, with no server.
//!
//! Note [FileStore log]: the file is a log of records (`set key value`, `delete key`), appended
//! under an exclusive `flock`. Every operation takes the lock, replays the records appended
//! since its last visit into a private copy of the table, acts on it and appends what it
//! changed, then unlocks; `get` and `wait` poll. With a world size, every store joins a
//! reference count when opened; the last of `world_size` stores to be dropped removes the file,
//! so a job leaves nothing behind and the next job with the same path starts empty.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{
    added, compare_set_outcome, timeout_error, Error, Result, Store, TimeoutCell, DEFAULT_STORE_TIMEOUT,
    INTERNAL_PREFIX,
};

const SET: u8 = 0;
const DELETE: u8 = 1;
/// How long `get` and `wait` sleep between looks at the file.
const POLL: Duration = Duration::from_millis(5);

/// A store in a file shared by the ranks (see Note [FileStore log]).
pub struct FileStore {
    path: PathBuf,
    world_size: Option<usize>,
    state: Mutex<Log>,
    timeout: TimeoutCell,
}

/// This store's view of the file: the open file, how far it has replayed, and the table.
struct Log {
    file: File,
    pos: u64,
    table: HashMap<String, Vec<u8>>,
}

fn io_error(path: &Path, what: &str, e: std::io::Error) -> Error {
    Error::Distributed { op: "FileStore".into(), msg: format!("{what} {}: {e}", path.display()) }
}

impl Log {
    /// Applies the records appended since the last visit.
    fn refresh(&mut self, path: &Path) -> Result<()> {
        let mut bytes = Vec::new();
        self.file.seek(SeekFrom::Start(self.pos)).map_err(|e| io_error(path, "cannot seek in", e))?;
        self.file.read_to_end(&mut bytes).map_err(|e| io_error(path, "cannot read", e))?;
        let corrupt = || Error::Distributed {
            op: "FileStore".into(),
            msg: format!("{} is not a FileStore log (a record is cut short)", path.display()),
        };
        let mut at = 0usize;
        let field = |at: &mut usize| -> Result<Vec<u8>> {
            let len = bytes.get(*at..*at + 8).ok_or_else(corrupt)?;
            let len = u64::from_le_bytes(len.try_into().map_err(|_| corrupt())?) as usize;
            let start = *at + 8;
            let v = bytes.get(start..start.checked_add(len).ok_or_else(corrupt)?).ok_or_else(corrupt)?.to_vec();
            *at = start + len;
            Ok(v)
        };
        while at < bytes.len() {
            let kind = bytes[at];
            at += 1;
            let key = String::from_utf8(field(&mut at)?).map_err(|_| corrupt())?;
            match kind {
                SET => {
                    let value = field(&mut at)?;
                    self.table.insert(key, value);
                }
                DELETE => {
                    self.table.remove(&key);
                }
                _ => return Err(corrupt()),
            }
        }
        self.pos += bytes.len() as u64;
        Ok(())
    }

    /// Appends a record (the lock is held and the table is current) and applies it.
    fn append(&mut self, path: &Path, kind: u8, key: &str, value: Option<&[u8]>) -> Result<()> {
        let mut rec = vec![kind];
        rec.extend_from_slice(&(key.len() as u64).to_le_bytes());
        rec.extend_from_slice(key.as_bytes());
        if let Some(v) = value {
            rec.extend_from_slice(&(v.len() as u64).to_le_bytes());
            rec.extend_from_slice(v);
        }
        self.file.seek(SeekFrom::End(0)).map_err(|e| io_error(path, "cannot seek in", e))?;
        self.file.write_all(&rec).map_err(|e| io_error(path, "cannot write", e))?;
        self.pos += rec.len() as u64;
        match value {
            Some(v) => self.table.insert(key.to_string(), v.to_vec()),
            None => self.table.remove(key),
        };
        Ok(())
    }
}

impl FileStore {
    /// Opens (or creates) the store at `path`. With `world_size`, the last of that many stores
    /// to be dropped removes the file (Note [FileStore log]); `None` keeps it.
    pub fn new(path: impl AsRef<Path>, world_size: Option<usize>) -> Result<FileStore> {
        let path = path.as_ref().to_path_buf();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| io_error(&path, "cannot open", e))?;
        let store = FileStore {
            path,
            world_size,
            state: Mutex::new(Log { file, pos: 0, table: HashMap::new() }),
            timeout: TimeoutCell::new(DEFAULT_STORE_TIMEOUT),
        };
        if world_size.is_some() {
            store.add(&format!("{INTERNAL_PREFIX}refcount"), 1)?;
        }
        Ok(store)
    }

    /// Runs `f` on the current table with the file locked.
    fn locked<R>(&self, f: impl FnOnce(&mut Log, &Path) -> Result<R>) -> Result<R> {
        let mut log = self.state.lock().unwrap_or_else(|e| e.into_inner());
        log.file.lock().map_err(|e| io_error(&self.path, "cannot lock", e))?;
        let result = log.refresh(&self.path).and_then(|()| f(&mut log, &self.path));
        let unlocked = log.file.unlock().map_err(|e| io_error(&self.path, "cannot unlock", e));
        let r = result?;
        unlocked?;
        Ok(r)
    }

    /// Polls until every key exists.
    fn poll(&self, op: &str, keys: &[&str], timeout: Duration) -> Result<HashMap<String, Vec<u8>>> {
        let start = Instant::now();
        loop {
            let found = self.locked(|log, _| {
                Ok(keys
                    .iter()
                    .map(|k| log.table.get(*k).map(|v| (k.to_string(), v.clone())))
                    .collect::<Option<HashMap<_, _>>>())
            })?;
            if let Some(values) = found {
                return Ok(values);
            }
            if start.elapsed() >= timeout {
                return Err(timeout_error(op, timeout, keys));
            }
            std::thread::sleep(POLL.min(timeout.saturating_sub(start.elapsed())));
        }
    }
}

impl Drop for FileStore {
    fn drop(&mut self) {
        let Some(n) = self.world_size else { return };
        // Errors cannot be returned from drop; a file left behind is harmless.
        if let Ok(done) = self.add(&format!("{INTERNAL_PREFIX}cleanup"), 1) {
            if done as usize == n {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

impl Store for FileStore {
    fn set(&self, key: &str, value: &[u8]) -> Result<()> {
        self.locked(|log, path| log.append(path, SET, key, Some(value)))
    }
    fn get(&self, key: &str) -> Result<Vec<u8>> {
        let mut values = self.poll("get", &[key], self.timeout())?;
        Ok(values.remove(key).unwrap_or_default())
    }
    fn add(&self, key: &str, amount: i64) -> Result<i64> {
        self.locked(|log, path| {
            let sum = added(log.table.get(key).map(Vec::as_slice), key, amount)?;
            log.append(path, SET, key, Some(sum.to_string().as_bytes()))?;
            Ok(sum)
        })
    }
    fn compare_set(&self, key: &str, expected: &[u8], desired: &[u8]) -> Result<Vec<u8>> {
        self.locked(|log, path| {
            if let Some(kept) = compare_set_outcome(log.table.get(key).map(Vec::as_slice), expected) {
                return Ok(kept);
            }
            log.append(path, SET, key, Some(desired))?;
            Ok(desired.to_vec())
        })
    }
    fn append(&self, key: &str, value: &[u8]) -> Result<()> {
        self.locked(|log, path| {
            let mut joined = log.table.get(key).cloned().unwrap_or_default();
            joined.extend_from_slice(value);
            log.append(path, SET, key, Some(&joined))
        })
    }
    fn wait_timeout(&self, keys: &[&str], timeout: Duration) -> Result<()> {
        self.poll("wait", keys, timeout).map(|_| ())
    }
    fn check(&self, keys: &[&str]) -> Result<bool> {
        self.locked(|log, _| Ok(keys.iter().all(|k| log.table.contains_key(*k))))
    }
    fn delete_key(&self, key: &str) -> Result<bool> {
        self.locked(|log, path| {
            if !log.table.contains_key(key) {
                return Ok(false);
            }
            log.append(path, DELETE, key, None)?;
            Ok(true)
        })
    }
    fn num_keys(&self) -> Result<i64> {
        self.locked(|log, _| Ok(log.table.keys().filter(|k| !k.starts_with(INTERNAL_PREFIX)).count() as i64))
    }
    fn timeout(&self) -> Duration {
        self.timeout.get()
    }
    fn set_timeout(&self, timeout: Duration) {
        self.timeout.set(timeout)
    }
}
