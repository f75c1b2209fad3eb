//! Loading: read and compile a component (through the artifact cache when
//! there is one), with errors that say what the file is, and link it once
//! for many runs.

use super::{CacheOutcome, PreparedAgent, WasmHost};
use std::path::Path;
use wasmtime::component::Component;

/// Why a component could not be run at all (before any guest code ran).
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// Not WebAssembly, or a core module rather than a component.
    #[error("{path}: {why}")]
    NotAComponent {
        /// The file.
        path: String,
        /// What it is instead.
        why: String,
    },
    /// wasmtime rejected it (invalid, or imports the sandbox does not
    /// provide: the message names them).
    #[error("{path}: {message}")]
    Rejected {
        /// The file.
        path: String,
        /// wasmtime's message.
        message: String,
    },
    /// The host has no room for another run now: the pooling allocator's
    /// limit of concurrent sandboxes (instances, memories, stacks) is
    /// reached. Not the guest's doing; retry when a run ends, or size the
    /// pool for more ([`PoolSizes`](super::PoolSizes)).
    #[error("no room for another run: {message}")]
    Capacity {
        /// wasmtime's message, naming the limit.
        message: String,
    },
    /// The grant's mounts could not be opened.
    #[error(transparent)]
    Setup(#[from] crate::Error),
}

/// The largest component accepted, in bytes: 512 MiB (the Python runner
/// with data-science packages is well under it). A larger file is refused
/// before it is read. Size alone does not bound what compiling costs (a
/// few hundred KiB of branches in one function can take gigabytes): bound
/// the compiling process too, as the command line does in a child.
pub const MAX_COMPONENT_BYTES: u64 = 512 << 20;

impl WasmHost {
    /// Read and compile a component, with errors that say what the file is.
    pub fn load(&self, path: &Path) -> Result<Component, LoadError> {
        self.load_traced(path).map(|(c, _)| c)
    }

    /// Compile a component from bytes; `name` appears in errors.
    pub fn load_bytes(&self, bytes: &[u8], name: &str) -> Result<Component, LoadError> {
        self.load_bytes_traced(bytes, name).map(|(c, _)| c)
    }

    /// Like [`WasmHost::load`], and says whether the cache served it
    /// (`None` without a cache).
    pub fn load_traced(&self, path: &Path) -> Result<(Component, Option<CacheOutcome>), LoadError> {
        let shown = path.display().to_string();
        if let Some(component) = self.load_cached(path) {
            self.check_imports(&component, &shown)?;
            return Ok((component, Some(CacheOutcome::Hit)));
        }
        let read = |source| LoadError::Read {
            path: shown.clone(),
            source,
        };
        let len = std::fs::metadata(path).map_err(read)?.len();
        if len > MAX_COMPONENT_BYTES {
            return Err(too_large(&shown, len));
        }
        let bytes = std::fs::read(path).map_err(read)?;
        self.load_bytes_from(&bytes, &shown, Some(path))
    }

    /// The component compiled before from the file at `path`, from the
    /// artifact cache: `None` without a cache, or when the cache has not
    /// seen the file as it is now. Nothing is compiled or read whole.
    pub fn load_cached(&self, path: &Path) -> Option<Component> {
        let cache = self.cache.as_deref()?;
        if let Some(c) = cache.get_by_file(&self.shared.engine, path) {
            return Some(c);
        }
        // Seen before, and not compiled for the 0.2 engine: a WASI 0.3
        // component's entry is keyed by the 0.3 engine (made now if need be).
        cache.entry_for_file(&self.shared.engine, path)?;
        cache.get_by_file(&self.wasi03().ok()?.engine, path)
    }

    /// Like [`WasmHost::load_bytes`], and says whether the cache served it
    /// (`None` without a cache).
    pub fn load_bytes_traced(
        &self,
        bytes: &[u8],
        name: &str,
    ) -> Result<(Component, Option<CacheOutcome>), LoadError> {
        self.load_bytes_from(bytes, name, None)
    }

    /// `bytes`, read from the file `source` when there is one (the cache
    /// then remembers the file, so its next load need not read it).
    fn load_bytes_from(
        &self,
        bytes: &[u8],
        name: &str,
        source: Option<&Path>,
    ) -> Result<(Component, Option<CacheOutcome>), LoadError> {
        let not = |why: &str| LoadError::NotAComponent {
            path: name.to_string(),
            why: why.to_string(),
        };
        if bytes.len() as u64 > MAX_COMPONENT_BYTES {
            return Err(too_large(name, bytes.len() as u64));
        }
        if bytes.len() < 8 || &bytes[..4] != b"\0asm" {
            return Err(not("not a WebAssembly file"));
        }
        if bytes[4..8] == [1, 0, 0, 0] {
            return Err(not(
                "a core WebAssembly module, not a component; build for wasm32-wasip2 \
                 (or wrap it with `wasm-tools component new`)",
            ));
        }
        // Before compiling (which can take a while for a large component):
        // an import no host of ours provides is refused now, by name.
        let scan = scan_imports(std::io::Cursor::new(bytes)).unwrap_or_default();
        refuse(scan.unprovided, name)?;
        let rejected = |e: wasmtime::Error| LoadError::Rejected {
            path: name.to_string(),
            message: explain(format!("{e:#}")),
        };
        let compiled = match scan.wasi03 {
            true => self.compile(&self.wasi03()?.engine, bytes, source),
            // A 0.3 component that imports no 0.3 interface (it may export
            // only 0.3's `run`) is known by the 0.2 engine's validator.
            false => match self.compile(&self.shared.engine, bytes, source) {
                Err(e) if needs_async(&e) => self.compile(&self.wasi03()?.engine, bytes, source),
                other => other,
            },
        };
        let (component, outcome) = compiled.map_err(rejected)?;
        self.check_imports(&component, name)?;
        Ok((component, outcome))
    }

