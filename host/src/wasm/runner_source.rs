//! The script runners' sources, embedded: a program that sits beside no
//! checkout (an installed `sbx-wasm`, a framework's own binary) builds a
//! runner at first use from the sources it was compiled with, into the
//! user's cache folder, never into a source tree.
//!
//! [`unpack`] writes the sources (`host/runners/`, `host/wit/`) into
//! `$XDG_CACHE_HOME/sbx-wasm/runner-src/HASH/`, HASH naming their content,
//! beside a small manifest through which the build finds the WASI WIT of
//! the wasmtime-wasi release this library runs (`cargo metadata`, from the
//! crates.io registry). [`build`] then runs the language's `build.sh` there:
//! it installs its tools from the Python or npm registry into the cache,
//! builds the runner, and leaves it in the user's runner folder
//! ([`super::runner::user_runner_dir`]), where
//! [`ScriptRunner::locate`](super::ScriptRunner::locate) finds it.

use super::runner::{Language, user_runner_dir};
use super::{LoadError, setup};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Every file of `host/runners/` and `host/wit/`, by its path from `host/`.
const FILES: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/runner_sources.rs"));

/// The wasmtime-wasi release this library is built with: its WASI WIT is
/// what a runner is built against, so a runner never asks for a version
/// the host lacks. (A test holds it to the workspace's Cargo.lock.)
pub const WASMTIME_WASI_VERSION: &str = "50.0.1";

/// The embedded files, by their path from the host crate's folder.
pub fn files() -> impl Iterator<Item = (&'static str, &'static [u8])> {
    FILES.iter().copied()
}

/// The hex SHA-256 of the embedded sources (paths and contents), which
/// names their folder in the cache.
pub fn digest() -> String {
    let mut all = Vec::new();
    for (path, bytes) in files() {
        all.extend_from_slice(path.as_bytes());
        all.push(0);
        all.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        all.extend_from_slice(bytes);
    }
    crate::replay::sha256_hex(&all)
}

/// The user's sbx-wasm folder, where runner builds unpack their sources
/// (`runner-src/`), keep their tools (`build/`, `npm/`) and leave their
/// runners (`runners/`): `$XDG_CACHE_HOME/sbx-wasm`, else
/// `$HOME/.cache/sbx-wasm`. What is there runs natively at a build, or as
/// every later script's runner, so no grant may mount it.
pub fn user_dir() -> Option<PathBuf> {
    super::cache::user_cache_home().map(|c| c.join("sbx-wasm"))
}

fn cache_root() -> Result<PathBuf, LoadError> {
    user_dir().ok_or_else(|| {
        setup("no cache folder for a runner build: set XDG_CACHE_HOME or HOME".into())
    })
}

/// Writes the embedded sources under `root/runner-src/HASH/` once (into a
/// folder of its own, renamed into place when whole, so two first uses at
/// once never see half a tree) and returns that folder: the layout of a
/// checkout (`host/runners/…`, `host/wit/…`), with `host/Cargo.toml` a
/// manifest naming only wasmtime-wasi.
pub fn unpack(root: &Path) -> std::io::Result<PathBuf> {
    let parent = root.join("runner-src");
    let dest = parent.join(&digest()[..16]);
    if dest.join("host/Cargo.toml").is_file() {
        return Ok(dest);
    }
    std::fs::create_dir_all(&parent)?;
    let staging = tempfile::Builder::new()
        .prefix(".unpack-")
        .tempdir_in(&parent)?;
    for (path, bytes) in files() {
        let file = staging.path().join("host").join(path);
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(file, bytes)?;
    }
    std::fs::create_dir_all(staging.path().join("host/src"))?;
    std::fs::write(staging.path().join("host/src/lib.rs"), "")?;
    // Written last: its presence says the tree is whole.
    std::fs::write(staging.path().join("host/Cargo.toml"), manifest())?;
    match std::fs::rename(staging.path(), &dest) {
        Ok(()) => {
            // Renamed away: nothing left for the guard to remove.
            let _ = staging.keep();
            Ok(dest)
        }
        // Another first use got there first with the same content.
        Err(_) if dest.join("host/Cargo.toml").is_file() => Ok(dest),
        Err(e) => Err(e),
    }
}

/// [`unpack`] into the user's cache folder (`$XDG_CACHE_HOME/sbx-wasm`,
/// else `$HOME/.cache/sbx-wasm`): the sources' tree, a checkout's layout.
pub fn unpacked() -> Result<PathBuf, LoadError> {
    let root = cache_root()?;
    unpack(&root).map_err(|e| {
        setup(format!(
            "cannot unpack the runners' sources into {}: {e}",
            root.display()
        ))
    })
}

/// The manifest `cargo metadata` reads to find wasmtime-wasi's WIT: a
/// package of its own (the empty `[workspace]` keeps cargo from looking
/// in the folders above the cache).
fn manifest() -> String {
    format!(
        "# Written by sbx-wasm: the build finds the WASI WIT through this.\n\
         [package]\nname = \"sbx-wasm-runner-wit\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\
         publish = false\n\n[dependencies]\n\
         wasmtime-wasi = {{ version = \"={WASMTIME_WASI_VERSION}\", default-features = false }}\n\n\
         [workspace]\n"
    )
}

