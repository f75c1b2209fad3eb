//! Python agents: the Python runner (CPython built as a component, its
//! standard library snapshotted in; `host/runners/python`) runs a source
//! string or a script file under the grant, like any component
//! ([`ScriptRunner`] holds what every runner shares).
//!
//! The host hands the source to the runner as an argument, so a script need
//! not sit in a mount; the guest still sees only what the caps grant. The
//! runner reads no file of its own at run time (a traceback shows the
//! script's lines from the source it was given), so a run's denials are the
//! script's doing only.

use super::runner::{Language, ScriptRunner};
pub use super::runner::{MAX_SOURCE_BYTES, Python, read_script, runner_args};

/// The runner's file name, beside the program or in the build folder.
pub const RUNNER_FILE: &str = Python::RUNNER_FILE;
/// The environment variable that names the runner component.
pub const RUNNER_ENV: &str = Python::RUNNER_ENV;

/// The Python runner, compiled and linked once: run many scripts with it
/// ([`ScriptRunner`] for [`Python`]).
///
/// # Examples
///
/// ```no_run
/// use sbx_wasm::Capabilities;
/// use sbx_wasm::wasm::{PythonRunner, RunOptions, WasmHost};
///
/// let host = WasmHost::new().map_err(|e| format!("{e:#}"))?;
/// let python = PythonRunner::load(&host, &PythonRunner::locate(None)?)?;
/// let caps = Capabilities::builder().build()?;
/// let run = python.run_source(&host, "print(6 * 7)", RunOptions::new(caps))?;
/// assert_eq!(run.stdout, b"42\n");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type PythonRunner = ScriptRunner<Python>;

/// `caps` with a private `/tmp` for one run: a fresh folder, mounted
/// writable at `/tmp` and named "private to the run" in audit rules,
/// removed when the returned guard drops; `caps` as they are when they
/// mount `/tmp` or `/` themselves. (A kernel wall forbids removing the
/// folder from inside the run: the CLI makes it before the wall goes up
/// and has its helper remove it.)
pub fn private_tmp(
    caps: &crate::Capabilities,
) -> Result<(crate::Capabilities, Option<tempfile::TempDir>), crate::Error> {
    private_tmp_from(caps, new_tmp)
}

/// A new, empty folder for a run's `/tmp`, in the temp folder, that only
/// this user can enter (the temp folder is everyone's: with the default
/// `0755` another user could read what a run writes to its `/tmp`).
pub(super) fn new_tmp() -> std::io::Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    tempfile::Builder::new()
        .prefix("sbx-tmp-")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
}

/// [`private_tmp`] with the folder from `fresh` (a new, empty folder).
pub(super) fn private_tmp_from(
    caps: &crate::Capabilities,
    fresh: impl FnOnce() -> std::io::Result<tempfile::TempDir>,
) -> Result<(crate::Capabilities, Option<tempfile::TempDir>), crate::Error> {
    let taken = caps
        .mounts()
        .iter()
        .any(|m| matches!(m.guest.as_str(), "/" | "/tmp"));
    if taken {
        return Ok((caps.clone(), None));
    }
    let dir =
        fresh().map_err(|e| crate::Error::Setup(format!("cannot make the run's /tmp: {e}")))?;
    // A grant of the temp folder itself (or of a folder inside this one)
    // would reach every other run's private /tmp.
    crate::ProtectedPaths::new()
        .with(
            dir.path(),
            "the private /tmp of this run (made in the temp folder)",
        )
        .check(caps)?;
    let caps = caps.with_private_mount(dir.path(), "/tmp")?;
    Ok((caps, Some(dir)))
}
