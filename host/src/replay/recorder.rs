//! Collecting a recording while the run goes: each path below a mount the
//! first time the guest meets it (before the effect), each folder the first
//! time it is listed, each performed op's answer. Bounded: file contents
//! and listings count against one byte limit; past it, a file is kept by
//! size only and a note says so.

use super::format::{Answer, FileRecord, ListedEntry, Listing, sha256_hex};
use crate::capability::fs::{Found, OpenMount};
use crate::capability::{Content, Trace};
use crate::failure::Failure;
use crate::op::Output;
use std::collections::{BTreeMap, HashSet};

/// The most entries one listing keeps.
const MAX_LISTED: usize = 100_000;
/// How many links are followed from one path when recording where it leads.
const MAX_LINK_HOPS: usize = 8;

/// What a recording run has collected so far.
#[derive(Debug)]
pub(crate) struct Recorder {
    limit: u64,
    used: u64,
    seen: HashSet<(String, String)>,
    listed: HashSet<(String, String)>,
    pub(super) files: Vec<FileRecord>,
    pub(super) listings: Vec<Listing>,
    pub(super) answers: Vec<Answer>,
    pub(super) blobs: BTreeMap<String, Content>,
    pub(super) notes: Vec<String>,
}

impl Recorder {
    /// A recorder that keeps at most `limit` bytes of file content and
    /// listings.
    pub(crate) fn new(limit: u64) -> Self {
        Recorder {
            limit,
            used: 0,
            seen: HashSet::new(),
            listed: HashSet::new(),
            files: Vec::new(),
            listings: Vec::new(),
            answers: Vec::new(),
            blobs: BTreeMap::new(),
            notes: Vec::new(),
        }
    }

    /// Keep `path` below `mount` as it is now, unless already kept: the
    /// state before the guest's first op on it. A link is kept as a link,
    /// and where it leads is kept too.
    pub(crate) fn sight(&mut self, mount: &OpenMount, path: &str) {
        let mut path = path.to_string();
        for _ in 0..MAX_LINK_HOPS {
            let guest = mount.mount().guest.as_str().to_string();
            if !self.seen.insert((guest.clone(), path.clone())) {
                return;
            }
            let left = self.limit.saturating_sub(self.used);
            let found = mount.snapshot(&path, left);
            let mut rec = FileRecord {
                mount: guest,
                path: path.clone(),
                kind: String::new(),
                size: 0,
                blob: None,
                target: None,
            };
            let next = match found {
                Found::Absent => {
                    rec.kind = "absent".into();
                    None
                }
                Found::Dir => {
                    rec.kind = "dir".into();
                    None
                }
                Found::Other => {
                    rec.kind = "other".into();
                    None
                }
                Found::File { size, content } => {
                    rec.kind = "file".into();
                    rec.size = size;
                    match content {
                        Some(bytes) => rec.blob = Some(self.keep(bytes)),
                        None => self.notes.push(format!(
                            "{}: its content ({size} bytes) was not kept: over the \
                             recording's size limit",
                            join(&rec.mount, &path)
                        )),
                    }
                    None
                }
                Found::Symlink { target } => {
                    rec.kind = "symlink".into();
                    rec.target = Some(target);
                    mount.resolved(&path)
                }
            };
            self.files.push(rec);
            match next {
                Some(p) => path = p,
                None => return,
            }
        }
    }

    /// Keep folder `path` below `mount`'s entries as they are now, unless
    /// already kept.
    pub(crate) fn listing(&mut self, mount: &OpenMount, path: &str) {
        let guest = mount.mount().guest.as_str().to_string();
        if !self.listed.insert((guest.clone(), path.to_string())) {
            return;
        }
        if self.used >= self.limit {
            self.notes.push(format!(
                "{}: its entries were not kept: over the recording's size limit",
                join(&guest, path)
            ));
            return;
        }
        let Some(entries) = mount.listing(path, MAX_LISTED) else {
            return;
        };
        let entries: Vec<ListedEntry> = entries
            .into_iter()
            .map(|e| ListedEntry {
                name: e.name,
                kind: e.kind.to_string(),
                size: e.size,
                target: e.target,
            })
            .collect();
        let bytes: u64 = entries.iter().map(|e| e.name.len() as u64 + 16).sum();
        self.used = self.used.saturating_add(bytes);
        self.listings.push(Listing {
            mount: guest,
            path: path.to_string(),
            entries,
        });
    }

    /// Keep what performed op `seq` answered.
    pub(crate) fn answer(&mut self, seq: u64, outcome: &Result<Output, Failure>, trace: &Trace) {
        self.answers.push(Answer {
            seq,
            result: outcome.clone().into(),
            trace: trace.clone(),
        });
    }

    fn keep(&mut self, bytes: Vec<u8>) -> String {
        let key = sha256_hex(&bytes);
        if !self.blobs.contains_key(&key) {
            self.used = self.used.saturating_add(bytes.len() as u64);
            self.blobs.insert(key.clone(), Content(bytes));
        }
        key
    }
}

/// A mount's guest path and a path below it, as one guest path.
pub(super) fn join(mount: &str, path: &str) -> String {
    match (mount, path) {
        (m, "") => m.to_string(),
        ("/", p) => format!("/{p}"),
        (m, p) => format!("{m}/{p}"),
    }
}
