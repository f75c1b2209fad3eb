//! The real `sbx-wasm` binary on the shipped worked example and on caps
//! files made here: decisions, report, audit log, exit codes, `check
//! --explain` for every kind of op.

use sbx_wasm_tests::{LoopbackServer, copy_tree, repo_root, sbx_bin};
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// The shipped example, copied to a temp folder with its loopback port
/// pointed at a test server.
struct Example {
    dir: tempfile::TempDir,
    server: LoopbackServer,
}

impl Example {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        copy_tree(&repo_root().join("examples/seed"), dir.path());
        let server = LoopbackServer::start();
        for f in ["caps.toml", "plan.json"] {
            let p = dir.path().join(f);
            let text = std::fs::read_to_string(&p).unwrap();
            assert!(
                text.contains("127.0.0.1:18080"),
                "{f} no longer uses port 18080"
            );
            std::fs::write(&p, text.replace("18080", &server.port.to_string())).unwrap();
        }
        Example { dir, server }
    }
    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
    fn sbx(&self, args: &[&str]) -> Output {
        Command::new(sbx_bin())
            .current_dir(self.dir.path())
            .args(args)
            .output()
            .unwrap()
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

#[test]
fn worked_example_gives_the_seeds_eight_decisions() {
    let ex = Example::new();
    let out = ex.sbx(&[
        "exec",
        "--caps",
        "caps.toml",
        "plan.json",
        "--json",
        "--report",
        "r.json",
        "--audit",
        "a.jsonl",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let run: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let got: Vec<Value> = run["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["denial"]["violation"].clone())
        .collect();
    let want: Vec<Value> = [
        None,
        Some("fs_read_denied"),
        Some("path_traversal"),
        None,
        Some("fs_write_denied"),
        None,
        Some("egress_denied"),
        Some("max_ops"),
    ]
    .iter()
    .map(|v| v.map_or(Value::Null, |s| Value::String(s.into())))
    .collect();
    assert_eq!(got, want);
    assert_eq!(run["stopped_reason"], "hard_limit");
    assert_eq!(run["results"][7]["denial"]["hard"], true);
    assert_eq!(run["results"][1]["denial"]["hard"], false);
    assert_eq!(run["results"][5]["output"]["body"]["text"], "ok");
    assert!(
        std::fs::read_to_string(ex.path("out/report.txt"))
            .unwrap()
            .contains("margin")
    );
    assert!(!ex.path("system").exists());
    // Only the allowed fetch reached the network.
    assert_eq!(ex.server.connections(), 1);

    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(ex.path("r.json")).unwrap()).unwrap();
    assert_eq!(report["status"], "hard_limit");
    assert_eq!(report["violation"], "max_ops");
    assert_eq!(report["usage"]["ops"], 8);
    assert_eq!(report["limits"]["ops"], 7);
    assert_eq!(report["denials"].as_array().unwrap().len(), 5);
    let audit = std::fs::read_to_string(ex.path("a.jsonl")).unwrap();
    let events: Vec<Value> = sbx_wasm_tests::audit_records(&audit);
    assert_eq!(events.len(), 8);
    assert_eq!(events[0]["decision"], "allowed");
    assert!(
        events[5]["rule"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:")
    );
    assert_eq!(events[6]["violation"], "egress_denied");
}

#[test]
fn human_output_shows_each_decision_and_the_halt() {
    let ex = Example::new();
    let out = ex.sbx(&["exec", "--caps", "caps.toml", "plan.json"]);
    assert_eq!(out.status.code(), Some(3));
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 9, "{text}");
    assert_eq!(text.matches("DENIED").count(), 5, "{text}");
    assert!(text.contains("max_ops (HARD)"), "{text}");
    assert!(
        text.lines()
            .last()
            .unwrap()
            .starts_with("halted: hard_limit (max_ops)"),
        "{text}"
    );
}

#[test]
fn deterministic_runs_write_identical_reports_and_audits() {
    let ex = Example::new();
    let mut outputs = Vec::new();
    for i in 0..2 {
        // Same input: the write mount as the first run found it (the
        // report counts the files a run creates).
        let _ = std::fs::remove_file(ex.path("out/report.txt"));
        let (r, a) = (format!("r{i}.json"), format!("a{i}.jsonl"));
        let out = ex.sbx(&[
            "exec",
            "--deterministic",
            "--caps",
            "caps.toml",
            "plan.json",
            "--json",
            "--report",
            &r,
            "--audit",
            &a,
        ]);
        assert_eq!(out.status.code(), Some(3));
        outputs.push((
            stdout(&out),
            std::fs::read(ex.path(&r)).unwrap(),
            std::fs::read(ex.path(&a)).unwrap(),
        ));
    }
    assert_eq!(outputs[0], outputs[1]);
}

#[test]
fn plan_from_stdin_and_a_completed_run_exit_0() {
    let ex = Example::new();
    let mut child = Command::new(sbx_bin())
        .current_dir(ex.dir.path())
        .args(["exec", "--caps", "caps.toml", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(br#"[{"op":"fs_read","path":"/work/data.txt"},{"op":"tool_call","name":"word_count","input":"a b c"}]"#).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(text.contains("output \"3"), "{text}");
    assert!(
        text.lines().last().unwrap().starts_with("completed"),
        "{text}"
    );
}

#[test]
fn bad_plans_and_caps_exit_2_naming_the_problem() {
    let ex = Example::new();
    std::fs::write(ex.path("obj.json"), "{}").unwrap();
    let out = ex.sbx(&["exec", "--caps", "caps.toml", "obj.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("JSON list"), "{}", stderr(&out));
    let out = ex.sbx(&["exec", "--caps", "caps.toml", "missing.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("missing.json"));
    std::fs::write(ex.path("bad.toml"), "[budget]\nmax_ops = -1\n").unwrap();
    let out = ex.sbx(&["exec", "--caps", "bad.toml", "plan.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("budget.max_ops"), "{}", stderr(&out));
    // Malformed ops inside a valid list are denials, not errors.
    std::fs::write(
        ex.path("odd.json"),
        r#"[{"op":"format_disk"},{"op":"fs_read","path":"/work/data.txt"}]"#,
    )
    .unwrap();
    let out = ex.sbx(&["exec", "--caps", "caps.toml", "odd.json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("invalid_request"));
}

#[test]
fn check_prints_the_effective_grant_and_warns_on_allow_all() {
    let ex = Example::new();
    let out = ex.sbx(&["check", "--caps", "caps.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("is valid"), "{text}");
    assert!(
        text.contains("max_ops = 7") && text.contains("max_fuel ="),
        "{text}"
    );
    // The printed grant is itself a valid caps file.
    std::fs::write(ex.path("effective.toml"), &text).unwrap();
    assert_eq!(
        ex.sbx(&["check", "--caps", "effective.toml"]).status.code(),
        Some(0)
    );

    std::fs::write(ex.path("open.toml"), "[net]\ndangerous_allow_all = true\n").unwrap();
    let out = ex.sbx(&["check", "--caps", "open.toml"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("warning") && stderr(&out).contains("dangerous_allow_all"));
}

fn explain(ex: &Example, op: &str) -> (i32, String) {
    let out = ex.sbx(&["check", "--caps", "caps.toml", "--explain", op]);
    (out.status.code().unwrap(), stdout(&out) + &stderr(&out))
}

#[test]
fn explain_answers_for_each_kind_of_op() {
    let ex = Example::new();
    let p = ex.server.port;
    let cases = [
        ("read /work/data.txt", 0, "read mount /work"),
        ("read /etc/passwd", 1, "fs_read_denied"),
        ("read /work/../etc/passwd", 1, "path_traversal"),
        ("write /work/out/x.txt", 0, "write mount /work/out"),
        ("write /work/x.txt", 1, "read-only mount /work"),
        ("list /work", 0, "read mount /work"),
        ("stat /work/out", 0, "write mount /work/out"),
        ("remove /work/data.txt", 1, "fs_write_denied"),
        ("mkdir /work/out/sub", 0, "write mount"),
        (
            &format!("fetch http://127.0.0.1:{p}/status"),
            0,
            "allowed by http://127.0.0.1:",
        ),
        ("fetch http://127.0.0.1:18080@evil.com/", 1, "egress_denied"),
        ("fetch http://evil.com/", 1, "host evil.com port 80"),
        ("tool word_count", 0, "tool word_count"),
        ("tool shell", 1, "tool_denied"),
        // The plan's op names work too.
        ("fs_read /work/data.txt", 0, "read mount /work"),
        ("net_fetch http://evil.com/", 1, "egress_denied"),
        ("tool_call shell", 1, "tool_denied"),
    ];
    for (op, code, needle) in cases {
        let (got, text) = explain(&ex, op);
        assert_eq!(got, code, "{op}: {text}");
        assert!(text.contains(needle), "{op}: {text:?} lacks {needle:?}");
    }
    // Explaining performs nothing.
    assert!(!ex.path("out/x.txt").exists() && !ex.path("out/sub").exists());
    assert_eq!(ex.server.connections(), 0);
    let (code, text) = explain(&ex, "format /");
    assert_eq!(code, 2, "{text}");
    // A component's binds and UDP peers, by the listen and udp rules.
    std::fs::write(
        ex.path("sock.toml"),
        "[net]\nallow = [\"udp://127.0.0.1:53\"]\nlisten = [\"127.0.0.1:8080\"]\n",
    )
    .unwrap();
    for (op, code, needle) in [
        (
            "listen tcp://127.0.0.1:8080",
            0,
            "allowed by 127.0.0.1:8080",
        ),
        ("listen udp://127.0.0.1:8081", 1, "egress_denied"),
        (
            "net_listen 0.0.0.0:8080",
            1,
            "not a loopback address a listen rule covers",
        ),
        ("listen 8080", 1, "is not tcp://ip:port"),
        ("datagram 127.0.0.1:53", 0, "allowed by udp://127.0.0.1:53"),
        ("datagram 127.0.0.1:54", 1, "not covered by any udp rule"),
        ("connect 127.0.0.1:53", 1, "not covered by any tcp rule"),
    ] {
        let out = ex.sbx(&["check", "--caps", "sock.toml", "--explain", op]);
        let text = stdout(&out) + &stderr(&out);
        assert_eq!(out.status.code(), Some(code), "{op}: {text}");
        assert!(text.contains(needle), "{op}: {text:?} lacks {needle:?}");
    }
}

#[test]
fn book_caps_example_is_a_valid_caps_file() {
    let readme = std::fs::read_to_string(repo_root().join("docs/caps-file.md")).unwrap();
    let section = readme
        .find("# The caps file")
        .expect("the book has a caps file page");
    let start = section + readme[section..].find("```toml\n").expect("a toml block") + 8;
    let len = readme[start..].find("```").unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    std::fs::create_dir_all(dir.path().join("out")).unwrap();
    let caps = sbx_wasm::Capabilities::from_toml(&readme[start..start + len], dir.path(), None)
        .unwrap_or_else(|e| panic!("the book's caps example: {e}"));
    assert_eq!(
        *caps.budget(),
        sbx_wasm::Budget::default(),
        "the book lists the defaults"
    );
    assert_eq!(caps.egress().rules().len(), 3);
}

#[test]
fn explain_resolve_shows_each_address_and_the_dial() {
    let ex = Example::new();
    let p = ex.server.port;
    std::fs::write(
        ex.path("names.toml"),
        format!("[net]\nallow = [\"http://localhost:{p}\", \"http://127.0.0.1:{p}\", \"http://api.local:{p}\"]\n"),
    )
    .unwrap();
    let run = |op: &str| {
        let out = ex.sbx(&[
            "check",
            "--caps",
            "names.toml",
            "--explain",
            op,
            "--resolve",
        ]);
        (out.status.code().unwrap(), stdout(&out) + &stderr(&out))
    };
    let (code, text) = run(&format!("fetch http://0x7f.1:{p}/status"));
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains(&format!("parsed: http://127.0.0.1:{p}/status")),
        "{text}"
    );
    assert!(
        text.contains("address 127.0.0.1: ok (loopback address named by rule"),
        "{text}"
    );
    assert!(
        text.contains(&format!("would dial 127.0.0.1:{p}")),
        "{text}"
    );
    // localhost resolves (from /etc/hosts) to loopback, which the IP rule
    // names; an IPv6 ::1 answer, if the host file has one, is not named.
    let (code, text) = run(&format!("fetch http://localhost:{p}/"));
    assert!(text.contains("address 127.0.0.1: ok"), "{text}");
    if text.contains("address ::1") {
        assert_eq!(code, 1, "{text}");
        assert!(text.contains("resolves to loopback address ::1"), "{text}");
    } else {
        assert_eq!(code, 0, "{text}");
    }
    let (code, text) = run("fetch http://evil.com/");
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("egress_denied"), "{text}");
    assert_eq!(ex.server.connections(), 0);
}
