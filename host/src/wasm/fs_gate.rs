//! WASI filesystem calls that take a path, through the gate.
//!
//! The guest's path calls reach the host relative to a directory descriptor;
//! this module remembers which guest path each directory descriptor stands
//! for and which mount's preopen it descends from (from `get-directories`
//! and `open-at`), so every call can be charged against `max_ops`, checked
//! with the gate's path defense (same violation names as plans) against the
//! mount the descriptor really reaches, and audited, before wasmtime-wasi
//! performs it through its cap-std preopens. A root preopen on an empty
//! read-only folder makes paths outside every mount reach the host too,
//! where they are refused and recorded (without it wasi-libc refuses them
//! inside the guest, unseen).
//!
//! Besides the check, this is where the audit stays true to the effect: an
//! admitted call that the filesystem layer then refuses because its path
//! leads out of the mount through a symlink is recorded as the denial it
//! is; a symlink whose target would lead out of its mount is never made;
//! writes and creations are charged to the write quota; and under
//! `--deterministic` the file times the guest sees come from the virtual
//! clock.

use super::{HardLimit, HostState};
use crate::budget::WriteMeter;
use crate::op::Op;
use crate::violation::{Denial, Violation};
use std::sync::Arc;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::filesystem::preopens::Host as _;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    Datetime, DescriptorFlags, DescriptorStat, ErrorCode, HostDescriptor, MetadataHashValue,
    NewTimestamp, OpenFlags, PathFlags,
};
use wasmtime_wasi::p2::{DynOutputStream, FsError, OutputStream, Pollable, StreamError};

/// The WASI filesystem version wasmtime-wasi 48 provides (guests importing
/// an older 0.2.x are served by the same functions).
const TYPES: &str = "wasi:filesystem/types@0.2.12";
const PREOPENS: &str = "wasi:filesystem/preopens@0.2.12";

/// Every file time a guest sees under `--deterministic`: the virtual wall
/// clock's 2026-01-01T00:00:00Z.
const FIXED_TIME: Datetime = Datetime {
    seconds: super::FIXED_WALL_SECONDS,
    nanoseconds: 0,
};

type Res<T> = wasmtime::Result<(Result<T, ErrorCode>,)>;

/// What the host knows of a directory descriptor.
#[derive(Clone, Debug)]
pub(crate) struct DirInfo {
    /// The guest path it stands for.
    path: String,
    /// The guest path of the preopen it descends from: its effects land in
    /// that mount's host folder.
    via: String,
}

/// The error code a denied call returns to the guest.
fn code(d: &Denial) -> ErrorCode {
    match d.violation {
        Violation::PathTraversal => ErrorCode::NotPermitted,
        Violation::InvalidRequest => ErrorCode::Invalid,
        _ => ErrorCode::Access,
    }
}

fn hard(d: Denial) -> wasmtime::Error {
    wasmtime::Error::new(HardLimit(d.violation))
}

/// An admitted path call: its guest path, the mount it goes through, and
/// its sequence number in the audit.
struct Admitted {
    full: String,
    via: String,
    seq: u64,
    write: bool,
}

