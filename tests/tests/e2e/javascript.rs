//! Model-written JavaScript and TypeScript through the real CLI and the real
//! runner component (`host/runners/js`, built by this crate's build
//! script): the shipped examples end to end, a TypeScript agent that awaits
//! a tool, fetches and writes beside its denied neighbours, stdin scripts,
//! deterministic replays, and the library's `JsRunner`. The hostile set and
//! node's errors and exit codes are in `javascript_errors.rs`.

use crate::scripts::{Py, warm_cache};
use sbx_wasm_tests::{LoopbackServer, copy_tree, js_runner, repo_root, sbx_bin, snapshot, utf8};
use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// A fresh tree (`data/table.csv` read at `/work`, `out/` written at
/// `/work/out`) whose scripts the JavaScript runner runs.
pub(crate) fn js(budget: &str, extra: &str) -> Py {
    Py::new(budget, extra).js()
}

/// The shipped `examples/js`, copied with the sales data its grant reads
/// from the Python examples' folder (`../python/data` becomes `data`).
fn example() -> Py {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&repo_root().join("examples/js"), dir.path());
    copy_tree(
        &repo_root().join("examples/python/data"),
        &dir.path().join("data"),
    );
    let caps = std::fs::read_to_string(dir.path().join("caps.toml")).unwrap();
    assert!(caps.contains("\"../python/data\""));
    std::fs::write(
        dir.path().join("caps.toml"),
        caps.replace("\"../python/data\"", "\"data\""),
    )
    .unwrap();
    Py::in_dir(dir).js()
}

