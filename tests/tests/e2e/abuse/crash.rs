//! Under load and after crashes: no process left behind, nothing left by
//! kill -9, true fuel usage.

use super::*;

/// Run `argv` as the child of a Python process that made itself a
/// subreaper (as a PID 1 in a container would be, but one that never
/// reaps); print how many processes are left as its children afterwards:
/// orphans the run left behind, alive or zombie.
const SUBREAPER: &str = r#"
import ctypes, os, subprocess, sys, time
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
time.sleep(0.5)
left = 0
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        continue
    if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid():
        left += 1
print(left)
"#;

fn tool_caps(dir: &Path, budget: &str) {
    std::fs::write(
        dir.join("caps.toml"),
        mount_caps(&format!(
            "[tools]\nallow = [\"word_count\"]\n[tools.command.word_count]\nargv = [\"wc\", \"-w\"]\n\
             [budget]\n{budget}"
        )),
    )
    .unwrap();
}

#[test]
fn a_run_leaves_no_process_behind_under_a_subreaper() {
    let t = mount_tree(&[("data/notes.txt", "n")]);
    tool_caps(t.path(), "");
    let sbx = sbx_bin().display().to_string();
    let seed = guest("seed").display().to_string();
    for extra in [&[][..], &["--report", "r.json"][..]] {
        let out = Command::new("python3")
            .current_dir(t.path())
            .env("SBX_WASM_CACHE_DIR", t.path().join("cache"))
            .args(["-c", SUBREAPER, &sbx, "run", "--caps", "caps.toml"])
            .args(extra)
            .args([&seed, "--", "http://127.0.0.1:9/"])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "0",
            "processes left behind: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The neighbour: the helper did run the tool (the seed guest calls it)
    // and its answer is the tool's own (a run without records does not
    // wait for the answer to the helper's configuration: read out of turn,
    // it would be taken for the tool's, an empty count).
    let out = Command::new(&sbx)
        .current_dir(t.path())
        .env("SBX_WASM_CACHE_DIR", t.path().join("cache"))
        .args([
            "run",
            "--caps",
            "caps.toml",
            &seed,
            "--",
            "http://127.0.0.1:9/",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let count = stdout
        .lines()
        .find_map(|l| l.strip_prefix("8. tool word_count: ok: "))
        .and_then(|n| n.parse::<u32>().ok());
    assert!(count.is_some_and(|n| n > 0), "{stdout}");
}

/// `sbx-wasm run --report r.json --audit a.jsonl GUEST` in `dir`.
fn run_with_files(dir: &Path, guest_name: &str) -> Command {
    let mut c = Command::new(sbx_bin());
    c.current_dir(dir)
        .env("SBX_WASM_CACHE_DIR", dir.join("cache"))
        .args(["run", "--caps", "caps.toml", "--report", "r.json"])
        .args(["--audit", "a.jsonl"])
        .arg(guest(guest_name));
    c
}

/// Children of `pid`, from /proc.
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| {
                s.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                    == Some(pid)
            })
        })
        .collect()
}

