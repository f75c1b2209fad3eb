//! WASI filesystem calls that take a path, through the gate.
//!
//! The guest's path calls reach the host relative to a directory descriptor;
//! this module remembers which guest path each directory descriptor stands
//! for (from `get-directories` and `open-at`), so every call can be charged
//! against `max_ops`, checked with the gate's path defense (same violation
//! names as plans) and audited, before wasmtime-wasi performs it through its
//! cap-std preopens. A root preopen on an empty read-only folder makes paths
//! outside every mount reach the host too, where they are refused and
//! recorded (without it wasi-libc refuses them inside the guest, unseen).

use super::{HardLimit, HostState};
use crate::op::Op;
use crate::violation::{Denial, Violation};
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemView};
use wasmtime_wasi::p2::FsError;
use wasmtime_wasi::p2::bindings::filesystem::preopens::Host as _;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    DescriptorFlags, DescriptorStat, ErrorCode, HostDescriptor, MetadataHashValue, NewTimestamp,
    OpenFlags, PathFlags,
};

/// The WASI filesystem version wasmtime-wasi 48 provides (guests importing
/// an older 0.2.x are served by the same functions).
const TYPES: &str = "wasi:filesystem/types@0.2.12";
const PREOPENS: &str = "wasi:filesystem/preopens@0.2.12";

type Res<T> = wasmtime::Result<(Result<T, ErrorCode>,)>;

/// The error code a denied call returns to the guest.
fn code(d: &Denial) -> ErrorCode {
    match d.violation {
        Violation::PathTraversal => ErrorCode::NotPermitted,
        Violation::InvalidRequest => ErrorCode::Invalid,
        _ => ErrorCode::Access,
    }
}

fn unwrap_fs<T>(r: Result<T, FsError>) -> Res<T> {
    match r {
        Ok(v) => Ok((Ok(v),)),
        Err(e) => Ok((Err(e.downcast()?),)),
    }
}

impl HostState {
    /// The guest path for `path` relative to directory `fd`.
    fn guest_path(&self, fd: u32, path: &str) -> Result<String, Denial> {
        let Some(base) = self.fs_paths.get(&fd) else {
            return Err(Denial::new(
                Violation::InvalidRequest,
                "unknown directory descriptor",
            ));
        };
        if path.starts_with('/') {
            return Err(Denial::new(
                Violation::InvalidRequest,
                format!("absolute path {path:?} in a directory-relative call"),
            ));
        }
        Ok(if base == "/" {
            format!("/{path}")
        } else {
            format!("{base}/{path}")
        })
    }

    /// Admit one path op; `Ok` carries the guest path, `Err` the guest's
    /// error code, and a hard limit traps.
    fn admit_path(
        &mut self,
        fd: u32,
        path: &str,
        make: fn(String) -> Op,
    ) -> wasmtime::Result<Result<String, ErrorCode>> {
        let full = match self.guest_path(fd, path) {
            Ok(p) => p,
            Err(d) => {
                // Still charged and audited: run the malformed request through the gate.
                let op = Op::Invalid {
                    op: make(String::new()).kind().to_string(),
                    reason: d.message.clone(),
                };
                return match self.gate.admit(op) {
                    Err(d) if d.hard => Err(wasmtime::Error::new(HardLimit(d.violation))),
                    _ => Ok(Err(code(&d))),
                };
            }
        };
        match self.gate.admit(make(full.clone())) {
            Ok(_) => Ok(Ok(full)),
            Err(d) if d.hard => Err(wasmtime::Error::new(HardLimit(d.violation))),
            Err(d) => Ok(Err(code(&d))),
        }
    }
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
            Ok(full) => full,
            Err(code) => return Ok((Err(code),)),
        }
    };
}

