use super::*;
use crate::Services;
use crate::net::SocketOp;
use crate::tools::ToolRegistry;
use crate::{Capabilities, Op, Sandbox, Violation};

/// A run through the gate: reads under data/sub, a list, a write under
/// out/r, a tool, a denied read and a denied tool.
fn recorded() -> (tempfile::TempDir, Vec<crate::AuditEvent>, Capabilities) {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    std::fs::create_dir_all(r.join("data/sub")).unwrap();
    std::fs::create_dir_all(r.join("data/other")).unwrap();
    std::fs::create_dir_all(r.join("out/r")).unwrap();
    std::fs::write(r.join("data/sub/a.txt"), "a").unwrap();
    std::fs::write(r.join("data/sub/b.txt"), "b").unwrap();
    let caps = Capabilities::builder()
        .read_mount(r.join("data"), "/work")
        .write_mount(r.join("out"), "/work/out")
        .allow_tool("count")
        .build()
        .unwrap();
    let mut tools = ToolRegistry::new();
    tools.register("count", |s: &str| Ok(s.len().to_string()));
    let mut sb = Sandbox::builder(caps.clone())
        .services(Services::new().tools(tools))
        .build()
        .unwrap();
    for op in [
        Op::read("/work/sub/a.txt"),
        Op::read("/work/sub/b.txt"),
        Op::list("/work/sub"),
        Op::write("/work/out/r/x.txt", "x"),
        Op::tool("count", "abc"),
        Op::read("/etc/passwd"),
        Op::tool("rm", ""),
    ] {
        sb.run(op);
    }
    (dir, sb.audit().to_vec(), caps)
}

#[test]
fn what_if_flips_exactly_what_a_narrower_grant_refuses() {
    let (dir, audit, caps) = recorded();
    assert!(what_if(&audit, caps).unwrap().flips.is_empty());
    // Narrower: no tool, reads only under data/sub.
    let narrower = Capabilities::builder()
        .read_mount(dir.path().join("data/sub"), "/work/sub")
        .write_mount(dir.path().join("out"), "/work/out")
        .build()
        .unwrap();
    let w = what_if(&audit, narrower).unwrap();
    let flipped: Vec<(u64, &str)> = w.flips.iter().map(|f| (f.seq, &*f.op)).collect();
    assert_eq!(flipped, [(5, "tool_call")]);
    assert_eq!(
        w.flips[0].now,
        Verdict::Denied {
            violation: Violation::ToolDenied
        }
    );
    // Wider: the denied read flips to allowed.
    let wider = Capabilities::builder()
        .read_mount(dir.path().join("data"), "/work")
        .read_mount(dir.path().join("data/other"), "/etc")
        .write_mount(dir.path().join("out"), "/work/out")
        .allow_tool("count")
        .build()
        .unwrap();
    let w = what_if(&audit, wider).unwrap();
    // /etc/passwd is under the new /etc mount (its file need not exist).
    assert_eq!(w.flips.len(), 1);
    assert_eq!(w.flips[0].seq, 6);
    assert!(matches!(w.flips[0].now, Verdict::Allowed { .. }));
}

/// Deciding `audit` again under `caps` flips no op it allowed.
fn assert_no_allowed_op_flips(audit: &[crate::AuditEvent], caps: Capabilities) {
    let w = what_if(audit, caps).unwrap();
    assert!(
        w.flips
            .iter()
            .all(|f| !matches!(f.was, Verdict::Allowed { .. })),
        "{w:?}"
    );
}

#[test]
fn learn_drafts_the_narrowest_grant_that_allows_the_run() {
    let (dir, audit, _) = recorded();
    let learned = learn(&audit, None).unwrap();
    let mounts: Vec<(String, std::path::PathBuf)> = learned
        .caps
        .mounts()
        .iter()
        .map(|m| (m.guest.as_str().to_string(), m.host.clone()))
        .collect();
    assert_eq!(
        mounts,
        [
            ("/work/sub".into(), dir.path().join("data/sub")),
            ("/work/out/r".into(), dir.path().join("out/r")),
        ]
    );
    assert!(learned.caps.tools().contains("count"));
    assert!(!learned.caps.tools().contains("rm"));
    assert!(
        learned
            .toml
            .contains("# seq 6: fs_read /etc/passwd (fs_read_denied)")
    );
    // Loading it back and deciding the run again: no allowed op flips.
    let again = Capabilities::from_toml(&learned.toml, dir.path(), None).unwrap();
    assert_no_allowed_op_flips(&audit, again);
}

