//! Engines and runners shared by every `Sandbox` of the process: a
//! sandbox is cheap to make, and its first run finds the runner compiled,
//! linked and an instance ready.

use crate::errors;
use pyo3::prelude::*;
use sbx_wasm::Capabilities;
use sbx_wasm::wasm::{
    JavaScript, JsRunner, Language, LoadError, PoolSizes, Python as Py3, PythonRunner,
    ScriptRunner, WasmHost, runner_source,
};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// Instance slots of each pooled engine: runs at once (admission lets
/// one per core run, the rest wait) plus one warm instance per runner.
const SLOTS: u32 = 16;

/// One engine per memory cap (a pooled engine's slots are sized by it),
/// each with the runners loaded on it.
struct Engine {
    host: WasmHost,
    python: Mutex<Loaded<PythonRunner>>,
    js: Mutex<Loaded<JsRunner>>,
}

/// The engines of this process. A child made by `fork` (Python's
/// `multiprocessing` on Linux) inherits them without their threads: the
/// epoch ticker that enforces `max_wall_ms` is not there, so a child makes
/// its own, and leaves the parent's alone (dropping them would remove
/// folders the parent still uses).
struct Engines {
    pid: u32,
    map: HashMap<u64, Arc<Engine>>,
}

fn engines() -> &'static Mutex<Engines> {
    static E: OnceLock<Mutex<Engines>> = OnceLock::new();
    E.get_or_init(|| {
        Mutex::new(Engines {
            pid: std::process::id(),
            map: HashMap::new(),
        })
    })
}

/// The engine for `caps`: pooled (slots reused run after run, the pages a
/// run wrote reset in place), metered (a grant with `max_fuel` runs on it
/// as one without), with the artifact cache in its default folder so the
/// 36 MB Python runner is compiled once per machine. If the pool cannot
/// be reserved the host falls back to allocating per run.
pub(crate) fn host(caps: &Capabilities) -> Result<WasmHost, LoadError> {
    Ok(engine(caps)?.host.clone())
}

fn engine(caps: &Capabilities) -> Result<Arc<Engine>, LoadError> {
    let key = caps.budget().max_memory_bytes;
    let mut engines = lock(engines());
    if engines.pid != std::process::id() {
        std::mem::forget(std::mem::take(&mut engines.map));
        engines.pid = std::process::id();
    }
    let map = &mut engines.map;
    if let Some(e) = map.get(&key) {
        return Ok(e.clone());
    }
    let host = WasmHost::with_pool(PoolSizes::for_caps(caps, SLOTS))
        .map_err(|e| setup(format!("cannot start the wasm engine: {e:#}")))?;
    let e = Arc::new(Engine {
        host,
        python: Mutex::new(HashMap::new()),
        js: Mutex::new(HashMap::new()),
    });
    map.insert(key, e.clone());
    Ok(e)
}

/// Runners by the path a sandbox asked for (`None`: wherever `locate`
/// finds one), so a run looks nothing up on disk once its runner is
/// loaded.
type Loaded<R> = HashMap<Option<PathBuf>, R>;

fn setup(message: String) -> LoadError {
    LoadError::Setup(sbx_wasm::Error::Setup(message))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The runner at `explicit` (or where `locate` finds one; built from the
/// library's own sources at first use on this machine, as `sbx-wasm run`
/// does), loaded once per engine with one instance kept ready: every
/// sandbox on the engine shares it, and each warm instance serves one run
/// only, so nothing of a run (nor of its grant) reaches the next.
fn runner<L: Language>(
    host: &WasmHost,
    loaded: &Mutex<Loaded<ScriptRunner<L>>>,
    explicit: Option<&Path>,
) -> Result<ScriptRunner<L>, LoadError> {
    let key = explicit.map(Path::to_path_buf);
    let mut map = lock(loaded);
    if let Some(r) = map.get(&key) {
        return Ok(r.clone());
    }
    // First use on this engine (a first use elsewhere waits for it).
    let path = match ScriptRunner::<L>::locate(explicit) {
        Ok(p) => p,
        Err(_) if explicit.is_none() => {
            eprintln!(
                "sbx-wasm: no {} runner on this machine yet; building it (once, tens of seconds)",
                L::NAME
            );
            runner_source::build::<L>()?
        }
        Err(e) => return Err(e),
    };
    let runner = ScriptRunner::<L>::load(host, &path)?.keep_warm(1)?;
    map.insert(key, runner.clone());
    Ok(runner)
}

pub(crate) fn python(
    caps: &Capabilities,
    explicit: Option<&Path>,
) -> Result<(WasmHost, PythonRunner), LoadError> {
    let e = engine(caps)?;
    Ok((e.host.clone(), runner(&e.host, &e.python, explicit)?))
}

pub(crate) fn javascript(
    caps: &Capabilities,
    explicit: Option<&Path>,
) -> Result<(WasmHost, JsRunner), LoadError> {
    let e = engine(caps)?;
    Ok((e.host.clone(), runner(&e.host, &e.js, explicit)?))
}

/// Build a runner (`"python"` or `"javascript"`) from the sources the
/// library carries into the user's runner folder, and return its path.
#[pyfunction]
pub(crate) fn build_runner(py: Python<'_>, language: &str) -> PyResult<String> {
    let built = match language {
        "python" => py.detach(runner_source::build::<Py3>),
        "javascript" | "js" => py.detach(runner_source::build::<JavaScript>),
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "no runner for {other:?} (accepted: \"python\", \"javascript\")"
            )));
        }
    };
    built.map(|p| p.display().to_string()).map_err(errors::load)
}

/// The engine's facts as JSON (allocator, page reset, fuel, cache
/// folder), for the engine a default grant runs on.
#[pyfunction]
pub(crate) fn diagnostics(py: Python<'_>) -> PyResult<String> {
    let caps = Capabilities::builder().build().map_err(errors::caps)?;
    let host = py.detach(|| host(&caps)).map_err(errors::load)?;
    serde_json::to_string(&host.diagnostics()).map_err(|e| errors::SbxError::new_err(e.to_string()))
}
