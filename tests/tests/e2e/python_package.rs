//! The Python package (`python/`), as a user gets it: the wheel built by
//! maturin, installed with pip into a fresh virtual environment, and its
//! pytest suite (`python/tests`, the providers' tests among them, each
//! against its framework's real package) run there.
//!
//! The build tools and the test suite's packages come from PyPI once per
//! requirements file (kept in the user's cache folder by hash); the wheel
//! is built in the dev profile into the workspace's own target folder, so
//! it reuses the crates the test build compiled.

use sbx_wasm_tests::{cached_folder, cached_venv, repo_root, utf8};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The wheels `requirements` needs, downloaded once per requirements file
/// into the user's cache folder, so a fresh environment installs them
/// with no network.
fn wheelhouse(tools: &Path, requirements: &Path) -> PathBuf {
    cached_folder("python-package-wheels", requirements, |tmp| {
        let out = Command::new(tools)
            .args([
                "-m",
                "pip",
                "download",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .arg("--dest")
            .arg(tmp)
            .arg("-r")
            .arg(requirements)
            .output()
            .unwrap();
        assert!(out.status.success(), "pip download: {}", utf8(&out.stderr));
    })
}

/// The wheel, built by maturin in the dev profile into `out`.
fn build_wheel(tools: &Path, out: &Path) -> PathBuf {
    let root = repo_root();
    let built = Command::new(tools)
        .args(["-m", "maturin", "build", "--profile", "dev", "--quiet"])
        // The library as the test build compiled it (see python/Cargo.toml).
        .args(["--features", "workspace-test"])
        .arg("--manifest-path")
        .arg(root.join("python/Cargo.toml"))
        .arg("--out")
        .arg(out)
        .env("CARGO_TARGET_DIR", root.join("target"))
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "maturin build: {}\n{}",
        utf8(&built.stdout),
        utf8(&built.stderr)
    );
    let wheel = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .expect("maturin left no wheel");
    let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    // One wheel for every CPython from 3.10 on.
    assert!(name.contains("-cp310-abi3-"), "{name}");
    wheel
}

#[test]
fn the_wheel_installs_into_a_fresh_environment_and_its_suite_passes() {
    let root = repo_root();
    let tools = cached_venv(
        "python-package-build",
        &root.join("python/build-requirements.txt"),
        &[],
    );
    let requirements = root.join("python/tests/requirements.txt");
    let wheels = wheelhouse(&tools, &requirements);
    let work = tempfile::tempdir().unwrap();
    let wheel = build_wheel(&tools, &work.path().join("dist"));

    let venv = work.path().join("venv");
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .output()
        .unwrap();
    assert!(made.status.success(), "venv: {}", utf8(&made.stderr));
    let python = venv.join("bin/python");
    let installed = Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .arg("--no-index")
        .arg("--find-links")
        .arg(&wheels)
        .arg("-r")
        .arg(&requirements)
        .arg(&wheel)
        .output()
        .unwrap();
    assert!(
        installed.status.success(),
        "pip install: {}",
        utf8(&installed.stderr)
    );

    // The ten-line script a new user writes, from an empty folder.
    let first = work.path().join("first");
    std::fs::create_dir_all(first.join("data")).unwrap();
    std::fs::write(first.join("data/n.txt"), "21").unwrap();
    let script = "from sbx_wasm import Caps, Sandbox\n\
        caps = Caps.from_toml('[fs]\\nread = [{ host = \"data\", guest = \"/work\" }]\\n')\n\
        result = Sandbox(caps).run_python(\"print(int(open('/work/n.txt').read()) * 2)\")\n\
        print(result.stdout, end='')\n\
        print(Sandbox(caps).run_python(\"open('/etc/passwd')\").denials[0].violation)\n";
    let ran = Command::new(&python)
        .arg("-c")
        .arg(script)
        .current_dir(&first)
        .envs(runner_env())
        .output()
        .unwrap();
    assert_eq!(
        utf8(&ran.stdout),
        "42\nfs_read_denied\n",
        "{}",
        utf8(&ran.stderr)
    );

    // The suite, from outside the checkout's python/ folder so that the
    // installed package (not the source tree) is what it imports.
    let suite = Command::new(&python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(root.join("python/tests"))
        .current_dir(work.path())
        .envs(runner_env())
        .env(
            "SBX_TEST_GUESTS",
            sbx_wasm_tests::guest("noop").parent().unwrap(),
        )
        .env("SBX_TEST_CORPUS", root.join("tests/python/corpus"))
        .output()
        .unwrap();
    assert!(
        suite.status.success(),
        "pytest python/tests:\n{}\n{}",
        utf8(&suite.stdout),
        utf8(&suite.stderr)
    );
    eprintln!("{}", utf8(&suite.stdout).lines().last().unwrap_or(""));
}

/// The runners this checkout built, and the tests' warm artifact cache.
fn runner_env() -> Vec<(&'static str, PathBuf)> {
    vec![
        ("SBX_WASM_PYTHON_RUNNER", sbx_wasm_tests::python_runner()),
        ("SBX_WASM_JS_RUNNER", sbx_wasm_tests::js_runner()),
        (
            "SBX_WASM_CACHE_DIR",
            super::scripts::warm_cache().to_path_buf(),
        ),
    ]
}
