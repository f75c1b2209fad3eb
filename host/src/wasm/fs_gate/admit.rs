//! What the host knows of each directory descriptor, and admitting a path
//! call through the gate; after the effect, the audit made true to it.

use super::{Res, code, hard};
use crate::op::Op;
use crate::violation::{Denial, Violation};
use crate::wasm::HostState;
use crate::{OpKind, OpName};
use wasmtime_wasi::p2::FsError;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    Datetime, DescriptorStat, ErrorCode, MetadataHashValue,
};

/// Every file time a guest sees under `--deterministic`: the virtual wall
/// clock's 2026-01-01T00:00:00Z.
const FIXED_TIME: Datetime = Datetime {
    seconds: crate::wasm::clocks::FIXED_WALL_SECONDS,
    nanoseconds: 0,
};

/// The stat of a folder above the mounts (`/`, or `/work` for a mount at
/// `/work/out`): empty, one link, the fixed time.
pub(super) const FOLDER_ABOVE_MOUNTS: DescriptorStat = DescriptorStat {
    type_: wasmtime_wasi::p2::bindings::filesystem::types::DescriptorType::Directory,
    link_count: 1,
    size: 0,
    data_access_timestamp: Some(FIXED_TIME),
    data_modification_timestamp: Some(FIXED_TIME),
    status_change_timestamp: Some(FIXED_TIME),
};

/// What the host knows of a directory descriptor.
#[derive(Clone, Debug)]
pub(crate) struct DirInfo {
    /// The guest path it stands for.
    pub(super) path: String,
    /// The guest path of the preopen it descends from: its effects land in
    /// that mount's host folder.
    pub(super) via: String,
}

/// An admitted path call: its guest path, the mount it goes through, and
/// its sequence number in the audit.
pub(super) struct Admitted {
    pub(super) full: String,
    pub(super) via: String,
    pub(super) seq: u64,
    pub(super) write: bool,
    /// What the check allowed: the mount and the path below it.
    pub(super) permit: crate::capability::Permit,
}

impl HostState {
    /// The guest path for `path` relative to directory `fd`, and the mount
    /// the descriptor reaches.
    pub(super) fn guest_path(&self, fd: u32, path: &str) -> Result<(String, String), Denial> {
        let Some(dir) = self.fs_paths.get(&fd) else {
            return Err(Denial::new(
                Violation::InvalidRequest,
                "unknown directory descriptor",
            ));
        };
        if path.is_empty() {
            return Err(Denial::new(
                Violation::InvalidRequest,
                "empty path in a directory-relative call",
            ));
        }
        if path.starts_with('/') {
            return Err(Denial::new(
                Violation::InvalidRequest,
                format!(
                    "absolute path {} in a directory-relative call",
                    crate::bound::quote(path)
                ),
            ));
        }
        let full = if dir.path == "/" {
            format!("/{path}")
        } else {
            format!("{}/{path}", dir.path)
        };
        Ok((full, dir.via.clone()))
    }

