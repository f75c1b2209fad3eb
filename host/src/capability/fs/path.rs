//! The path defense: reject `..`, canonicalize, then check on a path boundary.
//!
//! Guest paths are plain strings the model proposed; nothing here touches the
//! host. The effect side (cap-std handles) lives in [`super::mount`].

use crate::violation::{Denial, Violation};
use std::fmt;

/// Longest guest path accepted, in bytes (Linux `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4096;

/// A canonical, absolute guest path: starts with `/`, no empty, `.` or `..`
/// components, no trailing `/` (except the root itself).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GuestPath(String);

impl GuestPath {
    /// The path as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The components below the root, in order.
    pub fn components(&self) -> impl Iterator<Item = &str> {
        self.0.split('/').filter(|c| !c.is_empty())
    }

    /// Whether `self` is `base` or lies below it, compared component by
    /// component, so `/work` covers `/work/a` but never `/workshop`.
    pub fn is_under(&self, base: &GuestPath) -> bool {
        let mut mine = self.components();
        base.components().all(|b| mine.next() == Some(b))
    }

    /// The part of `self` below `base`, joined with `/` (empty for `base`
    /// itself). `None` when `self` is not under `base`.
    pub fn strip_base(&self, base: &GuestPath) -> Option<String> {
        if !self.is_under(base) {
            return None;
        }
        let skip = base.components().count();
        Some(self.components().skip(skip).collect::<Vec<_>>().join("/"))
    }
}

impl AsRef<str> for GuestPath {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for GuestPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether `path` has a `..` component. Backslashes count as separators here
/// so that `a\..\b` is caught too: refusing a strange but legal file name is
/// the fail-closed side of the trade.
pub fn has_traversal(path: &str) -> bool {
    path.split(['/', '\\']).any(|seg| seg == "..")
}

/// Collapse empty and `.` components of an absolute path. `..` is not
/// resolved: callers reject it first with [`has_traversal`].
pub fn canonical(path: &str) -> String {
    let parts: Vec<&str> = path
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    format!("/{}", parts.join("/"))
}

/// Validate a guest path the way the gate does: well-formed (absolute, no
/// NUL, not over-long) or `invalid_request`; no `..` or `path_traversal`; then
/// canonical.
///
/// # Examples
///
/// ```
/// use sbx_wasm::fs::check_path;
/// use sbx_wasm::Violation;
///
/// assert_eq!(check_path("/work//./a.txt").unwrap().as_str(), "/work/a.txt");
/// assert_eq!(check_path("/work/../etc/passwd").unwrap_err().violation, Violation::PathTraversal);
/// ```
pub fn check_path(path: &str) -> Result<GuestPath, Denial> {
    if path.contains('\0') {
        return Err(Denial::new(
            Violation::InvalidRequest,
            "path contains a NUL byte",
        ));
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(Denial::new(
            Violation::InvalidRequest,
            format!(
                "path is {} bytes long; at most {MAX_PATH_BYTES} are accepted",
                path.len()
            ),
        ));
    }
    if !path.starts_with('/') {
        return Err(Denial::new(
            Violation::InvalidRequest,
            format!(
                "path {} is not absolute; guest paths start with /",
                crate::bound::quote(path)
            ),
        ));
    }
    if has_traversal(path) {
        return Err(Denial::new(
            Violation::PathTraversal,
            format!("path {} has a `..` component", crate::bound::quote(path)),
        ));
    }
    Ok(GuestPath(canonical(path)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gp(s: &str) -> GuestPath {
        check_path(s).unwrap()
    }

    #[test]
    fn traversal_found_in_every_position_and_with_backslashes() {
        for p in [
            "..",
            "/..",
            "/work/..",
            "/work/../etc",
            "/a/b/../../c",
            "/work\\..\\etc",
        ] {
            assert!(has_traversal(p), "{p}");
        }
        for p in [
            "/work/..a",
            "/work/a..",
            "/work/...",
            "/work/.",
            "/work/a.b",
        ] {
            assert!(!has_traversal(p), "{p}");
        }
    }

    #[test]
    fn canonical_collapses_dots_and_slashes() {
        assert_eq!(canonical("/work//./a/./b/"), "/work/a/b");
        assert_eq!(canonical("/"), "/");
        assert_eq!(canonical("//"), "/");
    }

    #[test]
    fn boundary_check_is_per_component() {
        let work = gp("/work");
        assert!(gp("/work").is_under(&work));
        assert!(gp("/work/a").is_under(&work));
        assert!(!gp("/workshop").is_under(&work));
        assert!(!gp("/workshop/a").is_under(&work));
        assert!(!gp("/wor").is_under(&work));
        assert!(gp("/anything").is_under(&gp("/")));
        assert_eq!(gp("/work/a/b").strip_base(&work).as_deref(), Some("a/b"));
        assert_eq!(gp("/work").strip_base(&work).as_deref(), Some(""));
        assert_eq!(gp("/workshop").strip_base(&work), None);
    }

    #[test]
    fn malformed_paths_are_invalid_requests() {
        let long = format!("/{}", "a".repeat(MAX_PATH_BYTES));
        for p in ["", "work/a", "./a", "/work/a\0b", long.as_str()] {
            assert_eq!(
                check_path(p).unwrap_err().violation,
                Violation::InvalidRequest,
                "{p:?}"
            );
        }
    }
}
