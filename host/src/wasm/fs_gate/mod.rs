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

mod admit;
mod link;
mod printed;
mod quota;
pub(crate) mod wasi03;
mod wasi03_read;
mod wasi03_write;

use super::{HardLimit, HostState};
use crate::op::Op;
use crate::violation::{Denial, Violation};
use link::check_link_target;
use printed::printed;
use quota::{Start, metered};
use wasmtime::component::{Linker, LinkerInstance, Resource};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemView};
use wasmtime_wasi::p2::FsError;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    DescriptorFlags, ErrorCode, HostDescriptor, MetadataHashValue, NewTimestamp, OpenFlags,
    PathFlags,
};

pub(crate) use admit::DirInfo;

/// The WASI filesystem version wasmtime-wasi 50 provides (guests importing
/// an older 0.2.x are served by the same functions).
const TYPES: &str = "wasi:filesystem/types@0.2.12";
const PREOPENS: &str = "wasi:filesystem/preopens@0.2.12";
type Res<T> = wasmtime::Result<(Result<T, ErrorCode>,)>;

/// The error code a denied call returns to the guest through a descriptor
/// of the mount at `via`: the code WASI itself gives for the same refusal
/// (the report and audit keep the project's violation names). A path
/// outside every mount gets what a program sees with no preopen there
/// (`no-entry`); a write through a read-only mount, or at a mount's root,
/// what a read-only preopen gives (`not-permitted`); a `..` what an escape
/// from a preopen gives (`not-permitted`).
fn code(d: &Denial, mounted: bool) -> ErrorCode {
    match d.violation {
        Violation::PathTraversal => ErrorCode::NotPermitted,
        Violation::InvalidRequest => ErrorCode::Invalid,
        Violation::FsReadDenied | Violation::FsWriteDenied if !mounted => ErrorCode::NoEntry,
        Violation::FsReadDenied | Violation::FsWriteDenied => ErrorCode::NotPermitted,
        _ => ErrorCode::Access,
    }
}

fn hard(d: Denial) -> wasmtime::Error {
    wasmtime::Error::new(HardLimit(d.violation))
}

fn read(p: String) -> Op {
    Op::read(p)
}
fn stat(p: String) -> Op {
    Op::stat(p)
}
fn write(p: String) -> Op {
    Op::write(p, Vec::new())
}
fn remove(p: String) -> Op {
    Op::remove(p)
}
fn mkdir(p: String) -> Op {
    Op::mkdir(p)
}

macro_rules! admit_or_return {
    ($state:expr, $fd:expr, $path:expr, $make:expr) => {
        match $state.admit_path($fd, &$path, $make)? {
            Ok(a) => a,
            Err(code) => return Ok((Err(code),)),
        }
    };
}

impl HostState {
    /// The preopened folders (the grant's mounts, then the empty root),
    /// each remembered as the guest path it stands for (0.2's and 0.3's
    /// `get-directories`).
    fn lend_directories(&mut self) -> wasmtime::Result<Vec<(Resource<Descriptor>, String)>> {
        // A folder that cannot be lent ends the run with the reason: the
        // grant's folder is gone, and the guest was promised it.
        let preopens = self
            .preopens
            .lend(&self.gate)
            .map_err(wasmtime::Error::msg)?;
        let mut dirs = Vec::with_capacity(preopens.len());
        for (dir, path) in preopens {
            let fd = self.table.push(Descriptor::Dir(dir.clone()))?;
            let info = DirInfo {
                path: path.clone(),
                via: path.clone(),
            };
            self.fs_paths.insert(fd.rep(), info);
            dirs.push((fd, path.clone()));
        }
        Ok(dirs)
    }
}

/// The start both WASI versions' gates share: `preopens`'s folders lent as
/// the gate knows them, and the instance `types` with its descriptor drop
/// (as wasmtime-wasi's) forgetting what the run knew of the descriptor: its
/// place among the files it holds, its path.
pub(super) fn gated_types<'a>(
    linker: &'a mut Linker<HostState>,
    preopens: &str,
    types: &str,
) -> wasmtime::Result<LinkerInstance<'a, HostState>> {
    linker.allow_shadowing(true);
    linker
        .instance(preopens)?
        .func_wrap("get-directories", |mut store, (): ()| {
            Ok((store.data_mut().lend_directories()?,))
        })?;
    let mut t = linker.instance(types)?;
    super::held::on_drop::<Descriptor>(&mut t, "descriptor", |state, rep| {
        state.open_files.release(rep);
        state.fs_paths.remove(&rep);
    })?;
    Ok(t)
}

