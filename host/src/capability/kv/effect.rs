//! The key-value capability's effect: one call of the store backend,
//! within the limits the permit carries and the output the gate lends.

use super::{KvError, KvOp, KvStore};
use crate::bound::quote;
use crate::capability::{Content, Grant, Lent, Output, Permit};
use crate::failure::{ErrorKind, Failure, OpError};
use crate::quiet_panic::catch_quietly;
use crate::violation::{Denial, Violation};

pub(crate) fn perform(
    op: &KvOp,
    permit: Permit,
    store: &dyn KvStore,
    lent: &Lent<'_>,
) -> Result<Output, Failure> {
    let Grant::Kv(limits) = permit.grant else {
        return Err(Failure::Denied(Denial::new(
            Violation::InvalidRequest,
            "a kv op needs a kv permit",
        )));
    };
    let key = op.key();
    // A backend of the embedder's that panics is a failed call.
    let done = catch_quietly(|| match op {
        KvOp::Get { key } => store.get(key).map(|v| match v {
            Some(value) => Ok(Output::Data {
                content: Content(value),
            }),
            None => Err(missing(key)),
        }),
        KvOp::Put { key, value } => store.put(key, value, limits).map(|()| {
            Ok(Output::Written {
                bytes: value.len() as u64,
            })
        }),
        KvOp::Delete { key } => store.delete(key).map(|was| match was {
            true => Ok(Output::Removed),
            false => Err(missing(key)),
        }),
        KvOp::List { prefix } => {
            // At most as many names as the output left could carry (a
            // name and a separator each).
            let max = usize::try_from(lent.output_left).unwrap_or(usize::MAX);
            store
                .list(prefix, max)
                .map(|keys| Ok(Output::Keys { keys }))
        }
    });
    match done {
        Ok(Ok(Ok(out))) => Ok(out),
        Ok(Ok(Err(e))) => Err(Failure::Error(e)),
        Ok(Err(KvError::Full(why))) => Err(Failure::Denied(Denial::new(
            Violation::KvDenied,
            format!("put {}: {why}", quote(key)),
        ))),
        Ok(Err(KvError::Backend(why))) => Err(Failure::Error(OpError::new(
            ErrorKind::Io,
            format!("kv store: {why}"),
        ))),
        Err(panic) => Err(Failure::Error(OpError::new(
            ErrorKind::Io,
            format!("kv store panicked: {}", crate::bound::clip(&panic)),
        ))),
    }
}

fn missing(key: &str) -> OpError {
    OpError::new(ErrorKind::NotFound, format!("no key {}", quote(key)))
}
