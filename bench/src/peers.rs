//! The peer rows (PEER): one confined script, run by `sbx-wasm run` and by
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
//! Rows: the cold start (process start to the result, medians of
//! interleaved rounds) and the process's peak resident memory
//! (`ru_maxrss` of the child, median of five runs).

use super::javascript::on_path;
use super::timing::{fmt, side_by_side};
use super::{Res, Row};
use sbx_wasm::Capabilities;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

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

/// Run `cmd`; whether it succeeded, its output and its peak resident
/// memory in KiB (`wait4`'s `ru_maxrss`, this child's alone).
fn run(cmd: &mut Command) -> Res<(bool, String, u64)> {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let pid = child.id() as libc::pid_t;
    let mut out = child.stdout.ok_or("no stdout")?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut out, &mut text)?;
    let (mut status, mut usage) = (0, unsafe { std::mem::zeroed::<libc::rusage>() });
    // SAFETY: `pid` is this process's own child, not yet waited for (the
    // `Child` is consumed and never waits); the pointers are to locals.
    if unsafe { libc::wait4(pid, &mut status, 0, &mut usage) } != pid {
        return Err(std::io::Error::last_os_error().into());
    }
    let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    Ok((ok, text, usage.ru_maxrss as u64))
}

/// Why `side` cannot be compared, if it cannot: it fails the allowed read,
/// prints the wrong length, or reads the secret.
fn unfit(side: &mut Side) -> Option<String> {
    match run(&mut side.allowed) {
        Ok((true, out, _)) if out.trim() == "1024" => {}
        Ok((ok, out, _)) => {
            return Some(format!(
                "the allowed read did not print 1024 (exit ok: {ok}, printed {:?})",
                out.trim()
            ));
        }
        Err(e) => return Some(format!("it did not start: {e}")),
    }
    match run(&mut side.refused) {
        Ok((false, _, _)) => None,
        Ok((true, _, _)) => Some("it read the file beside the granted folder".into()),
        Err(e) => Some(format!("it did not start: {e}")),
    }
}

/// node's permission model: `--permission` since node 22.13 and 23.5,
/// `--experimental-permission` before (node 20). The flag this node takes.
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
        let mut side = Side {
            name: format!("node {flag}"),
            allowed: cmd(&ok),
            refused: cmd(&bad),
        };
        if unfit(&mut side).is_none() {
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
    let ours_cmd = |script: PathBuf| {
        let mut c = Command::new(sbx);
        c.args(["run", "--no-stdin", "--caps"])
            .arg(&caps_file)
            .arg("--js-runner")
            .arg(runner)
            .arg(script);
        c
    };
    let mut ours = Side {
        name: "sbx-wasm run".into(),
        allowed: ours_cmd(l.script("ours-ok.js", Path::new("/work/data.txt"))?),
        // The sandbox sees no host path: the secret's is outside every mount.
        refused: ours_cmd(l.script("ours-bad.js", &l.secret)?),
    };
    if let Some(why) = unfit(&mut ours) {
        return Err(format!("PEER: the sandbox's own side is unfit: {why}").into());
    }

    let mut peers: Vec<Side> = Vec::new();
    match on_path("node") {
        Some(node) => match node_side(node, &l)? {
            Ok(side) => peers.push(side),
            Err(why) => eprintln!("bench: PEER vs node skipped: {why}"),
        },
        None => eprintln!("bench: PEER vs node skipped: node is not on PATH"),
    }
    match on_path("deno") {
        Some(deno) => peers.push(deno_side(deno, &l)?),
        None => eprintln!("bench: PEER vs deno skipped: deno is not on PATH"),
    }
    match container_side(&l) {
        Ok(side) => peers.push(side),
        Err(why) => eprintln!("bench: PEER vs a container skipped: {why}"),
    }

    let mut rows = Vec::new();
    for mut peer in peers {
        if let Some(why) = unfit(&mut peer) {
            eprintln!("bench: PEER vs {} skipped: {why}", peer.name);
            continue;
        }
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
        let (ma, mb) = (peak_kib(&mut ours.allowed)?, peak_kib(&mut peer.allowed)?);
        rows.push(Row {
            id: "PEERm",
            what: format!(
                "the same, the process's peak resident memory (vs {})",
                peer.name
            ),
            ours: format!("{ma} KiB"),
            theirs: format!("{mb} KiB"),
            ratio: ma as f64 / mb.max(1) as f64,
            goal: "(reported)",
            met: true,
        });
    }
    Ok(rows)
}

fn expect_ok(cmd: &mut Command) -> Res<()> {
    match run(cmd)? {
        (true, _, _) => Ok(()),
        (false, out, _) => Err(format!("{cmd:?} failed, printed {out:?}").into()),
    }
}

/// The median of five runs' peak resident memory, KiB.
fn peak_kib(cmd: &mut Command) -> Res<u64> {
    let mut v = (0..5).map(|_| Ok(run(cmd)?.2)).collect::<Res<Vec<u64>>>()?;
    v.sort_unstable();
    Ok(v[v.len() / 2])
}
