//! WASI 0.3's filesystem through the gate.
//!
//! 0.3's descriptor is the same host type as 0.2's (`fs_paths` and the
//! open-files bound serve both), and its path calls are admitted exactly as
//! 0.2's are (`admit.rs`: op charging, the path defense, deny carve-outs,
//! the audit, an escape through a symlink recorded as the denial it is,
//! creations charged to the write quota, link targets kept inside); its
//! writes, which arrive as streams, are metered chunk by chunk
//! (`wasi03_write.rs`), and its reads fingerprinted for the flow rules'
//! evidence when the grant asks for it (`wasi03_read.rs`). Each shadow admits through the gate, then calls
//! wasmtime-wasi's own 0.3 function for the effect.

use super::admit::{Admitted, FOLDER_ABOVE_MOUNTS};
use super::{mkdir, read, remove, stat, write};
use crate::op::Op;
use crate::wasm::HostState;
use wasmtime::component::{Access, Accessor, Linker, Resource};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystem, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::filesystem::types::ErrorCode as Code02;
use wasmtime_wasi::p3::bindings::clocks::system_clock::Instant;
use wasmtime_wasi::p3::bindings::filesystem::types::{
    DescriptorFlags, DescriptorStat, DescriptorType, ErrorCode, HostDescriptorWithStore,
    MetadataHashValue, NewTimestamp, OpenFlags, PathFlags,
};
use wasmtime_wasi::p3::filesystem::FilesystemResult;

const TYPES: &str = "wasi:filesystem/types@0.3.0";
const PREOPENS: &str = "wasi:filesystem/preopens@0.3.0";
type Res<T> = wasmtime::Result<(Result<T, ErrorCode>,)>;

/// The real call's view of the store.
fn fs(acc: &Accessor<HostState>) -> Accessor<HostState, WasiFilesystem> {
    acc.with_getter::<WasiFilesystem>(<HostState as WasiFilesystemView>::filesystem)
}

/// The 0.3 code for an answer the gate gives in 0.2's terms.
fn code(c: Code02) -> ErrorCode {
    match c {
        Code02::NotPermitted => ErrorCode::NotPermitted,
        Code02::NoEntry => ErrorCode::NoEntry,
        Code02::BadDescriptor => ErrorCode::BadDescriptor,
        Code02::Invalid => ErrorCode::Invalid,
        Code02::Loop => ErrorCode::Loop,
        Code02::Io => ErrorCode::Io,
        _ => ErrorCode::Access,
    }
}

/// Admit a path call from inside the event loop: `Ok(Ok)` goes on, `Ok(Err)`
/// is the guest's answer, `Err` a hard limit.
fn admit(
    acc: &Accessor<HostState>,
    fd: u32,
    path: &str,
    make: fn(String) -> Op,
) -> wasmtime::Result<Result<Admitted, ErrorCode>> {
    acc.with(|mut a| a.get().admit_path(fd, path, make))
        .map(|r| r.map_err(code))
}

/// After the effect, as `HostState::settle_any`: a refusal whose path (of
/// those the call names) leads out of its mount through a symlink is the
/// denial it is.
fn settle<T>(acc: &Accessor<HostState>, calls: &[&Admitted], r: FilesystemResult<T>) -> Res<T> {
    let e = match r {
        Ok(v) => return Ok((Ok(v),)),
        Err(e) => e.downcast()?,
    };
    if matches!(
        e,
        ErrorCode::NotPermitted | ErrorCode::Access | ErrorCode::Loop
    ) {
        acc.with(|mut s| s.get().record_escape(calls));
    }
    Ok((Err(e),))
}

/// Charge `files` created by admitted call `a` to the write quota.
fn charge_files(acc: &Accessor<HostState>, a: &Admitted, files: u64) -> wasmtime::Result<()> {
    acc.with(|mut s| s.get().charge_files(a, files))
}

/// The deterministic wall clock's reading, in 0.3's types.
fn fixed_instant() -> Instant {
    Instant {
        seconds: crate::wasm::clocks::FIXED_WALL_SECONDS as i64,
        nanoseconds: 0,
    }
}

