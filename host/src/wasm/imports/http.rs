//! The network capability's second door: `wasi:http/outgoing-handler@0.2`,
//! the interface standard components send HTTP through. Each request goes
//! through the run's gate as one [`Op::Net`], exactly as `sbx:agent/net`'s
//! fetch does (rules, resolved-address checks, the pinned dial, secret
//! slots, output charging, audit); wasmtime-wasi-http's own sender is not
//! built in, so no request can leave any other way.
//!
//! wasi:http lets a guest call `handle` before it has written the request
//! body, and the gate decides a request whole (its body included). So a
//! body is collected from the moment the guest asks for it (bounded: each
//! body by the broker's limit, the bodies of a run together, and how many
//! at once), `handle` hands back a future at once, and the decision is
//! made on the guest's own thread as soon as the body is whole: in
//! `handle` for a body finished before it, else at the guest's next wait
//! for an answer (`poll`, `pollable.block`, `future-incoming-response.get`
//! or `.subscribe`, which this door wraps). A wait that begins while a
//! body is still arriving is woken when it has. The gate is never reached
//! from another thread.
//!
//! What differs from `sbx.fetch`: the broker follows no redirect on this
//! path (the guest's client follows them itself, each hop a new request
//! decided whole), and a refusal is `error-code.HTTP-request-denied`, with
//! the violation and the reason in the audit.

use super::super::{HardLimit, HostState};
use crate::capability::{Op, Output};
use crate::net::{FetchRequest, MAX_REQUEST_BODY_BYTES};
use crate::op::Failure;
use bytes::Bytes;
use http_body_util::BodyExt;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::{Notify, oneshot};
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::p2::DynPollable;
use wasmtime_wasi::p2::bindings::io::poll::{Host as _, HostPollable as _};
use wasmtime_wasi::runtime::{AbortOnDropJoinHandle, spawn};
use wasmtime_wasi_http::p2::bindings::http::types::{
    ErrorCode, HostFutureIncomingResponse as _, HostOutgoingRequest as _, Method, Scheme,
};
use wasmtime_wasi_http::p2::body::HostOutgoingBody;
use wasmtime_wasi_http::p2::body::HyperOutgoingBody;
use wasmtime_wasi_http::p2::types::{HostFutureIncomingResponse, HostOutgoingRequest};
use wasmtime_wasi_http::p2::{HttpError, HttpResult};
use wasmtime_wasi_http::{
    ForbiddenHeaderFilter, RequestOptions, WasiBody, WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks,
    WasiHttpView,
};

/// Request bodies a run may have at once (asked for and not yet decided
/// or dropped). Each holds up to [`CHUNK_BYTES`] in flight besides what
/// it has collected.
pub const MAX_BODIES: usize = 64;
/// Bytes the bodies of a run may hold on the host at once: two whole
/// bodies at the broker's limit.
pub const MAX_BODY_BYTES_HELD: usize = 2 * MAX_REQUEST_BODY_BYTES;
/// The most one write of the guest's hands over (wasi:http's default is
/// 1 MiB; smaller keeps what waits in each body's channel small).
const CHUNK_BYTES: usize = 64 * 1024;

/// The interfaces' versions as this wasmtime-wasi links them (a guest
/// importing an older 0.2.x is matched to these).
const IO_POLL: &str = "wasi:io/poll@0.2.12";
const HTTP_TYPES: &str = "wasi:http/types@0.2.12";
const OUTGOING_HANDLER: &str = "wasi:http/outgoing-handler@0.2.12";

/// The wasi:http state of one run.
#[derive(Default)]
pub(crate) struct HttpDoor {
    ctx: WasiHttpCtx,
    hooks: Hooks,
    /// Requests handed to `handle` whose bodies are still arriving, in the
    /// order they were handed.
    pending: Vec<Pending>,
    /// Told by a body collector when its body is whole (or failed); made
    /// with the run's first body.
    arrived: Option<Arc<Notify>>,
    /// Bodies being collected, and the bytes they hold (made with the
    /// run's first body, as `arrived`: a run that sends nothing pays
    /// nothing for the door).
    held: Option<Arc<Held>>,
}

/// What the run's request bodies hold on the host.
#[derive(Default)]
struct Held {
    bodies: AtomicUsize,
    bytes: AtomicUsize,
}

/// A request handed to `handle` and not yet decided.
struct Pending {
    /// The guest's future for it: its table slot and the placeholder
    /// task's id there (a slot the guest freed and reused holds another).
    future: u32,
    task: tokio::task::Id,
    head: FetchRequest,
    body: HyperOutgoingBody,
}

