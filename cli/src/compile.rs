//! Compiling a component the host has not compiled before, bounded in
//! time and memory: in a child process of this binary (`sbx-wasm
//! __compile`) that sets its own address-space and CPU limits before it
//! reads the component, and that the parent kills at the wall bound.
//!
//! Why a child: Cranelift's time and memory grow faster than the input for
//! some shapes of code (a 293 KiB component of 20,000 if/else blocks in one
//! function took 2.4 GiB and 21 s), and no budget of the run applies yet,
//! since the guest has not started. In the child the compile either ends
//! within the bounds, its artifact stored in the cache for the parent to
//! load, or is stopped there and the parent says so; the parent's own
//! memory never holds it. A component found in the cache is loaded at once
//! with no child.

use crate::common::{engine, require_cache};
use anyhow::{Context, Result, bail};
use sbx_wasm::wasm::{CacheOutcome, PreparedAgent, WasmHost};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The argument that starts the compiling child.
pub(crate) const COMPILE_ARG: &str = "__compile";

use sbx_wasm::wasm::MAX_COMPONENT_BYTES;

/// The default wall bound on a compile (the Python runner takes about 9 s).
const DEFAULT_MAX_COMPILE_MS: u64 = 120_000;
/// The default address-space bound on a compile (the Python runner fits in
/// 1 GiB).
const DEFAULT_MAX_COMPILE_MEMORY_BYTES: u64 = 2 << 30;

/// The bounds on compiling a component.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct CompileBounds {
    /// Stop compiling a component not yet in the cache after this many
    /// milliseconds (wall time).
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_MAX_COMPILE_MS)]
    pub(crate) max_compile_ms: u64,
    /// Stop compiling a component not yet in the cache when the compiler's
    /// address space passes this many bytes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_COMPILE_MEMORY_BYTES)]
    pub(crate) max_compile_memory_bytes: u64,
}

impl CompileBounds {
    /// The bounds for a script's runner: these, raised for the data
    /// runner (95 MiB of CPython and its packages: about 2 minutes and
    /// 2.1 GiB on a 2-core machine) to at least 20 minutes and 8 GiB. A
    /// runner is this project's build, not a guest's component.
    pub(crate) fn for_runner(&self, lang: crate::scripts::Lang) -> CompileBounds {
        match lang {
            crate::scripts::Lang::Data => CompileBounds {
                max_compile_ms: self.max_compile_ms.max(20 * 60_000),
                max_compile_memory_bytes: self.max_compile_memory_bytes.max(8 << 30),
            },
            _ => self.clone(),
        }
    }
}

impl Default for CompileBounds {
    fn default() -> Self {
        CompileBounds {
            max_compile_ms: DEFAULT_MAX_COMPILE_MS,
            max_compile_memory_bytes: DEFAULT_MAX_COMPILE_MEMORY_BYTES,
        }
    }
}

impl CompileBounds {
    fn said(&self) -> String {
        format!(
            "--max-compile-ms {}, --max-compile-memory-bytes {} ({} MiB)",
            self.max_compile_ms,
            self.max_compile_memory_bytes,
            self.max_compile_memory_bytes >> 20
        )
    }
}

/// The component at `path` for `host`, prepared: from the cache when it
/// is there, else compiled first in a bounded child (see the module's
/// comment), saying so on stderr when that takes a while if `progress`.
pub(crate) fn load_bounded(
    host: &WasmHost,
    path: &Path,
    bounds: &CompileBounds,
    progress: bool,
) -> Result<(PreparedAgent, Option<CacheOutcome>)> {
    if let Some(c) = host.load_cached(path) {
        return Ok((host.prepare(&c)?, Some(CacheOutcome::Hit)));
    }
    // Only a compile is slow enough for a progress line: a cache hit starts
    // no thread to wait for one.
    if progress {
        crate::progress::while_loading(path, || compile_bounded(host, path, bounds))
    } else {
        compile_bounded(host, path, bounds)
    }
}

