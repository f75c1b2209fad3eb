//! Host paths no grant may reach: what the host itself runs or trusts (the
//! artifact cache and its key, a runner component, the host's binary) and
//! what keeps one run apart from another (a socket folder, the roots that
//! private folders are made under).
//!
//! A mount over any of them, or over a folder holding one, or inside one,
//! would let a guest read or rewrite what later runs execute natively, or
//! reach another run's files. The check is one comparison of canonical
//! paths, made before a run starts; it is the first of two locks on the
//! cache (the second: entries carry a tag made with a key the guest never
//! sees, so an altered entry is compiled again, never loaded).

use super::Capabilities;
use crate::error::CapsError;
use std::path::{Component, Path, PathBuf};

/// One protected path and what it is, for the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Protected {
    /// The path, canonical as far as it exists (a file that is not there
    /// yet, such as a key made on first use, keeps the rest as given).
    pub path: PathBuf,
    /// What it is ("the artifact cache", "the Python runner", ...).
    pub what: String,
}

/// The host paths a grant's mounts may not overlap. Empty by default; a
/// [`crate::wasm::WasmHost`] adds its cache folder and key, the command
/// line adds its own binary, the runners it uses and its socket folder.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProtectedPaths(Vec<Protected>);

impl ProtectedPaths {
    /// No protected paths.
    pub fn new() -> Self {
        Self::default()
    }

    /// Protect `path` (a file or a folder), described as `what`.
    pub fn add(&mut self, path: impl AsRef<Path>, what: impl Into<String>) {
        let path = resolve(path.as_ref());
        if !self.0.iter().any(|p| p.path == path) {
            self.0.push(Protected {
                path,
                what: what.into(),
            });
        }
    }

    /// [`ProtectedPaths::add`], by value.
    pub fn with(mut self, path: impl AsRef<Path>, what: impl Into<String>) -> Self {
        self.add(path, what);
        self
    }

    /// Every protected path added from `other`.
    pub fn extend(&mut self, other: &ProtectedPaths) {
        for p in &other.0 {
            if !self.0.iter().any(|q| q.path == p.path) {
                self.0.push(p.clone());
            }
        }
    }

    /// The protected paths.
    pub fn iter(&self) -> impl Iterator<Item = &Protected> {
        self.0.iter()
    }

    /// One message per mount of `caps` that overlaps a protected path: the
    /// mount's folder is the path, holds it, or lies inside it. Read mounts
    /// count too (reading the cache key is enough to forge an entry).
    /// Folders the host makes for one run (a Python run's private `/tmp`)
    /// are left out: the host made them under a root it protects itself.
    /// A runner's own folder (read-only, lent by the host) may lie inside
    /// a protected folder, as it does in the user's cache where runners
    /// are built, but must not hold a protected path.
    pub fn conflicts(&self, caps: &Capabilities) -> Vec<String> {
        let mut out = Vec::new();
        if self.0.is_empty() {
            return out;
        }
        // A mount's host folder is canonical already (made so when the
        // grant was built): no lookup per run.
        for m in caps.mounts().iter().filter(|m| !m.private) {
            let host = &m.host;
            for p in &self.0 {
                let reaches = match m.runner {
                    true => within(&p.path, host),
                    false => overlap(host, &p.path),
                };
                if reaches {
                    out.push(format!(
                        "the {} mount {} (host {}) overlaps {} {}: a guest could read or \
                         alter what the host runs or keeps apart",
                        m.access.as_str(),
                        m.guest,
                        host.display(),
                        p.what,
                        p.path.display()
                    ));
                }
            }
        }
        out
    }

    /// An error naming the first overlap of [`ProtectedPaths::conflicts`].
    pub fn check(&self, caps: &Capabilities) -> Result<(), CapsError> {
        match self.conflicts(caps).into_iter().next() {
            None => Ok(()),
            Some(message) => Err(CapsError::invalid(
                "fs",
                message,
                "mounts outside the artifact cache, its key, the runners in use, the \
                 host's binary and its socket and scratch folders",
            )),
        }
    }
}

/// Whether one of `a` and `b` is the other or lies inside it (by whole
/// components: `/work` and `/workshop` do not overlap).
pub(crate) fn overlap(a: &Path, b: &Path) -> bool {
    within(a, b) || within(b, a)
}

/// Whether `inner` is `outer` or lies inside it, by whole components. Both
/// are canonical (a mount's folder and a protected path are made so before
/// any run), where the components match exactly when the bytes do up to a
/// separator: compared as bytes, every run, without splitting either path.
fn within(inner: &Path, outer: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let (i, o) = (inner.as_os_str().as_bytes(), outer.as_os_str().as_bytes());
        i.starts_with(o) && (i.len() == o.len() || o.ends_with(b"/") || i[o.len()] == b'/')
    }
    #[cfg(not(unix))]
    {
        inner.starts_with(outer)
    }
}

