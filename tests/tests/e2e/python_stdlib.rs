//! The standard library in the Python runner, module by module
//! (`tests/python/stdlib.py`: every module of CPython's list imports and
//! does a small piece of its work, or fails at import with its reason),
//! without one probe of the host; time zones from the bundled database;
//! the folders above the mounts, which exist for the guest as empty
//! folders so that `os.makedirs(mount, exist_ok=True)` works.

use super::python_api::python;
use sbx_wasm::Capabilities;
use sbx_wasm::wasm::RunOptions;
use sbx_wasm_tests::{repo_root, snapshot, utf8};

#[test]
fn every_stdlib_module_imports_and_works_or_says_why_not() {
    let (host, py) = python();
    let caps = Capabilities::builder().build().unwrap();
    let script = repo_root().join("tests/python/stdlib.py");
    let run = py.run_file(host, &script, RunOptions::new(caps)).unwrap();
    assert_eq!(run.report.exit_code, Some(0), "{}", utf8(&run.stderr));
    let out: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    for empty in [
        "unexplained",
        "uses_failed",
        "no_use",
        "not_here_but_imported",
    ] {
        let v = &out[empty];
        let is_empty = v
            .as_array()
            .map(Vec::is_empty)
            .or(v.as_object().map(|o| o.is_empty()));
        assert_eq!(is_empty, Some(true), "{empty}: {v}");
    }
    let imported = out["imported"].as_array().unwrap();
    let failed = out["failed"].as_object().unwrap();
    eprintln!("{} modules import, {} do not", imported.len(), failed.len());
    assert!(imported.len() >= 240, "{}", imported.len());
    // What agents reach for is among the working ones; what cannot work
    // here says why.
    for name in [
        "datetime",
        "_strptime",
        "zoneinfo",
        "email",
        "pickle",
        "sqlite3",
        "asyncio",
    ] {
        assert!(imported.iter().any(|m| m == name), "{name}");
    }
    let ssl = failed["ssl"].as_str().unwrap();
    assert!(ssl.contains("there is no TLS inside the runner"), "{ssl}");
    let mp = failed["multiprocessing"].as_str().unwrap();
    assert!(mp.contains("it starts processes"), "{mp}");
    // Not one probe of the host: every record is the private /tmp's.
    assert!(
        run.audit.iter().all(|e| e.violation.is_none()),
        "{:?}",
        run.audit
            .iter()
            .filter(|e| e.violation.is_some())
            .collect::<Vec<_>>()
    );
}

#[test]
fn time_zones_come_from_the_bundled_database_not_the_host() {
    let (host, py) = python();
    let caps = Capabilities::builder().build().unwrap();
    let source = r#"
import datetime, zoneinfo
paris = zoneinfo.ZoneInfo("Europe/Paris")
print(datetime.datetime(2024, 7, 1, tzinfo=paris).utcoffset(),
      datetime.datetime(2024, 1, 1, tzinfo=zoneinfo.ZoneInfo("America/New_York")).tzname(),
      len(zoneinfo.available_timezones()) > 500)
for key in ("Nowhere/City", "../../etc/localtime"):
    try:
        zoneinfo.ZoneInfo(key)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as e:
        print(type(e).__name__)
"#;
    let run = py.run_source(host, source, RunOptions::new(caps)).unwrap();
    assert_eq!(run.report.exit_code, Some(0), "{}", utf8(&run.stderr));
    assert_eq!(
        utf8(&run.stdout),
        "2:00:00 EST True\nZoneInfoNotFoundError\nValueError\n"
    );
    // No TZPATH folder of the host was looked at.
    assert!(run.audit.is_empty(), "{:?}", run.audit);
}

#[test]
fn folders_above_the_mounts_are_empty_folders_and_nothing_more() {
    let (host, py) = python();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("out")).unwrap();
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    std::fs::write(dir.path().join("data/a.txt"), "a").unwrap();
    let caps = Capabilities::builder()
        .read_mount(dir.path().join("data"), "/work/data")
        .write_mount(dir.path().join("out"), "/work/out")
        .build()
        .unwrap();
    let before = snapshot(dir.path());
    let source = r#"
import os
def attempt(f):
    try:
        return f()
    except OSError as e:
        return type(e).__name__
# Allowed: the mount points' parents are folders, so makedirs works.
print(os.path.isdir("/"), os.path.isdir("/work"), os.stat("/work").st_size)
os.makedirs("/work/out", exist_ok=True)
os.makedirs("/work/out/a/b", exist_ok=True)
print(attempt(lambda: os.makedirs("/work/out")))
# Refused: nothing else exists there, nothing can be made or listed.
print(attempt(lambda: os.makedirs("/work/other", exist_ok=True)),
      attempt(lambda: os.listdir("/work")),
      os.path.exists("/etc"), os.path.exists("/wor"))
"#;
    let run = py.run_source(host, source, RunOptions::new(caps)).unwrap();
    assert_eq!(run.report.exit_code, Some(0), "{}", utf8(&run.stderr));
    assert_eq!(
        utf8(&run.stdout),
        "True True 0\nFileExistsError\nFileNotFoundError FileNotFoundError False False\n"
    );
    let above: Vec<&str> = run
        .audit
        .iter()
        .filter(|e| e.rule.as_deref() == Some("a folder above the mounts (empty)"))
        .map(|e| e.target.as_str())
        .collect();
    assert!(
        above.contains(&"/work") && above.contains(&"/."),
        "{above:?}"
    );
    assert!(
        above.iter().all(|t| ["/.", "/work"].contains(t)),
        "{above:?}"
    );
    let denied: Vec<(&str, &str)> = run
        .audit
        .iter()
        .filter(|e| e.violation.is_some())
        .map(|e| (e.op.as_str(), e.target.as_str()))
        .collect();
    assert!(denied.contains(&("fs_mkdir", "/work/other")), "{denied:?}");
    // The host: out/a/b made, nothing else changed.
    let mut expected = before;
    expected.insert("out/a".into(), sbx_wasm_tests::Node::Dir);
    expected.insert("out/a/b".into(), sbx_wasm_tests::Node::Dir);
    assert_eq!(snapshot(dir.path()), expected);
}

#[test]
fn the_runner_is_the_python_its_build_picks_wheels_for() {
    let build = std::fs::read_to_string(repo_root().join("host/runners/python/build.sh")).unwrap();
    let picked = build
        .lines()
        .find_map(|l| l.strip_prefix("runner_python=\""))
        .and_then(|l| l.strip_suffix('"'))
        .expect("build.sh names runner_python");
    let (host, py) = python();
    let caps = Capabilities::builder().build().unwrap();
    let run = py
        .run_source(
            host,
            "import sys; print('%d.%d' % sys.version_info[:2])",
            RunOptions::new(caps),
        )
        .unwrap();
    assert_eq!(utf8(&run.stdout).trim(), picked);
}