#[test]
fn analysis_example_writes_the_summary_it_computed_from_the_csv() {
    let ex = example();
    let data_before = snapshot(&ex.path("data"));
    let ran = ex.run("analyze.ts", &[]);
    assert_eq!(ran.code(), Some(0), "{}", ran.stderr());
    assert!(ran.denials().is_empty(), "{}", ran.report);
    let csv = std::fs::read_to_string(ex.path("data/sales.csv")).unwrap();
    let mut by_region = std::collections::BTreeMap::<String, f64>::new();
    let mut rows = 0;
    for line in csv.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        *by_region.entry(f[1].to_string()).or_default() +=
            f[3].parse::<f64>().unwrap() * f[4].parse::<f64>().unwrap();
        rows += 1;
    }
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(ex.path("out/summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["rows"], rows);
    for (region, revenue) in &by_region {
        let got = summary["revenue_by_region"][region].as_f64().unwrap();
        assert!((got - revenue).abs() < 0.01, "{region}: {got} != {revenue}");
    }
    // The tool ran (wc -w of the notes): the count it gives natively.
    let notes = std::fs::read_to_string(ex.path("data/notes.txt")).unwrap();
    assert_eq!(summary["notes_words"], notes.split_whitespace().count());
    assert!(
        ran.stdout()
            .contains("wrote /work/out/summary.json: 120 rows")
    );
    assert_eq!(snapshot(&ex.path("data")), data_before);
}

#[test]
fn hostile_example_sees_every_attempt_denied_then_halts() {
    let ex = example();
    let before = snapshot(ex.dir.path());
    let ran = ex.run("hostile.ts", &[]);
    ran.assert_seed_hostile();
    let stdout = ran.stdout();
    assert!(!stdout.contains("ALLOWED"), "{stdout}");
    assert!(stdout.contains("exfiltrate to evil.example: denied (egress_denied)"));
    let mut after = snapshot(ex.dir.path());
    after.remove(Path::new("report.json"));
    assert_eq!(after, before, "the host tree changed");
}

#[test]
fn a_typescript_agent_awaits_a_tool_fetches_and_writes_beside_denied_neighbours() {
    let granted = LoopbackServer::start();
    let other = LoopbackServer::start();
    let t = js(
        "max_wall_ms = 20000",
        &format!(
            "[net]\nallow = [\"{}\"]\n[tools]\nallow = [\"word_count\"]\n\
             [tools.command.word_count]\nargv = [\"wc\", \"-w\"]\n",
            granted.origin()
        ),
    );
    let data_before = snapshot(&t.path("data"));
    t.write(
        "agent.ts",
        &format!(
            r#"import {{ readFile, writeFile }} from 'node:fs/promises';
interface Row {{ name: string; score: number }}
const csv = await readFile('/work/table.csv', 'utf8');
const rows: Row[] = csv.trim().split('\n').slice(1).map((l: string) => {{
  const [name, score] = l.split(','); return {{ name, score: Number(score) }};
}});
const words: number = await tools.word_count('one two three');
console.log('words', words);
const r = await fetch('{granted}/status', {{ headers: {{ 'x-agent': 'ts' }} }});
console.log('status', r.status, (await r.text()).length > 0);
const denied: string[] = [];
for (const attempt of [
  () => fetch('http://169.254.169.254/latest/meta-data/'),
  () => fetch('{other}/steal'),
  () => tools.shell({{ cmd: 'id' }}),
  () => writeFile('/work/table.csv', 'gone'),
  () => readFile('/work/../secret.txt', 'utf8'),
]) {{
  try {{ await attempt(); denied.push('ALLOWED'); }}
  catch (e) {{ denied.push(e instanceof SbxDenied ? e.violation : `other: ${{e}}`); }}
}}
console.log(denied.join(' '));
await writeFile('/work/out/total.json', JSON.stringify({{ total: rows.reduce((a, r) => a + r.score, 0) }}));
"#,
            granted = granted.origin(),
            other = other.origin()
        ),
    );
    let ran = t.run("agent.ts", &[]);
    assert_eq!(ran.code(), Some(0), "{}\n{}", ran.stdout(), ran.stderr());
    let stdout = ran.stdout();
    assert!(stdout.contains("words 3\n"), "{stdout}");
    assert!(stdout.contains("status 200 true"), "{stdout}");
    assert!(
        stdout.contains("egress_denied egress_denied tool_denied fs_write_denied path_traversal\n"),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(t.path("out/total.json")).unwrap(),
        r#"{"total":8}"#
    );
    assert_eq!(
        ran.denials(),
        [
            "egress_denied",
            "egress_denied",
            "tool_denied",
            "fs_write_denied",
            "path_traversal"
        ]
    );
    // The granted server saw the one request; the other, nothing.
    assert_eq!(granted.connections(), 1);
    assert_eq!(other.connections(), 0);
    assert_eq!(snapshot(&t.path("data")), data_before);
    assert_eq!(
        std::fs::read_to_string(t.path("secret.txt")).unwrap(),
        "CANARY"
    );
}

/// `sbx-wasm run` with `args`, in `dir`, stdin from `input`.
fn sbx(dir: &Path, args: &[&str], input: &[u8]) -> std::process::Output {
    let mut child = Command::new(sbx_bin())
        .current_dir(dir)
        .env("SBX_WASM_CACHE_DIR", warm_cache())
        .env("SBX_WASM_JS_RUNNER", js_runner())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn a_script_on_stdin_runs_as_typescript_and_needs_its_language_named() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("caps.toml"), "").unwrap();
    let src = b"const n: number = 6 * 7; console.log(n);";
    let o = sbx(
        dir.path(),
        &["run", "--caps", "caps.toml", "--js", "-"],
        src,
    );
    assert_eq!(o.status.code(), Some(0), "{}", utf8(&o.stderr));
    assert_eq!(utf8(&o.stdout), "42\n");
    let o = sbx(dir.path(), &["run", "--caps", "caps.toml", "-"], src);
    assert_eq!(o.status.code(), Some(125));
    assert!(
        utf8(&o.stderr).contains("--python or --js"),
        "{}",
        utf8(&o.stderr)
    );
    let o = sbx(
        dir.path(),
        &[
            "run",
            "--caps",
            "caps.toml",
            "--js-runner",
            "x.wasm",
            "a.py",
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(125));
    // A script past 4 MiB is refused before any guest starts, from stdin
    // (read no further than the bound) as from a file; at the bound it runs.
    let mut big = b"//".to_vec();
    big.resize(4 * 1024 * 1024, b'x');
    std::fs::write(dir.path().join("edge.js"), &big).unwrap();
    let o = sbx(dir.path(), &["run", "--caps", "caps.toml", "edge.js"], b"");
    assert_eq!(o.status.code(), Some(0), "{}", utf8(&o.stderr));
    big.push(b'x');
    let o = sbx(
        dir.path(),
        &["run", "--caps", "caps.toml", "--js", "-"],
        &big,
    );
    assert_eq!(o.status.code(), Some(125));
    assert!(
        utf8(&o.stderr).contains("over 4194304 bytes"),
        "{}",
        utf8(&o.stderr)
    );
    std::fs::write(dir.path().join("big.js"), &big).unwrap();
    let o = sbx(dir.path(), &["run", "--caps", "caps.toml", "big.js"], b"");
    assert_eq!(o.status.code(), Some(125));
    assert!(
        utf8(&o.stderr).contains("scripts are limited to 4194304 bytes"),
        "{}",
        utf8(&o.stderr)
    );
}

#[test]
fn a_deterministic_run_repeats_and_a_recording_replays_identically() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("out")).unwrap();
    std::fs::write(
        d.join("caps.toml"),
        "[fs]\nwrite = [{ host = \"out\", guest = \"/out\" }]\n",
    )
    .unwrap();
    std::fs::write(
        d.join("r.ts"),
        "import { writeFileSync, readFileSync } from 'fs';\n\
         const v = [Math.random(), Date.now(), crypto.getRandomValues(new Uint8Array(4)).join()];\n\
         writeFileSync('/out/v.txt', v.join(' '));\n\
         console.log(v.join(' '), readFileSync('/out/v.txt', 'utf8') === v.join(' '));",
    )
    .unwrap();
    let run = |args: &[&str]| sbx(d, args, b"");
    let a = run(&["run", "--caps", "caps.toml", "--deterministic", "r.ts"]);
    let b = run(&["run", "--caps", "caps.toml", "--deterministic", "r.ts"]);
    assert_eq!(a.status.code(), Some(0), "{}", utf8(&a.stderr));
    assert_eq!(a.stdout, b.stdout);
    let c = run(&["run", "--caps", "caps.toml", "r.ts"]);
    assert_ne!(a.stdout, c.stdout, "Math.random repeats across runs");

    let rec = run(&[
        "run",
        "--caps",
        "caps.toml",
        "--no-stdin",
        "--record",
        "r.sbxrec",
        "--audit",
        "a1.jsonl",
        "r.ts",
    ]);
    assert_eq!(rec.status.code(), Some(0), "{}", utf8(&rec.stderr));
    let rep = run(&["replay", "r.sbxrec", "--audit", "a2.jsonl"]);
    assert_eq!(rep.status.code(), Some(0), "{}", utf8(&rep.stderr));
    assert_eq!(rep.stdout, rec.stdout);
    assert_eq!(
        std::fs::read(d.join("a2.jsonl")).unwrap(),
        std::fs::read(d.join("a1.jsonl")).unwrap()
    );
}

