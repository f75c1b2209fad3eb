//! Build the wasm guests in `guest-examples/` from source for the end-to-end
//! tests (their own workspace and target dir, target wasm32-wasip2), the
//! Python runner (`host/runners/python/build.sh`, componentize-py in a
//! virtual environment under `target/py`) and the JavaScript runner
//! (`host/runners/js/build.sh`, componentize-js from the npm registry),
//! and tell the tests where the components are.

use std::path::Path;
use std::process::Command;

fn main() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    let root = Path::new(&manifest).parent().unwrap();
    let guests = root.join("guest-examples");
    for watched in [
        "agents/src",
        "agents/Cargo.toml",
        "sbx-guest/src",
        "sbx-guest/Cargo.toml",
        "Cargo.toml",
    ] {
        println!("cargo:rerun-if-changed={}", guests.join(watched).display());
    }
    println!("cargo:rerun-if-changed={}", root.join("host/wit").display());
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args([
            "build",
            "--release",
            "--target",
            "wasm32-wasip2",
            "--manifest-path",
        ])
        .arg(guests.join("Cargo.toml"))
        // Settings meant for the host build must not leak into the guests'.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .status()
        .expect("cannot run cargo to build the wasm guests");
    assert!(
        status.success(),
        "building guest-examples failed; is the target installed? `rustup target add wasm32-wasip2`"
    );
    let runners = root.join("host/runners");
    runner(
        &runners,
        "python",
        &["requirements.txt"],
        "python3 with venv and PyPI",
    );
    runner(
        &runners,
        "js",
        &["package.json", "package-lock.json"],
        "Node.js 20+ with npm and the npm registry",
    );
    println!(
        "cargo:rustc-env=JS_RUNNER={}",
        root.join("target/js/sbx-js.wasm").display()
    );
    println!(
        "cargo:rustc-env=PYTHON_RUNNER={}",
        root.join("target/py/sbx-python.wasm").display()
    );
    println!(
        "cargo:rustc-env=GUEST_WASM_DIR={}",
        guests.join("target/wasm32-wasip2/release").display()
    );
}

/// Build the script runner in `guest-examples/DIR` with its `build.sh`
/// (which makes nothing when its inputs are unchanged), watching its app,
/// WIT, build script, the `files` it pins and the WIT staging both share;
/// `needs` is what the build takes, for the message when it fails.
fn runner(runners: &Path, dir: &str, files: &[&str], needs: &str) {
    let watched = ["app", "wit", "build.sh"].iter().chain(files);
    for w in watched {
        println!(
            "cargo:rerun-if-changed={}",
            runners.join(dir).join(w).display()
        );
    }
    println!(
        "cargo:rerun-if-changed={}",
        runners.join("runner-wit.sh").display()
    );
    let script = runners.join(dir).join("build.sh");
    let status = Command::new("bash")
        .arg(&script)
        .status()
        .unwrap_or_else(|e| panic!("cannot run bash to build {}: {e}", script.display()));
    assert!(
        status.success(),
        "building the runner failed ({} needs {needs})",
        script.display()
    );
}
