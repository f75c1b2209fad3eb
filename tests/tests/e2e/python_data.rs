//! The data runner (`sbx-wasm run --data`): CPython with numpy, pandas and
//! matplotlib compiled in, under the same gate as the stock runner. Its
//! own files (the standard library zip, matplotlib's data) are lent
//! read-only; reading them is neither charged nor recorded, anything else
//! through them is refused and recorded; the grant's folders, budgets and
//! audit apply as for any run.
//!
//! Its artifact is compiled in the user's cache folder (the default cache),
//! once per machine: 95 MiB of CPython take minutes to compile.

use sbx_wasm_tests::{data_runner, mount_tree, sbx_bin, snapshot, utf8};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// `sbx-wasm run --data SCRIPT` in `dir` with `caps`, the report and the
/// audit parsed.
fn run(
    dir: &Path,
    caps: &str,
    script: &str,
) -> (Output, serde_json::Value, Vec<serde_json::Value>) {
    ready();
    std::fs::write(dir.join("caps.toml"), caps).unwrap();
    std::fs::write(dir.join("script.py"), script).unwrap();
    let out = Command::new(sbx_bin())
        .current_dir(dir)
        .env("SBX_WASM_DATA_RUNNER", data_runner())
        .args(["run", "--data", "--caps", "caps.toml"])
        .args(["--report", "report.json", "--audit", "audit.jsonl"])
        .arg("script.py")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let report = std::fs::read(dir.join("report.json")).unwrap_or_default();
    let report = serde_json::from_slice(&report).unwrap_or(serde_json::Value::Null);
    let audit = std::fs::read_to_string(dir.join("audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    for own in ["caps.toml", "script.py", "report.json", "audit.jsonl"] {
        let _ = std::fs::remove_file(dir.join(own));
    }
    (out, report, audit)
}

/// The runner compiled once (into the user's cache), before the tests
/// that use it (these and the corpus's data scripts) race to.
pub(crate) fn ready() {
    static READY: OnceLock<()> = OnceLock::new();
    READY.get_or_init(|| {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("caps.toml"), "").unwrap();
        std::fs::write(t.path().join("warm.py"), "pass\n").unwrap();
        let out = Command::new(sbx_bin())
            .current_dir(t.path())
            .env("SBX_WASM_DATA_RUNNER", data_runner())
            .args(["run", "--data", "--caps", "caps.toml", "warm.py"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", utf8(&out.stderr));
    });
}

/// A grant with the default fuel budget (ten billion: the runner starts
/// with numpy, pandas and pyplot imported, so a plot takes about one) and
/// a wall of its own.
const CAPS: &str = "[fs]\nread = [{ host = \"data\", guest = \"/work\" }]\n\
                    write = [{ host = \"out\", guest = \"/work/out\" }]\n\
                    [budget]\nmax_wall_ms = 120000\n";

#[test]
fn numpy_pandas_and_matplotlib_work_on_granted_folders() {
    let t = mount_tree(&[(
        "data/sales.csv",
        "region,units\nnorth,3\nsouth,5\nnorth,4\n",
    )]);
    let data_before = snapshot(&t.path().join("data"));
    let (out, report, audit) = run(
        t.path(),
        CAPS,
        "import pickle, sys\n\
         import numpy as np, pandas as pd\n\
         import matplotlib.pyplot as plt\n\
         df = pd.read_csv('/work/sales.csv')\n\
         totals = df.groupby('region').units.sum()\n\
         print(totals.to_dict(), float(np.arange(1_000_000, dtype=np.float64).sum()))\n\
         totals.to_csv('/work/out/totals.csv')\n\
         plt.bar(totals.index, totals.values)\n\
         plt.savefig('/work/out/totals.png')\n\
         class Row: pass\n\
         print(__name__, sys.argv, len(pickle.dumps(Row())) > 0)\n",
    );
    assert_eq!(out.status.code(), Some(0), "{}", utf8(&out.stderr));
    assert_eq!(
        utf8(&out.stdout),
        "{'north': 7, 'south': 5} 499999500000.0\n__main__ ['script.py'] True\n"
    );
    let csv = std::fs::read_to_string(t.path().join("out/totals.csv")).unwrap();
    assert_eq!(csv, "region,units\nnorth,7\nsouth,5\n");
    let png = std::fs::read(t.path().join("out/totals.png")).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
    assert_eq!(snapshot(&t.path().join("data")), data_before);
    // Nothing refused; the script's own file calls charged and recorded,
    // the interpreter's reads of its library neither.
    assert_eq!(report["denials"], serde_json::json!([]), "{report}");
    let targets: Vec<&str> = audit.iter().filter_map(|r| r["target"].as_str()).collect();
    assert!(targets.contains(&"/work/sales.csv"), "{targets:?}");
    assert!(
        targets.iter().any(|t| t.starts_with("/work/out/")),
        "{targets:?}"
    );
    assert!(
        !targets.iter().any(|t| t.starts_with("/usr")),
        "{targets:?}"
    );
    let ops = report["usage"]["ops"].as_u64().unwrap();
    assert!(ops < 100, "{ops} ops");
}

#[test]
fn the_runners_own_files_are_read_only_and_the_grant_still_bounds_the_script() {
    let t = mount_tree(&[("data/in.txt", "in\n")]);
    let runner_files = data_runner().parent().unwrap().join("sbx-data-files");
    let files_before = snapshot(&runner_files);
    let tree_before = snapshot(t.path());
    let (out, report, audit) = run(
        t.path(),
        CAPS,
        "import os\n\
         def attempt(what, f):\n\
         \x20   try:\n\
         \x20       f()\n\
         \x20       print(what, 'done')\n\
         \x20   except OSError as e:\n\
         \x20       print(what, type(e).__name__)\n\
         attempt('write the library', lambda: open('/usr/local/lib/planted.py', 'w'))\n\
         attempt('remove the zip', lambda: os.remove('/usr/local/lib/python315.zip'))\n\
         attempt('write the data', lambda: open('/work/in.txt', 'a'))\n\
         attempt('read the host', lambda: open('/etc/passwd').read())\n\
         attempt('write the outputs', lambda: open('/work/out/ok.txt', 'w').write('ok'))\n\
         attempt('read the library', lambda: open('/usr/local/lib/python315.zip', 'rb').read(4))\n",
    );
    assert_eq!(out.status.code(), Some(0), "{}", utf8(&out.stderr));
    assert_eq!(
        utf8(&out.stdout),
        "write the library PermissionError\nremove the zip PermissionError\n\
         write the data PermissionError\nread the host FileNotFoundError\n\
         write the outputs done\nread the library done\n"
    );
    // (A path outside every mount looks missing, as for the stock runner.)
    // Each refusal on record, the runner's own folder among them; the
    // allowed neighbour landed; nothing else changed anywhere.
    let refused: Vec<(&str, &str)> = report["denials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["violation"].as_str().unwrap(),
                d["target"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        refused,
        [
            ("fs_write_denied", "/usr/local/lib/planted.py"),
            ("fs_write_denied", "/usr/local/lib/python315.zip"),
            ("fs_write_denied", "/work/in.txt"),
            ("fs_read_denied", "/etc/passwd"),
        ],
        "{audit:?}"
    );
    assert_eq!(snapshot(&runner_files), files_before);
    let mut tree_after = snapshot(t.path());
    assert!(tree_after.remove(Path::new("out/ok.txt")).is_some());
    assert_eq!(tree_after, tree_before);

    // Budgets are as hard as for any run: a loop past the wall is halted
    // (with no fuel budget, which would halt it first).
    let (out, report, _) = run(
        t.path(),
        &CAPS.replace(
            "max_wall_ms = 120000",
            "max_fuel = \"off\"\nmax_wall_ms = 3000",
        ),
        "import numpy as np\nx = np.ones(1000)\nwhile True:\n    x = x * 1.0000001\n",
    );
    assert_eq!(report["violation"], "max_wall", "{}", utf8(&out.stderr));
    assert_ne!(out.status.code(), Some(0));
    // Reads of the runner's own files are not charged as ops (the
    // interpreter's own, a thousand per pandas import), and cost the guest
    // little fuel: a script reading them over and over is bounded by the
    // wall, halted all the same, its op count small.
    let (out, report, _) = run(
        t.path(),
        &CAPS.replace("max_wall_ms = 120000", "max_wall_ms = 3000"),
        "while True:\n    open('/usr/local/lib/python315.zip', 'rb').read(1 << 20)\n",
    );
    assert_eq!(report["violation"], "max_wall", "{}", utf8(&out.stderr));
    assert!(report["usage"]["ops"].as_u64().unwrap() < 50, "{report}");
    assert_ne!(out.status.code(), Some(0));
}

#[test]
fn a_grant_that_could_write_the_runners_files_is_refused_before_the_run() {
    let t = mount_tree(&[]);
    let files = data_runner().parent().unwrap().join("sbx-data-files");
    let before = snapshot(&files);
    let caps = format!(
        "[fs]\nwrite = [{{ host = \"{}\", guest = \"/lib\" }}]\n",
        files.join("usr/local/lib").display()
    );
    let (out, _, _) = run(t.path(), &caps, "print('ran')\n");
    assert_eq!(out.status.code(), Some(125), "{}", utf8(&out.stdout));
    assert!(
        utf8(&out.stderr).contains("reaches the Python (data) runner's own files"),
        "{}",
        utf8(&out.stderr)
    );
    assert_eq!(snapshot(&files), before);
    // The neighbour: a write mount beside them runs.
    let (out, _, _) = run(t.path(), CAPS, "print('ran')\n");
    assert_eq!(utf8(&out.stdout), "ran\n", "{}", utf8(&out.stderr));
}

/// The runner starts from a snapshot taken at its build with numpy and
/// pandas imported: a run still ends as a script (its exit code, the
/// script's own exit()), and does not inherit the build's random state.
#[test]
fn a_run_from_the_prepared_interpreter_is_a_fresh_script() {
    let t = mount_tree(&[]);
    let script = "import builtins, sys, random\n\
                  import numpy as np\n\
                  import dateutil.tz.tz as tz\n\
                  print('pandas' in sys.modules, type(builtins.exit).__name__, tz.TZPATHS)\n\
                  print(random.random(), np.random.rand())\n\
                  exit(3)\n";
    let (first, _, _) = run(t.path(), CAPS, script);
    let (second, report, _) = run(t.path(), CAPS, script);
    // The code itself, not WASI 0.2's bare failure (1).
    assert_eq!(first.status.code(), Some(3), "{}", utf8(&first.stderr));
    assert_eq!(report["exit_code"], 3, "{report}");
    let (a, b) = (utf8(&first.stdout), utf8(&second.stdout));
    let lines = |s: &str| s.lines().map(str::to_owned).collect::<Vec<_>>();
    // (dateutil looks in no host folder for a zone: its list is empty.)
    assert_eq!(lines(&a)[0], "True Quitter []", "{a}");
    // Seeds drawn at each run: two runs draw different numbers.
    assert_ne!(lines(&a)[1], lines(&b)[1]);
    // os._exit's code too (every exit of the interpreter tells the host).
    let (out, _, _) = run(t.path(), CAPS, "import os\nos._exit(4)\n");
    assert_eq!(out.status.code(), Some(4), "{}", utf8(&out.stderr));
    // The neighbour: a script that ends normally exits 0, and what it left
    // to the end of the process (a file never closed, an atexit call) is
    // done, as a process's end does it.
    let script = "import atexit\n\
                  f = open('/work/out/left.txt', 'w')\n\
                  f.write('kept')\n\
                  atexit.register(lambda: print('atexit ran'))\n";
    let (out, _, _) = run(t.path(), CAPS, script);
    assert_eq!(out.status.code(), Some(0), "{}", utf8(&out.stderr));
    assert_eq!(utf8(&out.stdout), "atexit ran\n");
    let left = std::fs::read_to_string(t.path().join("out/left.txt")).unwrap();
    assert_eq!(left, "kept");
}

#[test]
fn a_recorded_data_run_replays_with_the_runners_own_files_lent_again() {
    ready();
    let t = mount_tree(&[("data/in.csv", "a,b\n1,2\n")]);
    // scipy.stats and email are not in the snapshot: importing them reads
    // the runner's zip, which a replay must lend again as the run had it.
    std::fs::write(
        t.path().join("script.py"),
        "import random, scipy.stats, email.mime.text\n\
         import pandas as pd\n\
         df = pd.read_csv('/work/in.csv')\n\
         print(df.a.sum() + df.b.sum(), scipy.stats.norm.cdf(0), random.random())\n\
         open('/work/out/r.txt', 'w').write('done')\n",
    )
    .unwrap();
    std::fs::write(t.path().join("caps.toml"), CAPS).unwrap();
    let sbx = |args: &[&str]| {
        Command::new(sbx_bin())
            .current_dir(t.path())
            .env("SBX_WASM_DATA_RUNNER", data_runner())
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let ran = sbx(&[
        "run",
        "--data",
        "--caps",
        "caps.toml",
        "--record",
        "rec.json",
        "script.py",
    ]);
    assert_eq!(ran.status.code(), Some(0), "{}", utf8(&ran.stderr));
    assert!(
        utf8(&ran.stdout).starts_with("3 0.5 "),
        "{}",
        utf8(&ran.stdout)
    );
    // The host tree is changed by the run alone: the replay writes nothing.
    std::fs::remove_file(t.path().join("out/r.txt")).unwrap();
    let before = snapshot(t.path());

    let replayed = sbx(&["replay", "rec.json"]);
    assert_eq!(
        replayed.status.code(),
        Some(0),
        "{}",
        utf8(&replayed.stderr)
    );
    assert_eq!(utf8(&replayed.stdout), utf8(&ran.stdout));
    assert!(
        utf8(&replayed.stderr).contains("replay followed the recording"),
        "{}",
        utf8(&replayed.stderr)
    );
    assert_eq!(snapshot(t.path()), before);

    // The same bytes under another path are not the data runner `run
    // --data` uses: nothing is lent, and the interpreter's first read of
    // its zip is an op the recording does not hold.
    let elsewhere =
        tempfile::tempdir_in(data_runner().parent().unwrap().parent().unwrap()).unwrap();
    let copy = elsewhere.path().join("sbx-data.wasm");
    std::fs::hard_link(data_runner(), &copy).unwrap();
    let other = sbx(&["replay", "rec.json", "--component", copy.to_str().unwrap()]);
    assert!(
        utf8(&other.stderr).contains("replay diverged")
            && utf8(&other.stderr).contains("fs_read /usr/local/lib/python315.zip"),
        "{}",
        utf8(&other.stderr)
    );
    assert_eq!(snapshot(t.path()), before);
}
