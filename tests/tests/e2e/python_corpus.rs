//! The corpus of scripts as agents write them (`tests/python/corpus/`,
//! "the data is in /work, write results to /work/out"), each run by
//! `sbx-wasm run --caps caps.toml script.py` as a user would, under a grant
//! of a read mount, a write mount and one HTTP origin (a real server on
//! 127.0.0.1).
//!
//! - An ordinary script runs natively too (`python3` with the runner's own
//!   bundled packages, in a virtual environment cached by the requirements'
//!   hash), on its own copy of the same data: both must exit alike, print
//!   the same, leave the same files (text files byte for byte) and the
//!   sandboxed run must have no denial on record.
//! - `# sbx-corpus: fails-with: TEXT` marks what the runner cannot do yet
//!   (listed in docs/python.md): the run must fail with TEXT on stderr,
//!   so a script that starts working is noticed.
//! - `# sbx-corpus: data` marks a script for the data runner (numpy,
//!   pandas, matplotlib): it runs with `--data`, natively in a virtual
//!   environment with those packages (`corpus/data-requirements.txt`),
//!   and is compared as an ordinary one.
//! - `# sbx-corpus: hostile` marks an attack: it runs only in the sandbox,
//!   must say `blocked` for each attempt and never what it tried, leave
//!   the host tree (data, outputs and a canary beside them) unchanged, and
//!   open no connection to a second server that was not granted.

use sbx_wasm_tests::{LoopbackServer, copy_tree, repo_root, snapshot, utf8};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The origin the scripts are written against, and one they must not reach.
const GRANTED: &str = "127.0.0.1:8999";
const NOT_GRANTED: &str = "127.0.0.1:8998";
const MARK: &str = "# sbx-corpus: ";

/// Files compared by name only: their bytes carry times, random
/// boundaries or a library's version (zlib's, SQLite's).
/// (A PNG carries its library's version and font rendering.)
const BINARY: &[&str] = &["zip", "gz", "db", "pkl", "bin", "eml", "png"];

#[derive(Debug, PartialEq)]
enum Kind {
    Ordinary,
    Data,
    FailsWith(String),
    Hostile,
}

fn kind(source: &str) -> Kind {
    for line in source.lines() {
        if let Some(rest) = line.strip_prefix(MARK) {
            if rest.trim() == "hostile" {
                return Kind::Hostile;
            }
            if rest.trim() == "data" {
                return Kind::Data;
            }
            if let Some(text) = rest.strip_prefix("fails-with: ") {
                return Kind::FailsWith(text.trim().to_string());
            }
            panic!("unknown corpus mark: {line}");
        }
    }
    Kind::Ordinary
}

/// `python3` in a virtual environment holding the runner's bundled
/// packages, made once per set of requirements in the user's cache folder.
fn native_python() -> PathBuf {
    // The runner's two lists, pins kept and hashes dropped: the runner's
    // hashes name wheels for its own Python and platform, not this one's.
    let dir = repo_root().join("host/runners/python");
    let mut pins = String::new();
    for list in ["requirements.txt", "requirements-pure-part.txt"] {
        let text = std::fs::read_to_string(dir.join(list)).unwrap();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            if let Some(pin) = line.split_whitespace().next() {
                pins.push_str(pin);
                pins.push('\n');
            }
        }
    }
    let scratch = tempfile::tempdir().unwrap();
    let requirements = scratch.path().join("requirements.txt");
    std::fs::write(&requirements, pins).unwrap();
    sbx_wasm_tests::cached_venv("native-python", &requirements, &["--only-binary=:all:"])
}

/// `python3` with numpy, pandas and matplotlib (the versions nearest the
/// data runner's that PyPI has for this machine's Python), for the data
/// scripts' native runs.
fn native_data_python() -> PathBuf {
    let list = repo_root().join("tests/python/corpus/data-requirements.txt");
    sbx_wasm_tests::cached_venv("native-python-data", &list, &["--only-binary=:all:"])
}

/// A fresh copy of the data at `dir/work`, an empty folder for outputs at
/// `dir/OUT`, and a canary beside them.
fn stage(dir: &Path, out: &str) {
    copy_tree(
        &repo_root().join("tests/python/corpus/data"),
        &dir.join("work"),
    );
    std::fs::create_dir_all(dir.join(out)).unwrap();
    std::fs::write(dir.join("canary.txt"), "untouched\n").unwrap();
}

