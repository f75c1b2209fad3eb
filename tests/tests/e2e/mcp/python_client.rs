//! The official MCP Python SDK against `sbx-wasm mcp`, over stdio and
//! streamable HTTP: the same scenario on both (`tests/mcp/client.py`).

use super::{Fixture, python_sdk};
use sbx_wasm_tests::{repo_root, sbx_bin};
use serde_json::{Value, json};
use std::process::Command;

fn client(cfg: Value) -> Value {
    sdk_script("client.py", &cfg.to_string())
}

/// Run `tests/mcp/SCRIPT ARG` on the pinned SDK; the JSON it printed last.
fn sdk_script(script: &str, arg: &str) -> Value {
    let out = Command::new(python_sdk())
        .arg(repo_root().join("tests/mcp").join(script))
        .arg(arg)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "client failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap()
}

/// What the scenario must have seen, whatever the transport.
fn check(f: &Fixture, r: &Value, before: &[(std::path::PathBuf, String)]) {
    assert_eq!(r["server"], "sbx-wasm");
    let tools: Vec<&str> = r["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for t in [
        "fetch",
        "list_files",
        "read_file",
        "run_python",
        "run_wasm",
        "word_count",
        "write_file",
    ] {
        assert!(tools.contains(&t), "{t} not listed: {tools:?}");
    }
    assert_eq!(r["word_count_description"], "Count the words of a text.");

    let benign = &r["benign"];
    assert_eq!(benign["is_error"], false, "{benign}");
    assert!(
        benign["text"]
            .as_str()
            .unwrap()
            .contains("HELLO MCP ['x'] in"),
        "{benign}"
    );

    // Every escape refused, on record, and nothing changed on the host.
    let hostile = &r["hostile"];
    let out = hostile["structured"]["stdout"].as_str().unwrap();
    assert!(!out.contains("'allowed'"), "an escape got through: {out}");
    let violations: Vec<&str> = hostile["structured"]["denials"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["violation"].as_str())
        .collect();
    for v in [
        "fs_read_denied",
        "fs_write_denied",
        "egress_denied",
        "tool_denied",
    ] {
        assert!(violations.contains(&v), "{v} missing from {violations:?}");
    }
    assert_eq!(f.host_state(), before, "the host changed");
    assert_eq!(f.other.connections(), 0, "the ungranted server was reached");
    assert_eq!(std::fs::read_dir(f.path("out")).unwrap().count(), 0);

    // Code mode: a granted fetch and a granted tool from one script.
    let code = &r["code_mode"];
    assert_eq!(code["is_error"], false, "{code}");
    assert!(
        code["text"].as_str().unwrap().contains("200 ok 4"),
        "{code}"
    );
    // The tool declares an object schema: JSON of that shape runs (wc
    // counts its four words), plain text is refused before it starts.
    assert!(
        code["text"].as_str().unwrap().contains("invalid_request"),
        "{code}"
    );
    assert!(f.granted.connections() >= 1);

    // A single op outside the grant is a tool error naming the violation;
    // its neighbour inside the grant works.
    assert_eq!(r["read_outside"]["is_error"], true);
    assert_eq!(
        r["read_outside"]["structured"]["violation"],
        "fs_read_denied"
    );
    assert_eq!(r["read_inside"]["is_error"], false);
    assert_eq!(r["read_inside"]["text"], "hello mcp");
    assert_eq!(r["granted_tool"]["is_error"], false);
    assert_eq!(r["granted_tool"]["text"].as_str().unwrap().trim(), "2");

    // Progress: output chunks and the denial, as they happened.
    let progress: Vec<Value> = r["progress"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m.as_str().and_then(|s| serde_json::from_str(s).ok()))
        .collect();
    let joined =
        |key: &str| -> String { progress.iter().filter_map(|p| p[key].as_str()).collect() };
    assert_eq!(joined("stdout"), "first\n", "{progress:?}");
    assert_eq!(joined("stderr"), "second\n", "{progress:?}");
    // In the order the script did them: print, denied open, print.
    let at = |pred: &dyn Fn(&Value) -> bool| progress.iter().position(pred).unwrap();
    let denied = at(&|p| p["denied"]["violation"] == "fs_read_denied");
    assert!(at(&|p| p.get("stdout").is_some()) < denied, "{progress:?}");
    assert!(denied < at(&|p| p.get("stderr").is_some()), "{progress:?}");

    // The abandoned run was cancelled, and the session went on.
    assert!(r["cancel_returned_after_s"].as_f64().unwrap() < 5.0);
    assert!(r["after_cancel"]["text"].as_str().unwrap().contains('7'));
}

