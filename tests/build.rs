//! Build the wasm guests in `guest-examples/` from source for the end-to-end
//! tests (their own workspace and target dir, target wasm32-wasip2), the
//! Python runner (`guest-examples/python/build.sh`, componentize-py in a
//! virtual environment under `target/py`) and the JavaScript runner
//! (`guest-examples/js/build.sh`, componentize-js from the npm registry),
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
    println!("cargo:rerun-if-changed={}", root.join("wit").display());
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
    for watched in [
        "python/app",
        "python/wit",
        "python/build.sh",
        "python/requirements.txt",
    ] {
        println!("cargo:rerun-if-changed={}", guests.join(watched).display());
    }
    let status = Command::new("bash")
        .arg(guests.join("python/build.sh"))
        .status()
        .expect("cannot run bash to build the Python runner");
    assert!(
        status.success(),
        "building the Python runner failed (guest-examples/python/build.sh needs python3 with venv and PyPI)"
    );
    for watched in [
        "js/app",
        "js/wit",
        "js/build.sh",
        "js/package.json",
        "js/package-lock.json",
        "runner-wit.sh",
    ] {
        println!("cargo:rerun-if-changed={}", guests.join(watched).display());
    }
    let status = Command::new("bash")
        .arg(guests.join("js/build.sh"))
        .status()
        .expect("cannot run bash to build the JavaScript runner");
    assert!(
        status.success(),
        "building the JavaScript runner failed (guest-examples/js/build.sh needs Node.js 20+ with npm and the npm registry)"
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
