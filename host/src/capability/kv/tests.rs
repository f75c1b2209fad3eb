//! The key-value capability alone: no store without a grant; the limits
//! held when the store is full; a store shared by two sandboxes (as a
//! session's runs share one) and one of a run's own.

use super::{KvGrant, KvOp, MemoryKv};
use crate::capability::tests::{Rig, denied};
use crate::capability::{Op, OpKind, Output};
use crate::caps::Capabilities;
use crate::failure::Failure;
use crate::services::Services;
use crate::violation::Violation;
use std::sync::Arc;

fn put(key: &str, value: &str) -> Op {
    Op::Kv(KvOp::Put {
        key: key.into(),
        value: value.into(),
    })
}

fn get(key: &str) -> Op {
    Op::Kv(KvOp::Get { key: key.into() })
}

fn rig(grant: Option<KvGrant>, store: Arc<MemoryKv>) -> Rig {
    let mut b = Capabilities::builder();
    if let Some(g) = grant {
        b = b.kv(g);
    }
    Rig::new(b.build().unwrap(), Services::default().kv(store))
}

fn value(out: Output) -> Vec<u8> {
    match out {
        Output::Data { content } => content.0,
        other => panic!("{other:?}"),
    }
}

#[test]
fn without_a_kv_section_every_op_is_denied_and_the_store_untouched() {
    let store = Arc::new(MemoryKv::new());
    let none = rig(None, store.clone());
    for op in [
        put("a", "1"),
        get("a"),
        Op::Kv(KvOp::List {
            prefix: String::new(),
        }),
    ] {
        assert_eq!(denied(none.check(&op)), Violation::KvDenied, "{op:?}");
    }
    // Its neighbour: the same store under a grant is empty, then works.
    let granted = rig(Some(KvGrant::default()), store);
    assert!(granted.run(&get("a")).unwrap().is_err(), "nothing was put");
    assert!(granted.run(&put("a", "1")).unwrap().is_ok());
    assert_eq!(value(granted.run(&get("a")).unwrap().unwrap()), b"1");
}

#[test]
fn a_put_past_max_keys_or_max_bytes_is_refused_and_changes_nothing() {
    let grant = KvGrant {
        max_keys: 2,
        max_bytes: 20,
    };
    let rig = rig(Some(grant), Arc::new(MemoryKv::new()));
    assert!(rig.run(&put("a", "12345")).unwrap().is_ok());
    assert!(rig.run(&put("b", "12345")).unwrap().is_ok());
    // A third key: over max_keys, at the effect (the store holds the count).
    match rig.run(&put("c", "1")).unwrap() {
        Err(Failure::Denied(d)) => assert_eq!(d.violation, Violation::KvDenied, "{d}"),
        other => panic!("{other:?}"),
    }
    // Replacing a key is no new key; growing it past max_bytes is refused.
    assert!(rig.run(&put("a", "123")).unwrap().is_ok());
    match rig.run(&put("b", "12345678901234567")).unwrap() {
        Err(Failure::Denied(d)) => assert_eq!(d.violation, Violation::KvDenied, "{d}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(value(rig.run(&get("b")).unwrap().unwrap()), b"12345");
    // A value that could never fit is refused by the check itself.
    assert_eq!(
        denied(rig.check(&put("z", &"x".repeat(30)))),
        Violation::KvDenied
    );
    // Bad keys are malformed requests.
    for key in ["", "a\nb"] {
        assert_eq!(denied(rig.check(&put(key, "1"))), Violation::InvalidRequest);
    }
    assert_eq!(
        denied(rig.check(&get(&"k".repeat(257)))),
        Violation::InvalidRequest
    );
}

#[test]
fn runs_given_one_store_share_it_and_a_run_of_its_own_starts_empty() {
    let shared = Arc::new(MemoryKv::new());
    let first = rig(Some(KvGrant::default()), shared.clone());
    let second = rig(Some(KvGrant::default()), shared);
    let own = rig(Some(KvGrant::default()), Arc::new(MemoryKv::new()));
    assert!(first.run(&put("notes/q3", "42")).unwrap().is_ok());
    assert_eq!(value(second.run(&get("notes/q3")).unwrap().unwrap()), b"42");
    assert!(own.run(&get("notes/q3")).unwrap().is_err());
    let list = Op::Kv(KvOp::List {
        prefix: "notes/".into(),
    });
    assert_eq!(list.op_kind(), Some(OpKind::KvList));
    match second.run(&list).unwrap().unwrap() {
        Output::Keys { keys } => assert_eq!(keys, ["notes/q3"]),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        second
            .run(&Op::Kv(KvOp::Delete {
                key: "notes/q3".into()
            }))
            .unwrap(),
        Ok(Output::Removed)
    ));
    assert!(first.run(&get("notes/q3")).unwrap().is_err());
}