/// Shadow the path-taking filesystem functions with gated ones.
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut pre = linker.instance(PREOPENS)?;
    pre.func_wrap("get-directories", |mut store, (): ()| {
        let state = store.data_mut();
        let dirs = state.filesystem().get_directories()?;
        for (fd, path) in &dirs {
            state.fs_paths.insert(fd.rep(), path.clone());
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
                let full =
                    admit_or_return!(state, fd.rep(), path, if writes { write } else { read });
                let r = state.filesystem().open_at(fd, pf, path, of, df).await;
                if let Ok(new) = &r {
                    state.fs_paths.insert(new.rep(), full);
                }
                unwrap_fs(r)
            })
        },
    )?;
    t.func_wrap_async(
        "[method]descriptor.stat-at",
        |mut store, (fd, pf, path): (Resource<Descriptor>, PathFlags, String)| {
            Box::new(async move {
                let state = store.data_mut();
                admit_or_return!(state, fd.rep(), path, stat);
                let r: Result<DescriptorStat, FsError> =
                    state.filesystem().stat_at(fd, pf, path).await;
                unwrap_fs(r)
            })
        },
    )?;
    t.func_wrap_async(
        "[method]descriptor.metadata-hash-at",
        |mut store, (fd, pf, path): (Resource<Descriptor>, PathFlags, String)| {
            Box::new(async move {
                let state = store.data_mut();
                admit_or_return!(state, fd.rep(), path, stat);
                let r: Result<MetadataHashValue, FsError> =
                    state.filesystem().metadata_hash_at(fd, pf, path).await;
                unwrap_fs(r)
            })
        },
    )?;
    t.func_wrap_async(
        "[method]descriptor.readlink-at",
        |mut store, (fd, path): (Resource<Descriptor>, String)| {
            Box::new(async move {
                let state = store.data_mut();
                admit_or_return!(state, fd.rep(), path, stat);
                let r = state.filesystem().readlink_at(fd, path).await;
                unwrap_fs(r)
            })
        },
    )?;
    t.func_wrap_async(
        "[method]descriptor.create-directory-at",
        |mut store, (fd, path): (Resource<Descriptor>, String)| {
            Box::new(async move {
                let state = store.data_mut();
                admit_or_return!(state, fd.rep(), path, mkdir);
                let r = state.filesystem().create_directory_at(fd, path).await;
                unwrap_fs(r)
            })
        },
    )?;
    t.func_wrap_async(
        "[method]descriptor.remove-directory-at",
        |mut store, (fd, path): (Resource<Descriptor>, String)| {
            Box::new(async move {
                let state = store.data_mut();
                admit_or_return!(state, fd.rep(), path, remove);
                let r = state.filesystem().remove_directory_at(fd, path).await;
                unwrap_fs(r)
            })
        },
    )?;
    t.func_wrap_async(
        "[method]descriptor.unlink-file-at",
        |mut store, (fd, path): (Resource<Descriptor>, String)| {
            Box::new(async move {
                let state = store.data_mut();
                admit_or_return!(state, fd.rep(), path, remove);
                let r = state.filesystem().unlink_file_at(fd, path).await;
                unwrap_fs(r)
            })
        },
    )?;
    t.func_wrap_async(
        "[method]descriptor.symlink-at",
        |mut store, (fd, old, new): (Resource<Descriptor>, String, String)| {
            Box::new(async move {
                let state = store.data_mut();
                admit_or_return!(state, fd.rep(), new, write);
                let r = state.filesystem().symlink_at(fd, old, new).await;
                unwrap_fs(r)
            })
        },
    )?;
    t.func_wrap_async(
        "[method]descriptor.set-times-at",
        |mut store,
         (fd, pf, path, a, m): (
            Resource<Descriptor>,
            PathFlags,
            String,
            NewTimestamp,
            NewTimestamp,
        )| {
            Box::new(async move {
                let state = store.data_mut();
                admit_or_return!(state, fd.rep(), path, write);
                let r = state.filesystem().set_times_at(fd, pf, path, a, m).await;
                unwrap_fs(r)
            })
        },
    )?;
    t.func_wrap_async(
        "[method]descriptor.rename-at",
        |mut store, (fd, old, new_fd, new): (Resource<Descriptor>, String, Resource<Descriptor>, String)| {
            Box::new(async move {
                let state = store.data_mut();
                admit_or_return!(state, fd.rep(), old, remove);
                admit_or_return!(state, new_fd.rep(), new, write);
                let r = state.filesystem().rename_at(fd, old, new_fd, new).await;
                unwrap_fs(r)
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
                admit_or_return!(state, fd.rep(), old, write);
                admit_or_return!(state, new_fd.rep(), new, write);
                let r = state.filesystem().link_at(fd, pf, old, new_fd, new).await;
                unwrap_fs(r)
            })
        },
    )?;
    Ok(())
}
