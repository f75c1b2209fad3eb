//! Compiled-artifact cache: compile a component once, load the machine code
//! on every later run.
//!
//! An entry is named by the SHA-256 of the component and a hash of the
//! engine's compatibility settings (wasmtime version, target, compiler
//! flags), so a different component or engine never matches. Entries are
//! written to a temp file and renamed (concurrent writers cannot leave half a
//! file); beside each, `NAME.sha256` holds the SHA-256 of the entry, checked
//! before wasmtime sees it whenever the file changed since it was last
//! checked, and a tag over the name, the sum and the stamp made with the
//! cache's key (`cache_key.rs`), which lives outside the folder: a writer
//! of the folder can rewrite an entry and its sum, not forge the tag.
//! wasmtime then checks its own header. A corrupt, foreign or untagged
//! entry is discarded and rebuilt, never loaded. A warm entry is mapped, not read:
//! loading the 48 MB artifact of the Python runner costs a few milliseconds.
//! `NAME.source` files remember a component file's content hash by its
//! stamp (tagged the same way), so a warm run does not read (or hash) the
//! component either.
//!
//! Loading machine code is `unsafe` in wasmtime: the artifact is trusted like
//! the host binary. The cache therefore lives in a folder only this user may
//! write (created `0700`; a folder or entry others can write is refused).

use super::cache_key::CacheKey;
use crate::digest::sha256_hex;
use std::hash::{Hash, Hasher};
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use wasmtime::Engine;
use wasmtime::component::Component;

const SUFFIX: &str = ".cwasm";
/// The SHA-256 of an entry, and the stamp of the file when last verified.
const SUM_SUFFIX: &str = ".sha256";
/// A component file's last-seen stamp and content hash.
const SOURCE_SUFFIX: &str = ".source";

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn sum_path(entry: &Path) -> PathBuf {
    let mut s = entry.as_os_str().to_owned();
    s.push(SUM_SUFFIX);
    PathBuf::from(s)
}

/// What changes whenever a file's content may have: device, inode, size,
/// modification and change times (the change time cannot be set by a
/// writer).
fn stamp(md: &std::fs::Metadata) -> String {
    format!(
        "{} {} {} {}.{} {}.{}",
        md.dev(),
        md.ino(),
        md.len(),
        md.mtime(),
        md.mtime_nsec(),
        md.ctime(),
        md.ctime_nsec()
    )
}

/// The entry for content hash `sum` (hex SHA-256) under `engine`'s
/// settings.
fn entry_name(sum: &str, engine: &Engine) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut h);
    format!("{sum}-{:016x}{SUFFIX}", h.finish())
}

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

/// One cached artifact, or one being written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheEntry {
    /// File name.
    pub name: String,
    /// Size in bytes.
    pub bytes: u64,
    /// A temp file a writer has not renamed into place yet: being written
    /// now, or left by a writer that died (removed once that writer is
    /// gone and the file is a minute old).
    pub partial: bool,
}

/// Whether a process with id `pid` exists (Linux: `/proc/PID`). Temp files
/// carry their writer's pid, so those of dead writers can be told apart
/// and removed. Without `/proc`, every writer counts as alive.
pub fn process_alive(pid: u32) -> bool {
    let proc_root = Path::new("/proc");
    !proc_root.join("self").exists() || proc_root.join(pid.to_string()).exists()
}

/// How old a dead writer's temp file must be before it is removed.
const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(60);

/// The writer pid of a cache temp file `.tmp-PID-N`.
fn temp_writer(name: &str) -> Option<u32> {
    name.strip_prefix(".tmp-")?.split('-').next()?.parse().ok()
}

/// A folder of compiled artifacts.
#[derive(Debug)]
pub struct ArtifactCache {
    dir: PathBuf,
    key: CacheKey,
    compiles: AtomicU64,
}

fn refuse(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, msg)
}