/// What wasmtime-wasi-http asks its embedder: the forbidden headers are the
/// broker's (a guest setting one gets `header-error.forbidden` at once),
/// but for `content-length`, which wasi:http gives the guest to declare.
#[derive(Default)]
struct Hooks;

impl WasiHttpHooks for Hooks {
    fn p2_outgoing_body_chunk_size(&mut self) -> usize {
        CHUNK_BYTES
    }

    fn forbidden_header_filter(&mut self) -> ForbiddenHeaderFilter {
        Arc::new(|name| {
            *name != http::header::CONTENT_LENGTH && crate::net::forbidden_header(name.as_str())
        })
    }

    // Only reached through wasmtime-wasi-http's own `handle`, which this
    // host does not link: the door's `handle` below replaces it. Should
    // that ever change, nothing is sent.
    fn send_request(
        &mut self,
        _request: http::Request<WasiBody>,
        _options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>,
    ) -> Box<
        dyn Future<
                Output = Result<
                    (
                        http::Response<WasiBody>,
                        Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>,
                    ),
                    wasmtime_wasi_http::Error,
                >,
            > + Send,
    > {
        Box::new(async { Err(ErrorCode::HttpRequestDenied.into()) })
    }
}

impl WasiHttpView for HostState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http.ctx,
            table: &mut self.table,
            hooks: &mut self.http.hooks,
        }
    }
}