/// Run `script` under the grant, from `dir`; the report is parsed. A data
/// script runs in the data runner (compiled in the user's cache folder,
/// once per machine), with no fuel budget: pandas and matplotlib
/// imported together pass the default.
fn sandboxed(dir: &Path, script: &Path, port: u16, data: bool) -> (Output, serde_json::Value) {
    let mut caps = format!(
        "[fs]\nread = [{{ host = \"work\", guest = \"/work\" }}]\n\
         write = [{{ host = \"out\", guest = \"/work/out\" }}]\n\
         [net]\nallow = [\"http://127.0.0.1:{port}\"]\n"
    );
    if data {
        caps.push_str("[budget]\nmax_fuel = \"off\"\nmax_wall_ms = 120000\n");
    }
    std::fs::write(dir.join("caps.toml"), caps).unwrap();
    let mut cmd = Command::new(sbx_wasm_tests::sbx_bin());
    cmd.current_dir(dir)
        .args(["run", "--caps", "caps.toml", "--report", "report.json"]);
    if data {
        super::python_data::ready();
        cmd.env("SBX_WASM_DATA_RUNNER", sbx_wasm_tests::data_runner())
            .arg("--data");
    } else {
        cmd.env("SBX_WASM_CACHE_DIR", super::python::warm_cache())
            .arg("--python-runner")
            .arg(sbx_wasm_tests::python_runner());
    }
    let out = cmd.arg(script).output().unwrap();
    let report = std::fs::read(dir.join("report.json")).unwrap_or_default();
    let report = serde_json::from_slice(&report).unwrap_or(serde_json::Value::Null);
    (out, report)
}

/// What a tree holds, compared across the two runs: every path, and the
/// bytes of each text file.
fn outputs(root: &Path) -> Vec<(String, Option<Vec<u8>>)> {
    snapshot(root)
        .into_iter()
        .map(|(path, node)| {
            let name = path.to_string_lossy().into_owned();
            let text = !BINARY.iter().any(|ext| name.ends_with(&format!(".{ext}")));
            let bytes = match node {
                sbx_wasm_tests::Node::File(b) if text => Some(b),
                _ => None,
            };
            (name, bytes)
        })
        .collect()
}

struct Outcome {
    name: String,
    problem: Option<String>,
}

fn ordinary(name: &str, source: &str, python: &Path, port: u16, data: bool) -> Option<String> {
    let base = tempfile::tempdir().unwrap();
    // Natively: the same script on its own copy, /work being that folder.
    let native = base.path().join("native");
    stage(&native, "work/out");
    let here = native.join("work");
    let native_source = source.replace("/work", &here.to_string_lossy());
    std::fs::write(native.join(format!("{name}.py")), native_source).unwrap();
    let n = Command::new(python)
        .current_dir(&native)
        .env_remove("PYTHONPATH")
        .arg(format!("{name}.py"))
        .output()
        .unwrap();
    let n_stdout = utf8(&n.stdout).replace(&*here.to_string_lossy(), "/work");
    let n_files = outputs(&here.join("out"));
    // In the sandbox.
    let sbx = base.path().join("sbx");
    stage(&sbx, "out");
    let script = sbx.join(format!("{name}.py"));
    std::fs::write(&script, source).unwrap();
    let (s, report) = sandboxed(&sbx, &script, port, data);
    let s_files = outputs(&sbx.join("out"));
    if n.status.code() != s.status.code() {
        return Some(format!(
            "exit {:?} natively, {:?} in the sandbox\n{}",
            n.status.code(),
            s.status.code(),
            utf8(&s.stderr)
        ));
    }
    if n_stdout != utf8(&s.stdout) {
        return Some(format!(
            "stdout differs\n-- native\n{n_stdout}\n-- sandbox\n{}\n{}",
            utf8(&s.stdout),
            utf8(&s.stderr)
        ));
    }
    if n_files != s_files {
        let names = |f: &[(String, Option<Vec<u8>>)]| {
            f.iter()
                .map(|(n, b)| format!("{n} {:?}", b.as_ref().map(Vec::len)))
                .collect::<Vec<_>>()
        };
        return Some(format!(
            "outputs differ: native {:?}, sandbox {:?}",
            names(&n_files),
            names(&s_files)
        ));
    }
    let denials = report["denials"].as_array().map_or(usize::MAX, Vec::len);
    (denials != 0).then(|| format!("denials on record: {}", report["denials"]))
}

