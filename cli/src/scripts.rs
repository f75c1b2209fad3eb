//! `sbx-wasm run script.py`: a Python script runs in the Python runner
//! component (CPython built by componentize-py, `guest-examples/python`);
//! the library's `PythonRunner` finds the runner and reads the script.
//!
//! The host reads the script (the user's input, not the guest's) and hands it
//! to the runner as `-c SOURCE NAME ARGS...`, so the script need not sit in a
//! mount; the guest still sees only what the caps grant.

use anyhow::{Result, bail};
use sbx_wasm::wasm::PythonRunner;
use sbx_wasm::wasm::python::{self, read_script};
use std::path::{Path, PathBuf};

/// Whether `path` names a Python script rather than a component.
pub(crate) fn is_script(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "py")
}

/// Where the runner is, in order: `--python-runner`, `$SBX_WASM_PYTHON_RUNNER`,
/// `sbx-python.wasm` beside the binary, then the project's build folder
/// (`target/py/`, one level above `target/debug/` or `target/release/`).
pub(crate) fn find_runner(flag: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = flag
        && !p.is_file()
    {
        bail!(
            "the Python runner named by --python-runner does not exist: {}",
            p.display()
        );
    }
    PythonRunner::locate(flag).map_err(|e| anyhow::anyhow!("{e}, or with --python-runner"))
}

/// The runner's arguments for `script` with `args`: `-c SOURCE NAME ARGS...`.
pub(crate) fn runner_args(script: &Path, args: &[String]) -> Result<Vec<String>> {
    let (source, name) = read_script(script)?;
    Ok(python::runner_args(&source, &name, args)?)
}
