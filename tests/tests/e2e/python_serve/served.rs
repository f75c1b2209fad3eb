//! The harness of the `python serve` tests: a server of its own per test,
//! runs through it, what a run printed and reported, and the processes a
//! server has.

pub(super) use super::super::python::warm_cache;
use sbx_wasm_tests::{mount_caps, mount_tree, python_runner, repo_root, sbx_bin, utf8};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// A server of its own for one test: the runner hard-linked under a path
/// of the test's (a server is keyed by the runner's path, so tests running
/// at once do not meet each other's), artifacts from the shared cache.
pub(super) struct Served {
    /// Holds the runner's link; removed with the server.
    _dir: tempfile::TempDir,
    pub(super) runner: PathBuf,
    pub(super) server: Child,
    pub(super) socket: PathBuf,
}

impl Served {
    pub(super) fn start(env: &[(&str, &str)]) -> Served {
        let dir = tempfile::tempdir_in(repo_root().join("target")).unwrap();
        let runner = dir.path().join("runner.wasm");
        std::fs::hard_link(python_runner(), &runner).unwrap();
        let (server, socket) = start_server(&runner, env);
        Served {
            _dir: dir,
            runner,
            server,
            socket,
        }
    }

    /// `sbx-wasm run --summary --caps caps.toml --report report.json
    /// --python-runner RUNNER SCRIPT` in `tree`, with `extra` flags.
    pub(super) fn run(
        &self,
        tree: &Path,
        script: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Ran {
        let mut cmd = self.cmd(tree, script, extra, env);
        let out = cmd.stdin(Stdio::null()).output().unwrap();
        Ran::read(tree, out)
    }

    /// The same run in the background, stdin, stdout and stderr piped.
    pub(super) fn spawn(&self, tree: &Path, script: &str) -> Child {
        self.cmd(tree, script, &[], &[])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    pub(super) fn cmd(
        &self,
        tree: &Path,
        script: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Command {
        let _ = std::fs::remove_file(tree.join("report.json"));
        let mut cmd = Command::new(sbx_bin());
        cmd.current_dir(tree)
            .env("SBX_WASM_CACHE_DIR", warm_cache())
            .envs(env.iter().copied())
            .args([
                "run",
                "--summary",
                "--caps",
                "caps.toml",
                "--report",
                "report.json",
            ])
            .arg("--python-runner")
            .arg(&self.runner)
            .args(extra)
            .arg(script);
        cmd
    }

    /// The worker processes of this server (idle or running).
    pub(super) fn workers(&self) -> Vec<u32> {
        children(self.server.id())
            .into_iter()
            .filter(|pid| cmdline(*pid).contains("__python-worker"))
            .collect()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg(self.server.id().to_string())
            .status();
        let _ = self.server.wait();
    }
}

/// Start `sbx-wasm python serve` for `runner`; it prints its socket's path
/// once its first worker is ready.
pub(super) fn start_server(runner: &Path, env: &[(&str, &str)]) -> (Child, PathBuf) {
    let mut server = Command::new(sbx_bin())
        .env("SBX_WASM_CACHE_DIR", warm_cache())
        .envs(env.iter().copied())
        .args(["python", "serve", "--python-runner"])
        .arg(runner)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (line, _) = first_line(&mut server);
    if !line.trim().ends_with(".sock") {
        let _ = server.kill();
        let out = server.wait_with_output().unwrap();
        panic!("the server did not start: {line:?} {}", utf8(&out.stderr));
    }
    (server, PathBuf::from(line.trim()))
}

pub(super) struct Ran {
    pub(super) out: Output,
    pub(super) report: Value,
}

impl Ran {
    pub(super) fn read(tree: &Path, out: Output) -> Ran {
        let report = std::fs::read_to_string(tree.join("report.json"))
            .map(|t| serde_json::from_str(&t).unwrap())
            .unwrap_or(Value::Null);
        Ran { out, report }
    }
    pub(super) fn code(&self) -> Option<i32> {
        self.out.status.code()
    }
    pub(super) fn stdout(&self) -> String {
        utf8(&self.out.stdout)
    }
    pub(super) fn stderr(&self) -> String {
        utf8(&self.out.stderr)
    }
    pub(super) fn served(&self) -> bool {
        self.stderr().contains("; warm worker")
    }
    pub(super) fn denials(&self) -> Vec<String> {
        self.report["denials"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|d| d["violation"].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// A tree with `data/` (read at `/work`), `out/` (written at `/work/out`),
/// a caps file with `extra` sections and `scripts` (name, source).
pub(super) fn tree(extra: &str, scripts: &[(&str, &str)]) -> tempfile::TempDir {
    let caps = mount_caps(extra);
    let mut files = vec![
        ("data/table.csv", "name,score\nada,3\nbob,5\n"),
        ("caps.toml", caps.as_str()),
    ];
    files.extend_from_slice(scripts);
    mount_tree(&files)
}

/// The first line `child` writes to its (piped) stdout, and the rest of
/// it to read on (dropped, the pipe closes: the child's next write fails).
pub(super) fn first_line(child: &mut Child) -> (String, BufReader<std::process::ChildStdout>) {
    let mut line = String::new();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    out.read_line(&mut line).unwrap();
    (line, out)
}

/// The pids whose parent is `pid`.
pub(super) fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(child) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
            continue;
        };
        // state, then ppid; a zombie has finished.
        let mut fields = rest.split(' ');
        let state = fields.next();
        if state != Some("Z") && fields.next() == Some(pid.to_string().as_str()) {
            out.push(child);
        }
    }
    out
}

pub(super) fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| utf8(&b))
        .unwrap_or_default()
}
