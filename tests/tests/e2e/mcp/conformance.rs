//! The official MCP conformance suite (`@modelcontextprotocol/conformance`,
//! pinned with the Node.js 22 it needs in `tests/mcp/conformance/`, both
//! from the npm registry) against `sbx-wasm mcp --http` serving the shipped
//! example `examples/mcp-conformance/` (its grant and its catalog of the
//! suite's fixtures), held to the baseline of scenarios that do not pass
//! yet (`expected-failures.yml`): the suite fails for a scenario that fails
//! outside it or passes inside it. The count `docs/mcp.md` states is
//! checked against the run.

use super::{Fixture, HttpServer};
use sbx_wasm_tests::python_runner;
use sbx_wasm_tests::repo_root;
use std::path::PathBuf;
use std::process::Command;

/// Node.js and the suite's entry point.
fn suite() -> (PathBuf, PathBuf) {
    let tree = super::npm_tree("conformance");
    (
        super::node(&tree),
        tree.join("node_modules/@modelcontextprotocol/conformance/dist/index.js"),
    )
}

/// The "passes N of M" of docs/mcp.md's Conformance section.
fn stated_count() -> (usize, usize) {
    let docs = std::fs::read_to_string(repo_root().join("docs/mcp.md")).unwrap();
    let section = docs
        .split("\n## Conformance\n")
        .nth(1)
        .expect("a Conformance section");
    let marker = " passes ";
    let at = section.find(marker).expect("the section states the count") + marker.len();
    let words: Vec<&str> = section[at..].split_whitespace().take(3).collect();
    assert_eq!(words[1], "of", "{words:?}");
    (words[0].parse().unwrap(), words[2].parse().unwrap())
}

#[test]
fn the_official_conformance_suite_passes_its_baseline_and_the_stated_count() {
    let (node, entry) = suite();
    let f = Fixture::new();
    let example = repo_root().join("examples/mcp-conformance");
    let path = |p: PathBuf| p.display().to_string();
    let args: Vec<String> = vec![
        "mcp".into(),
        "--caps".into(),
        path(example.join("caps.toml")),
        "--catalog".into(),
        path(example.join("catalog.toml")),
        "--python-runner".into(),
        path(python_runner()),
        "--audit".into(),
        path(f.path("audit.jsonl")),
        "--log".into(),
        path(f.path("server.log")),
        "--http".into(),
        "127.0.0.1:0".into(),
    ];
    let mut server = HttpServer::spawn(&args, &f.env());
    let baseline = repo_root().join("tests/mcp/conformance/expected-failures.yml");
    let out = Command::new(node)
        .arg(entry)
        .args(["server", "--url", &server.url, "--expected-failures"])
        .arg(&baseline)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the suite, against its baseline: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = stdout.split("=== SUMMARY ===").nth(1).expect("a summary");
    let passed = summary.lines().filter(|l| l.starts_with("✓ ")).count();
    let failed = summary.lines().filter(|l| l.starts_with("✗ ")).count();
    assert_eq!(
        stated_count(),
        (passed, passed + failed),
        "docs/mcp.md's count is not the run's: {summary}"
    );
    assert_eq!(server.terminate(), Some(0));
}