    /// `bytes` compiled on `engine`, through the cache when there is one.
    fn compile(
        &self,
        engine: &wasmtime::Engine,
        bytes: &[u8],
        source: Option<&Path>,
    ) -> wasmtime::Result<(Component, Option<CacheOutcome>)> {
        Ok(match (&self.cache, source) {
            (Some(cache), Some(file)) => {
                let (c, o) = cache.get_or_compile_file(engine, bytes, file)?;
                (c, Some(o))
            }
            (Some(cache), None) => {
                let (c, o) = cache.get_or_compile(engine, bytes)?;
                (c, Some(o))
            }
            (None, _) => (Component::new(engine, bytes)?, None),
        })
    }

    /// Link `component` once for many runs (see [`PreparedAgent`]).
    pub fn prepare(&self, component: &Component) -> Result<PreparedAgent, LoadError> {
        self.prepare_named(component, "component")
    }

    /// Whether everything `component` imports is something this host
    /// provides (a command, a service or any other component: what it
    /// exports is checked when it is prepared as one).
    fn check_imports(&self, component: &Component, name: &str) -> Result<(), LoadError> {
        self.linked(component, name).map(drop)
    }

    /// `component` linked against this host's imports, or why it cannot be.
    pub(super) fn linked(
        &self,
        component: &Component,
        name: &str,
    ) -> Result<wasmtime::component::InstancePre<super::HostState>, LoadError> {
        self.engine_of(component)
            .1
            .instantiate_pre(component)
            .map_err(|e| LoadError::Rejected {
                path: name.to_string(),
                message: explain(format!("needs imports the sandbox does not provide: {e:#}")),
            })
    }

    fn prepare_named(&self, component: &Component, name: &str) -> Result<PreparedAgent, LoadError> {
        let pre = self.linked(component, name)?;
        let engine = self.engine_of(component).0;
        let wasi03 = !wasmtime::Engine::same(engine, &self.shared.engine);
        let pre = super::wasi03::Entry::new(pre, wasi03, name)?;
        Ok(PreparedAgent {
            pre,
            engine: engine.clone(),
            fuel: self.shared.fuel,
            warm: None,
            retiring: self.shared.retiring.clone(),
        })
    }
}

fn too_large(path: &str, len: u64) -> LoadError {
    LoadError::NotAComponent {
        path: path.to_string(),
        why: format!("{len} bytes is over the {MAX_COMPONENT_BYTES}-byte limit on components"),
    }
}

/// Interfaces some host of ours provides (WASI 0.2's, wasi:http's client
/// side, `sbx:agent`'s), by the part of their name before the version.
/// Only a family outside these is refused before compiling; whether the
/// exact interface and version are linked is the linker's to say after.
const PROVIDED: &[&str] = &[
    "wasi:cli/",
    "wasi:io/",
    "wasi:clocks/",
    "wasi:random/",
    "wasi:filesystem/",
    "wasi:sockets/",
    "wasi:http/types",
    "wasi:http/outgoing-handler",
    "sbx:agent/",
];

/// The WASI 0.3 families linked for 0.3 guests (`wasi03.rs`).
const PROVIDED_03: &[&str] = &[
    "wasi:cli/",
    "wasi:clocks/",
    "wasi:random/",
    "wasi:filesystem/",
    "wasi:sockets/",
    "wasi:http/types",
    "wasi:http/client",
];

/// The first import of a component (its top level, not those of the
/// modules and components inside it) that no host of ours provides: an
/// interface outside [`PROVIDED`], or a WASI interface of a version other
/// than 0.2. `None` when all may be, or when the bytes are not a component
/// this can read (the compiler then says why).
///
/// Reads section by section and seeks past all but import sections, so a
/// caller can check a file without holding it (the CLI does, before it
/// starts the process that compiles it).
pub fn unsupported_import(
    file: impl std::io::Read + std::io::Seek,
) -> std::io::Result<Option<String>> {
    scan_imports(file).map(|s| s.unprovided)
}

/// What a component's top-level import list says before it is compiled.
#[derive(Default)]
struct Scan {
    /// The first import no host of ours provides.
    unprovided: Option<String>,
    /// Whether it imports a WASI 0.3 interface (it then compiles on the
    /// 0.3 engine).
    wasi03: bool,
}

