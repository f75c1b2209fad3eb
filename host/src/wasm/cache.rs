//! Compiled-artifact cache: compile a component once, load the machine code
//! on every later run.
//!
//! An entry is named by the SHA-256 of the component and a hash of the
//! engine's compatibility settings (wasmtime version, target, compiler
//! flags), so a different component or engine never matches. Entries are
//! written to a temp file and renamed (concurrent writers cannot leave half a
//! file) and carry the SHA-256 of their payload, checked before wasmtime sees
//! it; wasmtime then checks its own header. A corrupt or foreign entry is
//! discarded and rebuilt, never loaded.
//!
//! Loading machine code is `unsafe` in wasmtime: the artifact is trusted like
//! the host binary. The cache therefore lives in a folder only this user may
//! write (created `0700`; a folder or entry others can write is refused).

use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use wasmtime::Engine;
use wasmtime::component::Component;

const MAGIC: &[u8; 8] = b"SBXCWASM";
const SUFFIX: &str = ".cwasm";

/// How a component was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Loaded from the cache: no compile.
    Hit,
    /// Not cached yet: compiled and stored.
    Miss,
    /// The entry was corrupt or foreign: discarded, compiled and stored.
    Rebuilt,
}

/// One cached artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheEntry {
    /// File name.
    pub name: String,
    /// Size in bytes.
    pub bytes: u64,
}

/// A folder of compiled artifacts.
#[derive(Debug)]
pub struct ArtifactCache {
    dir: PathBuf,
    compiles: AtomicU64,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn refuse(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, msg)
}

impl ArtifactCache {
    /// `$SBX_WASM_CACHE_DIR`, else `$XDG_CACHE_HOME/sbx-wasm`, else
    /// `$HOME/.cache/sbx-wasm`.
    pub fn default_dir() -> Option<PathBuf> {
        let env = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        env("SBX_WASM_CACHE_DIR")
            .or_else(|| env("XDG_CACHE_HOME").map(|d| d.join("sbx-wasm")))
            .or_else(|| env("HOME").map(|h| h.join(".cache").join("sbx-wasm")))
    }

    /// Open (creating it `0700` if needed) the cache folder `dir`. A folder
    /// that others may write, or that another user owns, is refused.
    pub fn open(dir: impl Into<PathBuf>) -> io::Result<Self> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir)?;
        let md = std::fs::metadata(&dir)?;
        if md.permissions().mode() & 0o077 != 0 {
            // Best effort: a folder of someone else's is refused below.
            let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
        }
        let md = std::fs::metadata(&dir)?;
        if md.permissions().mode() & 0o022 != 0 {
            return Err(refuse(format!(
                "cache folder {} is writable by others",
                dir.display()
            )));
        }
        // Compare the folder's owner with the owner of a file we create now.
        let probe = dir.join(format!(".owner-{}", std::process::id()));
        std::fs::write(&probe, b"")?;
        let me = std::fs::metadata(&probe).map(|m| m.uid());
        let _ = std::fs::remove_file(&probe);
        if me? != md.uid() {
            return Err(refuse(format!(
                "cache folder {} belongs to another user",
                dir.display()
            )));
        }
        Ok(ArtifactCache {
            dir,
            compiles: AtomicU64::new(0),
        })
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// How many compiles this cache has done since it was opened.
    pub fn compiles(&self) -> u64 {
        self.compiles.load(Ordering::SeqCst)
    }

    /// The entry name for `bytes` under `engine`'s settings.
    pub fn key(engine: &Engine, bytes: &[u8]) -> String {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut h);
        format!(
            "{}-{:016x}{SUFFIX}",
            hex(&Sha256::digest(bytes)),
            h.finish()
        )
    }

    /// The compiled component for `bytes`: from the cache when a valid entry
    /// exists, else compiled and stored.
    pub fn get_or_compile(
        &self,
        engine: &Engine,
        bytes: &[u8],
    ) -> wasmtime::Result<(Component, CacheOutcome)> {
        let path = self.dir.join(Self::key(engine, bytes));
        let mut outcome = CacheOutcome::Miss;
        if let Ok(stored) = std::fs::read(&path) {
            match self.load(engine, &path, &stored) {
                Some(c) => return Ok((c, CacheOutcome::Hit)),
                None => {
                    let _ = std::fs::remove_file(&path);
                    outcome = CacheOutcome::Rebuilt;
                }
            }
        }
        self.compiles.fetch_add(1, Ordering::SeqCst);
        let payload = engine.precompile_component(bytes)?;
        let component = self.deserialize(engine, &payload)?;
        // Storing is best effort: a full disk must not fail the run.
        let _ = self.store(&path, &payload);
        Ok((component, outcome))
    }

    fn load(&self, engine: &Engine, path: &Path, stored: &[u8]) -> Option<Component> {
        let md = std::fs::metadata(path).ok()?;
        if md.permissions().mode() & 0o022 != 0 {
            return None;
        }
        let body = stored.strip_prefix(MAGIC.as_slice())?;
        if body.len() < 32 {
            return None;
        }
        let (sum, payload) = body.split_at(32);
        if Sha256::digest(payload).as_slice() != sum {
            return None;
        }
        self.deserialize(engine, payload).ok()
    }

    #[allow(unsafe_code)]
    fn deserialize(&self, engine: &Engine, payload: &[u8]) -> wasmtime::Result<Component> {
        // SAFETY: `payload` is either what `precompile_component` just
        // produced in this process, or an entry whose SHA-256 matches the
        // one written with it, in a folder only this user can write (checked
        // in `open`, and the entry's own mode in `load`). wasmtime also
        // checks its header and the engine's compatibility and returns an
        // error for a foreign artifact.
        unsafe { Component::deserialize(engine, payload) }
    }

    fn store(&self, path: &Path, payload: &[u8]) -> io::Result<()> {
        static N: AtomicU64 = AtomicU64::new(0);
        let tmp = self.dir.join(format!(
            ".tmp-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let mut data = Vec::with_capacity(MAGIC.len() + 32 + payload.len());
        data.extend_from_slice(MAGIC);
        data.extend_from_slice(&Sha256::digest(payload));
        data.extend_from_slice(payload);
        let written = std::fs::write(&tmp, &data)
            .and_then(|()| std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600)))
            .and_then(|()| std::fs::rename(&tmp, path));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }

    /// Every entry, sorted by name.
    pub fn list(&self) -> io::Result<Vec<CacheEntry>> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(&self.dir)? {
            let e = e?;
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(SUFFIX) {
                out.push(CacheEntry {
                    name,
                    bytes: e.metadata()?.len(),
                });
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// Remove every entry (and stale temp files); returns how many entries.
    pub fn clear(&self) -> io::Result<usize> {
        let mut n = 0;
        for e in std::fs::read_dir(&self.dir)? {
            let e = e?;
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(SUFFIX) || name.starts_with(".tmp-") {
                std::fs::remove_file(e.path())?;
                n += usize::from(name.ends_with(SUFFIX));
            }
        }
        Ok(n)
    }
}