    /// Admit one path op; `Ok` carries what the effect needs to know, `Err`
    /// the guest's error code, and a hard limit traps.
    pub(super) fn admit_path(
        &mut self,
        fd: u32,
        path: &str,
        make: fn(String) -> Op,
    ) -> wasmtime::Result<Result<Admitted, ErrorCode>> {
        let (full, via) = match self.guest_path(fd, path) {
            Ok(p) => p,
            Err(d) => {
                // WASI's own answer: an absolute path on a descriptor is
                // not permitted, an empty one names nothing (as `openat`
                // says), an unknown descriptor is a bad one.
                let answer = if !self.fs_paths.contains_key(&fd) {
                    ErrorCode::BadDescriptor
                } else if path.is_empty() {
                    ErrorCode::NoEntry
                } else {
                    ErrorCode::NotPermitted
                };
                // Still charged and audited: run the malformed request through the gate.
                let op = Op::Invalid {
                    op: make(String::new()).kind().to_string(),
                    reason: d.message.clone(),
                };
                return match self.gate.admit(op) {
                    Err(d) if d.hard => Err(hard(d)),
                    _ => Ok(Err(answer)),
                };
            }
        };
        let op = make(full.clone());
        let write = matches!(&op, Op::Fs(r) if r.access() == crate::fs::Access::ReadWrite);
        let removes = op.kind() == crate::OpKind::FsRemove.name();
        // The runner's own files: checked, not charged or recorded.
        if let Some(checked) = self.gate.admit_runner_read(&op, &via) {
            return Ok(match checked {
                Ok(permit) => Ok(Admitted {
                    full,
                    via,
                    seq: 0,
                    write,
                    permit,
                }),
                Err(d) => Err(code(&d, true)),
            });
        }
        match self.gate.admit_via(op, &via) {
            Ok((seq, permit)) => {
                // A recording keeps the path as it is before the effect.
                self.gate.sight(&permit);
                Ok(Ok(Admitted {
                    full,
                    via,
                    seq,
                    write,
                    permit,
                }))
            }
            Err(d) if d.hard => Err(hard(d)),
            // Removing or renaming the folder the descriptor itself names
            // (`.`, a mount's root) needs write access to its parent, which
            // no grant lends: `access`, as the OS answers (`EACCES`) where
            // the parent may not be written. The record is the denial.
            Err(_) if removes && Self::names_itself(path) => Ok(Err(ErrorCode::Access)),
            Err(d) => Ok(Err(code(&d, self.gate.mount_access(&via).is_some()))),
        }
    }

    /// After the effect: if the filesystem layer refused it and the path
    /// leads out of its mount through a symlink, record the denial it is.
    pub(super) fn settle<T>(&mut self, a: &Admitted, r: Result<T, FsError>) -> Res<T> {
        self.settle_any(&[a], r)
    }

    /// [`HostState::settle`] for a call that names several paths (rename,
    /// link): the first of them that leads out of its mount is the denial.
    pub(super) fn settle_any<T>(&mut self, calls: &[&Admitted], r: Result<T, FsError>) -> Res<T> {
        let r = match r {
            Ok(v) => return Ok((Ok(v),)),
            Err(e) => e.downcast()?,
        };
        if matches!(
            r,
            ErrorCode::NotPermitted | ErrorCode::Access | ErrorCode::Loop
        ) {
            self.record_escape(calls);
        }
        Ok((Err(r),))
    }

    /// After the filesystem layer refused admitted `calls`: the first of
    /// them whose path leads out of its mount (through a symlink) has its
    /// record turned into the denial it is (both WASI versions' settles).
    pub(super) fn record_escape(&mut self, calls: &[&Admitted]) {
        let Some(a) = calls.iter().find(|a| self.gate.escapes(&a.permit)) else {
            return;
        };
        let access = if a.write {
            crate::fs::Access::ReadWrite
        } else {
            crate::fs::Access::ReadOnly
        };
        self.gate
            .refuse_admitted(a.seq, crate::fs::escape(access, &a.full));
    }

    /// Charge `files` created by admitted call `a` to the write quota; a
    /// spent quota turns its record into the refusal and halts the run.
    pub(super) fn charge_files(&mut self, a: &Admitted, files: u64) -> wasmtime::Result<()> {
        let kind = OpName::Gated(if a.write {
            OpKind::FsWrite
        } else {
            OpKind::FsRead
        });
        self.gate
            .charge_writes(kind, &a.full, (0, files), Some(a.seq))
            .map_err(hard)
    }

    /// Charge `bytes` written through descriptor `fd` to the write quota;
    /// a spent quota halts the run.
    pub(super) fn charge_bytes(&mut self, fd: u32, bytes: u64) -> wasmtime::Result<()> {
        let name = self.fd_name(fd);
        self.gate
            .charge_writes(OpKind::FsWrite.into(), &name, (bytes, 0), None)
            .map_err(hard)
    }

    /// Charge a write of `bytes` at `offset` through descriptor `fd`: the
    /// bytes, and the hole a write past the end leaves. A sparse gigabyte
    /// costs the disk little, but it is a gigabyte to whatever reads or
    /// copies the folder afterwards, so it counts as written.
    pub(super) fn charge_write_at(
        &mut self,
        fd: u32,
        bytes: u64,
        offset: u64,
    ) -> wasmtime::Result<()> {
        let hole = self.hole_at(fd, offset);
        self.charge_bytes(fd, bytes.saturating_add(hole))
    }