/// The stat of a folder above the mounts, in 0.3's types.
fn folder_above_mounts() -> DescriptorStat {
    let t = Some(fixed_instant());
    DescriptorStat {
        type_: DescriptorType::Directory,
        link_count: FOLDER_ABOVE_MOUNTS.link_count,
        size: 0,
        data_access_timestamp: t,
        data_modification_timestamp: t,
        status_change_timestamp: t,
    }
}

/// File times from the virtual clock under `--deterministic`.
fn fix_times(acc: &Accessor<HostState>, mut st: DescriptorStat) -> DescriptorStat {
    if acc.with(|mut s| s.get().deterministic) {
        let fixed = Some(fixed_instant());
        st.data_access_timestamp = st.data_access_timestamp.and(fixed);
        st.data_modification_timestamp = st.data_modification_timestamp.and(fixed);
        st.status_change_timestamp = st.status_change_timestamp.and(fixed);
    }
    st
}

/// An identity hash made from a guest path (`admit::path_hash`), in 0.3's
/// types.
fn path_hash(name: &str) -> MetadataHashValue {
    let p = super::admit::path_hash(name);
    MetadataHashValue {
        lower: p.lower,
        upper: p.upper,
    }
}

/// A file's identity from its guest path under `--deterministic`.
fn fix_hash(acc: &Accessor<HostState>, name: &str, h: MetadataHashValue) -> MetadataHashValue {
    match acc.with(|mut s| s.get().deterministic) {
        true => path_hash(name),
        false => h,
    }
}

macro_rules! admitted {
    ($acc:expr, $fd:expr, $path:expr, $make:expr) => {
        match admit($acc, $fd, &$path, $make)? {
            Ok(a) => a,
            Err(c) => return Ok((Err(c),)),
        }
    };
}

/// A call that takes one path and nothing else: admitted as `$op`, then
/// wasmtime-wasi's `$call`, then settled.
macro_rules! path_call {
    ($t:expr, $name:literal, $op:expr, $call:ident) => {
        $t.func_wrap_concurrent($name, |acc, (fd, path): (Resource<Descriptor>, String)| {
            Box::pin(async move {
                let a = admitted!(acc, fd.rep(), path, $op);
                let r = <WasiFilesystem as HostDescriptorWithStore<HostState>>::$call(
                    &fs(acc),
                    fd,
                    path,
                )
                .await;
                settle(acc, &[&a], r)
            })
        })?
    };
}

