//! What several commands need: the caps file with its warnings printed,
//! the caps file's command tools, the engine and the artifact cache.

use anyhow::{Context, Result};
use sbx_wasm::tools::ToolRegistry;
use sbx_wasm::wasm::{ArtifactCache, WasmHost};
use sbx_wasm::{Capabilities, Clock, MonotonicClock, ProtectedPaths, Sandbox, Services, TickClock};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Load a caps file, printing its warnings (`dangerous_allow_all`, ...),
/// and refuse it if a mount overlaps a path of [`protected`].
pub(crate) fn load_caps(path: &Path) -> Result<Capabilities> {
    let caps = load_grant(path)?;
    refuse_protected(&caps, None)?;
    Ok(caps)
}

/// Load a caps file as it is, for the tools that only read grants
/// (`policy`): they report a protected overlap, they do not refuse it.
pub(crate) fn load_grant(path: &Path) -> Result<Capabilities> {
    let caps = Capabilities::from_file(path)?;
    warn_caps(&caps);
    Ok(caps)
}

/// What no grant of this command line may mount, read or write: this
/// binary, the artifact cache and its key where they are by default
/// (whether this run uses them or not: a later run will), the Python and
/// JavaScript runners found by default, the user's sbx-wasm folder (the
/// runners, their embedded sources unpacked, their build tools), and
/// `runner` when a run names another. The warm workers' sockets are in the
/// cache folder.
pub(crate) fn protected(runner: Option<&Path>) -> ProtectedPaths {
    // Found once per process: they do not change while it runs.
    static BASE: std::sync::OnceLock<ProtectedPaths> = std::sync::OnceLock::new();
    let mut p = BASE
        .get_or_init(|| {
            let mut p = ProtectedPaths::new();
            if let Ok(exe) = std::env::current_exe() {
                p.add(exe, "the sbx-wasm binary");
            }
            if let Some(dir) = ArtifactCache::default_dir() {
                p.add(
                    ArtifactCache::default_key_file(&dir),
                    "the artifact cache's key",
                );
                p.add(dir, "the artifact cache (and the warm workers' sockets)");
            }
            if let Ok(found) = sbx_wasm::wasm::PythonRunner::locate(None) {
                p.add(found, "the Python runner");
            }
            if let Ok(found) = sbx_wasm::wasm::JsRunner::locate(None) {
                p.add(found, "the JavaScript runner");
            }
            // A runner put there would be what later runs find, and the
            // runners' sources and build tools there run natively at a
            // first-use build.
            if let Some(dir) = sbx_wasm::wasm::runner_source::user_dir() {
                p.add(
                    dir,
                    "the user's sbx-wasm folder (runners, their sources and builds)",
                );
            }
            p
        })
        .clone();
    if let Some(r) = runner {
        p.add(r, "the script runner this run uses");
    }
    p
}

/// An error naming the first mount of `caps` over a path of [`protected`].
pub(crate) fn refuse_protected(caps: &Capabilities, runner: Option<&Path>) -> Result<()> {
    protected(runner)
        .check(caps)
        .map_err(|e| anyhow::anyhow!("{e}"))
}

/// Print what loading `caps` warned of.
pub(crate) fn warn_caps(caps: &Capabilities) {
    for w in caps.warnings() {
        eprintln!("sbx-wasm: warning: {w}");
    }
}

/// The caps file's command tools, registered to run in this process, with
/// what a model is told about each (its description and input schema).
pub(crate) fn registry(caps: &Capabilities) -> ToolRegistry {
    let mut tools = ToolRegistry::new();
    for (name, cmd) in caps.tool_commands() {
        let schema = cmd
            .input_schema
            .as_deref()
            .and_then(|s| serde_json::from_str(s).ok())
            .unwrap_or_else(|| serde_json::json!({ "type": "object" }));
        let description = cmd.description.clone().unwrap_or_default();
        tools.register_described(name.clone(), description, schema, cmd.clone());
    }
    tools
}

/// The wasm engine, with a message that says what failed. It keeps the
/// artifact cache in its default folder when that opened (the library
/// opens it as it makes a host); [`cached`] says why when it did not, and
/// a command that wants none drops it.
pub(crate) fn engine() -> Result<WasmHost> {
    WasmHost::new().map_err(|e| anyhow::anyhow!("cannot start the wasm engine: {e:#}"))
}

/// The engine for a run under `caps`: without fuel instrumentation for a
/// wall-only grant (`max_fuel = "off"`), metering otherwise; the cache as
/// [`engine`] keeps it.
pub(crate) fn engine_for(caps: &Capabilities) -> Result<WasmHost> {
    if caps.budget().meter_fuel {
        return engine();
    }
    WasmHost::new_unmetered().map_err(|e| anyhow::anyhow!("cannot start the wasm engine: {e:#}"))
}

/// `host` with the artifact cache in its default folder: the one it
/// opened when it was made (a second open would read the key again), else
/// opened now; when it cannot be, `host` without one and the reason.
pub(crate) fn cached(host: WasmHost) -> (WasmHost, Option<anyhow::Error>) {
    if host.cache().is_some() {
        return (host, None);
    }
    match open_cache() {
        Ok(cache) => (host.with_cache(cache), None),
        Err(e) => (host, Some(e)),
    }
}

/// [`cached`], for a command that cannot go on without the cache.
pub(crate) fn require_cache(host: WasmHost) -> Result<WasmHost> {
    match cached(host) {
        (host, None) => Ok(host),
        (_, Some(e)) => Err(e),
    }
}

/// The artifact cache in its default folder.
pub(crate) fn open_cache() -> Result<ArtifactCache> {
    let dir = ArtifactCache::default_dir()
        .context("no cache folder: set SBX_WASM_CACHE_DIR (or HOME / XDG_CACHE_HOME)")?;
    ArtifactCache::open(&dir).with_context(|| format!("cache folder {}", dir.display()))
}

/// A sandbox for `caps` with its command tools and `services`' other
/// backends (its key-value store: a session's, or a fresh one); a 1 ms
/// tick clock when `deterministic`; stopped by `cancel` when given.
pub(crate) fn sandbox(
    caps: Capabilities,
    services: Services,
    deterministic: bool,
    cancel: Option<sbx_wasm::CancelHandle>,
    labels: sbx_wasm::flow::Mark,
) -> Result<Sandbox> {
    let clock: Arc<dyn Clock> = if deterministic {
        Arc::new(TickClock::new(Duration::from_millis(1)))
    } else {
        Arc::new(MonotonicClock::new())
    };
    let services = services.tools(registry(&caps)).clock(clock);
    let mut b = Sandbox::builder(caps).services(services).labels(labels);
    if let Some(c) = cancel {
        b = b.cancel(c);
    }
    Ok(b.build()?)
}

/// A cancel switch thrown by the first SIGINT or SIGTERM, so an interrupted
/// run still ends with its report and audit log written (status
/// `cancelled`); a second signal ends the process at once (exit 130).
pub(crate) fn cancel_on_signals() -> Result<sbx_wasm::CancelHandle> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let cancel = sbx_wasm::CancelHandle::new();
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])
        .context("cannot watch for Ctrl-C")?;
    let switch = cancel.clone();
    std::thread::Builder::new()
        .name("sbx-signals".into())
        .spawn(move || {
            for _ in signals.forever() {
                if switch.is_cancelled() {
                    std::process::exit(crate::exit::EXIT_CANCELLED);
                }
                switch.cancel();
            }
        })
        .context("cannot watch for Ctrl-C")?;
    Ok(cancel)
}