/// The environment variable `k` as a path, when it is set and not empty.
fn env_path(k: &str) -> Option<PathBuf> {
    std::env::var_os(k)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The user's cache folder: `$XDG_CACHE_HOME`, else `$HOME/.cache`.
pub(crate) fn user_cache_home() -> Option<PathBuf> {
    env_path("XDG_CACHE_HOME").or_else(|| env_path("HOME").map(|h| h.join(".cache")))
}

impl ArtifactCache {
    /// `$SBX_WASM_CACHE_DIR`, else `$XDG_CACHE_HOME/sbx-wasm`, else
    /// `$HOME/.cache/sbx-wasm`.
    pub fn default_dir() -> Option<PathBuf> {
        env_path("SBX_WASM_CACHE_DIR").or_else(|| user_cache_home().map(|d| d.join("sbx-wasm")))
    }

    /// Where the key of a cache in `dir` is kept unless one is given (see
    /// [`ArtifactCache::open`]).
    pub fn default_key_file(dir: &Path) -> PathBuf {
        CacheKey::default_path(dir)
    }

    /// Open (creating it `0700` if needed) the cache folder `dir`, with its
    /// key in the default place (`$SBX_WASM_CACHE_KEY`, else
    /// `$XDG_CONFIG_HOME/sbx-wasm/cache.key`, else
    /// `$HOME/.config/sbx-wasm/cache.key`), made on first use. A folder
    /// that others may write, or that another user owns, is refused.
    pub fn open(dir: impl Into<PathBuf>) -> io::Result<Self> {
        let dir = dir.into();
        let key = CacheKey::default_path(&dir);
        Self::open_with_key(dir, key)
    }

    /// [`ArtifactCache::open`] with the key in `key_file` (made `0600` if
    /// there is none). Keep it out of the cache folder and out of every
    /// grant: whoever can read it can make entries this cache will load.
    pub fn open_with_key(dir: impl Into<PathBuf>, key_file: impl AsRef<Path>) -> io::Result<Self> {
        let dir = dir.into();
        let key_file = crate::caps::protected::resolve(key_file.as_ref());
        if key_file.starts_with(crate::caps::protected::resolve(&dir)) {
            return Err(refuse(format!(
                "cache key {} lies inside the cache folder {}",
                key_file.display(),
                dir.display()
            )));
        }
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
        // Compare the folder's owner with our effective user: the owner of
        // /proc/self, or, without /proc, of a file we create now.
        let me = match std::fs::metadata("/proc/self") {
            Ok(m) => m.uid(),
            Err(_) => {
                let probe = dir.join(format!(".owner-{}", std::process::id()));
                std::fs::write(&probe, b"")?;
                let me = std::fs::metadata(&probe).map(|m| m.uid());
                let _ = std::fs::remove_file(&probe);
                me?
            }
        };
        if me != md.uid() {
            return Err(refuse(format!(
                "cache folder {} belongs to another user",
                dir.display()
            )));
        }
        let key = CacheKey::open(&key_file)
            .map_err(|e| io::Error::new(e.kind(), format!("cache key: {e}")))?;
        // Temp files a killed writer left are removed before the next
        // compile (`remove_stale`), not here: opening stays independent of
        // how many entries the folder holds.
        Ok(ArtifactCache {
            dir,
            key,
            compiles: AtomicU64::new(0),
        })
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The key's file (outside the folder).
    pub fn key_file(&self) -> &Path {
        self.key.path()
    }

    /// The folder and the key's file, which no grant may mount (see
    /// [`crate::ProtectedPaths`]).
    pub fn protected(&self) -> crate::ProtectedPaths {
        crate::ProtectedPaths::new()
            .with(&self.dir, "the artifact cache")
            .with(self.key.path(), "the artifact cache's key")
    }

    /// How many compiles this cache has done since it was opened.
    pub fn compiles(&self) -> u64 {
        self.compiles.load(Ordering::SeqCst)
    }

    /// The entry name for `bytes` under `engine`'s settings.
    pub fn key(engine: &Engine, bytes: &[u8]) -> String {
        entry_name(&sha256_hex(bytes), engine)
    }

    /// The compiled component for `bytes`: from the cache when a valid entry
    /// exists, else compiled and stored.
    pub fn get_or_compile(
        &self,
        engine: &Engine,
        bytes: &[u8],
    ) -> wasmtime::Result<(Component, CacheOutcome)> {
        self.get_or_compile_hashed(engine, bytes, &sha256_hex(bytes))
    }

    /// Like [`ArtifactCache::get_or_compile`] for `bytes` read from the file
    /// `component`, and remembers the file's content hash by its stamp so
    /// that [`ArtifactCache::get_by_file`] finds the entry next time without
    /// reading the file.
    pub fn get_or_compile_file(
        &self,
        engine: &Engine,
        bytes: &[u8],
        component: &Path,
    ) -> wasmtime::Result<(Component, CacheOutcome)> {
        let sum = sha256_hex(bytes);
        let got = self.get_or_compile_hashed(engine, bytes, &sum)?;
        if let Some((index, stamp)) = self.source_index(component) {
            let tag = self.key.tag(&["source", &file_name(&index), &stamp, &sum]);
            let _ = self.write_atomic(&index, format!("{stamp}\n{sum}\n{tag}\n").as_bytes());
        }
        Ok(got)
    }

    fn get_or_compile_hashed(
        &self,
        engine: &Engine,
        bytes: &[u8],
        sum: &str,
    ) -> wasmtime::Result<(Component, CacheOutcome)> {
        let path = self.dir.join(entry_name(sum, engine));
        let mut outcome = CacheOutcome::Miss;
        if path.exists() {
            match self.load(engine, &path) {
                Some(c) => return Ok((c, CacheOutcome::Hit)),
                None => {
                    let _ = std::fs::remove_file(&path);
                    let _ = std::fs::remove_file(sum_path(&path));
                    outcome = CacheOutcome::Rebuilt;
                }
            }
        }
        self.compiles.fetch_add(1, Ordering::SeqCst);
        // The folder is about to grow by an artifact: first take back what
        // writers killed half-way left (the one scan of the folder a run
        // makes, and only when it compiles).
        self.remove_stale();
        let payload = engine.precompile_component(bytes)?;
        // Storing is best effort: a full disk must not fail the run.
        if self.store(&path, &payload).is_ok()
            && let Some(c) = self.load(engine, &path)
        {
            return Ok((c, outcome));
        }
        Ok((self.deserialize(engine, &payload)?, outcome))
    }

    /// The compiled component for the file `component`, without reading it
    /// when this cache has seen the same file (same device, inode, size,
    /// modification and change times) before: the content hash recorded then
    /// names the entry. Otherwise `None`, and the caller reads the file and
    /// calls [`ArtifactCache::get_or_compile_file`], which records the hash
    /// for next time.
    pub fn get_by_file(&self, engine: &Engine, component: &Path) -> Option<Component> {
        self.load(engine, &self.entry_for_file(engine, component)?)
    }

    /// Where the entry for the file `component` is, if this cache has seen
    /// the file as it is now (see [`ArtifactCache::get_by_file`]).
    pub fn entry_for_file(&self, engine: &Engine, component: &Path) -> Option<PathBuf> {
        let (index, stamp) = self.source_index(component)?;
        let text = std::fs::read_to_string(&index).ok()?;
        let mut lines = text.lines();
        let (recorded, sum, tag) = (lines.next()?, lines.next()?, lines.next()?);
        let genuine = self
            .key
            .verify(&["source", &file_name(&index), recorded, sum], tag);
        (genuine && recorded == stamp).then(|| self.dir.join(entry_name(sum, engine)))
    }

    /// The index file for a component path, and the file's current stamp.
    fn source_index(&self, component: &Path) -> Option<(PathBuf, String)> {
        let canonical = std::fs::canonicalize(component).ok()?;
        let md = std::fs::metadata(&canonical).ok()?;
        let name = sha256_hex(canonical.as_os_str().as_encoded_bytes());
        Some((self.dir.join(format!("{name}{SOURCE_SUFFIX}")), stamp(&md)))
    }

    /// Load the entry at `path` if it is ours and intact: not writable by
    /// others, its sum file tagged with our key, and its SHA-256 the one
    /// that file holds. The hash
    /// is recomputed only when the file changed since it was last verified
    /// (its stamp: device, inode, size, modification and change times; the
    /// change time cannot be set back by a writer), so a warm entry loads
    /// without reading it whole: wasmtime maps it.
    fn load(&self, engine: &Engine, path: &Path) -> Option<Component> {
        let md = std::fs::metadata(path).ok()?;
        if md.permissions().mode() & 0o022 != 0 {
            return None;
        }
        let sum_file = sum_path(path);
        let text = std::fs::read_to_string(&sum_file).ok()?;
        let mut lines = text.lines();
        let (sum, verified, tag) = (lines.next()?, lines.next()?, lines.next()?);
        let name = file_name(path);
        // Only a sum this cache wrote counts: the tag binds it to the entry's
        // name and to the stamp the file had when it was last hashed.
        if !self.key.verify(&["entry", &name, sum, verified], tag) {
            return None;
        }
        let now = stamp(&md);
        if verified != now {
            let payload = std::fs::read(path).ok()?;
            if sha256_hex(&payload) != sum {
                return None;
            }
            let _ = self.write_sum(&sum_file, &name, sum, &now);
        }
        self.deserialize_file(engine, path).ok()
    }

    #[allow(unsafe_code)]
    fn deserialize(&self, engine: &Engine, payload: &[u8]) -> wasmtime::Result<Component> {
        // SAFETY: `payload` is what `precompile_component` just produced in
        // this process.
        unsafe { Component::deserialize(engine, payload) }
    }

    #[allow(unsafe_code)]
    fn deserialize_file(&self, engine: &Engine, path: &Path) -> wasmtime::Result<Component> {
        // SAFETY: `path` is an entry whose SHA-256 matched the one written
        // with it (or whose stamp shows it unchanged since it was checked),
        // in a folder only this user can write (checked in `open`, and the
        // entry's own mode in `load`). wasmtime also checks its header and
        // the engine's compatibility and returns an error for a foreign
        // artifact. Mapping it (rather than reading it) lets instances
        // share the artifact's pages, memory images included.
        unsafe { Component::deserialize_file(engine, path) }
    }

    /// Write `data` to `path` through a temp file and a rename, `0600`.
    fn write_atomic(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        static N: AtomicU64 = AtomicU64::new(0);
        let tmp = self.dir.join(format!(
            ".tmp-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let written = std::fs::write(&tmp, data)
            .and_then(|()| std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600)))
            .and_then(|()| std::fs::rename(&tmp, path));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }

    /// Store `payload` as the entry `path`, with its SHA-256 beside it.
    fn store(&self, path: &Path, payload: &[u8]) -> io::Result<()> {
        self.write_atomic(path, payload)?;
        let md = std::fs::metadata(path)?;
        self.write_sum(
            &sum_path(path),
            &file_name(path),
            &sha256_hex(payload),
            &stamp(&md),
        )
    }

    /// The sum file of entry `name`: its SHA-256, the stamp it had when
    /// hashed, and the tag over both.
    fn write_sum(&self, sum_file: &Path, name: &str, sum: &str, stamp: &str) -> io::Result<()> {
        let tag = self.key.tag(&["entry", name, sum, stamp]);
        self.write_atomic(sum_file, format!("{sum}\n{stamp}\n{tag}\n").as_bytes())
    }

    /// Every entry, and every temp file being written (`partial`), sorted
    /// by name.
    pub fn list(&self) -> io::Result<Vec<CacheEntry>> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(&self.dir)? {
            let e = e?;
            let name = e.file_name().to_string_lossy().into_owned();
            let partial = name.starts_with(".tmp-");
            if name.ends_with(SUFFIX) || partial {
                out.push(CacheEntry {
                    name,
                    bytes: e.metadata()?.len(),
                    partial,
                });
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// Remove temp files whose writer died (killed while writing an entry)
    /// and that are older than a minute; returns how many. Called before
    /// every compile, and by `sbx-wasm cache ls`.
    pub fn remove_stale(&self) -> usize {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        let mut n = 0;
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(pid) = temp_writer(&name) else {
                continue;
            };
            let old = e
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age >= STALE_AFTER);
            if old && !process_alive(pid) && std::fs::remove_file(e.path()).is_ok() {
                n += 1;
            }
        }
        n
    }

    /// Remove every entry (and stale temp files); returns how many entries.
    pub fn clear(&self) -> io::Result<usize> {
        let mut n = 0;
        for e in std::fs::read_dir(&self.dir)? {
            let e = e?;
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(SUFFIX)
                || name.ends_with(SUM_SUFFIX)
                || name.ends_with(SOURCE_SUFFIX)
                || name.starts_with(".tmp-")
            {
                std::fs::remove_file(e.path())?;
                n += usize::from(name.ends_with(SUFFIX));
            }
        }
        Ok(n)
    }
}
