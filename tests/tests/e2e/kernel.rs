//! The kernel second wall, proven without wasm's help: a child process (the
//! real binary's `kernel-check`) applies the confinement `run` applies for a
//! caps file, then makes raw system calls. The kernel refuses what the
//! grant does not name and allows what it does; `run` reports the wall.

use sbx_wasm_tests::{LoopbackServer, guest, mount_caps, mount_tree, sbx_bin, snapshot};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `data/` (read mount), `out/` (write mount), a secret beside them.
struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    fn new(net: &str) -> Self {
        let dir = mount_tree(&[
            ("data/data.csv", "quarter,revenue\nQ1,10\nQ2,32\n"),
            ("secret.txt", "CANARY"),
            ("caps.toml", &mount_caps(net)),
        ]);
        Tree { dir }
    }
    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
}

/// Run `kernel-check` in a child; its first line (the wall) and the verdict
/// for each attempt.
fn kernel_check(t: &Tree, args: &[String]) -> (Value, Vec<String>) {
    let out = Command::new(sbx_bin())
        .current_dir(t.dir.path())
        .args(["kernel-check", "--caps", "caps.toml"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    let wall = serde_json::from_str(lines.next().unwrap()).unwrap();
    (wall, lines.map(String::from).collect())
}

/// Each attempt's verdict, short: `allowed`, or the errno the kernel gave.
fn verdicts(lines: &[String]) -> Vec<&'static str> {
    lines
        .iter()
        .map(|l| match l.rsplit_once(": ").map(|(_, v)| v) {
            Some("allowed") => "allowed",
            Some(v) if v.starts_with("refused (Permission denied") => "EACCES",
            Some(v) if v.starts_with("refused (Operation not permitted") => "EPERM",
            _ => "other",
        })
        .collect()
}

fn arg(flag: &str, value: impl AsRef<Path>) -> [String; 2] {
    [flag.to_string(), value.as_ref().display().to_string()]
}

#[test]
fn the_kernel_refuses_files_ports_and_programs_outside_the_grant() {
    let granted = LoopbackServer::start();
    let other = LoopbackServer::start();
    let t = Tree::new(&format!("[net]\nallow = [\"{}\"]", granted.origin()));
    let before = snapshot(t.dir.path());
    let mut args = Vec::new();
    args.extend(arg("--read", t.path("data/data.csv")));
    args.extend(arg("--read", t.path("secret.txt")));
    args.extend(arg("--write", t.path("out/new.txt")));
    args.extend(arg("--write", t.path("data/planted.txt")));
    args.extend(arg("--write", t.path("planted.txt")));
    args.extend(arg("--connect", format!("127.0.0.1:{}", granted.port)));
    args.extend(arg("--connect", format!("127.0.0.1:{}", other.port)));
    args.extend(arg("--exec", "/bin/true"));
    let (wall, got) = kernel_check(&t, &args);

    assert_eq!(wall["up"], true, "{wall}");
    assert_eq!(wall["landlock"], "fully_enforced");
    assert_eq!(wall["seccomp"], true);
    assert_eq!(wall["no_new_privs"], true);
    assert_eq!(wall["network"], format!("ports {}", granted.port));
    // The other server listens: only the kernel can have refused that connect.
    assert_eq!(
        verdicts(&got),
        [
            "allowed", "EACCES", "allowed", "EACCES", "EACCES", "allowed", "EACCES", "EPERM"
        ],
        "{got:?}"
    );
    // The granted connect completed in the kernel's backlog; the server's
    // accept loop counts it when it gets to it.
    let waited = std::time::Instant::now();
    while granted.connections() < 1 && waited.elapsed() < std::time::Duration::from_secs(5) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(granted.connections(), 1);
    assert_eq!(
        other.connections(),
        0,
        "a refused connect reached the server"
    );
    // Only the allowed write happened.
    let mut after = snapshot(t.dir.path());
    assert!(after.remove(Path::new("out/new.txt")).is_some());
    assert_eq!(after, before);
}

#[test]
fn without_net_rules_no_tcp_port_is_reachable() {
    let server = LoopbackServer::start();
    let t = Tree::new("");
    let (wall, got) = kernel_check(&t, &arg("--connect", format!("127.0.0.1:{}", server.port)));
    assert_eq!(wall["network"], "none");
    assert_eq!(verdicts(&got), ["EACCES"], "{got:?}");
    assert_eq!(server.connections(), 0);
}

#[test]
fn the_kernel_lets_a_bind_take_only_the_ports_listen_rules_name() {
    let granted = LoopbackServer::start();
    // Two ports free a moment ago: one a listen rule names, one not.
    let free = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    };
    let (named, other) = (free(), free());
    let t = Tree::new(&format!(
        "[net]\nallow = [\"{}\"]\nlisten = [\"127.0.0.1:{named}\"]",
        granted.origin()
    ));
    let mut args = Vec::new();
    args.extend(arg("--bind", format!("127.0.0.1:{named}")));
    args.extend(arg("--bind", format!("127.0.0.1:{other}")));
    args.extend(arg("--bind", "127.0.0.1:0"));
    let (wall, got) = kernel_check(&t, &args);
    assert_eq!(wall["up"], true, "{wall}");
    assert_eq!(
        wall["network"],
        format!("ports {}; bind ports {named}", granted.port)
    );
    assert_eq!(verdicts(&got), ["allowed", "EACCES", "EACCES"], "{got:?}");
}