/// `load_bounded` past the cache: compile in the bounded child, then load.
fn compile_bounded(
    host: &WasmHost,
    path: &Path,
    bounds: &CompileBounds,
) -> Result<(PreparedAgent, Option<CacheOutcome>)> {
    let len = std::fs::metadata(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .len();
    if len > MAX_COMPONENT_BYTES {
        bail!(
            "{}: {len} bytes is over the {MAX_COMPONENT_BYTES}-byte limit on components",
            path.display()
        );
    }
    // An import no host provides is refused here, from the import list
    // alone (read section by section, the file never held whole), before
    // any compiler process starts.
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    sbx_wasm::wasm::refuse_unsupported_imports(
        std::io::BufReader::new(file),
        &path.display().to_string(),
    )?;
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.arg(COMPILE_ARG)
        .arg(bounds.max_compile_ms.to_string())
        .arg(bounds.max_compile_memory_bytes.to_string())
        .arg(if host.meters_fuel() {
            "metered"
        } else {
            "unmetered"
        })
        .arg(if host.cache().is_some() {
            "cache"
        } else {
            "memory"
        })
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().context("cannot start the compiler process")?;
    let mut stderr = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(
            &mut std::io::Read::take(&mut stderr, 64 << 10),
            &mut text,
        );
        text
    });
    let deadline = Instant::now() + Duration::from_millis(bounds.max_compile_ms);
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let said = reader.join().unwrap_or_default();
    let said = said.trim();
    let compiled = match status.as_ref().and_then(|s| s.code()) {
        Some(HIT) => CacheOutcome::Hit,
        Some(REBUILT) => CacheOutcome::Rebuilt,
        _ => CacheOutcome::Miss,
    };
    match status {
        None => bail!(
            "{}: compiling it passed its time bound ({}); raise the bounds only for a component you trust",
            path.display(),
            bounds.said()
        ),
        Some(s) if s.success() || matches!(s.code(), Some(HIT | REBUILT)) => {}
        // The child's own refusal: the component is invalid, or not one.
        Some(s) if s.code() == Some(2) => bail!("{said}"),
        Some(_) => bail!(
            "{}: compiling it passed its memory or time bound ({}){}",
            path.display(),
            bounds.said(),
            match said.lines().last() {
                Some(l) => format!(": {}", sbx_wasm::bound::printable(l)),
                None => String::new(),
            }
        ),
    }
    // Compiled within the bounds (and stored, with a cache): load it here,
    // compiling again only without a cache (the same cost, now known).
    let (c, outcome) = host.load_traced(path)?;
    Ok((host.prepare(&c)?, outcome.map(|_| compiled)))
}

/// The child's exit codes for how it found the cache: compiled and stored
/// (0), an entry there already (`HIT`), a bad entry replaced (`REBUILT`).
const HIT: i32 = 10;
const REBUILT: i32 = 11;

/// The child: `__compile MS BYTES metered|unmetered cache|memory PATH`.
/// Sets its own limits, then compiles (storing into the cache when asked).
/// Exits 0, `HIT` or `REBUILT` when compiled, 2 with the message when the
/// component is refused; running out of the bounds ends it otherwise.
pub(crate) fn child_main(args: &[std::ffi::OsString]) -> i32 {
    let text = |i: usize| args.get(i).and_then(|a| a.to_str()).unwrap_or("");
    let (Ok(ms), Ok(bytes)) = (text(0).parse::<u64>(), text(1).parse::<u64>()) else {
        return 70;
    };
    use rustix::process::{Resource, Rlimit, setrlimit};
    let cpu_s = (ms.div_ceil(1000)).saturating_mul(2).max(1);
    let limits = [
        (Resource::As, bytes),
        (Resource::Cpu, cpu_s),
        (Resource::Core, 0),
    ];
    for (resource, n) in limits {
        let lim = Rlimit {
            current: Some(n),
            maximum: Some(n),
        };
        if setrlimit(resource, lim).is_err() {
            eprintln!("sbx-wasm: cannot bound the compiler process");
            return 70;
        }
    }
    let Some(path) = args.get(4).map(Path::new) else {
        return 70;
    };
    let host = match text(2) {
        "unmetered" => WasmHost::new_unmetered().map_err(|e| anyhow::anyhow!("{e:#}")),
        _ => engine(),
    };
    let host = match (host, text(3)) {
        (Ok(h), "cache") => require_cache(h),
        (h, _) => h.map(WasmHost::without_cache),
    };
    let result = host.and_then(|h| h.load_traced(path).map_err(anyhow::Error::from));
    match result {
        Ok((_, Some(CacheOutcome::Hit))) => HIT,
        Ok((_, Some(CacheOutcome::Rebuilt))) => REBUILT,
        Ok(_) => 0,
        Err(e) => {
            eprintln!("{}", crate::exit::describe(&e));
            2
        }
    }
}