/// The cancelled call's end record, once the server wrote it.
fn wait_for_cancelled(f: &Fixture) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        if let Some(end) = f
            .ends()
            .into_iter()
            .find(|e| e["end"]["status"] == "cancelled")
        {
            return end;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no cancelled call in the audit: {:?}",
            f.ends()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn python_sdk_over_stdio() {
    let f = Fixture::new();
    let before = f.host_state();
    let env: serde_json::Map<String, Value> =
        f.env().into_iter().map(|(k, v)| (k, json!(v))).collect();
    let r = client(json!({
        "transport": "stdio",
        "command": sbx_bin(),
        "args": f.args(&[]),
        "env": env,
        "granted": f.granted.origin(),
        "other": f.other.origin(),
    }));
    check(&f, &r, &before);
    let cancelled = wait_for_cancelled(&f);
    assert_eq!(cancelled["tool"], "run_python");
    assert!(cancelled["end"]["usage"]["wall_ms"].as_u64().unwrap() >= 500);
    // One session; every record tagged with it.
    assert!(f.audit().iter().all(|v| v["session"] == "s1"));
    // The session ended with the client: its scratch folder is gone.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::fs::read_dir(f.path("scratch")).unwrap().count() > 0 {
        assert!(std::time::Instant::now() < deadline, "scratch left behind");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn python_sdk_over_http() {
    let f = Fixture::new();
    let before = f.host_state();
    let mut server = f.http(&[]);
    let r = client(json!({
        "transport": "http",
        "url": server.url,
        "token": null,
        "granted": f.granted.origin(),
        "other": f.other.origin(),
    }));
    check(&f, &r, &before);
    wait_for_cancelled(&f);
    assert_eq!(server.terminate(), Some(0));
}

/// D1: the sessionless revision (2026-07-28, which the Python SDK picks by
/// default) must not renew the per-session totals or `/scratch` at every
/// request. The same limit trips for a handshake session, for the default
/// workspace and for an issued workspace, each with its own scratch; a
/// closed or forged workspace handle reaches nothing.
#[test]
fn session_totals_hold_in_both_protocol_eras() {
    let f = Fixture::new();
    let before = f.host_state();
    let mut server = f.http(&["--session-max-calls", "3"]);
    let r = sdk_script("sessionless.py", &server.url);
    assert_eq!(r["legacy"]["version"], "2025-11-25", "{r}");
    assert_eq!(r["sessionless"]["version"], "2026-07-28", "{r}");
    for era in ["legacy", "sessionless", "workspace"] {
        let calls = r[era]["calls"].as_array().unwrap();
        // Three allowed calls, each seeing what the one before wrote.
        for (n, c) in calls[..3].iter().enumerate() {
            assert_eq!(c["is_error"], false, "{era}: {c}");
            assert_eq!(
                c["structured"]["stdout"],
                format!("{}\n", n + 1),
                "{era}: {c}"
            );
        }
        // The fourth: the total is spent, nothing ran.
        assert_eq!(calls[3]["is_error"], true, "{era}: {}", calls[3]);
        assert_eq!(calls[3]["structured"]["status"], "refused", "{era}");
        assert!(
            calls[3]["text"]
                .as_str()
                .unwrap()
                .contains("session_max_calls"),
            "{era}: {}",
            calls[3]
        );
    }
    assert_eq!(r["issued"]["status"], 201);
    assert_eq!(r["issued"]["header"], true);
    assert_eq!(r["closed"], serde_json::json!([204, 404]));
    assert_eq!(r["forged_status"], 404);
    assert!(r["after_close"].get("failed").is_some(), "{r}");
    assert_eq!(server.terminate(), Some(0));
    // Nine calls ran, in three keys: the session and two workspaces.
    let ends = f.ends();
    let ran: Vec<&Value> = (ends.iter())
        .filter(|e| e["end"]["status"] != "refused")
        .collect();
    let keys: std::collections::BTreeSet<&str> =
        ran.iter().filter_map(|e| e["session"].as_str()).collect();
    assert_eq!(ran.len(), 9, "{:?}", f.ends());
    assert_eq!(keys.len(), 3, "{keys:?}");
    assert_eq!(
        keys.iter().filter(|k| k.starts_with('w')).count(),
        2,
        "{keys:?}"
    );
    assert_eq!(f.host_state(), before, "the host changed");
    // Every scratch folder went with its session or workspace.
    assert_eq!(std::fs::read_dir(f.path("scratch")).unwrap().count(), 0);
}
