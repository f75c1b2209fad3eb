//! The peer row (PEER): one confined script, run by `sbx-wasm run` and by
//! each peer that can confine a script to one folder. The script reads one
//! file of a granted folder and prints its length; the folder is the only
//! thing granted (ours: a read mount; node: its permission model with
//! `--allow-fs-read`; deno: `--allow-read`; a container: the folder bound
//! read-only, no network).
//!
//! Before it is timed, each side must refuse the same script pointed at a
//! file beside the folder: a peer that reads it is not confining the
//! script, and its row would compare unlike things, so it is skipped with
//! that reason, as is a peer that is not installed or does not start.
//! The rows: the cold start (process start to the result, medians of
//! interleaved rounds), and the process's resident peak (PEERm).

use super::javascript::{on_path, run_js};
use super::timing::{fmt, side_by_side};
use super::{Res, Row};
use sbx_wasm::Capabilities;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The script, reading `path`; node and deno take it as an ES module, and
/// so does the sandbox's JavaScript runner.
fn script(path: &str) -> String {
    format!(
        "import {{ readFileSync }} from 'node:fs';\n\
         console.log(readFileSync({path:?}, 'utf8').length);\n"
    )
}

/// The folders of the rows: `data` (granted, holding `data.txt`),
/// `secret.txt` beside it (never granted), and the scripts.
struct Layout {
    data: PathBuf,
    secret: PathBuf,
    scripts: PathBuf,
}

impl Layout {
    fn new(scratch: &Path) -> Res<Layout> {
        let root = scratch.join("peers");
        let (data, scripts) = (root.join("data"), root.join("scripts"));
        std::fs::create_dir_all(&data)?;
        std::fs::create_dir_all(&scripts)?;
        std::fs::write(data.join("data.txt"), "x".repeat(1024))?;
        let secret = root.join("secret.txt");
        std::fs::write(&secret, "not for the script")?;
        Ok(Layout {
            data,
            secret,
            scripts,
        })
    }

    /// Write the script reading `path` as `name`; its path.
    fn script(&self, name: &str, path: &Path) -> Res<PathBuf> {
        let file = self.scripts.join(name);
        std::fs::write(&file, script(&path.display().to_string()))?;
        Ok(file)
    }
}

/// One side of a row: how to run the script that reads the granted file,
/// and the one that reads the secret.
struct Side {
    name: String,
    allowed: Command,
    refused: Command,
}

/// How long one run of a side may take: a peer that hangs (a prompt, a
/// daemon that never answers) is killed and fails, instead of hanging the
/// bench.
const PATIENCE: Duration = Duration::from_secs(60);

/// Run `cmd`; whether it succeeded, and its output. Past [`PATIENCE`] the
/// child is killed and the run is an error.
///
/// The wait costs both sides the same: a thread reads the output to its
/// end and reaps the child while this one waits for it with a deadline;
/// nothing polls.
fn run(cmd: &mut Command) -> Res<(bool, String)> {
    run_within(cmd, PATIENCE)
}

/// [`run`], killing the child past `patience`.
fn run_within(cmd: &mut Command, patience: Duration) -> Res<(bool, String)> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let pid = rustix::process::Pid::from_child(&child);
    // The thread reads the output to its end and reaps the child, so one
    // that closes its output and goes on running is still under the
    // deadline; this thread waits for it without polling.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let read = match child.stdout.take() {
            Some(mut stdout) => stdout.read_to_end(&mut out).map(|_| out),
            None => Err(std::io::Error::other("the child's output was not piped")),
        };
        let status = child.wait();
        let _ = tx.send((read, status));
    });
    let (out, status) = match rx.recv_timeout(patience) {
        Ok(done) => done,
        Err(e) => {
            // Not yet reaped (the thread holds it until `wait` returns), so
            // the pid is still the child's.
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            let _ = rx.recv_timeout(Duration::from_secs(5));
            return Err(match e {
                std::sync::mpsc::RecvTimeoutError::Timeout => {
                    format!("{cmd:?} ran past {patience:?}: killed")
                }
                std::sync::mpsc::RecvTimeoutError::Disconnected => {
                    format!("{cmd:?}: the thread waiting for it ended")
                }
            }
            .into());
        }
    };
    let (out, status) = (out?, status?);
    Ok((status.success(), String::from_utf8_lossy(&out).into_owned()))
}

/// GNU time, which reports its child's resident peak (`%M`, KiB).
const GNU_TIME: &str = "/usr/bin/time";