/// 0.3's preopens, and the path-taking descriptor calls shadowed with gated
/// ones (after wasmtime-wasi's 0.3 filesystem is in `linker`).
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    let mut t = super::gated_types(linker, PREOPENS, TYPES)?;
    t.func_wrap_concurrent(
        "[method]descriptor.open-at",
        |acc,
         (fd, pf, path, of, df): (
            Resource<Descriptor>,
            PathFlags,
            String,
            OpenFlags,
            DescriptorFlags,
        )| {
            Box::pin(async move {
                let writes = of
                    .intersects(OpenFlags::CREATE | OpenFlags::TRUNCATE | OpenFlags::EXCLUSIVE)
                    || df.intersects(DescriptorFlags::WRITE | DescriptorFlags::MUTATE_DIRECTORY);
                let dir = fd.rep();
                let a = admitted!(acc, dir, path, if writes { write } else { read });
                if acc.with(|mut s| s.get().open_files.full()) {
                    // As 0.2's: after the gate, failed as the OS fails.
                    return Ok((Err(ErrorCode::Io),));
                }
                if of.contains(OpenFlags::CREATE) {
                    let found = <WasiFilesystem as HostDescriptorWithStore<HostState>>::stat_at(
                        &fs(acc),
                        Resource::new_borrow(dir),
                        PathFlags::empty(),
                        path.clone(),
                    )
                    .await;
                    if found.is_err() {
                        // Charged before the file exists.
                        charge_files(acc, &a, 1)?;
                    }
                }
                let r = <WasiFilesystem as HostDescriptorWithStore<HostState>>::open_at(
                    &fs(acc),
                    fd,
                    pf,
                    path,
                    of,
                    df,
                )
                .await;
                if let Ok(new) = &r {
                    let rep = new.rep();
                    acc.with(|mut s| {
                        let state = s.get();
                        state.open_files.hold(rep);
                        let info = super::DirInfo {
                            path: a.full.clone(),
                            via: a.via.clone(),
                        };
                        state.fs_paths.insert(rep, info);
                    });
                }
                settle(acc, &[&a], r)
            })
        },
    )?;
    t.func_wrap_concurrent(
        "[method]descriptor.stat-at",
        |acc, (fd, pf, path): (Resource<Descriptor>, PathFlags, String)| {
            Box::pin(async move {
                let a = admitted!(acc, fd.rep(), path, stat);
                if acc.with(|mut s| s.get().gate.mount_access(&a.via).is_none()) {
                    return Ok((Ok(folder_above_mounts()),));
                }
                let r = <WasiFilesystem as HostDescriptorWithStore<HostState>>::stat_at(
                    &fs(acc),
                    fd,
                    pf,
                    path,
                )
                .await;
                let r = r.map(|st| fix_times(acc, st));
                settle(acc, &[&a], r)
            })
        },
    )?;
    t.func_wrap_concurrent(
        "[method]descriptor.stat",
        |acc, (fd,): (Resource<Descriptor>,)| {
            Box::pin(async move {
                let r = <WasiFilesystem as HostDescriptorWithStore<HostState>>::stat(&fs(acc), fd)
                    .await;
                match r {
                    Ok(st) => Ok((Ok(fix_times(acc, st)),)),
                    Err(e) => Ok((Err(e.downcast()?),)),
                }
            })
        },
    )?;
    t.func_wrap_concurrent(
        "[method]descriptor.metadata-hash-at",
        |acc, (fd, pf, path): (Resource<Descriptor>, PathFlags, String)| {
            Box::pin(async move {
                let a = admitted!(acc, fd.rep(), path, stat);
                if acc.with(|mut s| s.get().gate.mount_access(&a.via).is_none()) {
                    return Ok((Ok(path_hash(&a.full)),));
                }
                let r = <WasiFilesystem as HostDescriptorWithStore<HostState>>::metadata_hash_at(
                    &fs(acc),
                    fd,
                    pf,
                    path,
                )
                .await;
                let r = r.map(|h| fix_hash(acc, &a.full, h));
                settle(acc, &[&a], r)
            })
        },
    )?;
    t.func_wrap_concurrent(
        "[method]descriptor.metadata-hash",
        |acc, (fd,): (Resource<Descriptor>,)| {
            Box::pin(async move {
                let name = acc.with(|mut s| s.get().fd_name(fd.rep()));
                let r = <WasiFilesystem as HostDescriptorWithStore<HostState>>::metadata_hash(
                    &fs(acc),
                    fd,
                )
                .await;
                match r {
                    Ok(h) => Ok((Ok(fix_hash(acc, &name, h)),)),
                    Err(e) => Ok((Err(e.downcast()?),)),
                }
            })
        },
    )?;
    path_call!(t, "[method]descriptor.readlink-at", stat, readlink_at);
    t.func_wrap(
        "[method]descriptor.read-directory",
        |mut store, (fd,): (Resource<Descriptor>,)| {
            let state = store.data_mut();
            // A recording keeps the folder's entries as first listed.
            if let Some(dir) = state.fs_paths.get(&fd.rep()).cloned() {
                state.gate.sight_listing(&dir.via, &dir.path);
            }
            let access = Access::<HostState, WasiFilesystem>::new(
                store,
                <HostState as WasiFilesystemView>::filesystem,
            );
            <WasiFilesystem as HostDescriptorWithStore<HostState>>::read_directory(access, fd)
                .map(|r| (r,))
        },
    )?;
    t.func_wrap_concurrent(
        "[method]descriptor.create-directory-at",
        |acc, (fd, path): (Resource<Descriptor>, String)| {
            Box::pin(async move {
                let a = admitted!(acc, fd.rep(), path, mkdir);
                charge_files(acc, &a, 1)?;
                let r =
                    <WasiFilesystem as HostDescriptorWithStore<HostState>>::create_directory_at(
                        &fs(acc),
                        fd,
                        path,
                    )
                    .await;
                settle(acc, &[&a], r)
            })
        },
    )?;
    path_call!(
        t,
        "[method]descriptor.remove-directory-at",
        remove,
        remove_directory_at
    );
    path_call!(
        t,
        "[method]descriptor.unlink-file-at",
        remove,
        unlink_file_at
    );
    t.func_wrap_concurrent(
        "[method]descriptor.symlink-at",
        |acc, (fd, old, new): (Resource<Descriptor>, String, String)| {
            Box::pin(async move {
                let a = admitted!(acc, fd.rep(), new, write);
                // The host tree never holds a link that leaves the grant.
                if let Err(d) = super::link::check_link_target(&a.full, &a.via, &old) {
                    let answer = code(super::code(&d, true));
                    acc.with(|mut s| s.get().gate.refuse_admitted(a.seq, d));
                    return Ok((Err(answer),));
                }
                charge_files(acc, &a, 1)?;
                let r = <WasiFilesystem as HostDescriptorWithStore<HostState>>::symlink_at(
                    &fs(acc),
                    fd,
                    old,
                    new,
                )
                .await;
                settle(acc, &[&a], r)
            })
        },
    )?;
    t.func_wrap_concurrent(
        "[method]descriptor.set-times-at",
        |acc,
         (fd, pf, path, at, mt): (
            Resource<Descriptor>,
            PathFlags,
            String,
            NewTimestamp,
            NewTimestamp,
        )| {
            Box::pin(async move {
                let a = admitted!(acc, fd.rep(), path, write);
                let r = <WasiFilesystem as HostDescriptorWithStore<HostState>>::set_times_at(
                    &fs(acc),
                    fd,
                    pf,
                    path,
                    at,
                    mt,
                )
                .await;
                settle(acc, &[&a], r)
            })
        },
    )?;
    t.func_wrap_concurrent(
        "[method]descriptor.rename-at",
        |acc,
         (fd, old, new_fd, new): (
            Resource<Descriptor>,
            String,
            Resource<Descriptor>,
            String,
        )| {
            Box::pin(async move {
                let a = admitted!(acc, fd.rep(), old, remove);
                let b = admitted!(acc, new_fd.rep(), new, write);
                let r = <WasiFilesystem as HostDescriptorWithStore<HostState>>::rename_at(
                    &fs(acc),
                    fd,
                    old,
                    new_fd,
                    new,
                )
                .await;
                settle(acc, &[&a, &b], r)
            })
        },
    )?;
    t.func_wrap_concurrent(
        "[method]descriptor.link-at",
        |acc,
         (fd, pf, old, new_fd, new): (
            Resource<Descriptor>,
            PathFlags,
            String,
            Resource<Descriptor>,
            String,
        )| {
            Box::pin(async move {
                // A second name for the same file: writable through the
                // new name, so the old one must be writable too.
                let a = admitted!(acc, fd.rep(), old, write);
                let b = admitted!(acc, new_fd.rep(), new, write);
                if HostState::names_itself(&old) {
                    return Ok((Err(ErrorCode::NotPermitted),));
                }
                charge_files(acc, &b, 1)?;
                let r = <WasiFilesystem as HostDescriptorWithStore<HostState>>::link_at(
                    &fs(acc),
                    fd,
                    pf,
                    old,
                    new_fd,
                    new,
                )
                .await;
                settle(acc, &[&a, &b], r)
            })
        },
    )?;
    t.func_wrap_concurrent(
        "[method]descriptor.set-size",
        |acc, (fd, size): (Resource<Descriptor>, u64)| {
            Box::pin(async move {
                let rep = fd.rep();
                if let Err(c) = acc.with(|mut s| s.get().flow_write(rep)) {
                    return Ok((Err(code(c)),));
                }
                if HostState::past_any_file(size) {
                    return Ok((Err(ErrorCode::Invalid),));
                }
                // Growth counts as written: the hole a write at `size`
                // would leave.
                acc.with(|mut s| s.get().charge_write_at(rep, 0, size))?;
                let r = <WasiFilesystem as HostDescriptorWithStore<HostState>>::set_size(
                    &fs(acc),
                    fd,
                    size,
                )
                .await;
                match r {
                    Ok(()) => Ok((Ok(()),)),
                    Err(e) => Ok((Err(e.downcast()?),)),
                }
            })
        },
    )?;
    super::wasi03_write::add(&mut t)?;
    super::wasi03_read::add(&mut t)?;
    Ok(())
}