#[test]
fn kill_9_in_the_middle_of_a_run_leaves_no_report_no_root_and_no_helper() {
    let t = mount_tree(&[("data/notes.txt", "n")]);
    tool_caps(t.path(), "max_wall_ms = 60000\n");
    let tmp = t.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let mut child = run_with_files(t.path(), "sleepy")
        .env("TMPDIR", &tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the guest is running (it says so), then kill -9.
    let mut line = String::new();
    use std::io::BufRead;
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "going to sleep");
    let helpers = children(child.id());
    assert_eq!(helpers.len(), 1, "the tool helper runs beside the guest");
    child.kill().unwrap();
    child.wait().unwrap();
    // The helper dies with its parent.
    let deadline = Instant::now() + Duration::from_secs(5);
    while Path::new(&format!("/proc/{}", helpers[0])).exists() {
        let zombie = std::fs::read_to_string(format!("/proc/{}/stat", helpers[0])).is_ok_and(|s| {
            s.rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
        });
        if zombie {
            break;
        }
        assert!(Instant::now() < deadline, "the helper outlived its parent");
        std::thread::sleep(Duration::from_millis(20));
    }
    // No report (rather than an empty one), and nothing in the temp folder.
    assert!(
        !t.path().join("r.json").exists(),
        "a report file after a kill"
    );
    assert!(
        !t.path().join("a.jsonl").exists(),
        "an audit file after a kill"
    );
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
    assert!(left.is_empty(), "left in the temp folder: {left:?}");
    // The next run clears the dead run's staged files and writes whole ones.
    let out = run_with_files(t.path(), "noop")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(t.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(report["status"], "completed");
    let names: Vec<String> = std::fs::read_dir(t.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(names.is_empty(), "staged files left: {names:?}");
}

#[test]
fn a_killed_cache_writers_temp_file_is_shown_then_removed() {
    let cache = tempfile::tempdir().unwrap();
    let sbx = |args: &[&str]| {
        let out = Command::new(sbx_bin())
            .env("SBX_WASM_CACHE_DIR", cache.path())
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    sbx(&["cache", "dir"]); // creates the folder
    // A temp file of a dead writer (pid beyond pid_max), last written
    // `age` ago.
    let plant = |name: &str, age: Duration| {
        let path = cache.path().join(name);
        std::fs::write(&path, vec![0u8; 4096]).unwrap();
        let f = std::fs::File::options().write(true).open(&path).unwrap();
        f.set_modified(std::time::SystemTime::now() - age).unwrap();
        path
    };
    // One a minute ago, and one just now.
    let (old, young) = (".tmp-4194305-0", ".tmp-4194305-1");
    plant(old, Duration::from_secs(120));
    plant(young, Duration::ZERO);
    let ls = sbx(&["cache", "ls"]);
    assert!(
        !cache.path().join(old).exists(),
        "the stale temp file stayed"
    );
    assert!(!ls.contains(old), "{ls}");
    // The neighbour: a young temp file may still be written; it stays, and
    // `cache ls` shows it.
    assert!(ls.contains(young) && ls.contains("partial"), "{ls}");
    assert!(cache.path().join(young).exists());
    // A compile into the cache takes them back too; a warm run and a
    // cache hit, which compile nothing, do not scan the folder.
    let noop = guest("noop");
    let noop = noop.to_str().unwrap();
    assert!(sbx(&["compile", noop]).contains("compiled"));
    let planted = plant(".tmp-4194305-2", Duration::from_secs(120));
    sbx(&["run", "--no-stdin", noop]);
    let out = sbx(&["compile", noop]);
    assert!(out.contains("already cached"), "{out}");
    assert!(planted.exists(), "a cache hit scanned the folder");
    let out = sbx(&["compile", guest("benign").to_str().unwrap()]);
    assert!(out.contains(": compiled in"), "{out}");
    assert!(!planted.exists(), "the compile left the stale temp file");
    assert!(cache.path().join(young).exists(), "a young one stays");
}

#[test]
fn fuel_usage_is_true_when_the_wall_ends_the_run() {
    let t = mount_tree(&[("data/notes.txt", "n")]);
    let r = cli(
        t.path(),
        "[budget]\nmax_fuel = 100000000000\nmax_wall_ms = 1000\n",
        &[],
        "spin",
        &[],
    );
    assert_eq!(r.report["violation"], "max_wall");
    let fuel = r.report["usage"]["fuel"].as_u64().unwrap();
    assert!(
        fuel > 100_000_000,
        "a second of spinning reported as {fuel} fuel"
    );
    // The neighbour: when fuel ends the run, usage is the whole budget.
    let r = cli(
        t.path(),
        "[budget]\nmax_fuel = 300000000\n",
        &[],
        "spin",
        &[],
    );
    assert_eq!(r.report["violation"], "max_fuel");
    assert_eq!(r.report["usage"]["fuel"].as_u64(), Some(300_000_000));
}

/// The tool helper removes the run's private folders however its
/// configuration went: a run without records no longer waits for the
/// configuration's answer, so a helper that could not take it (its working
/// folder gone) must still leave none behind. Beside it, one that took it
/// answers `ok` and removes them as its stdin closes.
#[test]
fn the_tool_helper_removes_the_runs_folders_even_when_its_configuration_fails() {
    use std::io::{Read, Write};
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("keep.txt"), "k").unwrap();
    for (cwd, code, answer) in [
        (t.path().to_path_buf(), 0, "{\"ok\":\"\"}\n"),
        (t.path().join("gone"), 2, ""),
    ] {
        let private = t.path().join("sbx-tmp-x");
        std::fs::create_dir_all(private.join("deep")).unwrap();
        std::fs::write(private.join("deep/f.txt"), "x").unwrap();
        let mut helper = Command::new(sbx_bin())
            .arg("__tool-helper")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let first = serde_json::json!({
            "tools": {}, "records": [], "remove": [&private], "cwd": cwd,
        });
        let mut stdin = helper.stdin.take().unwrap();
        writeln!(stdin, "{first}").unwrap();
        drop(stdin);
        let mut said = String::new();
        helper
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut said)
            .unwrap();
        assert_eq!(helper.wait().unwrap().code(), Some(code), "{cwd:?}");
        assert_eq!(said, answer, "{cwd:?}");
        assert!(!private.exists(), "{cwd:?}: the run's folder was left");
    }
    // What is not named stays.
    assert_eq!(
        std::fs::read_to_string(t.path().join("keep.txt")).unwrap(),
        "k"
    );
}
