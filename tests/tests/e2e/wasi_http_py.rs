//! An unmodified wasi:http client built by componentize-py as PyPI ships it
//! (`tests/components/py_fetch`): no sbx module, only
//! `wasi:http/outgoing-handler`. Its requests go through the same broker
//! and rules as `sbx.fetch`, each beside its allowed neighbour.

use sbx_wasm_tests::{LoopbackServer, audit_records, cached_build, repo_root, sbx_bin, utf8};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The client, built once per version of its inputs into the user's cache
/// folder (componentize-py installed beside it from PyPI).
fn py_fetch_component() -> PathBuf {
    let inputs = [
        "tests/components/py_fetch/app.py",
        "tests/components/py_fetch/build.sh",
        "host/runners/python/build.sh",
        "Cargo.lock",
    ];
    let dir = cached_build("py-fetch-component", &inputs, |tmp| {
        std::fs::create_dir_all(tmp).unwrap();
        let built = Command::new("bash")
            .arg(repo_root().join("tests/components/py_fetch/build.sh"))
            .arg(tmp.join("app.wasm"))
            .output()
            .unwrap();
        assert!(built.status.success(), "{}", utf8(&built.stderr));
        // Only the component is kept: its build tools are not needed again.
        let _ = std::fs::remove_dir_all(tmp.join("venv"));
    });
    dir.join("app.wasm")
}

/// `sbx-wasm run --caps caps.toml --audit audit.jsonl APP -- URL` in `dir`.
fn get(dir: &Path, app: &Path, url: &str) -> Output {
    Command::new(sbx_bin())
        .current_dir(dir)
        .args(["run", "--caps", "caps.toml", "--audit", "audit.jsonl"])
        .arg(app)
        .args(["--", url])
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn an_unmodified_componentize_py_client_reaches_the_granted_origin_and_nothing_else() {
    let app = py_fetch_component();
    let (upstream, other) = (LoopbackServer::start(), LoopbackServer::start());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("caps.toml"),
        format!("[net]\nallow = [\"{}\"]\n", upstream.origin()),
    )
    .unwrap();
    let net_fetches = || {
        let text = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap();
        audit_records(&text)
            .into_iter()
            .filter(|r| r["op"] == "net_fetch")
            .collect::<Vec<_>>()
    };

    let ok = get(dir.path(), &app, &format!("{}/status", upstream.origin()));
    assert_eq!(ok.status.code(), Some(0), "{}", utf8(&ok.stderr));
    assert_eq!(utf8(&ok.stdout), "200 ok\n");
    assert_eq!(net_fetches()[0]["decision"], "allowed");

    // A redirect comes back to the client unfollowed: its target (a host
    // the grant does not name) is never asked for.
    let moved = get(dir.path(), &app, &format!("{}/redirect", upstream.origin()));
    assert_eq!(moved.status.code(), Some(0), "{}", utf8(&moved.stderr));
    assert!(
        utf8(&moved.stdout).starts_with("302 "),
        "{}",
        utf8(&moved.stdout)
    );
    assert_eq!(net_fetches().len(), 1);

    // The origin the grant does not name: the client's own error type,
    // on record, and the server never hears of it.
    let denied = get(dir.path(), &app, &format!("{}/status", other.origin()));
    assert_eq!(denied.status.code(), Some(1), "{}", utf8(&denied.stderr));
    assert_eq!(utf8(&denied.stdout), "error: ErrorCode_HttpRequestDenied\n");
    let records = net_fetches();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["violation"], "egress_denied");
    // One connection per run that was allowed: none kept across runs.
    assert_eq!((upstream.connections(), other.connections()), (2, 0));
}
