//! Python agents: the Python runner (CPython built as a component, its
//! standard library snapshotted in; `guest-examples/python`) runs a source
//! string or a script file under the grant, like any component.
//!
//! The host hands the source to the runner as an argument, so a script need
//! not sit in a mount; the guest still sees only what the caps grant. The
//! runner reads no file of its own at run time (a traceback shows the
//! script's lines from the source it was given), so a run's denials are the
//! script's doing only.

use super::{LoadError, PreparedAgent, RunOptions, WasmHost, WasmRun, setup};
use std::path::{Path, PathBuf};

/// The runner's file name, beside the program or in the build folder.
pub const RUNNER_FILE: &str = "sbx-python.wasm";
/// The environment variable that names the runner component.
pub const RUNNER_ENV: &str = "SBX_WASM_PYTHON_RUNNER";
/// Largest source accepted (it travels to the guest as an argument).
pub const MAX_SOURCE_BYTES: usize = 4 * 1024 * 1024;

/// The Python runner, compiled and linked once: run many scripts with it.
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
#[derive(Clone)]
pub struct PythonRunner {
    agent: PreparedAgent,
}

impl PythonRunner {
    /// Where the runner is, in order: `explicit`, `$SBX_WASM_PYTHON_RUNNER`,
    /// `sbx-python.wasm` beside the running program, then the project's
    /// build folder (`target/py/`, beside `target/debug/` or
    /// `target/release/`).
    pub fn locate(explicit: Option<&Path>) -> Result<PathBuf, LoadError> {
        if let Some(p) = explicit {
            return existing(p, "the path given");
        }
        if let Some(p) = std::env::var_os(RUNNER_ENV) {
            return existing(Path::new(&p), RUNNER_ENV);
        }
        let mut looked = Vec::new();
        if let Some(dir) = std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().map(Path::to_path_buf))
        {
            // Examples and tests run from target/debug/{examples,deps}.
            for candidate in [
                dir.join(RUNNER_FILE),
                dir.join("..").join("py").join(RUNNER_FILE),
                dir.join("..").join("..").join("py").join(RUNNER_FILE),
            ] {
                if candidate.is_file() {
                    return Ok(candidate);
                }
                looked.push(candidate.display().to_string());
            }
        }
        Err(setup(format!(
            "the Python runner ({RUNNER_FILE}) was not found (looked at {}); build it with \
             `bash guest-examples/python/build.sh`, or name it with {RUNNER_ENV}",
            looked.join(", ")
        )))
    }

    /// Compile (through `host`'s artifact cache, if it has one) and link
    /// the runner at `path`.
    pub fn load(host: &WasmHost, path: &Path) -> Result<Self, LoadError> {
        let agent = host.prepare(&host.load(path)?)?;
        Ok(PythonRunner { agent })
    }

    /// This runner with `n` instances kept ready ahead of its runs, each
    /// used by one run only ([`PreparedAgent::keep_warm`]): a snippet then
    /// starts with its own code, not with instantiating CPython.
    pub fn keep_warm(&self, n: usize) -> Result<Self, LoadError> {
        Ok(PythonRunner {
            agent: self.agent.keep_warm(n)?,
        })
    }

    /// `opts` set to run `source` as the script `name`: the guest's argv
    /// is `[name, opts' args...]`, as `python name args...` would give, and
    /// a private `/tmp` ([`RunOptions::private_tmp`]).
    pub fn source_options(
        &self,
        source: &str,
        name: &str,
        opts: RunOptions,
    ) -> Result<RunOptions, LoadError> {
        let args = runner_args(source, name, &opts.args)?;
        Ok(opts.program_name("python").args(args).private_tmp())
    }

    /// Run `source` (as `snippet.py`) under `opts`, blocking.
    pub fn run_source(
        &self,
        host: &WasmHost,
        source: &str,
        opts: RunOptions,
    ) -> Result<WasmRun, LoadError> {
        let opts = self.source_options(source, "snippet.py", opts)?;
        host.run_prepared(&self.agent, opts)
    }

    /// Run `source` (as `snippet.py`) under `opts`, from an async runtime.
    pub async fn run_source_async(
        &self,
        host: &WasmHost,
        source: &str,
        opts: RunOptions,
    ) -> Result<WasmRun, LoadError> {
        let opts = self.source_options(source, "snippet.py", opts)?;
        host.run_prepared_async(&self.agent, opts).await
    }

    /// Run the host file `script` (read by the host: the caller's input,
    /// not the guest's; it need not be in a mount) under `opts`, blocking.
    pub fn run_file(
        &self,
        host: &WasmHost,
        script: &Path,
        opts: RunOptions,
    ) -> Result<WasmRun, LoadError> {
        let (source, name) = read_script(script)?;
        let opts = self.source_options(&source, &name, opts)?;
        host.run_prepared(&self.agent, opts)
    }

    /// The runner, linked: for [`WasmHost::run_prepared`] with options from
    /// [`PythonRunner::source_options`].
    pub fn agent(&self) -> &PreparedAgent {
        &self.agent
    }
}

