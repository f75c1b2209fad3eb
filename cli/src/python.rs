//! `sbx-wasm run script.py`: a Python script runs in the Python runner
//! component (CPython built by componentize-py, `guest-examples/python`).
//!
//! The host reads the script (the user's input, not the guest's) and hands it
//! to the runner as `-c SOURCE NAME ARGS...`, so the script need not sit in a
//! mount; the guest still sees only what the caps grant.

use anyhow::{Result, bail};
use std::path::{Path, PathBuf};

/// The runner's file name, next to the binary or in the build folder.
pub(crate) const RUNNER_FILE: &str = "sbx-python.wasm";
/// Environment variable naming the runner component.
pub(crate) const RUNNER_ENV: &str = "SBX_WASM_PYTHON_RUNNER";
/// Largest script accepted (it travels as an argument).
const MAX_SCRIPT: u64 = 4 * 1024 * 1024;

/// Whether `path` names a Python script rather than a component.
pub(crate) fn is_script(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "py")
}

/// Where the runner is, in order: `--python-runner`, `$SBX_WASM_PYTHON_RUNNER`,
/// `sbx-python.wasm` beside the binary, then the project's build folder
/// (`target/py/`, one level above `target/debug/` or `target/release/`).
pub(crate) fn find_runner(flag: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = flag {
        return existing(p, "--python-runner");
    }
    if let Some(p) = std::env::var_os(RUNNER_ENV) {
        return existing(Path::new(&p), RUNNER_ENV);
    }
    let mut looked = Vec::new();
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        for candidate in [
            dir.join(RUNNER_FILE),
            dir.join("..").join("py").join(RUNNER_FILE),
        ] {
            if candidate.is_file() {
                return Ok(candidate);
            }
            looked.push(candidate.display().to_string());
        }
    }
    bail!(
        "the Python runner ({RUNNER_FILE}) was not found (looked at {}); build it with \
         `bash guest-examples/python/build.sh`, or name it with --python-runner or {RUNNER_ENV}",
        looked.join(", ")
    )
}

fn existing(p: &Path, from: &str) -> Result<PathBuf> {
    if p.is_file() {
        Ok(p.to_path_buf())
    } else {
        bail!(
            "the Python runner named by {from} does not exist: {}",
            p.display()
        )
    }
}

/// The runner's arguments for `script` with `args`: `-c SOURCE NAME ARGS...`.
pub(crate) fn runner_args(script: &Path, args: &[String]) -> Result<Vec<String>> {
    let meta = std::fs::metadata(script)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", script.display()))?;
    if meta.len() > MAX_SCRIPT {
        bail!(
            "{}: {} bytes; scripts are limited to {MAX_SCRIPT} bytes",
            script.display(),
            meta.len()
        );
    }
    let bytes = std::fs::read(script)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", script.display()))?;
    let source = String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("{}: not UTF-8 text", script.display()))?;
    if source.contains('\0') {
        bail!("{}: contains a NUL byte", script.display());
    }
    let name = script
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "script.py".into());
    let mut argv = vec!["-c".to_string(), source, name];
    argv.extend(args.iter().cloned());
    Ok(argv)
}
