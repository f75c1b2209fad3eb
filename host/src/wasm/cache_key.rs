//! The key that tags compiled-artifact cache entries and their indexes.
//!
//! An entry's SHA-256 beside it proves only that the two files agree: anyone
//! who can write the folder can rewrite both. The key is what a writer of
//! the cache folder alone cannot have: 32 random bytes in a file of its own
//! *outside* the cache (created `0600` on first use, in a `0700` folder),
//! which no grant may mount. Every sum and index line carries an
//! HMAC-SHA256 tag made with it; an entry whose tag does not verify is
//! compiled again, never loaded.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The key file's name.
const FILE: &str = "cache.key";

/// The cache's key, loaded once per cache.
pub(crate) struct CacheKey {
    key: [u8; 32],
    path: PathBuf,
}

impl std::fmt::Debug for CacheKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key itself.
        f.debug_struct("CacheKey")
            .field("path", &self.path)
            .finish()
    }
}

impl CacheKey {
    /// Where the key of the cache at `cache_dir` lives unless one is given:
    /// `$SBX_WASM_CACHE_KEY`, else `$XDG_CONFIG_HOME/sbx-wasm/cache.key`,
    /// else `$HOME/.config/sbx-wasm/cache.key`, else a file beside (not in)
    /// the cache folder, `DIR.key`. Away from the cache by default, so one
    /// careless mount does not reach both.
    pub(crate) fn default_path(cache_dir: &Path) -> PathBuf {
        let env = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        env("SBX_WASM_CACHE_KEY")
            .or_else(|| env("XDG_CONFIG_HOME").map(|d| d.join("sbx-wasm").join(FILE)))
            .or_else(|| env("HOME").map(|h| h.join(".config/sbx-wasm").join(FILE)))
            .unwrap_or_else(|| {
                let mut s = cache_dir.as_os_str().to_owned();
                s.push(".key");
                PathBuf::from(s)
            })
    }

    /// The key in `path`, made now if there is none. A key file others may
    /// read is made private if it is ours, refused if not; one that is not
    /// 64 hex digits is refused (remove it to make a new one: the cache's
    /// entries are then compiled again).
    pub(crate) fn open(path: &Path) -> io::Result<CacheKey> {
        let refuse = |why: String| io::Error::new(io::ErrorKind::PermissionDenied, why);
        if !path.exists() {
            create(path)?;
        }
        let md = std::fs::symlink_metadata(path)?;
        if !md.is_file() {
            return Err(refuse(format!(
                "cache key {} is not a plain file",
                path.display()
            )));
        }
        let me = std::fs::metadata("/proc/self").map(|m| m.uid()).ok();
        if me.is_some_and(|me| me != md.uid()) {
            return Err(refuse(format!(
                "cache key {} belongs to another user",
                path.display()
            )));
        }
        if md.permissions().mode() & 0o077 != 0 {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        }
        let text = std::fs::read_to_string(path)?;
        let bytes = decode_hex(text.trim()).ok_or_else(|| {
            refuse(format!(
                "cache key {} is not 64 hex digits (remove it to make a new one)",
                path.display()
            ))
        })?;
        Ok(CacheKey {
            key: bytes,
            path: path.to_path_buf(),
        })
    }

    /// The key file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// HMAC-SHA256 of `parts` (each one ended by a NUL, so no two lists of
    /// parts tag alike), lower-case hex.
    pub(crate) fn tag(&self, parts: &[&str]) -> String {
        crate::digest::hex(&self.mac(parts).finalize().into_bytes())
    }

    /// Whether `tag` is the tag of `parts` (compared in constant time).
    pub(crate) fn verify(&self, parts: &[&str], tag: &str) -> bool {
        decode_hex::<32>(tag).is_some_and(|given| self.mac(parts).verify_slice(&given).is_ok())
    }

    fn mac(&self, parts: &[&str]) -> Hmac<Sha256> {
        // HMAC takes a key of any length: this cannot fail.
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("any key length");
        for p in parts {
            mac.update(p.as_bytes());
            mac.update(b"\0");
        }
        mac
    }
}

/// Make a new key at `path`: written whole to a temp file, then linked into
/// place, so that two processes making one at once agree on the one that
/// got there first and no reader sees half a key.
fn create(path: &Path) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).map_err(|e| io::Error::other(format!("no randomness: {e}")))?;
    // Threads of one process may make one at once: the temp name is theirs.
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{FILE}.{}-{n}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(crate::digest::hex(&key).as_bytes())?;
            f.write_all(b"\n")?;
            f.sync_all()
        })
        .and_then(|()| match std::fs::hard_link(&tmp, path) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
            other => other,
        });
    let _ = std::fs::remove_file(&tmp);
    written
}

fn decode_hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let bytes = text.as_bytes();
    if bytes.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (i, pair) in bytes.chunks(2).enumerate() {
        let s = std::str::from_utf8(pair).ok()?;
        out[i] = u8::from_str_radix(s, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_made_private_once_and_tags_only_what_it_tagged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("conf/cache.key");
        let a = CacheKey::open(&path).unwrap();
        let md = std::fs::metadata(&path).unwrap();
        assert_eq!(md.permissions().mode() & 0o777, 0o600);
        let b = CacheKey::open(&path).unwrap();
        let tag = a.tag(&["entry", "x", "sum"]);
        assert!(b.verify(&["entry", "x", "sum"], &tag));
        assert!(!b.verify(&["entry", "x", "sun"], &tag));
        assert!(!b.verify(&["entryx", "sum"], &tag));
        assert!(!format!("{a:?}").contains(&tag[..8]));
        // Another key tags differently.
        let other = CacheKey::open(&dir.path().join("other.key")).unwrap();
        assert!(!other.verify(&["entry", "x", "sum"], &tag));
        // A key file that is not a key is refused with what to do.
        std::fs::write(&path, "not a key").unwrap();
        let err = CacheKey::open(&path).unwrap_err().to_string();
        assert!(err.contains("remove it"), "{err}");
    }
}