impl HostState {
    /// The guest path for `path` relative to directory `fd`, and the mount
    /// the descriptor reaches.
    fn guest_path(&self, fd: u32, path: &str) -> Result<(String, String), Denial> {
        let Some(dir) = self.fs_paths.get(&fd) else {
            return Err(Denial::new(
                Violation::InvalidRequest,
                "unknown directory descriptor",
            ));
        };
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
    fn admit_path(
        &mut self,
        fd: u32,
        path: &str,
        make: fn(String) -> Op,
    ) -> wasmtime::Result<Result<Admitted, ErrorCode>> {
        let (full, via) = match self.guest_path(fd, path) {
            Ok(p) => p,
            Err(d) => {
                // Still charged and audited: run the malformed request through the gate.
                let op = Op::Invalid {
                    op: make(String::new()).kind().to_string(),
                    reason: d.message.clone(),
                };
                return match self.gate.admit(op) {
                    Err(d) if d.hard => Err(hard(d)),
                    _ => Ok(Err(code(&d))),
                };
            }
        };
        let op = make(full.clone());
        let write = matches!(
            op,
            Op::FsWrite { .. } | Op::FsRemove { .. } | Op::FsMkdir { .. }
        );
        match self.gate.admit_via(op, &via) {
            Ok(seq) => Ok(Ok(Admitted {
                full,
                via,
                seq,
                write,
            })),
            Err(d) if d.hard => Err(hard(d)),
            Err(d) => Ok(Err(code(&d))),
        }
    }

    /// After the effect: if the filesystem layer refused it and the path
    /// leads out of its mount through a symlink, record the denial it is.
    fn settle<T>(&mut self, a: &Admitted, r: Result<T, FsError>) -> Res<T> {
        let r = match r {
            Ok(v) => return Ok((Ok(v),)),
            Err(e) => e.downcast()?,
        };
        let refused = matches!(
            r,
            ErrorCode::NotPermitted | ErrorCode::Access | ErrorCode::Loop
        );
        if refused && self.gate.escapes(&a.via, &a.full) {
            let violation = if a.write {
                Violation::FsWriteDenied
            } else {
                Violation::FsReadDenied
            };
            let message = format!(
                "{} leads outside its mount through a symbolic link",
                crate::bound::clip(&a.full)
            );
            self.gate
                .refuse_admitted(a.seq, Denial::new(violation, message));
        }
        Ok((Err(r),))
    }

    /// Charge `files` created by admitted call `a` to the write quota; a
    /// spent quota turns its record into the refusal and halts the run.
    fn charge_files(&mut self, a: &Admitted, files: u64) -> wasmtime::Result<()> {
        let kind = if a.write { "fs_write" } else { "fs_read" };
        self.gate
            .charge_writes(kind, &a.full, (0, files), Some(a.seq))
            .map_err(hard)
    }

    /// Charge `bytes` written through descriptor `fd` to the write quota;
    /// a spent quota halts the run.
    fn charge_bytes(&mut self, fd: u32, bytes: u64) -> wasmtime::Result<()> {
        let name = self.fd_name(fd);
        self.gate
            .charge_writes("fs_write", &name, (bytes, 0), None)
            .map_err(hard)
    }

    /// A file's guest path, for records (directories are known; a file
    /// descriptor is named by what opened it).
    fn fd_name(&self, fd: u32) -> String {
        self.fs_paths
            .get(&fd)
            .map(|d| d.path.clone())
            .unwrap_or_else(|| "(file descriptor)".into())
    }

    fn fix_times(&self, mut st: DescriptorStat) -> DescriptorStat {
        if self.deterministic {
            st.data_access_timestamp = st.data_access_timestamp.map(|_| FIXED_TIME);
            st.data_modification_timestamp = st.data_modification_timestamp.map(|_| FIXED_TIME);
            st.status_change_timestamp = st.status_change_timestamp.map(|_| FIXED_TIME);
        }
        st
    }

    /// Under `--deterministic`, a file's identity hash comes from its guest
    /// path, not the host's device and inode numbers.
    fn fix_hash(&self, name: &str, h: MetadataHashValue) -> MetadataHashValue {
        if !self.deterministic {
            return h;
        }
        use sha2::{Digest, Sha256};
        let d = Sha256::digest(name.as_bytes());
        let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
        MetadataHashValue {
            lower: word(&d[..8]),
            upper: word(&d[8..16]),
        }
    }
}

/// Where a symlink may point: relative, and resolved against the link's
/// folder, still inside the mount the link is made in. A target with `..`
/// that stays inside is refused too (as paths with `..` are): renaming the
/// link's folder later could make it lead out.
fn check_link_target(link: &str, via: &str, target: &str) -> Result<(), Denial> {
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

fn read(p: String) -> Op {
    Op::FsRead { path: p }
}
fn stat(p: String) -> Op {
    Op::FsStat { path: p }
}
fn write(p: String) -> Op {
    Op::FsWrite {
        path: p,
        content: Vec::new(),
    }
}
fn remove(p: String) -> Op {
    Op::FsRemove { path: p }
}
fn mkdir(p: String) -> Op {
    Op::FsMkdir { path: p }
}

macro_rules! admit_or_return {
    ($state:expr, $fd:expr, $path:expr, $make:expr) => {
        match $state.admit_path($fd, &$path, $make)? {
            Ok(a) => a,
            Err(code) => return Ok((Err(code),)),
        }
    };
}

/// A file output stream (`write-via-stream`, `append-via-stream`) whose
/// bytes are charged to the write quota before they are written.
struct QuotaStream {
    inner: DynOutputStream,
    meter: Arc<WriteMeter>,
}

impl QuotaStream {
    fn charge(&self, n: usize) -> Result<(), StreamError> {
        if self.meter.try_bytes(n as u64) {
            Ok(())
        } else {
            Err(StreamError::Trap(wasmtime::Error::new(HardLimit(
                Violation::MaxWriteBytes,
            ))))
        }
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for QuotaStream {
    async fn ready(&mut self) {
        self.inner.ready().await
    }
}

#[wasmtime_wasi::async_trait]
impl OutputStream for QuotaStream {
    fn write(&mut self, bytes: bytes::Bytes) -> Result<(), StreamError> {
        self.charge(bytes.len())?;
        self.inner.write(bytes)
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        self.inner.flush()
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        self.inner.check_write()
    }

    fn write_zeroes(&mut self, nelem: usize) -> Result<(), StreamError> {
        self.charge(nelem)?;
        self.inner.write_zeroes(nelem)
    }

    async fn cancel(&mut self) {
        self.inner.cancel().await
    }
}

/// Swap the stream wasmtime-wasi made for one that charges the quota.
fn metered(
    state: &mut HostState,
    r: Result<Resource<DynOutputStream>, FsError>,
) -> Res<Resource<DynOutputStream>> {
    let stream = match r {
        Ok(s) => s,
        Err(e) => return Ok((Err(e.downcast()?),)),
    };
    let inner = state.table.delete(stream)?;
    let meter = state.gate.write_meter();
    let wrapped: DynOutputStream = Box::new(QuotaStream { inner, meter });
    Ok((Ok(state.table.push(wrapped)?),))
}

/// Shadow the path-taking filesystem functions with gated ones, and the
/// writing ones with metered ones.
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut pre = linker.instance(PREOPENS)?;
    pre.func_wrap("get-directories", |mut store, (): ()| {
        let state = store.data_mut();
        let dirs = state.filesystem().get_directories()?;
        for (fd, path) in &dirs {
            let info = DirInfo {
                path: path.clone(),
                via: path.clone(),
            };
            state.fs_paths.insert(fd.rep(), info);
        }
        Ok((dirs,))
    })?;

    let mut t = linker.instance(TYPES)?;
    t.func_wrap_async(
        "[method]descriptor.open-at",
        |mut store,
         (fd, pf, path, of, df): (
            Resource<Descriptor>,
            PathFlags,
            String,
            OpenFlags,
            DescriptorFlags,
        )| {
            Box::new(async move {
                let state = store.data_mut();
                let writes = of
                    .intersects(OpenFlags::CREATE | OpenFlags::TRUNCATE | OpenFlags::EXCLUSIVE)
                    || df.intersects(DescriptorFlags::WRITE | DescriptorFlags::MUTATE_DIRECTORY);
                let dir = fd.rep();
                let a = admit_or_return!(state, dir, path, if writes { write } else { read });
                let creates = of.contains(OpenFlags::CREATE)
                    && state
                        .filesystem()
                        .stat_at(Resource::new_borrow(dir), PathFlags::empty(), path.clone())
                        .await
                        .is_err();
                if creates {
                    // Charged before the file exists: a spent quota makes
                    // nothing.
                    state.charge_files(&a, 1)?;
                }
                let r = state.filesystem().open_at(fd, pf, path, of, df).await;
                if let Ok(new) = &r {
                    let info = DirInfo {
                        path: a.full.clone(),
                        via: a.via.clone(),
                    };
                    state.fs_paths.insert(new.rep(), info);
                }
                state.settle(&a, r)
            })
        },
    )?;
    t.func_wrap_async(
        "[method]descriptor.stat-at",
        |mut store, (fd, pf, path): (Resource<Descriptor>, PathFlags, String)| {
            Box::new(async move {
                let state = store.data_mut();
                let a = admit_or_return!(state, fd.rep(), path, stat);
                let r = state.filesystem().stat_at(fd, pf, path).await;
                let r = r.map(|st| state.fix_times(st));
                state.settle(&a, r)
            })
        },
    )?;
    t.func_wrap_async(
        "[method]descriptor.stat",
        |mut store, (fd,): (Resource<Descriptor>,)| {
            Box::new(async move {
                let state = store.data_mut();
                let r = state.filesystem().stat(fd).await;
                match r {
                    Ok(st) => Ok((Ok(state.fix_times(st)),)),
                    Err(e) => Ok((Err(e.downcast()?),)),
                }
            })
        },
    )?;
    t.func_wrap_async(
        "[method]descriptor.metadata-hash-at",
        |mut store, (fd, pf, path): (Resource<Descriptor>, PathFlags, String)| {
            Box::new(async move {
                let state = store.data_mut();
                let a = admit_or_return!(state, fd.rep(), path, stat);
                let r: Result<MetadataHashValue, FsError> =
                    state.filesystem().metadata_hash_at(fd, pf, path).await;
                let r = r.map(|h| state.fix_hash(&a.full, h));
                state.settle(&a, r)
            })
        },
    )?;
    t.func_wrap_async(
        "[method]descriptor.metadata-hash",
        |mut store, (fd,): (Resource<Descriptor>,)| {
            Box::new(async move {
                let state = store.data_mut();
                let name = state.fd_name(fd.rep());
                match state.filesystem().metadata_hash(fd).await {
                    Ok(h) => Ok((Ok(state.fix_hash(&name, h)),)),
                    Err(e) => Ok((Err(e.downcast()?),)),
                }
            })
        },
    )?;
    t.func_wrap_async(
        "[method]descriptor.readlink-at",
        |mut store, (fd, path): (Resource<Descriptor>, String)| {
            Box::new(async move {
                let state = store.data_mut();
                let a = admit_or_return!(state, fd.rep(), path, stat);
                let r = state.filesystem().readlink_at(fd, path).await;
                state.settle(&a, r)
            })
        },
    )?;
    t.func_wrap_async(
        "[method]descriptor.create-directory-at",
        |mut store, (fd, path): (Resource<Descriptor>, String)| {
            Box::new(async move {
                let state = store.data_mut();
                let a = admit_or_return!(state, fd.rep(), path, mkdir);
                state.charge_files(&a, 1)?;
                let r = state.filesystem().create_directory_at(fd, path).await;
                state.settle(&a, r)
            })
        },
    )?;
    t.func_wrap_async(
        "[method]descriptor.remove-directory-at",
        |mut store, (fd, path): (Resource<Descriptor>, String)| {
            Box::new(async move {
                let state = store.data_mut();
                let a = admit_or_return!(state, fd.rep(), path, remove);
                let r = state.filesystem().remove_directory_at(fd, path).await;
                state.settle(&a, r)
            })
        },
    )?;
    t.func_wrap_async(
        "[method]descriptor.unlink-file-at",
        |mut store, (fd, path): (Resource<Descriptor>, String)| {
            Box::new(async move {
                let state = store.data_mut();
                let a = admit_or_return!(state, fd.rep(), path, remove);
                let r = state.filesystem().unlink_file_at(fd, path).await;
                state.settle(&a, r)
            })
        },
    )?;
    t.func_wrap_async(
        "[method]descriptor.symlink-at",
        |mut store, (fd, old, new): (Resource<Descriptor>, String, String)| {
            Box::new(async move {
                let state = store.data_mut();
                let a = admit_or_return!(state, fd.rep(), new, write);
                // The host tree never holds a link that leaves the grant:
                // an operator reading the folder afterwards would follow it.
                if let Err(d) = check_link_target(&a.full, &a.via, &old) {
                    let code = code(&d);
                    state.gate.refuse_admitted(a.seq, d);
                    return Ok((Err(code),));
                }
                state.charge_files(&a, 1)?;
                let r = state.filesystem().symlink_at(fd, old, new).await;
                state.settle(&a, r)
            })
        },
    )?;
    t.func_wrap_async(
        "[method]descriptor.set-times-at",
        |mut store,
         (fd, pf, path, at, mt): (
            Resource<Descriptor>,
            PathFlags,
            String,
            NewTimestamp,
            NewTimestamp,
        )| {
            Box::new(async move {
                let state = store.data_mut();
                let a = admit_or_return!(state, fd.rep(), path, write);
                let r = state.filesystem().set_times_at(fd, pf, path, at, mt).await;
                state.settle(&a, r)
            })
        },
    )?;
    t.func_wrap_async(
        "[method]descriptor.rename-at",
        |mut store, (fd, old, new_fd, new): (Resource<Descriptor>, String, Resource<Descriptor>, String)| {
            Box::new(async move {
                let state = store.data_mut();
                let a = admit_or_return!(state, fd.rep(), old, remove);
                let b = admit_or_return!(state, new_fd.rep(), new, write);
                let r = state.filesystem().rename_at(fd, old, new_fd, new).await;
                if r.is_err() && state.gate.escapes(&a.via, &a.full) {
                    return state.settle(&a, r);
                }
                state.settle(&b, r)
            })
        },
    )?;
    t.func_wrap_async(
        "[method]descriptor.link-at",
        |mut store,
         (fd, pf, old, new_fd, new): (
            Resource<Descriptor>,
            PathFlags,
            String,
            Resource<Descriptor>,
            String,
        )| {
            Box::new(async move {
                let state = store.data_mut();
                // A hard link is a second name for the same file: writable
                // through the new name, so the old one must be writable too.
                let a = admit_or_return!(state, fd.rep(), old, write);
                let b = admit_or_return!(state, new_fd.rep(), new, write);
                state.charge_files(&b, 1)?;
                let r = state.filesystem().link_at(fd, pf, old, new_fd, new).await;
                if r.is_err() && state.gate.escapes(&a.via, &a.full) {
                    return state.settle(&a, r);
                }
                state.settle(&b, r)
            })
        },
    )?;

    // Writes that take no path: charged to the write quota.
    t.func_wrap_async(
        "[method]descriptor.write",
        |mut store, (fd, buf, offset): (Resource<Descriptor>, Vec<u8>, u64)| {
            Box::new(async move {
                let state = store.data_mut();
                state.charge_bytes(fd.rep(), buf.len() as u64)?;
                match state.filesystem().write(fd, buf, offset).await {
                    Ok(n) => Ok((Ok(n),)),
                    Err(e) => Ok((Err(e.downcast()?),)),
                }
            })
        },
    )?;
    t.func_wrap_async(
        "[method]descriptor.set-size",
        |mut store, (fd, size): (Resource<Descriptor>, u64)| {
            Box::new(async move {
                let state = store.data_mut();
                // Growth counts as written: a sparse gigabyte is still a
                // gigabyte to whoever copies the folder afterwards.
                let now = state
                    .filesystem()
                    .stat(Resource::new_borrow(fd.rep()))
                    .await
                    .map(|st| st.size)
                    .unwrap_or(0);
                state.charge_bytes(fd.rep(), size.saturating_sub(now))?;
                match state.filesystem().set_size(fd, size).await {
                    Ok(()) => Ok((Ok(()),)),
                    Err(e) => Ok((Err(e.downcast()?),)),
                }
            })
        },
    )?;
    t.func_wrap(
        "[method]descriptor.write-via-stream",
        |mut store, (fd, offset): (Resource<Descriptor>, u64)| {
            let state = store.data_mut();
            let r = state.filesystem().write_via_stream(fd, offset);
            metered(state, r)
        },
    )?;
    t.func_wrap(
        "[method]descriptor.append-via-stream",
        |mut store, (fd,): (Resource<Descriptor>,)| {
            let state = store.data_mut();
            let r = state.filesystem().append_via_stream(fd);
            metered(state, r)
        },
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_targets_stay_inside_their_mount() {
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