#[test]
fn the_library_runs_snippets_on_a_warm_js_runner() {
    use sbx_wasm::Capabilities;
    use sbx_wasm::wasm::{ArtifactCache, JsRunner, RunOptions, WasmHost};
    let cache = ArtifactCache::open(warm_cache()).unwrap();
    let host = WasmHost::new().unwrap().with_cache(cache);
    let js = JsRunner::load(&host, &js_runner())
        .unwrap()
        .keep_warm(1)
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("in.txt"), "from the host").unwrap();
    let caps = Capabilities::builder()
        .read_mount(dir.path(), "/data")
        .build()
        .unwrap();
    for _ in 0..3 {
        let run = js
            .run_source(
                &host,
                "import { readFileSync } from 'fs';\nconst t: string = readFileSync('/data/in.txt', 'utf8');\nconsole.log(t.toUpperCase());",
                RunOptions::new(caps.clone()),
            )
            .unwrap();
        assert_eq!(utf8(&run.stdout), "FROM THE HOST\n");
        assert_eq!(run.audit.len(), 1, "{:?}", run.audit);
        assert_eq!(run.audit[0].op, "fs_read");
        assert_eq!(run.audit[0].target, "/data/in.txt");
    }
    let run = js
        .run_source(
            &host,
            "require('fs').writeFileSync('/data/in.txt', 'x')",
            RunOptions::new(caps),
        )
        .unwrap();
    assert_eq!(run.report.denials[0].violation.as_str(), "fs_write_denied");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("in.txt")).unwrap(),
        "from the host"
    );
}
