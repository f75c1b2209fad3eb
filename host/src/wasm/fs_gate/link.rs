//! Where a symlink made in a write mount may point.

use crate::violation::{Denial, Violation};

/// Where a symlink may point: relative, and resolved against the link's
/// folder, still inside the mount the link is made in. A target with `..`
/// that stays inside is refused too (as paths with `..` are): renaming the
/// link's folder later could make it lead out.
pub(super) fn check_link_target(link: &str, via: &str, target: &str) -> Result<(), Denial> {
    let leaves = |why: String| {
        Denial::new(
            Violation::FsWriteDenied,
            format!(
                "symlink {} -> {} {why}",
                crate::bound::clip(link),
                crate::bound::quote(target)
            ),
        )
    };
    if target.starts_with('/') {
        return Err(leaves(
            "points at an absolute path, outside the grant".into(),
        ));
    }
    if target.contains('\0') || target.len() > crate::fs::MAX_PATH_BYTES {
        return Err(Denial::new(
            Violation::InvalidRequest,
            "symlink target has a NUL byte or is over-long",
        ));
    }
    if !crate::fs::has_traversal(target) {
        return Ok(());
    }
    // Resolve lexically against the link's folder.
    let mut parts: Vec<&str> = link.split('/').filter(|c| !c.is_empty()).collect();
    parts.pop();
    for c in target.split(['/', '\\']) {
        match c {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(leaves("leads above the root".into()));
                }
            }
            c => parts.push(c),
        }
    }
    let resolved = format!("/{}", parts.join("/"));
    let inside = crate::fs::check_path(&resolved)
        .ok()
        .zip(crate::fs::check_path(via).ok())
        .is_some_and(|(r, m)| r.is_under(&m));
    if !inside {
        return Err(leaves(format!("leads outside mount {via}")));
    }
    Err(Denial::new(
        Violation::PathTraversal,
        format!(
            "symlink target {} has a `..` component (a later rename could make it lead \
             outside mount {via})",
            crate::bound::quote(target)
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    pub(super) fn link_targets_stay_inside_their_mount() {
        let ok = |t| check_link_target("/work/out/a/link", "/work/out", t);
        assert!(ok("b.txt").is_ok());
        assert!(ok("sub/./c.txt").is_ok());
        for (t, v) in [
            ("/etc/passwd", Violation::FsWriteDenied),
            ("../../secret.txt", Violation::FsWriteDenied),
            ("../../../../../../etc", Violation::FsWriteDenied),
            ("sub/../../../x", Violation::FsWriteDenied),
            ("../b.txt", Violation::PathTraversal),
            ("..\\..\\..\\x", Violation::FsWriteDenied),
        ] {
            assert_eq!(ok(t).unwrap_err().violation, v, "{t}");
        }
    }
}