/// Shadow the path-taking filesystem functions with gated ones, and the
/// writing ones with metered ones.
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    let mut t = gated_types(linker, PREOPENS, TYPES)?;
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
                if state.open_files.full() {
                    // The run holds as many as it may (`held.rs`): after
                    // the gate (a denial is on record as one, whatever the
                    // run holds), failed as the OS fails past its own
                    // limit, the allowed op's record as for any open the
                    // file layer then fails.
                    return Ok((Err(ErrorCode::Io),));
                }
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
                    state.open_files.hold(new.rep());
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
                if state.gate.mount_access(&a.via).is_none() {
                    // Allowed through the empty root: a folder above the
                    // mounts, made up rather than looked for on the host.
                    return Ok((Ok(admit::FOLDER_ABOVE_MOUNTS),));
                }
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
                if state.gate.mount_access(&a.via).is_none() {
                    // A folder above the mounts (see stat-at).
                    return Ok((Ok(admit::path_hash(&a.full)),));
                }
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
                    let code = code(&d, true);
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
                state.settle_any(&[&a, &b], r)
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
                if HostState::names_itself(&old) {
                    return Ok((Err(ErrorCode::NotPermitted),));
                }
                state.charge_files(&b, 1)?;
                let r = state.filesystem().link_at(fd, pf, old, new_fd, new).await;
                state.settle_any(&[&a, &b], r)
            })
        },
    )?;

    t.func_wrap_async(
        "[method]descriptor.read-directory",
        |mut store, (fd,): (Resource<Descriptor>,)| {
            Box::new(async move {
                let state = store.data_mut();
                // A recording keeps the folder's entries as first listed.
                if let Some(dir) = state.fs_paths.get(&fd.rep()).cloned() {
                    state.gate.sight_listing(&dir.via, &dir.path);
                }
                match state.filesystem().read_directory(fd).await {
                    Ok(entries) => Ok((Ok(entries),)),
                    Err(e) => Ok((Err(e.downcast()?),)),
                }
            })
        },
    )?;

    // Reads that take no path: fingerprinted for the flow rules' evidence
    // when the grant asks for it.
    t.func_wrap_async(
        "[method]descriptor.read",
        |mut store, (fd, len, offset): (Resource<Descriptor>, u64, u64)| {
            Box::new(async move {
                let state = store.data_mut();
                let label = state.evidence_label(fd.rep());
                match state.filesystem().read(fd, len, offset).await {
                    Ok((bytes, end)) => {
                        if let Some(l) = label {
                            state.gate.flow_state().fingerprint(&l, &bytes);
                        }
                        Ok((Ok((bytes, end)),))
                    }
                    Err(e) => Ok((Err(e.downcast()?),)),
                }
            })
        },
    )?;
    t.func_wrap(
        "[method]descriptor.read-via-stream",
        |mut store, (fd, offset): (Resource<Descriptor>, u64)| {
            let state = store.data_mut();
            let label = state.evidence_label(fd.rep());
            let r = state.filesystem().read_via_stream(fd, offset);
            printed(state, label, r)
        },
    )?;

    // Writes that take no path: charged to the write quota.
    t.func_wrap_async(
        "[method]descriptor.write",
        |mut store, (fd, buf, offset): (Resource<Descriptor>, Vec<u8>, u64)| {
            Box::new(async move {
                let state = store.data_mut();
                if let Err(code) = state.flow_write(fd.rep()) {
                    return Ok((Err(code),));
                }
                if HostState::past_any_file(offset) {
                    return Ok((Err(ErrorCode::Invalid),));
                }
                state.charge_write_at(fd.rep(), buf.len() as u64, offset)?;
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
                if let Err(code) = state.flow_write(fd.rep()) {
                    return Ok((Err(code),));
                }
                if HostState::past_any_file(size) {
                    return Ok((Err(ErrorCode::Invalid),));
                }
                // Growth counts as written: the hole a write at `size`
                // would leave.
                state.charge_write_at(fd.rep(), 0, size)?;
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
            let rep = fd.rep();
            // A stream starting past the end leaves a hole at its first
            // write, charged with that write; one starting where no file
            // can reach writes nothing and is charged nothing (each write
            // answered `invalid`, as the OS answers).
            let start = if HostState::past_any_file(offset) {
                Start::PastAnyFile
            } else {
                Start::Hole(state.hole_at(rep, offset))
            };
            let r = state.filesystem().write_via_stream(fd, offset);
            metered(state, rep, r, start)
        },
    )?;
    t.func_wrap(
        "[method]descriptor.append-via-stream",
        |mut store, (fd,): (Resource<Descriptor>,)| {
            let state = store.data_mut();
            let rep = fd.rep();
            let r = state.filesystem().append_via_stream(fd);
            metered(state, rep, r, Start::Hole(0))
        },
    )?;
    Ok(())
}
