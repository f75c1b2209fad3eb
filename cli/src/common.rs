//! What several commands need: the caps file with its warnings printed,
//! the caps file's command tools, the engine and the artifact cache.

use anyhow::{Context, Result};
use sbx_wasm::tools::ToolRegistry;
use sbx_wasm::wasm::{ArtifactCache, WasmHost};
use sbx_wasm::{Capabilities, MonotonicClock, Sandbox, TickClock};
use std::path::Path;
use std::time::Duration;

/// Load a caps file, printing its warnings (`dangerous_allow_all`, ...).
pub(crate) fn load_caps(path: &Path) -> Result<Capabilities> {
    let caps = Capabilities::from_file(path)?;
    for w in caps.warnings() {
        eprintln!("sbx-wasm: warning: {w}");
    }
    Ok(caps)
}

/// The caps file's command tools, registered to run in this process.
pub(crate) fn registry(caps: &Capabilities) -> ToolRegistry {
    let mut tools = ToolRegistry::new();
    for (name, cmd) in caps.tool_commands() {
        tools.register(name.clone(), cmd.clone());
    }
    tools
}

/// The wasm engine, with a message that says what failed.
pub(crate) fn engine() -> Result<WasmHost> {
    WasmHost::new().map_err(|e| anyhow::anyhow!("cannot start the wasm engine: {e:#}"))
}

/// The artifact cache in its default folder.
pub(crate) fn open_cache() -> Result<ArtifactCache> {
    let dir = ArtifactCache::default_dir()
        .context("no cache folder: set SBX_WASM_CACHE_DIR (or HOME / XDG_CACHE_HOME)")?;
    ArtifactCache::open(&dir).with_context(|| format!("cache folder {}", dir.display()))
}

/// A sandbox for `caps` with its command tools; a 1 ms tick clock when
/// `deterministic`.
pub(crate) fn sandbox(caps: Capabilities, deterministic: bool) -> Result<Sandbox> {
    let tools = registry(&caps);
    let b = Sandbox::builder(caps).tools(tools);
    let b = if deterministic {
        b.clock(TickClock::new(Duration::from_millis(1)))
    } else {
        b.clock(MonotonicClock::new())
    };
    Ok(b.build()?)
}