/// Builds `L`'s default runner from the embedded sources and returns its
/// path in the user's runner folder. Needs bash, and what the language's
/// build needs (Python: python3 with venv and the Python registry;
/// JavaScript: Node.js 20+ with npm and the npm registry; both: cargo and
/// the crates.io registry, for the WASI WIT). A build whose inputs are
/// unchanged is a copy from the user's cache, or nothing.
pub fn build<L: Language>() -> Result<PathBuf, LoadError> {
    run_build::<L>(&unpacked()?, &[])?;
    user_runner_dir()
        .map(|d| d.join(L::RUNNER_FILE))
        .filter(|p| p.is_file())
        .ok_or_else(|| {
            setup(format!(
                "the {} runner build ended without leaving {} in the user's runner folder",
                L::NAME,
                L::RUNNER_FILE
            ))
        })
}

/// Runs `L`'s build script in the sources `tree` (a checkout's layout:
/// [`unpacked`], or an sbx-wasm checkout) with `args`. Its build folder
/// (the tools' environment, the staged WIT) is `build/NAME/` in the user's
/// sbx-wasm folder unless the environment names one; builds of a language
/// wait for each other (a file lock there: first uses started together,
/// an agent framework's first ten scripts, wait for the first, whose
/// runner the script then finds up to date). The build's messages go to
/// this process's stderr: its stdout carries only what it prints itself.
pub fn run_build<L: Language>(tree: &Path, args: &[&std::ffi::OsStr]) -> Result<(), LoadError> {
    let build_dir = cache_root()?.join("build");
    let lock_path = build_dir.join(format!("{}.lock", L::BUILD_DIR));
    let lock = std::fs::create_dir_all(&build_dir)
        .and_then(|()| {
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&lock_path)
        })
        .and_then(|f| f.lock().map(|()| f))
        .map_err(|e| setup(format!("cannot lock {}: {e}", lock_path.display())))?;
    let mut command = Command::new("bash");
    command
        .arg(tree.join(L::BUILD_SCRIPT))
        .args(args)
        .stdin(Stdio::null())
        .stdout(child_stdout());
    if std::env::var_os(L::BUILD_DIR_ENV).is_none() {
        command.env(L::BUILD_DIR_ENV, build_dir.join(L::BUILD_DIR));
    }
    let status = command.status().map_err(|e| {
        setup(format!(
            "cannot start bash for the {} runner build: {e}",
            L::NAME
        ))
    })?;
    drop(lock);
    if !status.success() {
        return Err(setup(format!(
            "the {} runner build failed ({status}; its messages are above)",
            L::NAME
        )));
    }
    Ok(())
}

/// This process's stderr, for a child's stdout.
fn child_stdout() -> Stdio {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        if let Ok(fd) = std::io::stderr().as_fd().try_clone_to_owned() {
            return Stdio::from(fd);
        }
    }
    Stdio::inherit()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
    }

    #[test]
    fn every_tracked_runner_source_is_embedded_as_it_is() {
        let listed = Command::new("git")
            .args(["ls-files", "runners", "wit"])
            .current_dir(host_dir())
            .output()
            .unwrap();
        assert!(listed.status.success());
        let tracked: Vec<String> = String::from_utf8(listed.stdout)
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        assert!(tracked.iter().any(|p| p == "runners/python/build.sh"));
        assert!(tracked.iter().any(|p| p == "wit/world.wit"));
        let embedded: Vec<&str> = files().map(|(p, _)| p).collect();
        assert_eq!(embedded, tracked, "embedded files differ from git's list");
        for (path, bytes) in files() {
            assert_eq!(
                bytes,
                std::fs::read(host_dir().join(path)).unwrap(),
                "{path}"
            );
        }
    }

    #[test]
    fn the_wit_manifest_names_the_wasmtime_wasi_the_workspace_builds() {
        let lock = std::fs::read_to_string(host_dir().join("../Cargo.lock")).unwrap();
        let at = lock.find("\nname = \"wasmtime-wasi\"\n").unwrap();
        let version = lock[at..].lines().nth(2).unwrap();
        assert_eq!(version, format!("version = \"{WASMTIME_WASI_VERSION}\""));
        assert!(manifest().contains(&format!("\"={WASMTIME_WASI_VERSION}\"")));
    }

    #[test]
    fn unpacking_twice_gives_one_whole_tree() {
        let t = tempfile::tempdir().unwrap();
        let first = unpack(t.path()).unwrap();
        let again = unpack(t.path()).unwrap();
        assert_eq!(first, again);
        assert!(first.ends_with(&digest()[..16]));
        for (path, bytes) in files() {
            assert_eq!(std::fs::read(first.join("host").join(path)).unwrap(), bytes);
        }
        // No staging folder is left behind.
        let left: Vec<_> = std::fs::read_dir(t.path().join("runner-src"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left.len(), 1, "{left:?}");
    }
}
