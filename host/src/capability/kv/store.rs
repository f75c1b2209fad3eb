//! The backend that holds a store's data: [`KvStore`], and the in-memory
//! default [`MemoryKv`].

use super::KvGrant;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Why a store could not do what the gate allowed.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KvError {
    /// The put would take the store past the grant's `max_keys` or
    /// `max_bytes` (the message says which).
    Full(String),
    /// The backend failed (a remote store unreachable, ...).
    Backend(String),
}

/// Where a key-value store's data lives. The gate has checked every call
/// before it reaches the backend (a granted store, a bounded key and
/// value); the backend holds the limits: [`put`](KvStore::put) must refuse
/// a value that would take the store past `limits`, in the same step as it
/// stores it, so two runs sharing a store cannot both fit into the last
/// room.
pub trait KvStore: Send + Sync {
    /// The value at `key`, if there is one.
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError>;
    /// Set `key` to `value`, unless the store would then hold more than
    /// `limits` allow (counting keys, and the bytes of keys and values).
    fn put(&self, key: &str, value: &[u8], limits: KvGrant) -> Result<(), KvError>;
    /// Remove `key`; whether it was there.
    fn delete(&self, key: &str) -> Result<bool, KvError>;
    /// The keys starting with `prefix`, sorted, at most `max` of them.
    fn list(&self, prefix: &str, max: usize) -> Result<Vec<String>, KvError>;
}

/// A store in the host's memory (the default backend): gone when the last
/// [`Services`](crate::Services) holding it is dropped.
#[derive(Debug, Default)]
pub struct MemoryKv {
    inner: Mutex<Held>,
}

#[derive(Debug, Default)]
struct Held {
    map: BTreeMap<String, Vec<u8>>,
    /// Bytes of every key and value held.
    bytes: u64,
}

impl MemoryKv {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        // A panic while the lock was held left the map whole (every
        // change below is one insert or remove): go on with it.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn size(key: &str, value: &[u8]) -> u64 {
    (key.len() + value.len()) as u64
}

impl KvStore for MemoryKv {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        Ok(self.held().map.get(key).cloned())
    }

    fn put(&self, key: &str, value: &[u8], limits: KvGrant) -> Result<(), KvError> {
        let mut h = self.held();
        let old = h.map.get(key).map(|v| size(key, v));
        let keys = h.map.len() as u64 + u64::from(old.is_none());
        if keys > limits.max_keys {
            return Err(KvError::Full(format!(
                "the store holds {} keys, max_keys = {}",
                h.map.len(),
                limits.max_keys
            )));
        }
        let bytes = h.bytes - old.unwrap_or(0) + size(key, value);
        if bytes > limits.max_bytes {
            return Err(KvError::Full(format!(
                "the store would hold {bytes} bytes, max_bytes = {}",
                limits.max_bytes
            )));
        }
        h.map.insert(key.to_string(), value.to_vec());
        h.bytes = bytes;
        Ok(())
    }

    fn delete(&self, key: &str) -> Result<bool, KvError> {
        let mut h = self.held();
        match h.map.remove(key) {
            Some(v) => {
                h.bytes -= size(key, &v);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn list(&self, prefix: &str, max: usize) -> Result<Vec<String>, KvError> {
        let h = self.held();
        Ok(h.map
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .take(max)
            .map(|(k, _)| k.clone())
            .collect())
    }
}
