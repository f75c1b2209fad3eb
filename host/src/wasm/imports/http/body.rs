//! Request bodies as the wasi:http door keeps them: collected from the
//! moment the guest asks for one, bounded per body, per run and in
//! number, and looked at (never waited on) when a decision is due.

use super::{ErrorCode, HyperOutgoingBody, MAX_BODY_BYTES_HELD};
use crate::net::MAX_REQUEST_BODY_BYTES;
use bytes::Bytes;
use http_body_util::BodyExt;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use tokio::sync::{Notify, oneshot};
use wasmtime_wasi::runtime::{AbortOnDropJoinHandle, spawn};

/// What the run's request bodies hold on the host.
#[derive(Default)]
pub(super) struct Held {
    pub(super) bodies: AtomicUsize,
    bytes: AtomicUsize,
}

/// A request body as the door keeps it: a task of its own reads what the
/// guest writes (so its writes never wait on `handle`), and this body
/// yields it whole, as one frame, once the guest has finished it.
pub(super) struct Collected {
    whole: oneshot::Receiver<Result<(Bytes, Release), ErrorCode>>,
    /// The collected bytes' place in the run's count, given back when the
    /// body is dropped (decided, or the request dropped).
    _release: Option<Release>,
    /// Its place among the run's [`MAX_BODIES`].
    _body: Release,
    /// Whether the one frame (or error) was handed out.
    done: bool,
    _task: AbortOnDropJoinHandle<()>,
}

type Whole = Result<(Bytes, Release), ErrorCode>;

impl Collected {
    pub(super) fn start(
        stream: HyperOutgoingBody,
        held: Arc<Held>,
        arrived: Arc<Notify>,
    ) -> HyperOutgoingBody {
        let (tx, whole) = oneshot::channel::<Whole>();
        held.bodies.fetch_add(1, Ordering::SeqCst);
        let body = Release {
            count: held.clone(),
            bytes: None,
        };
        let task = spawn(async move {
            let _ = tx.send(collect(stream, held).await);
            arrived.notify_one();
        });
        Collected {
            whole,
            _release: None,
            _body: body,
            done: false,
            _task: task,
        }
        .boxed_unsync()
    }
}

impl http_body::Body for Collected {
    type Data = Bytes;
    type Error = wasmtime_wasi_http::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        if self.done {
            return Poll::Ready(None);
        }
        let got = match Pin::new(&mut self.whole).poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(got) => got,
        };
        // Once: whatever came, the next poll ends the body.
        self.done = true;
        Poll::Ready(match got {
            Ok(Ok((b, release))) => {
                self._release = Some(release);
                (!b.is_empty()).then(|| Ok(http_body::Frame::data(b)))
            }
            Ok(Err(code)) => Some(Err(code.into())),
            // The collector ended without a word (it cannot, but for a
            // panic): never an empty body sent in its place.
            Err(_) => Some(Err(ErrorCode::InternalError(Some(
                "the request body was lost".into(),
            ))
            .into())),
        })
    }
}

/// A body's place in the run's counts: one body, and `bytes` of them
/// held (none for the body count alone); given back when dropped.
struct Release {
    count: Arc<Held>,
    bytes: Option<usize>,
}

impl Drop for Release {
    fn drop(&mut self) {
        match self.bytes {
            Some(n) => self.count.bytes.fetch_sub(n, Ordering::SeqCst),
            None => self.count.bodies.fetch_sub(1, Ordering::SeqCst),
        };
    }
}

/// Read a request body whole, stopping one byte past the broker's bound
/// (the gate then refuses it as `invalid_request`, on record); the stream
/// is closed there, so a guest still writing sees its writes fail. What
/// it holds counts against the run's [`MAX_BODY_BYTES_HELD`] until the
/// body is decided or dropped.
async fn collect(mut stream: HyperOutgoingBody, held: Arc<Held>) -> Whole {
    let mut got = Vec::new();
    let mut release = Release {
        count: held.clone(),
        bytes: Some(0),
    };
    while let Some(frame) = stream.frame().await {
        let frame = frame.map_err(|_| ErrorCode::HttpRequestBodySize(None))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let take = data.len().min(MAX_REQUEST_BODY_BYTES + 1 - got.len());
        if held.bytes.fetch_add(take, Ordering::SeqCst) + take > MAX_BODY_BYTES_HELD {
            held.bytes.fetch_sub(take, Ordering::SeqCst);
            return Err(ErrorCode::InternalError(Some(format!(
                "the run's request bodies would hold more than {MAX_BODY_BYTES_HELD} bytes at once"
            ))));
        }
        release.bytes = release.bytes.map(|n| n + take);
        got.extend_from_slice(&data[..take]);
        if got.len() > MAX_REQUEST_BODY_BYTES {
            break;
        }
    }
    Ok((Bytes::from(got), release))
}

/// A pending body's bytes if the guest has finished it: one look, no
/// waiting (and none of tokio's task budget, which could make a body that
/// is here look as if it were not).
pub(super) fn whole_now(body: &mut HyperOutgoingBody) -> Option<Result<Vec<u8>, ErrorCode>> {
    let look = tokio::task::unconstrained(body.frame());
    let mut look = std::pin::pin!(look);
    match look
        .as_mut()
        .poll(&mut Context::from_waker(std::task::Waker::noop()))
    {
        Poll::Pending => None,
        Poll::Ready(None) => Some(Ok(Vec::new())),
        Poll::Ready(Some(Ok(frame))) => {
            Some(Ok(frame.into_data().map(Vec::from).unwrap_or_default()))
        }
        Poll::Ready(Some(Err(e))) => Some(Err(failed(e))),
    }
}

/// A collected body's failure as the guest is told it (0.2's and, through
/// its code's twin, 0.3's).
pub(super) fn failed(e: wasmtime_wasi_http::Error) -> ErrorCode {
    match e {
        wasmtime_wasi_http::Error::InternalError(m) => ErrorCode::InternalError(m),
        wasmtime_wasi_http::Error::HttpRequestBodySize(n) => ErrorCode::HttpRequestBodySize(n),
        _ => ErrorCode::HttpRequestBodySize(None),
    }
}
