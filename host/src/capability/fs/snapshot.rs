//! What a recording keeps of a mount: the state of one path as the guest
//! first met it, and a folder's entries, read through the mount's own
//! handle (so a symlink leading out of the mount is never followed here
//! either).
// Only the wasm door records.
#![cfg_attr(not(feature = "wasm"), allow(dead_code))]

use super::mount::{OpenMount, kind_name};
use std::io::Read;
use std::path::Path;

/// One path as the recording first saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// Nothing there.
    Absent,
    /// A regular file; `content` is `None` when it was over the limit or
    /// could not be read.
    File { size: u64, content: Option<Vec<u8>> },
    /// A folder.
    Dir,
    /// A symbolic link and what it says (not followed).
    Symlink { target: String },
    /// Something else (a socket, a device): recorded by kind only.
    Other,
}

/// One entry of a folder listing: name, kind, size, link target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Listed {
    pub(crate) name: String,
    pub(crate) kind: &'static str,
    pub(crate) size: u64,
    pub(crate) target: Option<String>,
}

fn rel(rel: &str) -> &Path {
    Path::new(if rel.is_empty() { "." } else { rel })
}

impl OpenMount {
    /// The state of `rel` below this mount, reading at most `limit` bytes
    /// of a file's content.
    pub(crate) fn snapshot(&self, path: &str, limit: u64) -> Found {
        let Ok(dir) = self.dir() else {
            return Found::Absent;
        };
        let Ok(md) = dir.symlink_metadata(rel(path)) else {
            return Found::Absent;
        };
        let ft = md.file_type();
        if ft.is_symlink() {
            return match dir.read_link_contents(rel(path)) {
                Ok(t) => Found::Symlink {
                    target: t.to_string_lossy().into_owned(),
                },
                Err(_) => Found::Other,
            };
        }
        if ft.is_dir() {
            return Found::Dir;
        }
        if !ft.is_file() {
            return Found::Other;
        }
        let size = md.len();
        let content = (size <= limit)
            .then(|| dir.open(rel(path)).ok())
            .flatten()
            .and_then(|f| {
                let mut buf = Vec::new();
                f.take(limit.saturating_add(1)).read_to_end(&mut buf).ok()?;
                (buf.len() as u64 <= limit).then_some(buf)
            });
        Found::File {
            size: content.as_ref().map_or(size, |c| c.len() as u64),
            content,
        }
    }

    /// Where `rel` leads once its links are followed (within this mount),
    /// relative to the mount; `None` when it leads nowhere or out.
    pub(crate) fn resolved(&self, path: &str) -> Option<String> {
        let p = self.dir().ok()?.canonicalize(rel(path)).ok()?;
        let s = p.to_string_lossy();
        Some(if s == "." {
            String::new()
        } else {
            s.into_owned()
        })
    }

    /// The entries of folder `rel`, sorted by name, at most `max` of them.
    pub(crate) fn listing(&self, path: &str, max: usize) -> Option<Vec<Listed>> {
        let mut out = Vec::new();
        let dir = self.dir().ok()?;
        for entry in dir.read_dir(rel(path)).ok()?.flatten().take(max) {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Ok(md) = entry.metadata() else { continue };
            let target = md
                .file_type()
                .is_symlink()
                .then(|| {
                    let p = if path.is_empty() {
                        name.clone()
                    } else {
                        format!("{path}/{name}")
                    };
                    dir.read_link_contents(&p).ok()
                })
                .flatten()
                .map(|t| t.to_string_lossy().into_owned());
            out.push(Listed {
                kind: kind_name(md.file_type()).as_str(),
                size: if md.is_file() { md.len() } else { 0 },
                target,
                name,
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Some(out)
    }
}
