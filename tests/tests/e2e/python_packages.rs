//! Pure-Python packages from PyPI bundled into a runner (`sbx-wasm python
//! build --requirements`): the packages example's requirements (dateutil,
//! six, tabulate, pinned by hash) build a runner, cached by their hash,
//! that `run --python-runner` and the library use; the default runner
//! says how to get a package it lacks; an unpinned requirement and a wheel
//! with native code are refused, the latter by name.

use super::python::warm_cache;
use sbx_wasm::Capabilities;
use sbx_wasm::wasm::{ArtifactCache, PythonRunner, RunOptions, WasmHost};
use sbx_wasm_tests::{LoopbackServer, python_runner, repo_root, sbx_bin, utf8};
use std::path::Path;
use std::process::{Command, Output};

fn build(cache: &Path, requirements: &Path) -> Output {
    Command::new(sbx_bin())
        .env("SBX_WASM_CACHE_DIR", cache)
        // The build folder (its componentize-py environment) in the test's
        // own folder, not the user's: where the check below looks.
        .env("SBX_WASM_PY_BUILD_DIR", cache.join("python/build"))
        .args(["python", "build", "--requirements"])
        .arg(requirements)
        .output()
        .unwrap()
}

#[test]
fn a_runner_with_packages_is_built_cached_and_used_by_the_cli_and_library() {
    let scratch = tempfile::tempdir().unwrap();
    let example = repo_root().join("examples/python/packages");
    let requirements = example.join("requirements.txt");
    let out = build(scratch.path(), &requirements);
    assert_eq!(out.status.code(), Some(0), "{}", utf8(&out.stderr));
    let runner = utf8(&out.stdout).trim().to_string();
    assert!(
        runner.starts_with(&scratch.path().join("python/runner-").display().to_string()),
        "{runner}"
    );
    // Built in the cache folder, not in the source tree (or copied from the
    // runners already built from the same inputs).
    assert!(
        scratch.path().join("python/build/venv").is_dir()
            || utf8(&out.stderr).contains("from the cache"),
        "{}",
        utf8(&out.stderr)
    );
    // The same requirements again: the runner is up to date, not rebuilt.
    let again = build(scratch.path(), &requirements);
    assert_eq!(utf8(&again.stdout).trim(), runner);
    assert!(
        utf8(&again.stderr).contains("up to date"),
        "{}",
        utf8(&again.stderr)
    );

    // The CLI runs the example with it, no denial on record.
    let audit = scratch.path().join("audit.jsonl");
    std::fs::write(scratch.path().join("caps.toml"), "").unwrap();
    let run = Command::new(sbx_bin())
        .env("SBX_WASM_CACHE_DIR", warm_cache())
        .args(["run", "--no-stdin", "--caps"])
        .arg(scratch.path().join("caps.toml"))
        .arg("--audit")
        .arg(&audit)
        .args(["--python-runner", &runner])
        .arg(example.join("report.py"))
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", utf8(&run.stderr));
    assert_eq!(
        utf8(&run.stdout),
        "region    ordered     due           amount\n\
         --------  ----------  ----------  --------\n\
         north     2024-01-31  2024-02-29       120\n\
         south     2024-03-03  2024-04-03        80\n\
         east      2024-02-29  2024-03-29        45\n"
    );
    let audit = std::fs::read_to_string(&audit).unwrap();
    assert!(sbx_wasm_tests::audit_records(&audit).is_empty(), "{audit}");

    // The library loads the same runner; it lists what it bundles.
    let host = WasmHost::new()
        .unwrap()
        .with_cache(ArtifactCache::open(warm_cache()).unwrap());
    let py = PythonRunner::load(&host, Path::new(&runner)).unwrap();
    let caps = Capabilities::builder().build().unwrap();
    let source = "import sbx, tabulate\nprint('tabulate' in sbx.PACKAGES, 'dateutil.parser' in sbx.PACKAGES)\n";
    let run = py
        .run_source(&host, source, RunOptions::new(caps.clone()))
        .unwrap();
    assert_eq!(utf8(&run.stdout), "True True\n", "{}", utf8(&run.stderr));

    // The default runner has no packages, and says how to get one.
    let plain = PythonRunner::load(&host, &python_runner()).unwrap();
    let run = plain
        .run_source(&host, "import tabulate\n", RunOptions::new(caps))
        .unwrap();
    assert_eq!(run.report.exit_code, Some(1));
    assert!(
        utf8(&run.stderr).contains("sbx-wasm python build --requirements"),
        "{}",
        utf8(&run.stderr)
    );
    assert!(run.audit.is_empty(), "{:?}", run.audit);
}

