//! The key-value capability through the plan, wasm and Python doors of
//! the CLI (the MCP door's is in `mcp/rust_client.rs`, the capability's
//! own check and effect in `host/src/capability/kv/tests.rs`): a grant
//! with a store beside the same runs without one, and the limits held.

use crate::python::warm_cache;
use sbx_wasm_tests::{guest, python_runner, said, sbx_cached, snapshot};
use std::path::Path;
use std::process::Command;

/// A folder with `data/`, and a caps file mounting it, with `kv` added.
fn world(kv: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    std::fs::write(dir.path().join("data/a.txt"), "alpha").unwrap();
    std::fs::write(
        dir.path().join("caps.toml"),
        format!("[fs]\nread = [{{ host = \"data\", guest = \"/work\" }}]\n{kv}"),
    )
    .unwrap();
    dir
}

const STORE: &str = "[kv]\nmax_keys = 2\nmax_bytes = 64\n";

#[test]
fn plans_put_get_and_list_and_are_refused_without_a_store() {
    let plan = r#"[
        {"op": "kv_put", "key": "a", "value": "1"},
        {"op": "kv_put", "key": "b", "value": "2"},
        {"op": "kv_put", "key": "c", "value": "3"},
        {"op": "kv_get", "key": "a"},
        {"op": "kv_list"}
    ]"#;
    for (kv, want) in [
        (
            STORE,
            ["allowed", "allowed", "kv_denied", "allowed", "allowed"],
        ),
        ("", ["kv_denied"; 5]),
    ] {
        let w = world(kv);
        std::fs::write(w.path().join("plan.json"), plan).unwrap();
        let before = snapshot(&w.path().join("data"));
        let out = sbx_cached(
            w.path(),
            &[
                "exec",
                "--caps",
                "caps.toml",
                "plan.json",
                "--audit",
                "audit.jsonl",
            ],
        );
        assert!(out.status.code().is_some(), "{}", said(&out));
        let audit = std::fs::read_to_string(w.path().join("audit.jsonl")).unwrap();
        let got: Vec<String> = sbx_wasm_tests::audit_records(&audit)
            .iter()
            .map(|v| v["violation"].as_str().unwrap_or("allowed").to_string())
            .collect();
        assert_eq!(got, want, "{kv:?}\n{}", said(&out));
        if kv.is_empty() {
            assert!(said(&out).contains("no [kv] section"), "{}", said(&out));
        } else {
            assert!(said(&out).contains("max_keys"), "{}", said(&out));
        }
        assert_eq!(snapshot(&w.path().join("data")), before);
    }
}

fn run(dir: &Path, program: &[&str]) -> std::process::Output {
    let mut c = Command::new(sbx_wasm_tests::sbx_bin());
    c.current_dir(dir)
        .env("SBX_WASM_CACHE_DIR", warm_cache())
        .args(["run", "--caps", "caps.toml"]);
    if program[0].ends_with(".py") {
        c.arg("--python-runner").arg(python_runner());
    }
    c.args(program).output().unwrap()
}

#[test]
fn a_wasm_guest_keeps_notes_within_the_store_it_was_granted() {
    let agent = guest("kv_notes").display().to_string();
    let args = [agent.as_str(), "--", "a=1", "a", "b=2", "c=3", "b"];
    let w = world(STORE);
    let out = run(w.path(), &args);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let lines: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(
        lines[..4],
        [
            "put a: ok",
            "get a: 1",
            "put b: ok",
            "put c: denied: kv_denied (put \"c\": the store holds 2 keys, max_keys = 2)"
        ]
    );
    assert_eq!(lines[4..], ["get b: 2", "keys: a,b"]);
    // Without a store: every call is refused, the run goes on.
    let w = world("");
    let out = run(w.path(), &args);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("denied: kv_denied").count(), 6, "{text}");
    // A run has a store of its own: the first run's notes are gone.
    let w = world(STORE);
    let out = run(w.path(), &[agent.as_str(), "--", "a"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("get a: failed: no key \"a\""),
        "{}",
        said(&out)
    );
}

#[test]
fn a_python_script_uses_the_store_and_meets_its_limits_as_denied() {
    let script = "import sbx\n\
        sbx.kv_put('notes/q3', 'revenue 42')\n\
        print(sbx.kv_get('notes/q3').decode(), sbx.kv_get('missing', b'-'))\n\
        print(sbx.kv_list('notes/'))\n\
        try:\n    sbx.kv_put('big', 'x' * 100)\nexcept sbx.Denied as e:\n    print('denied', e.violation)\n";
    let w = world(STORE);
    std::fs::write(w.path().join("notes.py"), script).unwrap();
    let out = run(w.path(), &["notes.py"]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "revenue 42 b'-'\n['notes/q3']\ndenied kv_denied\n"
    );
    let w = world("");
    std::fs::write(w.path().join("notes.py"), "import sbx\ntry:\n    sbx.kv_put('a', 'b')\nexcept sbx.Denied as e:\n    print('denied', e.violation)\n").unwrap();
    let out = run(w.path(), &["notes.py"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "denied kv_denied\n",
        "{}",
        said(&out)
    );
}
