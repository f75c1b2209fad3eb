//! The key-value capability's check: a store granted, a key of the
//! accepted form, a value that could fit.

use super::{KvGrant, KvOp};
use crate::bound::quote;
use crate::capability::{Grant, Permit};
use crate::violation::{Denial, Violation};

/// Longest key accepted, in bytes.
pub const MAX_KEY_BYTES: usize = 256;

/// Whether `op` may run under `grant` (`None`: no `[kv]` section).
pub(crate) fn check(op: &KvOp, grant: Option<&KvGrant>) -> Result<Permit, Denial> {
    let key = op.key();
    let listing = matches!(op, KvOp::List { .. });
    if key.len() > MAX_KEY_BYTES
        || (!listing && key.is_empty())
        || key.chars().any(char::is_control)
    {
        return Err(Denial::new(
            Violation::InvalidRequest,
            format!(
                "key {} is not 1 to {MAX_KEY_BYTES} bytes without control characters",
                quote(key)
            ),
        ));
    }
    let Some(grant) = grant else {
        return Err(Denial::new(
            Violation::KvDenied,
            "the grant holds no key-value store (no [kv] section)",
        ));
    };
    if let KvOp::Put { value, .. } = op {
        let size = (key.len() + value.len()) as u64;
        if size > grant.max_bytes {
            return Err(Denial::new(
                Violation::KvDenied,
                format!(
                    "{size} bytes of key and value can never fit: max_bytes = {}",
                    grant.max_bytes
                ),
            ));
        }
    }
    Ok(Permit::new(
        format!(
            "kv store (max_keys {}, max_bytes {})",
            grant.max_keys, grant.max_bytes
        ),
        Grant::Kv(*grant),
    ))
}