/// Link wasi:http 0.2: its types from wasmtime-wasi-http, `handle` from
/// this door, and the waits that decide pending requests wrapped.
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    use wasmtime_wasi_http::p2::bindings::{LinkOptions, http::types};
    types::add_to_linker::<_, wasmtime_wasi_http::WasiHttp>(
        linker,
        &LinkOptions::default().into(),
        HostState::http,
    )?;
    linker.instance(OUTGOING_HANDLER)?.func_wrap(
        "handle",
        |mut store,
         (req, _options): (
            Resource<HostOutgoingRequest>,
            Option<Resource<RequestOptions>>,
        )| {
            match store.data_mut().handle(req) {
                Ok(future) => Ok((Ok(future),)),
                Err(e) => Ok((Err(e.downcast()?),)),
            }
        },
    )?;
    linker.allow_shadowing(true);
    let mut poll = linker.instance(IO_POLL)?;
    poll.func_wrap_async(
        "poll",
        |mut store, (list,): (Vec<Resource<DynPollable>>,)| {
            Box::new(async move {
                let state = store.data_mut();
                loop {
                    let Some(arrived) = state.before_wait()? else {
                        return Ok((state.table.poll(list).await?,));
                    };
                    let again = list.iter().map(same).collect();
                    tokio::select! {
                        r = state.table.poll(again) => return Ok((r?,)),
                        () = arrived.notified() => {}
                    }
                }
            })
        },
    )?;
    poll.func_wrap_async(
        "[method]pollable.block",
        |mut store, (p,): (Resource<DynPollable>,)| {
            Box::new(async move {
                let state = store.data_mut();
                loop {
                    let Some(arrived) = state.before_wait()? else {
                        return state.table.block(p).await;
                    };
                    tokio::select! {
                        r = state.table.block(same(&p)) => return r,
                        () = arrived.notified() => {}
                    }
                }
            })
        },
    )?;
    let mut http = linker.instance(HTTP_TYPES)?;
    http.func_wrap(
        "[method]outgoing-request.body",
        |mut store, (req,): (Resource<HostOutgoingRequest>,)| {
            Ok((store.data_mut().request_body(req)?,))
        },
    )?;
    http.func_wrap(
        "[method]future-incoming-response.get",
        |mut store, (f,): (Resource<HostFutureIncomingResponse>,)| {
            let state = store.data_mut();
            state.decide_arrived()?;
            Ok((state.http().get(f)?,))
        },
    )?;
    http.func_wrap(
        "[method]future-incoming-response.subscribe",
        |mut store, (f,): (Resource<HostFutureIncomingResponse>,)| {
            let state = store.data_mut();
            state.decide_arrived()?;
            Ok((state.http().subscribe(f)?,))
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

/// The same handle again (a wait is started afresh when a body arrives).
fn same<T: 'static>(r: &Resource<T>) -> Resource<T> {
    if r.owned() {
        Resource::new_own(r.rep())
    } else {
        Resource::new_borrow(r.rep())
    }
}

impl HostState {
    /// `outgoing-handler.handle`: the future at once; the request is
    /// decided when its body is whole (the guest's options are not used:
    /// the broker's timeout is the wall budget left).
    fn handle(
        &mut self,
        request: Resource<HostOutgoingRequest>,
    ) -> HttpResult<Resource<HostFutureIncomingResponse>> {
        let req = self.table.delete(request)?;
        let (head, body) = head(req)?;
        let Some(body) = body else {
            let answer = self.send(head).map_err(HttpError::trap)?;
            let ready = ready(answer);
            return Ok(self.table.push(ready)?);
        };
        // The guest may wait no longer than the run may last.
        let budget = self.gate.caps().budget().max_wall;
        let left = budget.saturating_sub(self.gate.elapsed_now()) + Duration::from_millis(100);
        let placeholder = spawn(async move {
            tokio::time::sleep(left).await;
            Err(ErrorCode::ConnectionReadTimeout.into())
        });
        let task = placeholder.id();
        let future = self
            .table
            .push(HostFutureIncomingResponse::Pending(placeholder))?;
        self.http.pending.push(Pending {
            future: future.rep(),
            task,
            head,
            body,
        });
        // A body the guest finished before `handle` is already whole.
        self.decide_arrived().map_err(HttpError::trap)?;
        Ok(future)
    }

    /// `outgoing-request.body`, with the body's collection started at
    /// once (so a guest may write it whole before `handle`); refused (as
    /// a body already taken is) past [`MAX_BODIES`] at once.
    fn request_body(
        &mut self,
        request: Resource<HostOutgoingRequest>,
    ) -> wasmtime::Result<Result<Resource<HostOutgoingBody>, ()>> {
        let held = self.http.held.get_or_insert_with(Default::default).clone();
        if held.bodies.load(Ordering::SeqCst) >= MAX_BODIES {
            return Ok(Err(()));
        }
        let rep = request.rep();
        let body = match self.http().body(request)? {
            Ok(body) => body,
            Err(()) => return Ok(Err(())),
        };
        let req = self
            .table
            .get_mut(&Resource::<HostOutgoingRequest>::new_borrow(rep))?;
        let Some(stream) = req.body.take() else {
            return Ok(Ok(body));
        };
        let arrived = self
            .http
            .arrived
            .get_or_insert_with(Default::default)
            .clone();
        req.body = Some(Collected::start(stream, held, arrived));
        Ok(Ok(body))
    }
}

/// The request's method, URL and headers as the broker takes them
/// ([`crate::net::wasi_http_request`]), and its body (none when the guest
/// never asked for one).
fn head(req: HostOutgoingRequest) -> HttpResult<(FetchRequest, Option<HyperOutgoingBody>)> {
    let method = match &req.method {
        Method::Get => "GET",
        Method::Head => "HEAD",
        Method::Post => "POST",
        Method::Put => "PUT",
        Method::Delete => "DELETE",
        Method::Connect => "CONNECT",
        Method::Options => "OPTIONS",
        Method::Trace => "TRACE",
        Method::Patch => "PATCH",
        Method::Other(m) => m.as_str(),
    };
    let scheme = match &req.scheme {
        None => None,
        Some(Scheme::Https) => Some("https"),
        Some(Scheme::Http) => Some("http"),
        Some(Scheme::Other(s)) => Some(s.as_str()),
    };
    // The authority goes to the gate as written: one it cannot read the
    // way the guest wrote it (`example.com:abc`, `example.com:`) is refused
    // there as `invalid_request`, on record.
    let headers = req
        .headers
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_bytes()));
    let head = crate::net::wasi_http_request(
        method,
        scheme,
        req.authority.as_deref(),
        req.path_with_query.as_deref(),
        headers,
    )
    .map_err(|e| match e {
        crate::net::WasiHttpPartsError::Path | crate::net::WasiHttpPartsError::Authority => {
            ErrorCode::HttpRequestUriInvalid
        }
        _ => ErrorCode::HttpRequestHeaderSize(None),
    })?;
    Ok((head, req.body))
}

/// A request body as the door keeps it: a task of its own reads what the
/// guest writes (so its writes never wait on `handle`), and this body
/// yields it whole, as one frame, once the guest has finished it.
struct Collected {
    whole: oneshot::Receiver<Result<(Bytes, Release), ErrorCode>>,
    /// The collected bytes' place in the run's count, given back when the
    /// body is dropped (decided, or the request dropped).
    _release: Option<Release>,
    /// Its place among the run's [`MAX_BODIES`].
    _body: Release,
    _task: AbortOnDropJoinHandle<()>,
}