    /// Whether `path` names the very directory it is relative to (`.`,
    /// `./.`). A hard link from it is a link to a directory, which the OS
    /// refuses (`not-permitted`, `EPERM`); answered so here, before the
    /// OS: under the kernel wall the OS answers otherwise for a mount's
    /// root (Landlock will not give a name inside the grant to a folder
    /// whose parent is outside it: `EXDEV`, which the guest saw as `io`),
    /// and the same call must not depend on the wall.
    pub(super) fn names_itself(path: &str) -> bool {
        !path.is_empty() && path.split('/').all(|c| c.is_empty() || c == ".")
    }

    /// Whether no file on any host could reach `end` bytes: a file offset
    /// is a signed 64-bit number, so past `i64::MAX` the OS itself answers
    /// `invalid` (`EINVAL`) and writes nothing. Such a call is answered so
    /// here, before charging a hole no file can have (which would halt the
    /// run over a request that could never write a byte).
    pub(super) fn past_any_file(end: u64) -> bool {
        end > i64::MAX as u64
    }

    /// The hole a write at `offset` through descriptor `fd` would leave
    /// past the file's end (also the growth of a `set-size` to `offset`).
    /// A directory, or a file whose length cannot be read, counts as empty.
    pub(super) fn hole_at(&self, fd: u32, offset: u64) -> u64 {
        use wasmtime::component::Resource;
        use wasmtime_wasi::filesystem::Descriptor;
        let len = match self.table.get(&Resource::<Descriptor>::new_borrow(fd)) {
            Ok(Descriptor::File(f)) => f.file.metadata().map(|m| m.len()).unwrap_or(0),
            _ => 0,
        };
        offset.saturating_sub(len)
    }

    /// The flow sink of a write through descriptor `fd`: the mount it was
    /// opened through (none when the grant labels nothing, or the mount is
    /// private to the run).
    pub(super) fn flow_sink(&self, fd: u32) -> Option<crate::flow::Sink> {
        let via = &self.fs_paths.get(&fd)?.via;
        self.gate.mount_sink(via)
    }

    /// Whether the run's mark lets a write through descriptor `fd` reach
    /// its mount: the refusal is recorded (once per mount) and the guest
    /// sees `access`.
    pub(super) fn flow_write(&mut self, fd: u32) -> Result<(), ErrorCode> {
        let Some(sink) = self.flow_sink(fd) else {
            return Ok(());
        };
        let name = self.fd_name(fd);
        self.gate
            .flow_state()
            .stream_write(&sink, OpKind::FsWrite.name(), &name)
            .map_err(|_| ErrorCode::Access)
    }

    /// A file's guest path, for records (directories are known; a file
    /// descriptor is named by what opened it).
    pub(super) fn fd_name(&self, fd: u32) -> String {
        self.fs_paths
            .get(&fd)
            .map(|d| d.path.clone())
            .unwrap_or_else(|| "(file descriptor)".into())
    }

    pub(super) fn fix_times(&self, mut st: DescriptorStat) -> DescriptorStat {
        if self.deterministic {
            st.data_access_timestamp = st.data_access_timestamp.map(|_| FIXED_TIME);
            st.data_modification_timestamp = st.data_modification_timestamp.map(|_| FIXED_TIME);
            st.status_change_timestamp = st.status_change_timestamp.map(|_| FIXED_TIME);
        }
        st
    }

    /// Under `--deterministic`, a file's identity hash comes from its guest
    /// path, not the host's device and inode numbers.
    pub(super) fn fix_hash(&self, name: &str, h: MetadataHashValue) -> MetadataHashValue {
        if !self.deterministic {
            return h;
        }
        path_hash(name)
    }
}

/// An identity hash made from a guest path, not from the host's device and
/// inode numbers (deterministic runs, folders above the mounts).
pub(super) fn path_hash(name: &str) -> MetadataHashValue {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(name.as_bytes());
    let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
    MetadataHashValue {
        lower: word(&d[..8]),
        upper: word(&d[8..16]),
    }
}