#[test]
fn learn_drafts_socket_rules_and_listen_addresses_from_a_sockets_run() {
    let caps = Capabilities::builder()
        .allow_egress("tcp://127.0.0.1:*")
        .allow_egress("udp://dns.test:53")
        .allow_egress("udp://10.0.0.0/8:53")
        .allow_listen("127.0.0.1:*")
        .build()
        .unwrap();
    let mut sb = Sandbox::new(caps).unwrap();
    let ten: std::net::IpAddr = "10.0.0.5".parse().unwrap();
    for op in [
        SocketOp::bind("127.0.0.1:0".parse().unwrap(), false),
        SocketOp::bind("127.0.0.1:5353".parse().unwrap(), true),
        SocketOp::connect(None, "127.0.0.1".parse().unwrap(), 8080),
        SocketOp::datagram(Some("dns.test"), ten, 53),
        SocketOp::bind("[::1]:0".parse().unwrap(), false),
    ] {
        sb.run(Op::Socket(op));
    }
    let audit = sb.audit().to_vec();
    let learned = learn(&audit, None).unwrap();
    let e = learned.caps.egress();
    let rules: Vec<&str> = e.rules().iter().map(|r| r.as_str()).collect();
    assert_eq!(
        rules,
        [
            "tcp://127.0.0.1:8080",
            "udp://10.0.0.5:53",
            "udp://dns.test:53"
        ]
    );
    let listen: Vec<&str> = e.listen().iter().map(|r| r.as_str()).collect();
    // As bound; the refused one is left out.
    assert_eq!(listen, ["127.0.0.1:0", "127.0.0.1:5353"]);
    assert!(
        learned
            .toml
            .contains("net_listen tcp://[::1]:0 (egress_denied)")
    );
    let again = Capabilities::from_toml(&learned.toml, std::path::Path::new("/"), None).unwrap();
    assert_no_allowed_op_flips(&audit, again);
}

#[test]
fn diff_names_what_each_side_allows() {
    let dir = tempfile::tempdir().unwrap();
    let a = Capabilities::builder()
        .read_mount(dir.path(), "/work")
        .allow_egress("https://api.example.com")
        .allow_tool("x")
        .max_ops(5)
        .build()
        .unwrap();
    let b = Capabilities::builder()
        .write_mount(dir.path(), "/work")
        .allow_egress("https://api.example.com")
        .allow_egress("https://b.example.com")
        .max_ops(7)
        .build()
        .unwrap();
    let d = diff(&a, &b);
    assert!(d.only_a.iter().any(|s| s.starts_with("read mount /work")));
    assert!(d.only_a.contains(&"tool x".to_string()));
    assert!(d.only_b.iter().any(|s| s.starts_with("write mount /work")));
    assert!(
        d.only_b
            .contains(&"egress rule https://b.example.com".to_string())
    );
    assert!(!d.only_b.iter().any(|s| s.contains("api.example.com")));
    assert_eq!(d.budgets.len(), 1);
    assert_eq!(
        (d.budgets[0].a.as_str(), d.budgets[0].b.as_str()),
        ("5", "7")
    );
    assert!(diff(&a, &a).is_empty());
}

#[test]
fn lint_finds_risky_grants_and_passes_a_tight_one() {
    let dir = tempfile::tempdir().unwrap();
    let caps_file = dir.path().join("caps.toml");
    let risky = Capabilities::builder()
        .write_mount(dir.path(), "/work")
        .allow_egress("http://10.0.0.0/8:80")
        .allow_egress("https://api.example.com:*")
        .allow_tool("sh")
        .tool_command("sh", vec!["bash".into(), "-c".into(), "cat".into()])
        .max_wall(std::time::Duration::from_secs(3600))
        .dangerous()
        .allow_all_egress()
        .build()
        .unwrap();
    let found = lint(&risky, Some(&caps_file));
    let whats: Vec<&str> = found.iter().map(|f| f.what.as_str()).collect();
    for needle in [
        "net.dangerous_allow_all",
        "egress rule http://10.0.0.0/8",
        "egress rule https://api.example.com:*",
        "write mount /work",
        "tools.command.sh",
        "budget.max_wall_ms",
    ] {
        assert!(
            whats.iter().any(|w| w.starts_with(needle)),
            "{needle} not in {whats:?}"
        );
    }
    assert!(
        found
            .iter()
            .all(|f| !f.why.is_empty() && !f.safer.is_empty())
    );
    let out = tempfile::tempdir().unwrap();
    let tight = Capabilities::builder()
        .write_mount(out.path(), "/work/out")
        .allow_egress("https://api.example.com")
        .build()
        .unwrap();
    assert!(lint(&tight, Some(&caps_file)).is_empty());
}

#[test]
fn read_audit_skips_end_records_and_names_bad_lines() {
    let (_dir, audit, _) = recorded();
    let mut text: String = audit
        .iter()
        .map(|e| serde_json::to_string(e).unwrap() + "\n")
        .collect();
    text += "{\"end\": {\"status\": \"completed\"}}\n";
    assert_eq!(read_audit(&text).unwrap(), audit);
    let e = read_audit("{}\nnot json\n").unwrap_err();
    assert!(e.starts_with("line 1") || e.starts_with("line 2"), "{e}");
}

