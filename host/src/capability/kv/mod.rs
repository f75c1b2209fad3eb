//! The key-value capability: a small store the grant sizes (`[kv]`:
//! `max_keys`, `max_bytes`), reached by `kv_get`, `kv_put`, `kv_delete`
//! and `kv_list`. What holds the data is a [`KvStore`] backend, one field
//! of [`Services`](crate::Services): in memory by default ([`MemoryKv`]),
//! one store per `Services` value, so a fresh store per run unless a door
//! hands the same store to several runs (the MCP door keeps one per
//! session).
//!
//! The parts, as every capability has them: the request ([`KvOp`], this
//! file), the grant's section (`config.rs`), the check (`check.rs`), the
//! effect (`effect.rs`), the plan form (`plan.rs`), the backend
//! (`store.rs`). It needs nothing of the kernel wall: the store lives in
//! the host's memory, bounded by `max_bytes`.

mod check;
pub(crate) mod config;
mod effect;
mod plan;
mod store;

pub use check::MAX_KEY_BYTES;
pub use config::{DEFAULT_MAX_BYTES, DEFAULT_MAX_KEYS, KvGrant};
pub use store::{KvError, KvStore, MemoryKv};

pub(crate) use plan::{aimed_at, from_plan, plan_schema};

use crate::capability::{Held, Lent, OpKind, Output, Permit, Request, Trace};
use crate::failure::Failure;
use crate::violation::Denial;

/// One key-value operation.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KvOp {
    /// The value at `key`.
    Get {
        /// The key.
        key: String,
    },
    /// Set `key` to `value`.
    Put {
        /// The key.
        key: String,
        /// The value.
        value: Vec<u8>,
    },
    /// Remove `key`.
    Delete {
        /// The key.
        key: String,
    },
    /// The keys that start with `prefix`, sorted.
    List {
        /// The prefix (empty: every key).
        prefix: String,
    },
}

impl KvOp {
    /// The key (or, for a listing, the prefix) the op is aimed at.
    pub fn key(&self) -> &str {
        match self {
            KvOp::Get { key } | KvOp::Put { key, .. } | KvOp::Delete { key } => key,
            KvOp::List { prefix } => prefix,
        }
    }

    /// The op's kind.
    pub fn op_kind(&self) -> OpKind {
        match self {
            KvOp::Get { .. } => OpKind::KvGet,
            KvOp::Put { .. } => OpKind::KvPut,
            KvOp::Delete { .. } => OpKind::KvDelete,
            KvOp::List { .. } => OpKind::KvList,
        }
    }
}

impl Request for KvOp {
    fn kind(&self) -> OpKind {
        self.op_kind()
    }

    fn target(&self) -> &str {
        self.key()
    }

    fn check(&self, held: &Held<'_>) -> Result<Permit, Denial> {
        check::check(self, held.kv_grant)
    }

    fn perform(
        &self,
        permit: Permit,
        held: &Held<'_>,
        lent: &Lent<'_>,
    ) -> (Result<Output, Failure>, Trace) {
        (
            effect::perform(self, permit, held.kv, lent),
            Trace::default(),
        )
    }
}

#[cfg(test)]
mod tests;
