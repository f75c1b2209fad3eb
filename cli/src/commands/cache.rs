//! `sbx-wasm compile` (fill the artifact cache) and `sbx-wasm cache
//! ls|clear|dir` (inspect or empty it).

use crate::common::{engine, engine_for, load_caps, open_cache, require_cache};
use crate::progress;
use anyhow::Result;
use sbx_wasm::wasm::{CacheOutcome, WasmHost};
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub(crate) struct CompileArgs {
    /// The component.
    #[arg(value_name = "AGENT.wasm")]
    component: PathBuf,
    /// Compile for the engine `run` picks for this caps file (a wall-only
    /// grant, `max_fuel = "off"`, runs code compiled without fuel
    /// metering); default: the fuel-metering engine.
    #[arg(long, value_name = "FILE")]
    caps: Option<PathBuf>,
}

impl CompileArgs {
    pub(crate) fn execute(&self) -> Result<i32> {
        let host = match &self.caps {
            Some(path) => engine_for(&load_caps(path)?)?,
            None => engine()?,
        };
        compile(host, &self.component)
    }
}

#[derive(clap::Args, Debug)]
pub(crate) struct CacheArgs {
    #[command(subcommand)]
    action: CacheAction,
}

#[derive(clap::Subcommand, Debug)]
enum CacheAction {
    /// List cached artifacts (and temp files being written).
    Ls,
    /// Remove every cached artifact.
    Clear,
    /// Print the cache folder.
    Dir,
}

impl CacheArgs {
    pub(crate) fn execute(&self) -> Result<i32> {
        cache(&self.action)
    }
}

/// `sbx-wasm compile`: fill the cache for one component.
fn compile(host: WasmHost, component: &Path) -> Result<i32> {
    let host = require_cache(host)?;
    let started = std::time::Instant::now();
    let (_, outcome) = progress::while_loading(component, || host.load_traced(component))?;
    let what = match outcome {
        Some(CacheOutcome::Hit) => "already cached",
        Some(CacheOutcome::Rebuilt) => "recompiled (bad entry replaced)",
        _ => "compiled",
    };
    println!(
        "{}: {what} in {} ms -> {}",
        component.display(),
        started.elapsed().as_millis(),
        host.cache()
            .and_then(|c| c.entry_for_file(host.engine(), component))
            .unwrap_or_default()
            .display()
    );
    Ok(0)
}

/// `sbx-wasm cache ls|clear|dir`.
fn cache(action: &CacheAction) -> Result<i32> {
    let cache = open_cache()?;
    match action {
        CacheAction::Ls => {
            cache.remove_stale();
            for e in cache.list()? {
                let partial = if e.partial {
                    "  (partial: being written, or left by a writer that died)"
                } else {
                    ""
                };
                println!("{:>12}  {}{partial}", e.bytes, e.name);
            }
        }
        CacheAction::Clear => println!("removed {} cached artifacts", cache.clear()?),
        CacheAction::Dir => println!("{}", cache.dir().display()),
    }
    Ok(0)
}
