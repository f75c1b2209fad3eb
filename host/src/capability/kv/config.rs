//! The key-value capability's part of a grant: the `[kv]` section of a
//! caps file. No section, no store: every kv op is `kv_denied`.
//!
//! ```toml
//! [kv]
//! max_keys = 1000        # default 1,000; at most 1,000,000
//! max_bytes = 1048576    # keys and values together; default 1 MiB, at most 1 GiB
//! ```

use crate::error::{CapsError, non_negative};
use serde::{Deserialize, Serialize};

/// Keys a store holds at most, by default.
pub const DEFAULT_MAX_KEYS: u64 = 1_000;
/// Bytes of keys and values a store holds at most, by default.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 20;
/// The largest `max_keys` a grant may give.
const LIMIT_MAX_KEYS: u64 = 1_000_000;
/// The largest `max_bytes` a grant may give: the store lives in the host's
/// memory.
const LIMIT_MAX_BYTES: u64 = 1 << 30;

/// What a grant lets the store hold: the host's memory for it is bounded
/// by `max_bytes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KvGrant {
    /// Keys at most.
    pub max_keys: u64,
    /// Bytes of keys and values together at most.
    pub max_bytes: u64,
}

impl Default for KvGrant {
    fn default() -> Self {
        KvGrant {
            max_keys: DEFAULT_MAX_KEYS,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

/// `[kv]` as written.
#[derive(Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct KvSection {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_keys: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_bytes: Option<i64>,
}

impl KvSection {
    /// The grant the section asks for.
    pub(crate) fn grant(&self) -> Result<KvGrant, CapsError> {
        let d = KvGrant::default();
        Ok(KvGrant {
            max_keys: non_negative("kv.max_keys", self.max_keys)?.unwrap_or(d.max_keys),
            max_bytes: non_negative("kv.max_bytes", self.max_bytes)?.unwrap_or(d.max_bytes),
        })
    }

    /// The section that gives `grant`, every limit explicit.
    pub(crate) fn render(grant: &KvGrant) -> KvSection {
        KvSection {
            max_keys: i64::try_from(grant.max_keys).ok(),
            max_bytes: i64::try_from(grant.max_bytes).ok(),
        }
    }
}

/// Refuse a grant past what the host will hold.
pub(crate) fn check_grant(grant: &KvGrant) -> Result<(), CapsError> {
    for (key, value, limit) in [
        ("kv.max_keys", grant.max_keys, LIMIT_MAX_KEYS),
        ("kv.max_bytes", grant.max_bytes, LIMIT_MAX_BYTES),
    ] {
        if value > limit {
            return Err(CapsError::invalid(
                key,
                format!("{value} is over the most a store may hold"),
                format!("an integer from 0 to {limit}"),
            ));
        }
    }
    Ok(())
}