type Whole = Result<(Bytes, Release), ErrorCode>;

impl Collected {
    fn start(
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
        match Pin::new(&mut self.whole).poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(Ok((b, release)))) => {
                // Once: the next poll finds the channel spent and ends.
                self.whole = oneshot::channel().1;
                self._release = Some(release);
                if b.is_empty() {
                    Poll::Ready(None)
                } else {
                    Poll::Ready(Some(Ok(http_body::Frame::data(b))))
                }
            }
            Poll::Ready(Ok(Err(code))) => Poll::Ready(Some(Err(code.into()))),
            Poll::Ready(Err(_)) => Poll::Ready(None),
        }
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
fn whole_now(body: &mut HyperOutgoingBody) -> Option<Result<Vec<u8>, ErrorCode>> {
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
        Poll::Ready(Some(Err(e))) => Some(Err(match e {
            wasmtime_wasi_http::Error::InternalError(m) => ErrorCode::InternalError(m),
            wasmtime_wasi_http::Error::HttpRequestBodySize(n) => ErrorCode::HttpRequestBodySize(n),
            _ => ErrorCode::HttpRequestBodySize(None),
        })),
    }
}

impl HostState {
    /// Before a wait: decide every request whose body is whole; if some
    /// are still arriving, what tells the wait that one has (it then stops
    /// waiting, and this runs again).
    fn before_wait(&mut self) -> wasmtime::Result<Option<Arc<Notify>>> {
        self.decide_arrived()?;
        if self.http.pending.is_empty() {
            return Ok(None);
        }
        Ok(Some(
            self.http
                .arrived
                .get_or_insert_with(Default::default)
                .clone(),
        ))
    }

    /// Decide every pending request whose body has arrived, in the order
    /// they were handed; forget those whose future the guest dropped
    /// (nothing was sent for them). A hard limit traps.
    fn decide_arrived(&mut self) -> wasmtime::Result<()> {
        let mut i = 0;
        while i < self.http.pending.len() {
            let Some(body) = whole_now(&mut self.http.pending[i].body) else {
                i += 1;
                continue;
            };
            let p = self.http.pending.remove(i);
            let slot = Resource::<HostFutureIncomingResponse>::new_borrow(p.future);
            let alive = matches!(
                self.table.get(&slot),
                Ok(HostFutureIncomingResponse::Pending(h)) if h.id() == p.task
            );
            if !alive {
                continue;
            }
            let answer = match body {
                Ok(body) => self.send(FetchRequest { body, ..p.head })?,
                Err(e) => Err(e),
            };
            *self.table.get_mut(&slot)? = ready(answer);
        }
        Ok(())
    }

    /// One request through the gate; the answer as wasi:http hands it back.
    fn send(
        &mut self,
        req: FetchRequest,
    ) -> wasmtime::Result<Result<http::Response<WasiBody>, ErrorCode>> {
        let decided = self.gate.decide(Op::Net(req));
        Ok(match decided.outcome {
            Ok(Output::Response {
                status,
                headers,
                body,
            }) => Ok(response(status, headers, body.0)),
            Ok(_) => Err(ErrorCode::InternalError(None)),
            Err(Failure::Denied(d)) if d.hard => {
                return Err(wasmtime::Error::new(HardLimit(d.violation)));
            }
            Err(Failure::Denied(_)) => Err(ErrorCode::HttpRequestDenied),
            Err(Failure::Error(e)) => Err(ErrorCode::InternalError(Some(e.message))),
        })
    }
}

/// A decided request's future, ready.
fn ready(answer: Result<http::Response<WasiBody>, ErrorCode>) -> HostFutureIncomingResponse {
    let worker = spawn(async {});
    HostFutureIncomingResponse::Ready(answer.map(|resp| (resp, worker)).map_err(Into::into))
}

/// A whole response as a wasi:http incoming response. Headers a guest's
/// client cannot take (names or values `http` refuses) are left out.
fn response(
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
) -> http::Response<WasiBody> {
    let mut resp = http::Response::new(
        http_body_util::Full::new(Bytes::from(body))
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    *resp.status_mut() =
        http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::BAD_GATEWAY);
    let map = resp.headers_mut();
    for (k, v) in headers {
        if let (Ok(k), Ok(v)) = (
            http::HeaderName::from_bytes(k.as_bytes()),
            http::HeaderValue::from_str(&v),
        ) {
            map.append(k, v);
        }
    }
    resp
}
