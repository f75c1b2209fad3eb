//! `sbx-wasm python build`: a Python runner with pure-Python packages
//! bundled, built by the project's runner build (componentize-py) and
//! cached by the requirements' hash. (`python serve` is `crate::serve`.)

use anyhow::{Context, Result, bail};
use sbx_wasm::wasm::ArtifactCache;
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
            None => sbx_wasm::wasm::runner_source::unpacked()?,
        };
        let script = source.join("host/runners/python/build.sh");
        if !script.is_file() {
            bail!(
                "{} not found: name the sbx-wasm source tree with --source",
                script.display()
            );
        }
        let cache = ArtifactCache::default_dir()
            .context("no cache folder: set SBX_WASM_CACHE_DIR (or HOME / XDG_CACHE_HOME)")?
            .join("python");
        let out = match &self.out {
            Some(out) => out.clone(),
            None => {
                let hash = sbx_wasm::replay::sha256_hex(&requirements);
                cache.join(format!("runner-{}.wasm", &hash[..16]))
            }
        };
        let mut build = std::process::Command::new("bash");
        // The build's own folder (componentize-py's environment, the
        // staged packages) in the cache, never in the source tree, so a
        // read-only checkout builds too; unless the caller names one.
        if std::env::var_os("SBX_WASM_PY_BUILD_DIR").is_none() {
            build.env("SBX_WASM_PY_BUILD_DIR", cache.join("build"));
        }
        let status = build
            .arg(&script)
            .arg("--requirements")
            .arg(&self.requirements)
            .arg("-o")
            .arg(&out)
            .status()
            .context("cannot start bash for the runner build")?;
        if !status.success() {
            bail!("the runner build failed (its messages are above)");
        }
        println!("{}", out.display());
        Ok(0)
    }
}
