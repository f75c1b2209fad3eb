//! The official MCP TypeScript SDK (v2, `@modelcontextprotocol/client`) and
//! the MCP Inspector's CLI, both pinned in `tests/mcp/ts-client/` with the
//! Node.js they need, against `sbx-wasm mcp` over stdio and HTTP, in the
//! handshake revision (2025-11-25) and the sessionless one (2026-07-28):
//! the session totals and `/scratch` hold in each, a denial is a result,
//! and the host is unchanged.

use super::{Fixture, node, npm_tree};
use sbx_wasm_tests::{repo_root, sbx_bin};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The installed tree, and a folder holding `client.mjs` beside a link to
/// its `node_modules` (an ES module finds its imports from its own place).
fn client_dir() -> (PathBuf, tempfile::TempDir) {
    let tree = npm_tree("ts-client");
    let dir = tempfile::tempdir().unwrap();
    let script = repo_root().join("tests/mcp/ts-client/client.mjs");
    std::fs::copy(script, dir.path().join("client.mjs")).unwrap();
    std::os::unix::fs::symlink(tree.join("node_modules"), dir.path().join("node_modules")).unwrap();
    (tree, dir)
}

/// Run `client.mjs MODE ARGS...` and parse the JSON it prints.
fn client(f: &Fixture, mode: &str, args: &[String]) -> Value {
    let (tree, dir) = client_dir();
    let out = Command::new(node(&tree))
        .arg(dir.path().join("client.mjs"))
        .arg(mode)
        .args(args)
        .envs(f.env())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or("");
    serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr)))
}

/// What every transport and revision must show: the negotiated revision,
/// `/scratch` kept across the session's calls, a denial as a result, and
/// the fifth call refused by the session's total of 4.
fn check(r: &Value, revision: &str) {
    assert_eq!(r["version"], revision, "{r}");
    let tools: Vec<&str> = (r["tools"].as_array().unwrap().iter())
        .filter_map(Value::as_str)
        .collect();
    assert!(tools.contains(&"run_python"), "{r}");
    let seen: Vec<&Value> = r["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["stdout"])
        .collect();
    assert_eq!(seen, ["1\n", "2\n", "3\n"], "{r}");
    assert_eq!(r["escape"]["is_error"], true, "{r}");
    let escape = r["escape"]["text"].as_str().unwrap();
    assert!(
        escape.contains("denied: fs_write /etc/sbx-ts-planted (fs_write_denied)"),
        "{r}"
    );
    assert_eq!(r["after_total"]["is_error"], true, "{r}");
    let after = r["after_total"]["text"].as_str().unwrap();
    assert!(after.contains("session_max_calls"), "{r}");
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

#[test]
fn the_typescript_sdk_holds_the_session_totals_in_both_revisions_over_stdio_and_http() {
    for (mode, revision) in [("legacy", "2025-11-25"), ("2026-07-28", "2026-07-28")] {
        let f = Fixture::new();
        let before = f.host_state();
        let mut stdio = vec!["stdio".to_string(), path(&sbx_bin())];
        stdio.extend(f.args(&["--session-max-calls", "4"]));
        check(&client(&f, mode, &stdio), revision);

        let server = f.http(&["--session-max-calls", "4"]);
        let http = ["http".to_string(), server.url.clone()];
        check(&client(&f, mode, &http), revision);
        assert_eq!(f.host_state(), before, "{mode}");
        assert!(!Path::new("/etc/sbx-ts-planted").exists());
    }
}

/// One Inspector CLI call (`--cli --format json`) in `era` (`legacy` or
/// `modern`) against `target` (a server command, or the HTTP URL): its
/// exit code, its JSON answer and its stderr.
fn inspector(f: &Fixture, era: &str, target: &[String], method: &[&str]) -> (i32, Value, String) {
    let tree = npm_tree("ts-client");
    let cli = "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js";
    let out = Command::new(node(&tree))
        .arg(tree.join(cli))
        .args(["--cli", "--format", "json", "--protocol-era", era])
        // The Inspector's own 15 s connect timeout is short for a debug
        // build of the door starting (two runners loaded, each with a warm
        // instance) while the whole suite loads both cores; the door
        // answers in milliseconds when the machine is idle.
        .args(["--connect-timeout", "60000"])
        .args(target)
        .args(method)
        .envs(f.env())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let json = serde_json::from_str(stdout.trim()).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), json, stderr)
}

#[test]
fn the_inspector_cli_lists_calls_and_is_refused_in_both_eras_over_stdio_and_http() {
    let f = Fixture::new();
    let before = f.host_state();
    let server = f.http(&[]);
    let mut stdio = vec![path(&sbx_bin())];
    stdio.extend(f.args(&[]));
    for era in ["legacy", "modern"] {
        for target in [stdio.clone(), vec![server.url.clone()]] {
            let at = format!("{era} {}", target[0]);
            // The listing passes the Inspector's schema portability check
            // in full: no errors and no warnings.
            let (code, listed, err) =
                inspector(&f, era, &target, &["--method", "tools/list", "--strict"]);
            assert_eq!(code, 0, "{at}: {err}");
            assert!(!err.contains("Warning:"), "{at}: {err}");
            let names: Vec<&str> = (listed["result"]["tools"].as_array().unwrap().iter())
                .filter_map(|t| t["name"].as_str())
                .collect();
            assert!(
                names.contains(&"run_python") && names.contains(&"word_count"),
                "{at}: {listed}"
            );
            let run = ["--method", "tools/call", "--tool-name", "run_python"];
            let code_arg = r#"{"code": "print(6 * 7)"}"#;
            let (code, ran, err) = inspector(
                &f,
                era,
                &target,
                &[&run[..], &["--tool-args-json", code_arg]].concat(),
            );
            assert_eq!(code, 0, "{at}: {err}");
            assert_eq!(
                ran["result"]["structuredContent"]["stdout"], "42\n",
                "{at}: {ran}"
            );
            // The refused neighbour: a read outside the grant is a result
            // with isError naming the violation.
            let read = ["--method", "tools/call", "--tool-name", "read_file"];
            let escape = r#"{"path": "/work/../canary.txt"}"#;
            let (_, refused, err) = inspector(
                &f,
                era,
                &target,
                &[&read[..], &["--tool-args-json", escape]].concat(),
            );
            assert_eq!(refused["result"]["isError"], true, "{at}: {refused} {err}");
            assert!(!refused.to_string().contains("CANARY"), "{at}: {refused}");
            let (code, prompts, err) = inspector(&f, era, &target, &["--method", "prompts/list"]);
            assert_eq!(code, 0, "{at}: {err}");
            assert_eq!(
                prompts["result"]["prompts"][0]["name"], "code_mode",
                "{at}: {prompts}"
            );
        }
    }
    // The modern era really was sessionless: the HTTP server charged those
    // calls to its default workspace (`wN`), the legacy ones to sessions.
    let sessions: std::collections::BTreeSet<String> = (f.ends().iter())
        .filter_map(|e| e["session"].as_str().map(String::from))
        .collect();
    let workspace = sessions.iter().filter(|s| s.starts_with('w')).count();
    assert_eq!(workspace, 1, "{sessions:?}");
    assert_eq!(f.host_state(), before);
}