/// The resident peak of one run of `cmd`, in KiB, or why it cannot be had.
///
/// Read through GNU time, not from this harness's own `wait4`: a child the
/// harness spawns starts in the harness's memory (`vfork`), and Linux keeps
/// that resident peak across `exec`, so every side would read as the larger
/// of the harness and itself. GNU time forks its child from its own small
/// process, so the figure is the larger of that process (printed as the
/// floor) and the side.
fn peak_kib(cmd: &Command) -> Result<u64, String> {
    if !Path::new(GNU_TIME).is_file() {
        return Err(format!("{GNU_TIME} (GNU time) is not installed"));
    }
    let report = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
    let mut timed = Command::new(GNU_TIME);
    timed
        .args(["-f", "%M", "-o"])
        .arg(report.path())
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (key, value) in cmd.get_envs() {
        match value {
            Some(v) => timed.env(key, v),
            None => timed.env_remove(key),
        };
    }
    match run(&mut timed) {
        Ok((true, _)) => {}
        Ok((false, out)) => return Err(format!("{cmd:?} failed, printed {out:?}")),
        Err(e) => return Err(e.to_string()),
    }
    let text = std::fs::read_to_string(report.path()).map_err(|e| e.to_string())?;
    // The last line: GNU time puts its own notes (a signal) above it.
    let last = text.lines().last().unwrap_or("").trim();
    last.parse()
        .map_err(|_| format!("{GNU_TIME} wrote {text:?}, not a size"))
}

/// The median of five resident peaks of `cmd`, in KiB.
fn median_peak_kib(cmd: &Command) -> Result<u64, String> {
    let mut peaks = (0..5)
        .map(|_| peak_kib(cmd))
        .collect::<Result<Vec<_>, _>>()?;
    peaks.sort_unstable();
    Ok(peaks[2])
}

/// `side`, if it can be compared; else why not: it fails the allowed
/// read, prints the wrong length, or reads the secret.
fn fit(mut side: Side) -> Result<Side, String> {
    match run(&mut side.allowed) {
        Ok((true, out)) if out.trim() == "1024" => {}
        Ok((ok, out)) => {
            return Err(format!(
                "the allowed read did not print 1024 (exit ok: {ok}, printed {:?})",
                out.trim()
            ));
        }
        Err(e) => return Err(format!("it did not start: {e}")),
    }
    match run(&mut side.refused) {
        Ok((false, _)) => Ok(side),
        Ok((true, _)) => Err("it read the file beside the granted folder".into()),
        Err(e) => Err(format!("it did not start: {e}")),
    }
}

/// node's permission model: `--permission` since node 22.13 and 23.5,
/// `--experimental-permission` before (node 20): the side with the first
/// flag this node takes, checked by [`fit`].
fn node_side(node: PathBuf, l: &Layout) -> Res<Result<Side, String>> {
    let (ok, bad) = (
        l.script("node-ok.mjs", &l.data.join("data.txt"))?,
        l.script("node-bad.mjs", &l.secret)?,
    );
    for flag in ["--permission", "--experimental-permission"] {
        let cmd = |script: &Path| {
            let mut c = Command::new(&node);
            c.arg(flag)
                .arg(format!("--allow-fs-read={}", l.scripts.display()))
                .arg(format!("--allow-fs-read={}", l.data.display()))
                .arg(script);
            c
        };
        let side = Side {
            name: format!("node {flag}"),
            allowed: cmd(&ok),
            refused: cmd(&bad),
        };
        if let Ok(side) = fit(side) {
            return Ok(Ok(side));
        }
    }
    Ok(Err(
        "neither --permission nor --experimental-permission confined the script".into(),
    ))
}

fn deno_side(deno: PathBuf, l: &Layout) -> Res<Side> {
    let cmd = |script: PathBuf| {
        let mut c = Command::new(&deno);
        c.args(["run", "--no-prompt", "--quiet"])
            .arg(format!("--allow-read={}", l.data.display()))
            .arg(script);
        c
    };
    Ok(Side {
        name: "deno run --allow-read".into(),
        allowed: cmd(l.script("deno-ok.mjs", &l.data.join("data.txt"))?),
        refused: cmd(l.script("deno-bad.mjs", &l.secret)?),
    })
}

/// A container: the folder bound read-only at `/work`, no network, a
/// local image with a shell (the bench pulls nothing). The script is the
/// shell's: the file's length from `wc -c`.
fn container_side(l: &Layout) -> Result<Side, String> {
    let docker = on_path("docker").or_else(|| on_path("podman"));
    let docker = docker.ok_or("neither docker nor podman is on PATH")?;
    let info = Command::new(&docker)
        .arg("info")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !info.is_ok_and(|s| s.success()) {
        return Err(format!(
            "{} is installed but no daemon answers",
            docker.display()
        ));
    }
    let images = Command::new(&docker)
        .args(["images", "--format", "{{.Repository}}:{{.Tag}}"])
        .output()
        .map_err(|e| e.to_string())?;
    let images = String::from_utf8_lossy(&images.stdout);
    let image = ["busybox", "alpine", "debian"]
        .iter()
        .find_map(|want| images.lines().find(|i| i.starts_with(&format!("{want}:"))))
        .ok_or("no local busybox, alpine or debian image (the bench pulls nothing)")?;
    let cmd = |mount: &Path, file: &str| {
        let mut c = Command::new(&docker);
        c.args(["run", "--rm", "--network", "none", "--read-only", "-v"])
            .arg(format!("{}:/work:ro", mount.display()))
            .args([image, "sh", "-c"])
            .arg(format!("wc -c < /work/{file} | tr -d ' '"));
        c
    };
    Ok(Side {
        name: format!("{} run --network none, {image}", docker.display()),
        allowed: cmd(&l.data, "data.txt"),
        // The secret by the only name it could have inside: beside the
        // bound folder, where nothing of the host is.
        refused: cmd(&l.data, "../secret.txt"),
    })
}

