//! `sbx-wasm policy` on a real recorded run: the benign guest reads a file,
//! fetches from a loopback server, calls a tool and writes its summary;
//! what-if under a narrower grant flips exactly those ops; learn drafts a
//! grant that allows the run again (and the guest runs under it); diff and
//! lint on hand-made grants.

use sbx_wasm_tests::{LoopbackServer, guest, mount_caps, mount_tree, said, sbx_in};

#[test]
fn what_if_and_learn_on_a_recorded_run() {
    let server = LoopbackServer::start();
    let dir = mount_tree(&[("data/data.csv", "name,value\na,2\nb,3\n")]);
    let d = dir.path();
    let net = format!("[net]\nallow = [\"{}\"]\n", server.origin());
    let tools =
        "[tools]\nallow = [\"word_count\"]\n[tools.command.word_count]\nargv = [\"wc\", \"-w\"]\n";
    std::fs::write(d.join("caps.toml"), mount_caps(&format!("{net}{tools}"))).unwrap();
    let component = guest("benign").display().to_string();
    let url = format!("{}/status", server.origin());
    let run = |caps: &str, audit: &str| {
        sbx_in(
            d,
            &[
                "run",
                "--no-stdin",
                "--no-kernel-confinement",
                "--caps",
                caps,
                "--audit",
                audit,
                "--report",
                "report.json",
                &component,
                "--",
                &url,
            ],
        )
    };
    let first = run("caps.toml", "run.jsonl");
    assert_eq!(first.status.code(), Some(0), "{}", said(&first));
    let summary = std::fs::read_to_string(d.join("out/summary.txt")).unwrap();
    assert!(
        summary.contains("rows=2 total=5 api=ok words="),
        "{summary}"
    );

    // A grant without the network and the tool: exactly the fetch and the
    // tool call flip.
    std::fs::write(d.join("narrow.toml"), mount_caps("")).unwrap();
    let w = sbx_in(
        d,
        &[
            "policy",
            "what-if",
            "--audit",
            "run.jsonl",
            "--caps",
            "narrow.toml",
            "--json",
        ],
    );
    assert_eq!(w.status.code(), Some(1), "{}", said(&w));
    let v: serde_json::Value = serde_json::from_slice(&w.stdout).unwrap();
    let flipped: Vec<&str> = v["flips"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["op"].as_str().unwrap())
        .collect();
    assert_eq!(flipped, ["net_fetch", "tool_call"], "{v}");
    assert_eq!(v["flips"][0]["now"]["violation"], "egress_denied");
    // The same grant: nothing flips.
    let same = sbx_in(
        d,
        &[
            "policy",
            "what-if",
            "--audit",
            "run.jsonl",
            "--caps",
            "caps.toml",
        ],
    );
    assert_eq!(same.status.code(), Some(0), "{}", said(&same));
    assert!(said(&same).contains("0 decisions flip"));

    // Learn: the mounts touched, the exact origin, the tool by name; the
    // run passes again under it.
    let l = sbx_in(
        d,
        &[
            "policy",
            "learn",
            "--audit",
            "run.jsonl",
            "--report",
            "report.json",
            "--out",
            "learned.toml",
        ],
    );
    assert_eq!(l.status.code(), Some(0), "{}", said(&l));
    let learned = std::fs::read_to_string(d.join("learned.toml")).unwrap();
    assert!(learned.contains(&server.origin()), "{learned}");
    assert!(learned.contains("word_count"), "{learned}");
    let again = sbx_in(
        d,
        &[
            "policy",
            "what-if",
            "--audit",
            "run.jsonl",
            "--caps",
            "learned.toml",
        ],
    );
    assert_eq!(again.status.code(), Some(0), "{}", said(&again));
    // The command for the tool is the operator's to add.
    std::fs::write(
        d.join("learned.toml"),
        format!("{learned}\n[tools.command.word_count]\nargv = [\"wc\", \"-w\"]\n"),
    )
    .unwrap();
    let rerun = run("learned.toml", "rerun.jsonl");
    assert_eq!(rerun.status.code(), Some(0), "{}\n{learned}", said(&rerun));
    assert_eq!(
        std::fs::read_to_string(d.join("out/summary.txt")).unwrap(),
        summary
    );
}

#[test]
fn diff_and_lint_on_hand_made_grants() {
    let dir = mount_tree(&[]);
    let d = dir.path();
    std::fs::write(
        d.join("a.toml"),
        mount_caps("[net]\nallow = [\"https://api.example.com\"]\n"),
    )
    .unwrap();
    std::fs::write(
        d.join("b.toml"),
        mount_caps("[net]\nallow = [\"https://api.example.com\", \"https://upload.example.com\"]\n[budget]\nmax_ops = 50\n"),
    )
    .unwrap();
    let out = sbx_in(d, &["policy", "diff", "a.toml", "b.toml"]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    let t = said(&out);
    assert!(
        t.contains("b.toml allows what a.toml does not:\n  egress rule https://upload.example.com"),
        "{t}"
    );
    assert!(
        t.contains("budget max_ops: 10000 in a.toml, 50 in b.toml"),
        "{t}"
    );
    let same = sbx_in(d, &["policy", "diff", "a.toml", "a.toml"]);
    assert_eq!(same.status.code(), Some(0));

    // A write mount over the caps file's own folder, port *, a shell tool.
    std::fs::write(
        d.join("risky.toml"),
        "[fs]\nwrite = [{ host = \".\", guest = \"/work\" }]\n\
         [net]\nallow = [\"https://api.example.com:*\"]\n\
         [tools]\nallow = [\"run\"]\n[tools.command.run]\nargv = [\"sh\", \"-c\", \"cat\"]\n",
    )
    .unwrap();
    let out = sbx_in(d, &["policy", "lint", "risky.toml", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    let found: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let whats: Vec<&str> = found
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["what"].as_str().unwrap())
        .collect();
    assert_eq!(whats.len(), 3, "{whats:?}");
    assert!(
        whats[0].starts_with("egress rule https://api.example.com:*"),
        "{whats:?}"
    );
    assert!(whats[1].starts_with("write mount /work"), "{whats:?}");
    assert!(whats[2].starts_with("tools.command.run"), "{whats:?}");
    let clean = sbx_in(d, &["policy", "lint", "a.toml"]);
    assert_eq!(clean.status.code(), Some(0), "{}", said(&clean));
}