#[test]
fn unpinned_requirements_and_wheels_with_native_code_are_refused() {
    let scratch = tempfile::tempdir().unwrap();
    let d = scratch.path();
    // No hash: pip's hash-checking mode refuses before anything is fetched.
    std::fs::write(d.join("loose.txt"), "tabulate==0.9.0\n").unwrap();
    let out = build(d, &d.join("loose.txt"));
    assert_ne!(out.status.code(), Some(0));
    assert!(utf8(&out.stderr).contains("hash"), "{}", utf8(&out.stderr));
    // A wheel whose tags say native code (made here, pinned by its hash).
    let wheel = "nativepkg-1.0-py3-none-linux_x86_64.whl";
    let made = Command::new("python3")
        .current_dir(d)
        .arg("-c")
        .arg(format!(
            "import zipfile, hashlib\n\
             z = zipfile.ZipFile('{wheel}', 'w')\n\
             z.writestr('nativepkg/__init__.py', '')\n\
             z.writestr('nativepkg-1.0.dist-info/METADATA', 'Metadata-Version: 2.1\\nName: nativepkg\\nVersion: 1.0\\n')\n\
             z.writestr('nativepkg-1.0.dist-info/WHEEL', 'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: false\\nTag: py3-none-linux_x86_64\\n')\n\
             z.writestr('nativepkg-1.0.dist-info/RECORD', '')\n\
             z.close()\n\
             print(hashlib.sha256(open('{wheel}', 'rb').read()).hexdigest())"
        ))
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", utf8(&made.stderr));
    let hash = utf8(&made.stdout).trim().to_string();
    std::fs::write(
        d.join("native.txt"),
        format!("./{wheel} --hash=sha256:{hash}\n"),
    )
    .unwrap();
    let out = Command::new(sbx_bin())
        .current_dir(d)
        .env("SBX_WASM_CACHE_DIR", d)
        .args([
            "python",
            "build",
            "--requirements",
            "native.txt",
            "-o",
            "r.wasm",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", utf8(&out.stderr));
    assert!(!d.join("r.wasm").exists());
    #[cfg(target_arch = "x86_64")]
    assert!(
        utf8(&out.stderr).contains(
            "a wheel with native code cannot run in the sandbox: nativepkg-1.0 (py3-none-linux_x86_64)"
        ),
        "{}",
        utf8(&out.stderr)
    );
}

#[test]
fn httpx_in_a_runner_built_with_it_goes_through_the_broker_sync_and_async() {
    let scratch = tempfile::tempdir().unwrap();
    let requirements = repo_root().join("tests/python/httpx/requirements.txt");
    // componentize-py's environment shared with the stock runner's build.
    let out = Command::new(sbx_bin())
        .env("SBX_WASM_CACHE_DIR", scratch.path())
        .env("SBX_WASM_PY_BUILD_DIR", repo_root().join("target/py"))
        .args(["python", "build", "--requirements"])
        .arg(&requirements)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", utf8(&out.stderr));
    let runner = utf8(&out.stdout).trim().to_string();
    let server = LoopbackServer::start();
    let script = format!(
        r#"
import asyncio, httpx
API = "{origin}"
r = httpx.get(API + "/api/items", params={{"limit": 2}})
print(r.status_code, [i["name"] for i in r.json()["items"]])
with httpx.Client(base_url=API, headers={{"Authorization": "Bearer t"}}) as c:
    e = c.post("/api/echo", json={{"a": 1}}).json()
    print(e["method"], e["authorization"], e["body"])
async def main():
    async with httpx.AsyncClient() as c:
        r = await c.get(API + "/api/nothing")
        print("async", r.status_code, r.json()["error"])
asyncio.run(main())
try:
    httpx.get("http://127.0.0.1:1/x")
except httpx.ConnectError as e:
    print("ConnectError", str(e).startswith("egress_denied"))
try:
    import ssl
except ModuleNotFoundError as e:
    print("no ssl:", "no TLS inside the runner" in str(e))
"#,
        origin = server.origin()
    );
    std::fs::write(scratch.path().join("h.py"), script).unwrap();
    let caps = format!("[net]\nallow = [\"{}\"]\n", server.origin());
    std::fs::write(scratch.path().join("caps.toml"), caps).unwrap();
    let run = Command::new(sbx_bin())
        .env("SBX_WASM_CACHE_DIR", warm_cache())
        .current_dir(scratch.path())
        .args([
            "run",
            "--no-stdin",
            "--caps",
            "caps.toml",
            "--python-runner",
        ])
        .arg(&runner)
        .arg("h.py")
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", utf8(&run.stderr));
    assert_eq!(
        utf8(&run.stdout),
        "200 ['alpha', 'beta', 'gamma']\n\
         POST Bearer t {\"a\":1}\n\
         async 404 no such resource\n\
         ConnectError True\n\
         no ssl: True\n"
    );
    // The three allowed requests reached the server; the denied one did
    // not leave (it named another port).
    assert_eq!(server.connections(), 3);
}