/// The peer rows; a peer that cannot run is skipped with its reason.
pub(crate) fn peer_rows(sbx: &Path, runner: &Path, scratch: &Path) -> Res<Vec<Row>> {
    let l = Layout::new(scratch)?;
    let caps = Capabilities::builder()
        .read_mount(&l.data, "/work")
        .build()?;
    let caps_file = l.scripts.join("caps.toml");
    std::fs::write(&caps_file, caps.to_toml())?;
    super::spawn_ok(Command::new(sbx).arg("compile").arg(runner))?;
    let ours_cmd = |script: PathBuf| run_js(sbx, &caps_file, runner, &script);
    let ours = Side {
        name: "sbx-wasm run".into(),
        allowed: ours_cmd(l.script("ours-ok.js", Path::new("/work/data.txt"))?),
        // The sandbox sees no host path: the secret's is outside every mount.
        refused: ours_cmd(l.script("ours-bad.js", &l.secret)?),
    };
    let mut ours =
        fit(ours).map_err(|why| format!("PEER: the sandbox's own side is unfit: {why}"))?;

    // Each peer, checked by `fit`, or the reason it is skipped.
    let peers: [(&str, Result<Side, String>); 3] = [
        (
            "node",
            match on_path("node") {
                Some(node) => node_side(node, &l)?,
                None => Err("node is not on PATH".into()),
            },
        ),
        (
            "deno",
            match on_path("deno") {
                Some(deno) => fit(deno_side(deno, &l)?),
                None => Err("deno is not on PATH".into()),
            },
        ),
        ("a container", container_side(&l).and_then(fit)),
    ];

    // Memory: one peak per side, the median of five runs; the floor is
    // what GNU time's own process holds under a child that does nothing.
    let ours_peak = median_peak_kib(&ours.allowed);
    let floor = median_peak_kib(&Command::new("true")).unwrap_or(0);

    let mut rows = Vec::new();
    for (name, peer) in peers {
        let mut peer = match peer {
            Ok(peer) => peer,
            Err(why) => {
                eprintln!("bench: PEER vs {name} skipped: {why}");
                continue;
            }
        };
        let (a, b) = side_by_side(
            20,
            || expect_ok(&mut ours.allowed),
            || expect_ok(&mut peer.allowed),
        )?;
        let ratio = a.as_secs_f64() / b.as_secs_f64();
        rows.push(Row {
            id: "PEER",
            what: format!(
                "a script confined to one folder reads a file there, cold start (vs {})",
                peer.name
            ),
            ours: fmt(a),
            theirs: fmt(b),
            ratio,
            goal: "<= 1.0x",
            met: ratio <= 1.0,
        });
        match (ours_peak.as_ref(), median_peak_kib(&peer.allowed).as_ref()) {
            (Ok(a), Ok(b)) => {
                let ratio = *a as f64 / *b as f64;
                rows.push(Row {
                    id: "PEERm",
                    what: format!(
                        "the same script's process, resident peak (vs {}; GNU time's own \
                         floor {})",
                        peer.name,
                        mib(floor)
                    ),
                    ours: mib(*a),
                    theirs: mib(*b),
                    ratio,
                    goal: "<= 1.0x",
                    met: ratio <= 1.0,
                });
            }
            (Err(why), _) | (_, Err(why)) => {
                eprintln!("bench: PEERm vs {name} skipped: {why}");
            }
        }
    }
    Ok(rows)
}

/// `kib` as MiB, for a memory row.
fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn expect_ok(cmd: &mut Command) -> Res<()> {
    match run(cmd)? {
        (true, _) => Ok(()),
        (false, out) => Err(format!("{cmd:?} failed, printed {out:?}").into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_side_that_closes_its_output_and_hangs_is_killed_at_the_deadline() {
        let started = std::time::Instant::now();
        let hung = run_within(
            Command::new("sh").args(["-c", "echo partial; exec >&-; exec sleep 30"]),
            Duration::from_secs(1),
        );
        let err = hung.expect_err("a hung side is an error").to_string();
        assert!(err.contains("killed"), "{err}");
        // Killed, not waited out: the sleep had 29 s to go.
        assert!(started.elapsed() < Duration::from_secs(20));
        // Its neighbour, which exits, is read whole.
        let done = run_within(
            Command::new("sh").args(["-c", "echo hi; exit 3"]),
            Duration::from_secs(20),
        )
        .unwrap();
        assert_eq!(done, (false, "hi\n".to_string()));
    }
}
