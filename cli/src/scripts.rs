//! `sbx-wasm run script.py` and `run agent.ts`: a script runs in its
//! language's runner component (CPython built by componentize-py,
//! `host/runners/python`; StarlingMonkey built by componentize-js,
//! `host/runners/js`); the library's `ScriptRunner` finds the runner.
//!
//! The host reads the script (the user's input, not the guest's: a file, or
//! stdin for `-`) and hands it to the runner as `-c SOURCE NAME ARGS...`, so
//! the script need not sit in a mount; the guest still sees only what the
//! caps grant.

use anyhow::{Context, Result, bail};
use sbx_wasm::wasm::runner::{self, Language, MAX_SOURCE_BYTES, read_script};
use sbx_wasm::wasm::{DataPython, JavaScript, Python, ScriptRunner};
use std::path::{Path, PathBuf};

/// The languages `run` takes as scripts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lang {
    Python,
    JavaScript,
    /// Python in the data runner (numpy, pandas, matplotlib...): `--data`.
    Data,
}

impl Lang {
    /// The script's language by its name: `.py`; `.js`, `.mjs`, `.cjs`,
    /// `.ts`, `.mts`, `.cts`. Anything else is a component.
    pub(crate) fn of(path: &Path) -> Option<Lang> {
        match path.extension()?.to_str()? {
            "py" => Some(Lang::Python),
            "js" | "mjs" | "cjs" | "ts" | "mts" | "cts" => Some(Lang::JavaScript),
            _ => None,
        }
    }

    /// The library's facts about the language's runner, by name: so the
    /// command line and the MCP door never spell them a second time.
    fn facts(self) -> (&'static str, &'static str, &'static str, bool) {
        fn of<L: Language>() -> (&'static str, &'static str, &'static str, bool) {
            (L::NAME, L::PROGRAM, L::SNIPPET, L::PRIVATE_TMP)
        }
        match self {
            Lang::Python => of::<Python>(),
            Lang::JavaScript => of::<JavaScript>(),
            Lang::Data => of::<DataPython>(),
        }
    }

    /// The language's name, for people (`Python`, `JavaScript`).
    pub(crate) fn name(self) -> &'static str {
        self.facts().0
    }

    /// The guest's program name (`python`, `js`).
    pub(crate) fn program(self) -> &'static str {
        self.facts().1
    }

    /// The name a source string runs under (`snippet.py`, `snippet.ts`).
    pub(crate) fn snippet(self) -> &'static str {
        self.facts().2
    }

    /// Whether a run of it gets a private `/tmp`.
    pub(crate) fn private_tmp(self) -> bool {
        self.facts().3
    }

    /// The MCP door's tool that runs it.
    pub(crate) fn tool(self) -> &'static str {
        match self {
            Lang::Python | Lang::Data => "run_python",
            Lang::JavaScript => "run_javascript",
        }
    }

    /// Where the runner is: the flag, then what `ScriptRunner::locate` finds.
    pub(crate) fn find_runner(self, flag: Option<&Path>) -> Result<PathBuf> {
        self.runner(flag, false)
    }

    /// As [`Lang::find_runner`], but a runner found nowhere (no flag, no
    /// environment variable) is built from the sources compiled into this
    /// binary, into the user's cache, saying so first and how long it took
    /// after: an installed `sbx-wasm` runs scripts with no checkout.
    pub(crate) fn find_or_build_runner(self, flag: Option<&Path>) -> Result<PathBuf> {
        self.runner(flag, true)
    }

    fn runner(self, flag: Option<&Path>, build: bool) -> Result<PathBuf> {
        match self {
            Lang::Python => find::<Python>(flag, "--python-runner", build),
            Lang::JavaScript => find::<JavaScript>(flag, "--js-runner", build),
            Lang::Data => find::<DataPython>(flag, "$SBX_WASM_DATA_RUNNER", build),
        }
    }

    /// The name a script read from stdin (`-`) runs as: a TypeScript name
    /// for JavaScript, whose runner strips types from `.ts` only (plain
    /// JavaScript is TypeScript).
    fn stdin_name(self) -> &'static str {
        match self {
            Lang::Python | Lang::Data => "stdin.py",
            Lang::JavaScript => "stdin.ts",
        }
    }

    /// The runner's arguments for `script` (`-` for stdin) with `args`:
    /// `-c SOURCE NAME ARGS...` (the data runner's prelude first).
    pub(crate) fn runner_args(self, script: &Path, args: &[String]) -> Result<Vec<String>> {
        let (source, name) = if script == Path::new("-") {
            (read_stdin_script()?, self.stdin_name().to_string())
        } else {
            read_script(script)?
        };
        Ok(match self {
            Lang::Python => runner::args_for::<Python>(&source, &name, args)?,
            Lang::JavaScript => runner::args_for::<JavaScript>(&source, &name, args)?,
            Lang::Data => runner::args_for::<DataPython>(&source, &name, args)?,
        })
    }

    /// `caps` with the runner at `runner`'s own folders lent (the data
    /// runner's library and data; nothing for the others).
    pub(crate) fn with_runner_mounts(
        self,
        caps: &sbx_wasm::Capabilities,
        runner: &Path,
    ) -> Result<sbx_wasm::Capabilities> {
        Ok(match self {
            Lang::Data => runner::with_runner_mounts::<DataPython>(caps, runner)?,
            Lang::Python | Lang::JavaScript => caps.clone(),
        })
    }
}

fn find<L: Language>(flag: Option<&Path>, flag_name: &str, build: bool) -> Result<PathBuf> {
    if let Some(p) = flag
        && !p.is_file()
    {
        bail!(
            "the {} runner named by {flag_name} does not exist: {}",
            L::NAME,
            p.display()
        );
    }
    let found =
        ScriptRunner::<L>::locate(flag).map_err(|e| anyhow::anyhow!("{e}, or with {flag_name}"));
    if found.is_ok() || !build || flag.is_some() || std::env::var_os(L::RUNNER_ENV).is_some() {
        return found;
    }
    let started = std::time::Instant::now();
    eprintln!(
        "sbx-wasm: no {} runner yet; building it from the sources in this binary into the \
         user's cache (first use only, a few minutes; needs {})",
        L::NAME,
        L::BUILD_NEEDS,
    );
    let runner = sbx_wasm::wasm::runner_source::build::<L>()
        .map_err(|e| anyhow::anyhow!("{e}; or name a runner with {flag_name}"))?;
    eprintln!(
        "sbx-wasm: {} runner built in {:.0} s: {}",
        L::NAME,
        started.elapsed().as_secs_f64(),
        runner.display()
    );
    Ok(runner)
}

/// The script on stdin, whole, at most `MAX_SOURCE_BYTES`, UTF-8.
fn read_stdin_script() -> Result<String> {
    use std::io::Read;
    let mut buf = Vec::new();
    std::io::stdin()
        .take(MAX_SOURCE_BYTES as u64 + 1)
        .read_to_end(&mut buf)
        .context("cannot read the script from stdin")?;
    if buf.len() > MAX_SOURCE_BYTES {
        bail!("the script on stdin is over {MAX_SOURCE_BYTES} bytes");
    }
    String::from_utf8(buf).context("the script on stdin is not UTF-8 text")
}