fn run(t: &Tree, extra: &[&str]) -> (Option<i32>, String, Value) {
    let out = Command::new(sbx_bin())
        .current_dir(t.dir.path())
        .args([
            "run",
            "--summary",
            "--caps",
            "caps.toml",
            "--report",
            "r.json",
        ])
        .args(extra)
        .arg(guest("benign"))
        .output()
        .unwrap();
    let report = std::fs::read_to_string(t.path("r.json"))
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(Value::Null);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        report,
    )
}

#[test]
fn every_run_reports_whether_the_wall_was_up() {
    let t = Tree::new("");
    let (code, stderr, report) = run(&t, &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(report["kernel_wall"]["up"], true, "{report}");
    assert!(stderr.contains("; kernel wall up"), "{stderr}");
    // The guest's allowed write went through the confined process.
    assert!(t.path("out/summary.txt").exists());

    let (code, stderr, report) = run(&t, &["--no-kernel-confinement"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(report["kernel_wall"]["up"], false, "{report}");
    assert_eq!(report["kernel_wall"]["landlock"], "off", "{report}");
    assert!(stderr.contains("; kernel wall off"), "{stderr}");
}

#[test]
fn requiring_the_wall_refuses_a_grant_the_kernel_cannot_hold() {
    // `port *` cannot be expressed as Landlock port rules: TCP stays open.
    let t = Tree::new("[net]\nallow = [\"http://127.0.0.1:*\"]");
    let (code, stderr, _) = run(&t, &["--require-kernel-confinement"]);
    assert_eq!(code, Some(125), "{stderr}");
    assert!(
        stderr.contains("kernel confinement was required and is not fully enforced"),
        "{stderr}"
    );
    assert!(stderr.contains("allows any port"), "{stderr}");
    assert!(!t.path("out/summary.txt").exists(), "the guest ran");

    // Best effort (the default) runs, and says the wall was partial.
    let (code, stderr, report) = run(&t, &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(report["kernel_wall"]["up"], false);
    assert_eq!(report["kernel_wall"]["landlock"], "fully_enforced");
    assert!(stderr.contains("kernel wall partial"), "{stderr}");

    // A grant the kernel can hold runs under the requirement.
    let t = Tree::new("");
    let (code, stderr, report) = run(&t, &["--require-kernel-confinement"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(report["kernel_wall"]["up"], true);
}
