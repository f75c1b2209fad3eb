//! The network capability alone: check, permit, resolution and the fetch
//! it allows, with a resolver and a network backend of the test's own (the
//! backends are what `Services` swaps; the gate's decision is what is under
//! test). Connections to real servers are the end-to-end tests'
//! (`tests/tests/e2e/egress.rs`).

use super::{FetchLimits, FetchRequest, FetchResponse, Net, NetError, StaticResolver};
use crate::capability::tests::{Rig, denied};
use crate::capability::{Op, OpKind, Output};
use crate::caps::Capabilities;
use crate::failure::Failure;
use crate::services::Services;
use crate::violation::Violation;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// Every address a fetch was sent to.
#[derive(Default)]
struct Dialled(Mutex<Vec<(String, SocketAddr)>>);

impl Net for Arc<Dialled> {
    fn fetch(
        &self,
        req: &FetchRequest,
        addr: SocketAddr,
        _: FetchLimits,
    ) -> Result<FetchResponse, NetError> {
        self.0.lock().unwrap().push((req.url.clone(), addr));
        Ok(FetchResponse {
            status: 200,
            headers: vec![],
            body: b"ok".to_vec(),
        })
    }
}

fn rig() -> (Rig, Arc<Dialled>) {
    let caps = Capabilities::builder()
        .allow_egress("http://allowed.test")
        .allow_egress("http://private.test")
        .build()
        .unwrap();
    let dialled = Arc::new(Dialled::default());
    let resolver = StaticResolver::new()
        .with("allowed.test", ["93.184.216.34".parse().unwrap()])
        .with("private.test", ["10.0.0.5".parse().unwrap()]);
    let services = Services::default()
        .net(Arc::new(dialled.clone()))
        .resolver(Arc::new(resolver));
    (Rig::new(caps, services), dialled)
}

#[test]
fn an_allowed_fetch_is_permitted_by_its_rule_and_dials_the_checked_address() {
    let (rig, dialled) = rig();
    let op = Op::fetch("http://allowed.test/status");
    assert_eq!(op.op_kind(), Some(OpKind::NetFetch));
    let permit = rig.check(&op).unwrap();
    assert!(permit.rule().contains("allowed.test"), "{}", permit.rule());
    match rig.perform(&op, permit).unwrap() {
        Output::Response { status, body, .. } => {
            assert_eq!((status, &body.0[..]), (200, &b"ok"[..]))
        }
        other => panic!("{other:?}"),
    }
    let dialled = dialled.0.lock().unwrap();
    assert_eq!(dialled.len(), 1);
    assert_eq!(dialled[0].1, "93.184.216.34:80".parse().unwrap());
}

#[test]
fn a_fetch_no_rule_covers_is_denied_and_dials_nothing() {
    let (rig, dialled) = rig();
    for url in [
        "http://evil.test/",
        "https://allowed.test/",
        "http://allowed.test:8080/",
        "file:///etc/passwd",
    ] {
        let v = denied(rig.check(&Op::fetch(url)));
        assert!(
            matches!(v, Violation::EgressDenied | Violation::InvalidRequest),
            "{url}: {v:?}"
        );
    }
    assert!(rig.check(&Op::fetch("http://allowed.test/")).is_ok());
    assert!(dialled.0.lock().unwrap().is_empty());
}

#[test]
fn a_granted_name_that_resolves_to_a_private_address_is_refused_at_the_effect_before_any_dial() {
    let (rig, dialled) = rig();
    let op = Op::fetch("http://private.test/");
    // The name is granted, so the check allows it; its address is decided
    // when the effect resolves it, before anything is sent.
    match rig.run(&op).unwrap() {
        Err(Failure::Denied(d)) => assert_eq!(d.violation, Violation::EgressDenied, "{d}"),
        other => panic!("{other:?}"),
    }
    assert!(dialled.0.lock().unwrap().is_empty());
}

#[test]
fn a_plan_gives_headers_as_pairs_or_as_an_object_and_anything_else_is_named() {
    use crate::plan::op_from_json;
    let pairs = op_from_json(serde_json::json!({
        "op": "net_fetch", "url": "http://allowed.test/", "headers": [["Accept", "text/plain"]]
    }));
    let object = op_from_json(serde_json::json!({
        "op": "net_fetch", "url": "http://allowed.test/", "headers": {"Accept": "text/plain"}
    }));
    assert_eq!(pairs, object);
    let Op::Net(req) = pairs else {
        panic!("{pairs:?}")
    };
    assert_eq!(
        req.headers,
        [("Accept".to_string(), "text/plain".to_string())]
    );
    for bad in [
        serde_json::json!(5),
        serde_json::json!([["a", 1]]),
        serde_json::json!({"a": 1}),
    ] {
        match op_from_json(
            serde_json::json!({"op": "net_fetch", "url": "http://x/", "headers": bad}),
        ) {
            Op::Invalid { reason, .. } => assert!(reason.contains("headers must be"), "{reason}"),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_fetch_is_charged_to_max_sent_bytes_as_sent_and_one_past_it_halts_undialled() {
    use crate::gate::Sandbox;
    let dialled = Arc::new(Dialled::default());
    let resolver = StaticResolver::new().with("allowed.test", ["93.184.216.34".parse().unwrap()]);
    let mut sandbox = Sandbox::builder(
        Capabilities::builder()
            .allow_egress("http://allowed.test")
            .max_sent_bytes(1000)
            .build()
            .unwrap(),
    )
    .services(
        Services::default()
            .net(Arc::new(dialled.clone()))
            .resolver(Arc::new(resolver)),
    )
    .build()
    .unwrap();
    let post = |len: usize| {
        crate::plan::op_from_json(serde_json::json!({
            "op": "net_fetch", "url": "http://allowed.test/x", "method": "POST",
            "body": "b".repeat(len), "headers": {"h": "v"}
        }))
    };
    // The URL (21 bytes), the header (2) and the body.
    let r = sandbox.run(post(500));
    assert!(r.ok, "{r:?}");
    assert_eq!(sandbox.usage().sent_bytes, 523);
    let r = sandbox.run(post(500));
    assert!(r.hard(), "{r:?}");
    assert_eq!(r.denial.map(|d| d.violation), Some(Violation::MaxSentBytes));
    assert_eq!(
        sandbox.halted().map(|d| d.violation),
        Some(Violation::MaxSentBytes)
    );
    assert_eq!(sandbox.usage().sent_bytes, 523);
    assert_eq!(dialled.0.lock().unwrap().len(), 1);
}