/// A script's source and its name, read from the host file `script`.
pub fn read_script(script: &Path) -> Result<(String, String), LoadError> {
    let read = |source| LoadError::Read {
        path: script.display().to_string(),
        source,
    };
    let meta = std::fs::metadata(script).map_err(read)?;
    if meta.len() > MAX_SOURCE_BYTES as u64 {
        return Err(setup(format!(
            "{}: {} bytes; scripts are limited to {MAX_SOURCE_BYTES} bytes",
            script.display(),
            meta.len()
        )));
    }
    let bytes = std::fs::read(script).map_err(read)?;
    let source = String::from_utf8(bytes)
        .map_err(|_| setup(format!("{}: not UTF-8 text", script.display())))?;
    let name = script
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "script.py".into());
    Ok((source, name))
}

/// The runner's arguments for `source` run as the script `name` with the
/// script's `args`: `-c SOURCE NAME ARGS...`.
pub fn runner_args(source: &str, name: &str, args: &[String]) -> Result<Vec<String>, LoadError> {
    check_source(source, name)?;
    let mut argv = vec!["-c".to_string(), source.to_string(), name.to_string()];
    argv.extend(args.iter().cloned());
    Ok(argv)
}

fn check_source(source: &str, name: &str) -> Result<(), LoadError> {
    if source.len() > MAX_SOURCE_BYTES {
        return Err(setup(format!(
            "{name}: {} bytes; scripts are limited to {MAX_SOURCE_BYTES} bytes",
            source.len()
        )));
    }
    if source.contains('\0') || name.contains('\0') {
        return Err(setup(format!("{name}: contains a NUL byte")));
    }
    Ok(())
}

fn existing(p: &Path, from: &str) -> Result<PathBuf, LoadError> {
    if p.is_file() {
        Ok(p.to_path_buf())
    } else {
        Err(setup(format!(
            "the Python runner named by {from} does not exist: {}",
            p.display()
        )))
    }
}

/// `caps` with a private `/tmp` for one run: a fresh folder, mounted
/// writable at `/tmp` and named "private to the run" in audit rules,
/// removed when the returned guard drops; `caps` as they are when they
/// mount `/tmp` or `/` themselves. (A kernel wall forbids removing the
/// folder from inside the run: the CLI makes it before the wall goes up
/// and has its helper remove it.)
pub fn private_tmp(
    caps: &crate::Capabilities,
) -> Result<(crate::Capabilities, Option<tempfile::TempDir>), crate::Error> {
    let taken = caps
        .mounts()
        .iter()
        .any(|m| matches!(m.guest.as_str(), "/" | "/tmp"));
    if taken {
        return Ok((caps.clone(), None));
    }
    let dir = tempfile::Builder::new()
        .prefix("sbx-tmp-")
        .tempdir()
        .map_err(|e| crate::Error::Setup(format!("cannot make the run's /tmp: {e}")))?;
    // A grant of the temp folder itself (or of a folder inside this one)
    // would reach every other run's private /tmp.
    crate::ProtectedPaths::new()
        .with(
            dir.path(),
            "the private /tmp of this run (made in the temp folder)",
        )
        .check(caps)?;
    let caps = caps
        .to_builder()?
        .private_write_mount(dir.path(), "/tmp")
        .build()?;
    Ok((caps, Some(dir)))
}