#[test]
fn a_learned_draft_with_control_bytes_in_denied_targets_loads_and_shows_none_raw() {
    let (dir, mut audit, _) = recorded();
    // Denied targets a guest chose: a CR that would draw a fake line over
    // the comment, VT, FF, ESC, a newline that would end the comment.
    let mut planted = audit[5].clone();
    planted.target = "/etc/x\r[[fs.write]] host = \"/\"\x0b\x0c\x1b[2J\nreal = 1".into();
    audit.push(planted);
    let learned = learn(&audit, None).unwrap();
    for c in ['\r', '\x0b', '\x0c', '\x1b'] {
        assert!(!learned.toml.contains(c), "{:?}", learned.toml);
    }
    assert!(
        learned.toml.contains("\\u{d}[[fs.write]]"),
        "{}",
        learned.toml
    );
    // It loads, and grants no write mount at /.
    let again = Capabilities::from_toml(&learned.toml, dir.path(), None).unwrap();
    assert!(
        again
            .mounts()
            .iter()
            .all(|m| m.host != std::path::Path::new("/"))
    );
    // The allowed neighbour: the plain denied target is kept as it was.
    assert!(learned.toml.contains("# seq 6: fs_read /etc/passwd"));
}

/// The recorded run's grant with `/work` labelled `customer`, which may
/// reach `sinks`.
fn labelled(dir: &std::path::Path, sinks: &[&str]) -> Capabilities {
    Capabilities::builder()
        .read_mount(dir.join("data"), "/work")
        .write_mount(dir.join("out"), "/work/out")
        .allow_tool("count")
        .label("/work", "customer")
        .flow("customer", sinks.to_vec())
        .build()
        .unwrap()
}

#[test]
fn what_if_decides_the_flow_rules_along_the_run() {
    let (dir, audit, _) = recorded();
    // The tool call comes after labelled reads: refused where the label
    // may not reach the tool; the write where it may reach the mount.
    let w = what_if(&audit, labelled(dir.path(), &["/work/out"])).unwrap();
    let flipped: Vec<(u64, &str, &Verdict)> =
        w.flips.iter().map(|f| (f.seq, &*f.op, &f.now)).collect();
    assert_eq!(
        flipped,
        [(
            5,
            "tool_call",
            &Verdict::Denied {
                violation: Violation::FlowDenied
            }
        )]
    );
    // Its allowed neighbour: the label may reach the tool.
    let w = what_if(&audit, labelled(dir.path(), &["/work/out", "tool:count"])).unwrap();
    assert!(w.flips.is_empty(), "{:?}", w.flips);
}

#[test]
fn learn_labels_the_drafted_sources_and_allows_only_the_flows_the_run_made() {
    let (dir, _, _) = recorded();
    let caps = labelled(dir.path(), &["stdout", "/work/out", "tool:count"]);
    let mut tools = ToolRegistry::new();
    tools.register("count", |s: &str| Ok(s.len().to_string()));
    let mut sb = Sandbox::builder(caps)
        .services(Services::new().tools(tools))
        .build()
        .unwrap();
    for op in [
        Op::read("/work/sub/a.txt"),
        Op::tool("count", "abc"),
        Op::write("/work/out/r/x.txt", "x"),
    ] {
        assert!(sb.run(op).ok);
    }
    let audit = sb.audit().to_vec();
    assert_eq!(audit[0].labels, ["customer"]);
    assert!(audit[1].labels.is_empty());
    let learned = learn(&audit, None).unwrap();
    let flow = learned.caps.flow();
    let sinks: Vec<String> = flow.allowed()["customer"]
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        sinks,
        ["stdout", "/work/out/r", "tool:count"],
        "{}",
        learned.toml
    );
    assert!(learned.toml.contains("[flow.label]"), "{}", learned.toml);
    assert!(
        learned.toml.contains("\"/work/sub\" = \"customer\""),
        "{}",
        learned.toml
    );
}

#[test]
fn lint_finds_labelled_data_leaving_the_tracking() {
    let (dir, _, _) = recorded();
    let found = lint(&labelled(dir.path(), &["/work/out"]), None);
    let whats: Vec<&str> = found.iter().map(|f| f.what.as_str()).collect();
    assert!(
        whats.contains(&"flow.allow.customer reaches write mount /work/out"),
        "{whats:?}"
    );
    // Its neighbour: labelling the write mount too keeps the data tracked.
    let caps = Capabilities::builder()
        .read_mount(dir.path().join("data"), "/work")
        .write_mount(dir.path().join("out"), "/work/out")
        .label("/work", "customer")
        .label("/work/out", "customer")
        .flow("customer", ["stdout"])
        .build()
        .unwrap();
    assert!(lint(&caps, None).is_empty(), "{:?}", lint(&caps, None));
}

#[test]
fn diff_names_flows_and_labels_one_grant_has_and_the_other_lacks() {
    let (dir, _, caps) = recorded();
    let tight = labelled(dir.path(), &["/work/out"]);
    let d = diff(&caps, &tight);
    assert_eq!(d.only_a, ["data read from /work unlabelled (not customer)"]);
    assert_eq!(d.only_b, ["data labelled customer may reach /work/out"]);
    assert!(diff(&tight, &tight).is_empty());
}