/// [`unsupported_import`]'s reading, and whether any import is WASI 0.3's.
fn scan_imports(mut file: impl std::io::Read + std::io::Seek) -> std::io::Result<Scan> {
    let mut scan = Scan::default();
    use std::io::SeekFrom;
    /// An import section this long is no component of ours to read.
    const MAX_IMPORT_SECTION: u64 = 16 << 20;
    let mut header = [0u8; 8];
    if file.read_exact(&mut header).is_err() || &header[..4] != b"\0asm" {
        return Ok(scan);
    }
    let mut offset = 8usize;
    loop {
        let mut id = [0u8; 1];
        match file.read(&mut id)? {
            0 => return Ok(scan),
            _ => offset += 1,
        }
        // The section's size: an unsigned LEB128 of at most 5 bytes.
        let mut size = 0u64;
        for shift in (0..35).step_by(7) {
            let mut b = [0u8; 1];
            if file.read(&mut b)? == 0 {
                return Ok(scan);
            }
            offset += 1;
            size |= u64::from(b[0] & 0x7f) << shift;
            if b[0] & 0x80 == 0 {
                break;
            }
        }
        // Section 10 is the component's import section; everything else
        // (core modules, nested components included) is passed over.
        if id[0] != 10 {
            file.seek(SeekFrom::Current(i64::try_from(size).unwrap_or(i64::MAX)))?;
            offset += usize::try_from(size).unwrap_or(usize::MAX);
            continue;
        }
        if size > MAX_IMPORT_SECTION {
            return Ok(scan);
        }
        let mut payload = vec![0u8; size as usize];
        file.read_exact(&mut payload)?;
        let reader = wasmparser::BinaryReader::new(&payload, offset as u64);
        offset += payload.len();
        let Ok(imports) = wasmparser::ComponentImportSectionReader::new(reader) else {
            return Ok(scan);
        };
        for import in imports {
            let Ok(import) = import else { return Ok(scan) };
            scan.wasi03 |= is_wasi03(&import.name);
            if let Some(name) = unprovided(&import.name) {
                scan.unprovided = Some(name);
                return Ok(scan);
            }
        }
    }
}

/// [`unsupported_import`] as the load error `name` gets (a WASI 0.3 import
/// said as such): what a caller holding only the file checks before it
/// compiles it.
pub fn refuse_unsupported_imports(
    file: impl std::io::Read + std::io::Seek,
    name: &str,
) -> Result<(), LoadError> {
    refuse(unsupported_import(file).ok().flatten(), name)
}

fn refuse(unprovided: Option<String>, name: &str) -> Result<(), LoadError> {
    match unprovided {
        Some(import) => Err(LoadError::Rejected {
            path: name.to_string(),
            message: explain(format!(
                "needs an import the sandbox does not provide: {} (refused before compiling)",
                crate::bound::quote(&import)
            )),
        }),
        _ => Ok(()),
    }
}

/// Whether an import is a WASI 0.3 interface.
fn is_wasi03(extern_name: &wasmparser::ComponentExternName<'_>) -> bool {
    let name = extern_name.name;
    let version = match name.split_once('@') {
        Some((_, v)) => v,
        None => extern_name
            .version_suffix
            .unwrap_or("")
            .trim_start_matches('@'),
    };
    name.starts_with("wasi:") && version.starts_with("0.3.")
}

/// Whether wasmtime refused a component for the async component model
/// (a WASI 0.3 component) on an engine without it.
fn needs_async(e: &wasmtime::Error) -> bool {
    let message = format!("{e:#}");
    message.contains("component model async")
        || message.contains("component-model-async")
        || message.contains("exception handling")
}

/// An import's name if no host of ours provides it.
fn unprovided(extern_name: &wasmparser::ComponentExternName<'_>) -> Option<String> {
    let name = extern_name.name;
    let (family, version) = match name.split_once('@') {
        Some((family, version)) => (family, version),
        None => (name, extern_name.version_suffix.unwrap_or("")),
    };
    let version = version.trim_start_matches('@');
    let provided = |list: &[&str]| {
        list.iter()
            .any(|p| family.starts_with(p) && (p.ends_with('/') || family == *p))
    };
    // No version to read: the linker decides.
    let ok = match version {
        _ if !family.starts_with("wasi:") => provided(PROVIDED),
        "" => provided(PROVIDED),
        v if v.starts_with("0.2.") => provided(PROVIDED),
        v if v.starts_with("0.3.") => provided(PROVIDED_03),
        _ => false,
    };
    if ok {
        return None;
    }
    Some(match version {
        "" => name.to_string(),
        _ if name.contains('@') => name.to_string(),
        v => format!("{family}@{v}"),
    })
}

/// wasmtime's message, with what of WASI 0.3 the host links for a 0.3
/// import it does not.
fn explain(message: String) -> String {
    match message.contains("@0.3.") {
        true => format!(
            "{message}; of WASI 0.3 this host links cli, clocks, random, filesystem \
             (through the gate) and the clients of http and sockets (through the egress \
             rules)"
        ),
        false => message,
    }
}
