//! The wasm guests and the script runners the tests run, built when a test
//! process first asks for one, not by a build script: so `cargo build
//! --tests` leaves its build slots to rustc (quick start 1 builds these
//! itself, after its plan has run), and `cargo test` alone still works.
//! Each build makes nothing when its inputs are unchanged; a file lock
//! keeps test processes run side by side from building at once.

use sbx_wasm::wasm::{DataPython, JavaScript, Language, Python};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Runs `build` holding the lock `target/.sbx-test-build.lock`.
fn locked<T>(build: impl FnOnce() -> T) -> T {
    let path = crate::repo_root().join("target/.sbx-test-build.lock");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()));
    file.lock()
        .unwrap_or_else(|e| panic!("cannot lock {}: {e}", path.display()));
    let out = build();
    drop(file);
    out
}

/// Where the guests in `guest-examples/` are, built (their own workspace,
/// target wasm32-wasip2, release).
pub(crate) fn guest_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let guests = crate::repo_root().join("guest-examples");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = locked(|| {
            Command::new(cargo)
                .args(["build", "--quiet", "--release", "--target", "wasm32-wasip2"])
                .arg("--manifest-path")
                .arg(guests.join("Cargo.toml"))
                // Settings meant for the host build must not reach the guests'.
                .env_remove("RUSTFLAGS")
                .env_remove("CARGO_ENCODED_RUSTFLAGS")
                .env_remove("CARGO_BUILD_TARGET")
                .env_remove("CARGO_TARGET_DIR")
                .env_remove("CARGO_BUILD_RUSTFLAGS")
                .status()
                .expect("cannot run cargo to build the wasm guests")
        });
        assert!(
            status.success(),
            "building guest-examples failed; is the target installed? `rustup target add wasm32-wasip2`"
        );
        guests.join("target/wasm32-wasip2/release")
    })
}

/// `L`'s runner, built by its `build.sh` into the project's build folder.
fn runner<L: Language>(cell: &'static OnceLock<PathBuf>) -> PathBuf {
    cell.get_or_init(|| {
        let root = crate::repo_root();
        let script = root.join(L::BUILD_SCRIPT);
        let status = locked(|| {
            Command::new("bash")
                .arg(&script)
                .status()
                .unwrap_or_else(|e| panic!("cannot run bash to build {}: {e}", script.display()))
        });
        assert!(
            status.success(),
            "building the runner failed ({} needs {})",
            script.display(),
            L::BUILD_NEEDS
        );
        root.join("target").join(L::BUILD_DIR).join(L::RUNNER_FILE)
    })
    .clone()
}

/// The Python runner, built.
pub(crate) fn python_runner() -> PathBuf {
    static CELL: OnceLock<PathBuf> = OnceLock::new();
    runner::<Python>(&CELL)
}

/// The data runner (and its files beside it), built.
pub(crate) fn data_runner() -> PathBuf {
    static CELL: OnceLock<PathBuf> = OnceLock::new();
    runner::<DataPython>(&CELL)
}

/// The JavaScript runner, built.
pub(crate) fn js_runner() -> PathBuf {
    static CELL: OnceLock<PathBuf> = OnceLock::new();
    runner::<JavaScript>(&CELL)
}
