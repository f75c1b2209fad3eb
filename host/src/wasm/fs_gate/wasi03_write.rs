//! WASI 0.3's file writes, which arrive as streams: each chunk charged to
//! the write quota before it is written (past the quota the run halts, and
//! the chunk is not written), and a write the run's flow mark does not let
//! reach the file's mount refused before any byte moves.

use crate::wasm::HostState;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::oneshot;
use wasmtime::StoreContextMut;
use wasmtime::component::{
    FutureReader, LinkerInstance, Resource, Source, StreamConsumer, StreamReader, StreamResult,
};
use wasmtime_wasi::filesystem::Descriptor;
use wasmtime_wasi::p3::bindings::filesystem::types::ErrorCode;

/// The most written per chunk (and charged before it is written).
const CHUNK: usize = 64 << 10;

/// Where a stream's bytes go.
#[derive(Clone, Copy)]
enum At {
    Offset(u64),
    End,
}

/// A file write stream: charges, then writes.
struct MeteredWrite {
    file: Arc<std::fs::File>,
    at: At,
    /// The descriptor, for the quota's record.
    rep: u32,
    result: Option<oneshot::Sender<Result<(), ErrorCode>>>,
}

impl MeteredWrite {
    fn close(&mut self, r: Result<(), ErrorCode>) {
        if let Some(tx) = self.result.take() {
            let _ = tx.send(r);
        }
    }

    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        let offset = match self.at {
            At::Offset(o) => o,
            At::End => self.file.metadata()?.len(),
        };
        self.file.write_all_at(bytes, offset)?;
        if let At::Offset(o) = &mut self.at {
            *o = o.saturating_add(bytes.len() as u64);
        }
        Ok(())
    }
}

impl Drop for MeteredWrite {
    fn drop(&mut self) {
        self.close(Ok(()));
    }
}

impl StreamConsumer<HostState> for MeteredWrite {
    type Item = u8;

    fn poll_consume(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        mut store: StoreContextMut<HostState>,
        src: Source<u8>,
        _finish: bool,
    ) -> Poll<wasmtime::Result<StreamResult>> {
        let n = src.remaining(&mut store).min(CHUNK);
        // Past a signed 64-bit offset no file can be written: the OS
        // answers `invalid` and writes nothing, so nothing is charged
        // (the hole such a write would leave is no file's).
        if let At::Offset(o) = self.at
            && HostState::past_any_file(o.saturating_add(n as u64))
        {
            self.close(Err(ErrorCode::Invalid));
            return Poll::Ready(Ok(StreamResult::Dropped));
        }
        // Charged before it is written, with the hole a write past the end
        // leaves: a spent quota writes nothing more.
        let state = store.data_mut();
        let charged = match self.at {
            At::Offset(o) => state.charge_write_at(self.rep, n as u64, o),
            At::End => state.charge_bytes(self.rep, n as u64),
        };
        if let Err(e) = charged {
            self.close(Err(ErrorCode::Quota));
            return Poll::Ready(Err(e));
        }
        let mut src = src.as_direct(store);
        match self.write(&src.remaining()[..n]) {
            Ok(()) => {
                src.mark_read(n);
                Poll::Ready(Ok(StreamResult::Completed))
            }
            Err(e) => {
                let code = match e.kind() {
                    std::io::ErrorKind::StorageFull => ErrorCode::InsufficientSpace,
                    std::io::ErrorKind::PermissionDenied => ErrorCode::Access,
                    _ => ErrorCode::Io,
                };
                self.close(Err(code));
                Poll::Ready(Ok(StreamResult::Dropped))
            }
        }
    }
}

/// Pipe `data` into a metered write of descriptor `fd`, or close it and
/// answer with why not.
fn start(
    mut store: StoreContextMut<HostState>,
    fd: Resource<Descriptor>,
    mut data: StreamReader<u8>,
    at: At,
) -> wasmtime::Result<(FutureReader<Result<(), ErrorCode>>,)> {
    let rep = fd.rep();
    let state = store.data_mut();
    let file = match state.flow_write(rep) {
        Err(_) => Err(ErrorCode::Access),
        Ok(()) => match state.table.get(&fd)? {
            Descriptor::File(f) if f.perms.write_not_permitted() => Err(ErrorCode::NotPermitted),
            // Opened for reading only: nothing is charged for a write the
            // OS would refuse.
            Descriptor::File(f) if !f.open_mode.contains(wasmtime_wasi::OpenMode::WRITE) => {
                Err(ErrorCode::BadDescriptor)
            }
            Descriptor::File(f) => Ok(f.file.clone()),
            Descriptor::Dir(_) => Err(ErrorCode::IsDirectory),
        },
    };
    let (tx, rx) = oneshot::channel();
    match file {
        Ok(file) => {
            let sink = MeteredWrite {
                file,
                at,
                rep,
                result: Some(tx),
            };
            data.pipe(&mut store, sink)?;
        }
        Err(code) => {
            data.close(&mut store)?;
            let _ = tx.send(Err(code));
        }
    }
    Ok((FutureReader::new(&mut store, rx)?,))
}

/// `write-via-stream` and `append-via-stream`, metered.
pub(super) fn add(t: &mut LinkerInstance<'_, HostState>) -> wasmtime::Result<()> {
    t.func_wrap(
        "[method]descriptor.write-via-stream",
        |store, (fd, data, offset): (Resource<Descriptor>, StreamReader<u8>, u64)| {
            start(store, fd, data, At::Offset(offset))
        },
    )?;
    t.func_wrap(
        "[method]descriptor.append-via-stream",
        |store, (fd, data): (Resource<Descriptor>, StreamReader<u8>)| {
            start(store, fd, data, At::End)
        },
    )?;
    Ok(())
}
