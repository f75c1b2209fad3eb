//! `sbx-wasm python build`: a Python runner with pure-Python packages
//! bundled, built by the project's runner build (componentize-py) and
//! cached by the requirements' hash. (`python serve` is `crate::serve`.)

use anyhow::{Context, Result, bail};
use sbx_wasm::wasm::runner::Language;
use sbx_wasm::wasm::{ArtifactCache, Python, runner_source};
use std::ffi::OsStr;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub(crate) struct PythonArgs {
    #[command(subcommand)]
    command: PythonCommand,
}

#[derive(clap::Subcommand, Debug)]
enum PythonCommand {
    /// Build a Python runner with the pure-Python packages of a
    /// requirements file bundled; prints the runner's path (for `run
    /// --python-runner`).
    Build(BuildArgs),
    /// Keep warm workers of a Python runner, which `sbx-wasm run
    /// SCRIPT.py` hands its runs to: each starts with the runner loaded
    /// and instantiated, runs one script under its caps, and ends.
    Serve(crate::serve::ServeArgs),
}

#[derive(clap::Args, Debug)]
struct BuildArgs {
    /// The packages, as a pip requirements file in which every package,
    /// dependencies too, is pinned by hash (`name==1.0
    /// --hash=sha256:...`); wheels only, and a wheel with native code is
    /// refused.
    #[arg(long, value_name = "FILE")]
    requirements: PathBuf,
    /// Where to write the runner (default: `python/runner-HASH.wasm` in
    /// the cache folder, HASH from the requirements file).
    #[arg(short = 'o', long = "out", value_name = "RUNNER.wasm")]
    out: Option<PathBuf>,
    /// The sbx-wasm source tree whose `host/runners/python/build.sh`
    /// builds it (default: the sources compiled into this binary, unpacked
    /// into the cache folder).
    #[arg(long, value_name = "DIR")]
    source: Option<PathBuf>,
}

impl PythonArgs {
    pub(crate) fn execute(&self) -> Result<i32> {
        match &self.command {
            PythonCommand::Build(args) => args.execute(),
            PythonCommand::Serve(args) => args.execute(),
        }
    }
}

impl BuildArgs {
    fn execute(&self) -> Result<i32> {
        let requirements = std::fs::read(&self.requirements)
            .with_context(|| format!("cannot read {}", self.requirements.display()))?;
        let source = match &self.source {
            Some(dir) => dir.clone(),
            None => runner_source::unpacked()?,
        };
        if !source.join(Python::BUILD_SCRIPT).is_file() {
            bail!(
                "{} not found: name the sbx-wasm source tree with --source",
                source.join(Python::BUILD_SCRIPT).display()
            );
        }
        let out = match &self.out {
            Some(out) => out.clone(),
            None => {
                let hash = sbx_wasm::replay::sha256_hex(&requirements);
                ArtifactCache::default_dir()
                    .context("no cache folder: set SBX_WASM_CACHE_DIR (or HOME / XDG_CACHE_HOME)")?
                    .join("python")
                    .join(format!("runner-{}.wasm", &hash[..16]))
            }
        };
        // The same build as a first use's, in the same build folder (one
        // componentize-py environment; never in the source tree), with the
        // packages and the output added.
        let args = [
            OsStr::new("--requirements"),
            self.requirements.as_os_str(),
            OsStr::new("-o"),
            out.as_os_str(),
        ];
        runner_source::run_build::<Python>(&source, &args)?;
        println!("{}", out.display());
        Ok(0)
    }
}