fn fails_with(name: &str, source: &str, text: &str, port: u16) -> Option<String> {
    let base = tempfile::tempdir().unwrap();
    stage(base.path(), "out");
    let script = base.path().join(format!("{name}.py"));
    std::fs::write(&script, source).unwrap();
    let (s, _) = sandboxed(base.path(), &script, port, false);
    let stderr = utf8(&s.stderr);
    (s.status.success() || !stderr.contains(text)).then(|| {
        format!(
            "expected to fail with {text:?} (if it works now, drop the mark and the docs' entry)\n{stderr}"
        )
    })
}

/// A hostile script in the stock runner, or with `data` in the data
/// runner: there an attack through the network cannot even start (no
/// sockets, no HTTP client: the script ends on the missing module), and
/// every other must be refused as in the stock runner.
fn hostile(name: &str, source: &str, port: u16, data: bool) -> Option<String> {
    let base = tempfile::tempdir().unwrap();
    stage(base.path(), "out");
    let script = base.path().join(format!("{name}.py"));
    std::fs::write(&script, source).unwrap();
    let before = snapshot(base.path());
    let (s, report) = sandboxed(base.path(), &script, port, data);
    let mut after = snapshot(base.path());
    // What the run itself wrote beside the grant: its caps and report.
    for own in ["report.json", "caps.toml"] {
        after.remove(Path::new(own));
    }
    let stdout = utf8(&s.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    let stderr = utf8(&s.stderr);
    let no_network = data
        && !s.status.success()
        && (stderr.contains("No module named 'requests'") || stderr.contains("'_socket'"));
    if no_network {
        if lines.iter().any(|l| !l.starts_with("blocked")) {
            return Some(format!("an attempt was not refused as expected:\n{stdout}"));
        }
        return (before != after).then(|| "the host tree changed".to_string());
    }
    if !s.status.success() {
        return Some(format!("exit {:?}\n{}", s.status.code(), utf8(&s.stderr)));
    }
    if lines.is_empty()
        || lines
            .iter()
            .any(|l| !l.starts_with("blocked") || l.ends_with("False"))
    {
        return Some(format!("an attempt was not refused as expected:\n{stdout}"));
    }
    if before != after {
        return Some("the host tree changed".to_string());
    }
    let denials = report["denials"].as_array().map_or(0, Vec::len);
    (denials == 0 && !name.contains("socket") && !name.contains("subprocess"))
        .then(|| "no denial on record".to_string())
}

#[test]
fn agent_written_scripts_work_unchanged_and_hostile_ones_are_contained() {
    let dir = repo_root().join("tests/python/corpus");
    let mut scripts: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .collect();
    scripts.sort();
    let granted = LoopbackServer::start();
    let other = LoopbackServer::start();
    let python = native_python();
    let mut outcomes = Vec::new();
    let mut counts = [0usize; 3];
    for script in &scripts {
        let name = script.file_stem().unwrap().to_string_lossy().into_owned();
        let source = std::fs::read_to_string(script)
            .unwrap()
            .replace(GRANTED, &format!("127.0.0.1:{}", granted.port))
            .replace(NOT_GRANTED, &format!("127.0.0.1:{}", other.port));
        let problem = match kind(&source) {
            Kind::Ordinary => {
                counts[0] += 1;
                ordinary(&name, &source, &python, granted.port, false)
            }
            Kind::Data => {
                counts[0] += 1;
                ordinary(&name, &source, &native_data_python(), granted.port, true)
            }
            Kind::FailsWith(text) => {
                counts[1] += 1;
                fails_with(&name, &source, &text, granted.port)
            }
            Kind::Hostile => {
                counts[2] += 1;
                // Contained by both runners.
                hostile(&name, &source, granted.port, false).or_else(|| {
                    hostile(&name, &source, granted.port, true).map(|p| format!("(--data) {p}"))
                })
            }
        };
        outcomes.push(Outcome { name, problem });
    }
    let [ordinary, failing, hostile] = counts;
    eprintln!(
        "corpus: {} scripts: {ordinary} work unchanged as natively, {failing} fail as documented, {hostile} hostile ones contained",
        scripts.len()
    );
    let problems: Vec<String> = outcomes
        .iter()
        .filter_map(|o| o.problem.as_ref().map(|p| format!("== {}: {p}", o.name)))
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert_eq!(
        other.connections(),
        0,
        "a script reached the server it was not granted"
    );
    assert!(
        granted.connections() > 0,
        "no script reached the granted server"
    );
    // The corpus the docs describe: at least 60 scripts, every kind in it.
    assert!(
        scripts.len() >= 60 && ordinary >= 50 && hostile >= 6,
        "{counts:?}"
    );
}