/// `path` made absolute and canonical as far as it exists: links in the
/// part that exists are resolved (a mount reached through a link is the
/// folder it names), the part that does not is kept, `.` dropped.
pub(crate) fn resolve(path: &Path) -> PathBuf {
    let absolute = match path.is_absolute() {
        true => path.to_path_buf(),
        false => std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(path),
    };
    let mut rest = Vec::new();
    let mut head = absolute.as_path();
    loop {
        if let Ok(canonical) = std::fs::canonicalize(head) {
            let mut out = canonical;
            for c in rest.iter().rev() {
                out.push(c);
            }
            return out;
        }
        match (head.parent(), head.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                head = parent;
            }
            _ => break,
        }
    }
    absolute
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(read: &Path, write: &Path) -> Capabilities {
        Capabilities::builder()
            .read_mount(read, "/data")
            .write_mount(write, "/out")
            .build()
            .unwrap()
    }

    #[test]
    fn a_mount_over_inside_or_at_a_protected_path_is_refused_and_a_neighbour_is_not() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        for d in ["home/.cache/sbx-wasm/serve", "home/work", "cachey", "other"] {
            std::fs::create_dir_all(r.join(d)).unwrap();
        }
        let protected = ProtectedPaths::new()
            .with(r.join("home/.cache/sbx-wasm"), "the artifact cache")
            .with(r.join("home/.config/sbx-wasm/cache.key"), "the cache key");
        // The neighbours: a sibling folder, and one whose name only starts
        // the same.
        assert!(
            protected
                .conflicts(&caps(&r.join("home/work"), &r.join("cachey")))
                .is_empty()
        );
        // The cache itself, a folder holding it, one inside it; and a
        // folder over a key that does not exist yet.
        for (read, write) in [
            ("other", "home/.cache/sbx-wasm"),
            ("home", "other"),
            ("other", "home/.cache/sbx-wasm/serve"),
        ] {
            let found = protected.conflicts(&caps(&r.join(read), &r.join(write)));
            assert_eq!(found.len(), 1 + usize::from(read == "home"), "{found:?}");
            assert!(found[0].contains("the artifact cache"), "{found:?}");
        }
        let err = protected
            .check(&caps(&r.join("home"), &r.join("other")))
            .unwrap_err()
            .to_string();
        // The message names both paths.
        assert!(err.contains("the artifact cache"), "{err}");
        assert!(
            err.contains(&format!(
                "(host {})",
                r.join("home").canonicalize().unwrap().display()
            )),
            "{err}"
        );
        let all = protected.conflicts(&caps(&r.join("home"), &r.join("other")));
        assert!(all[1].contains("the cache key"), "{all:?}");
    }

    /// Compared as bytes, a path lies within another by whole components
    /// only: the root holds everything, a name that only starts the same
    /// is a neighbour.
    #[test]
    fn within_goes_by_whole_components() {
        for (inner, outer, expected) in [
            ("/a/b", "/a", true),
            ("/a", "/a", true),
            ("/x/y", "/", true),
            ("/", "/", true),
            ("/ab", "/a", false),
            ("/a", "/a/b", false),
            ("/", "/a", false),
        ] {
            let found = within(Path::new(inner), Path::new(outer));
            assert_eq!(found, expected, "{inner} within {outer}");
            assert_eq!(
                found,
                Path::new(inner).starts_with(outer),
                "{inner} {outer}"
            );
        }
    }

    #[test]
    fn a_runner_s_own_folder_may_lie_inside_the_cache_but_not_hold_it() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        let files = r.join("cache/runners/data/files");
        std::fs::create_dir_all(&files).unwrap();
        std::fs::create_dir_all(r.join("other")).unwrap();
        let protected = ProtectedPaths::new().with(r.join("cache"), "the artifact cache");
        let lent = |host: &Path| {
            Capabilities::builder()
                .read_mount(r.join("other"), "/data")
                .runner_mount(host, "/usr")
                .build()
                .unwrap()
        };
        // Where runners are built: inside the cache, read-only, the host's.
        assert!(protected.conflicts(&lent(&files)).is_empty());
        // A runner folder over the cache would lend all of it.
        let found = protected.conflicts(&lent(r));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("the artifact cache"), "{found:?}");
        // The grant's own mount at the same folder is refused as before.
        let granted = Capabilities::builder()
            .read_mount(&files, "/data")
            .build()
            .unwrap();
        assert_eq!(protected.conflicts(&granted).len(), 1);
    }

    #[test]
    fn a_mount_reached_through_a_link_is_the_folder_it_names() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        std::fs::create_dir_all(r.join("cache")).unwrap();
        std::fs::create_dir_all(r.join("ws")).unwrap();
        std::os::unix::fs::symlink(r.join("cache"), r.join("ws/link")).unwrap();
        let protected = ProtectedPaths::new().with(r.join("cache"), "the artifact cache");
        let found = protected.conflicts(&caps(&r.join("ws"), &r.join("ws/link")));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(resolve(&r.join("ws/link/x/y")).ends_with("cache/x/y"));
    }
}
