//! `sbx-wasm run --record` and `sbx-wasm replay` on the benign guest: it
//! reads a file, fetches from a real loopback server, calls a command tool
//! and writes its summary. The replay runs with the server stopped and the
//! input changed, touches nothing real (tree hashed, tool marker counted),
//! and gives the same output, audit and report; a changed guest departs
//! at the recorded op it no longer asks for.

use sbx_wasm_tests::{
    LoopbackServer, guest, mount_caps, mount_tree, said, sbx_bin, sbx_cached, snapshot,
};
use std::path::Path;
use std::process::Command;

fn without_kernel_wall(path: &Path) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    v.as_object_mut().unwrap().remove("kernel_wall");
    v
}

#[test]
fn a_recorded_run_replays_offline_with_the_same_output_and_records() {
    let server = LoopbackServer::start();
    let dir = mount_tree(&[("data/data.csv", "name,value\na,2\nb,3\n")]);
    let d = dir.path();
    // The tool leaves a mark each time it really runs.
    let caps = mount_caps(&format!(
        "[net]\nallow = [\"{}\"]\n[tools]\nallow = [\"word_count\"]\n\
         [tools.command.word_count]\nargv = [\"sh\", \"-c\", \"echo ran >> marker.txt; wc -w\"]\n",
        server.origin()
    ));
    std::fs::write(d.join("caps.toml"), caps).unwrap();
    let benign = guest("benign").display().to_string();
    let url = format!("{}/status", server.origin());
    let recorded = sbx_cached(
        d,
        &[
            "run",
            "--caps",
            "caps.toml",
            "--record",
            "run.sbxrec",
            "--report",
            "r1.json",
            "--audit",
            "a1.jsonl",
            &benign,
            "--",
            &url,
        ],
    );
    assert_eq!(recorded.status.code(), Some(0), "{}", said(&recorded));
    let out = String::from_utf8(recorded.stdout.clone()).unwrap();
    assert_eq!(out, "rows=2 total=5 api=ok words=3\n");
    assert_eq!(server.connections(), 1);
    assert_eq!(
        std::fs::read_to_string(d.join("marker.txt")).unwrap(),
        "ran\n"
    );

    let rec: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("run.sbxrec")).unwrap()).unwrap();
    assert_eq!(rec["format"], "sbx-wasm-recording");
    assert_eq!(rec["version"], 1);
    let ops: Vec<(u64, String)> = rec["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["seq"].as_u64().unwrap(),
                o["op"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let kinds: Vec<&str> = ops.iter().map(|(_, k)| k.as_str()).collect();
    assert_eq!(
        kinds,
        ["fs_read", "net_fetch", "tool_call", "fs_write"],
        "{ops:?}"
    );
    let answered: Vec<u64> = rec["answers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(answered, [2, 3], "the fetch and the tool call");
    let file = &rec["files"][0];
    assert_eq!(
        (file["mount"].as_str(), file["path"].as_str()),
        (Some("/work"), Some("data.csv"))
    );

    // Offline: the server gone, the input changed, the output replaced.
    drop(server);
    std::fs::write(d.join("data/data.csv"), "name,value\nz,100\n").unwrap();
    std::fs::write(d.join("out/summary.txt"), "sentinel\n").unwrap();
    let before = snapshot(d);
    let replayed = sbx_cached(
        d,
        &[
            "replay",
            "run.sbxrec",
            "--report",
            "r2.json",
            "--audit",
            "a2.jsonl",
        ],
    );
    assert_eq!(replayed.status.code(), Some(0), "{}", said(&replayed));
    assert_eq!(replayed.stdout, recorded.stdout, "{}", said(&replayed));
    assert!(
        String::from_utf8_lossy(&replayed.stderr)
            .contains("replay followed the recording: 4 ops, ended as recorded"),
        "{}",
        said(&replayed)
    );
    assert_eq!(
        std::fs::read(d.join("a2.jsonl")).unwrap(),
        std::fs::read(d.join("a1.jsonl")).unwrap(),
        "the audit logs differ"
    );
    assert_eq!(
        without_kernel_wall(&d.join("r2.json")),
        without_kernel_wall(&d.join("r1.json"))
    );
    // Nothing real touched: the tree is as it was, except the two files
    // this replay was asked to write; the tool did not run again.
    let mut after = snapshot(d);
    for f in ["r2.json", "a2.jsonl", "cache"] {
        after.retain(|p, _| !p.starts_with(f));
    }
    let mut expected = before;
    expected.retain(|p, _| !p.starts_with("cache"));
    assert_eq!(after, expected);
    assert_eq!(
        std::fs::read_to_string(d.join("marker.txt")).unwrap(),
        "ran\n"
    );
    assert_eq!(
        std::fs::read_to_string(d.join("out/summary.txt")).unwrap(),
        "sentinel\n"
    );

    // A changed guest departs where it asks for something else: its second
    // fetch, where the recording holds the tool call.
    let tool_seq = ops.iter().find(|(_, k)| k == "tool_call").unwrap().0;
    let changed = guest("benign_changed").display().to_string();
    let diverged = sbx_cached(
        d,
        &[
            "replay",
            "run.sbxrec",
            "--component",
            &changed,
            "--json",
            "--audit",
            "a3.jsonl",
        ],
    );
    assert_eq!(diverged.status.code(), Some(122), "{}", said(&diverged));
    let verdict: serde_json::Value = serde_json::from_str(
        String::from_utf8_lossy(&diverged.stdout)
            .lines()
            .last()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(verdict["followed"], false);
    assert_eq!(verdict["divergence"]["seq"], tool_seq);
    assert_eq!(verdict["divergence"]["asked"]["op"], "net_fetch");
    assert_eq!(
        verdict["divergence"]["asked"]["target"],
        "http://127.0.0.1:9/extra"
    );
    assert_eq!(verdict["divergence"]["recorded"]["op"], "tool_call");
    let stderr = String::from_utf8_lossy(&diverged.stderr);
    assert!(stderr.contains("is not the recorded component"), "{stderr}");
    let audit = std::fs::read_to_string(d.join("a3.jsonl")).unwrap();
    let records = sbx_wasm_tests::audit_records(&audit);
    let last = records.last().unwrap();
    assert_eq!(last["violation"], "replay_diverged");
    assert_eq!(last["seq"], tool_seq);
    assert_eq!(
        std::fs::read_to_string(d.join("marker.txt")).unwrap(),
        "ran\n"
    );
}

#[test]
fn a_replay_that_cannot_start_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("not.json"), "{\"format\": \"other\"}").unwrap();
    let o = sbx_cached(d, &["replay", "not.json"]);
    assert_eq!(o.status.code(), Some(125));
    assert!(
        said(&o).contains("not an sbx-wasm recording"),
        "{}",
        said(&o)
    );
    let o = sbx_cached(d, &["replay", "missing.sbxrec"]);
    assert_eq!(o.status.code(), Some(125));
    assert!(said(&o).contains("missing.sbxrec"), "{}", said(&o));
    // --seed alone is refused: it needs --deterministic or --record.
    let o = sbx_cached(d, &["run", "--caps", "c.toml", "--seed", "3", "x.wasm"]);
    assert_eq!(o.status.code(), Some(125));
    assert!(said(&o).contains("--seed needs"), "{}", said(&o));
}

#[test]
fn a_python_run_using_tempfile_replays_identically() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("caps.toml"), "").unwrap();
    let script = "import os, tempfile\n\
        with tempfile.TemporaryDirectory() as t:\n    \
            open(os.path.join(t, 'x.txt'), 'w').write('hi')\n    \
            print(os.listdir(t))\n\
        print(os.listdir('/tmp'))\n";
    std::fs::write(d.join("t.py"), script).unwrap();
    let cache = crate::python::warm_cache();
    let run = |args: &[&str]| {
        Command::new(sbx_bin())
            .env("SBX_WASM_CACHE_DIR", cache)
            .current_dir(d)
            .args(args)
            .output()
            .unwrap()
    };
    let runner = sbx_wasm_tests::python_runner().display().to_string();
    let recorded = run(&[
        "run",
        "--caps",
        "caps.toml",
        "--no-stdin",
        "--python-runner",
        &runner,
        "--record",
        "t.sbxrec",
        "--audit",
        "a1.jsonl",
        "t.py",
    ]);
    assert_eq!(recorded.status.code(), Some(0), "{}", said(&recorded));
    assert_eq!(String::from_utf8_lossy(&recorded.stdout), "['x.txt']\n[]\n");
    // The folder tempfile made (and listed) is the guest's own: the replay
    // does not make it beforehand, so the guest makes it again.
    let replayed = run(&["replay", "t.sbxrec", "--audit", "a2.jsonl"]);
    assert_eq!(replayed.status.code(), Some(0), "{}", said(&replayed));
    assert_eq!(replayed.stdout, recorded.stdout);
    assert_eq!(
        std::fs::read(d.join("a2.jsonl")).unwrap(),
        std::fs::read(d.join("a1.jsonl")).unwrap()
    );
}
