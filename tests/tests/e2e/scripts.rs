//! What the script tests share (Python's in `python.rs`, JavaScript's in
//! `javascript.rs`): an artifact cache with both runners compiled, and `Py`,
//! a temp tree with mounts and a caps file whose scripts `sbx-wasm run` runs
//! in a runner, with what a run left (`Ran`).

use sbx_wasm_tests::{
    compile_into, copy_tree, js_runner, mount_caps, mount_tree, python_runner, repo_root, sbx_bin,
    test_cache, utf8,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// An artifact cache shared by the tests and kept across `cargo
/// test` runs (entries are keyed by component and engine, so reuse is
/// safe): the 30 MB runner is compiled once, not once per test.
pub(crate) fn warm_cache() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = test_cache();
        // Both script runners: the JavaScript tests share it.
        for runner in [python_runner(), js_runner()] {
            compile_into(&dir, &runner);
        }
        dir
    })
}

/// A temp folder holding `data/` (read mount `/work`), `out/` (write mount
/// `/work/out`), a caps file and scripts, and the runner its scripts run
/// in (Python here; `javascript.rs` uses it with the JavaScript runner).
pub(crate) struct Py {
    pub(crate) dir: tempfile::TempDir,
    /// The runner's flag and component.
    runner: (&'static str, PathBuf),
}

pub(crate) struct Ran {
    pub(crate) out: Output,
    pub(crate) report: Value,
}

impl Ran {
    pub(crate) fn code(&self) -> Option<i32> {
        self.out.status.code()
    }
    pub(crate) fn stdout(&self) -> String {
        utf8(&self.out.stdout)
    }
    pub(crate) fn stderr(&self) -> String {
        utf8(&self.out.stderr)
    }
    pub(crate) fn violation(&self) -> &str {
        self.report["violation"].as_str().unwrap_or("")
    }
    /// The shipped hostile example's end (in Python and TypeScript alike):
    /// each of the seed's five attempts denied in order, then halted by a
    /// hard limit.
    pub(crate) fn assert_seed_hostile(&self) {
        assert_eq!(self.code(), Some(124), "{}", self.stderr());
        assert_eq!(
            self.denials(),
            [
                "fs_read_denied",
                "path_traversal",
                "egress_denied",
                "tool_denied",
                "fs_write_denied"
            ],
            "{}",
            self.report
        );
        assert!(
            ["max_fuel", "max_wall"].contains(&self.violation()),
            "{}",
            self.report
        );
    }

    /// Soft denials, in order.
    pub(crate) fn denials(&self) -> Vec<String> {
        self.report["denials"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["hard"] == false)
            .map(|d| d["violation"].as_str().unwrap().to_string())
            .collect()
    }
}

fn python() -> (&'static str, PathBuf) {
    ("--python-runner", python_runner())
}

impl Py {
    /// The shipped `examples/python` folder, copied.
    pub(crate) fn example() -> Self {
        let dir = tempfile::tempdir().unwrap();
        copy_tree(&repo_root().join("examples/python"), dir.path());
        Py::in_dir(dir)
    }

    /// A tree made by the caller, its scripts run by the Python runner.
    pub(crate) fn in_dir(dir: tempfile::TempDir) -> Self {
        Py {
            dir,
            runner: python(),
        }
    }

    /// This tree, its scripts run by the JavaScript runner.
    pub(crate) fn js(mut self) -> Self {
        self.runner = ("--js-runner", js_runner());
        self
    }

    /// A fresh tree with `budget` TOML lines and `extra` caps sections.
    pub(crate) fn new(budget: &str, extra: &str) -> Self {
        let dir = mount_tree(&[
            ("data/table.csv", "name,score\nada,3\nbob,5\n"),
            ("secret.txt", "CANARY"),
            (
                "caps.toml",
                &mount_caps(&format!("{extra}\n[budget]\n{budget}")),
            ),
        ]);
        Py::in_dir(dir)
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub(crate) fn write(&self, name: &str, source: &str) {
        std::fs::write(self.path(name), source).unwrap();
    }

    pub(crate) fn cmd(&self, cache: &Path) -> Command {
        let mut c = Command::new(sbx_bin());
        c.current_dir(self.dir.path())
            .env("SBX_WASM_CACHE_DIR", cache)
            .stdin(Stdio::null());
        c
    }

    /// `sbx-wasm run --caps caps.toml SCRIPT -- ARGS` with the shared cache.
    pub(crate) fn run(&self, script: &str, args: &[&str]) -> Ran {
        self.run_with(warm_cache(), script, args)
    }

    pub(crate) fn run_with(&self, cache: &Path, script: &str, args: &[&str]) -> Ran {
        let report = self.path("report.json");
        let _ = std::fs::remove_file(&report);
        let out = self
            .cmd(cache)
            .args(["run", "--summary", "--caps", "caps.toml", "--report"])
            .arg(&report)
            .arg(self.runner.0)
            .arg(&self.runner.1)
            .arg(script)
            .arg("--")
            .args(args)
            .output()
            .unwrap();
        let report = std::fs::read_to_string(&report)
            .map(|t| serde_json::from_str(&t).unwrap())
            .unwrap_or(Value::Null);
        Ran { out, report }
    }
}
