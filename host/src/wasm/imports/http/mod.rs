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

use super::super::HostState;
use crate::net::{FetchRequest, MAX_REQUEST_BODY_BYTES};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::Notify;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::p2::DynPollable;
use wasmtime_wasi::p2::bindings::io::poll::{Host as _, HostPollable as _};
use wasmtime_wasi::runtime::spawn;
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

mod body;
mod decide;
mod wasi03;

use body::{Collected, Held};
use decide::ready;
pub(crate) use wasi03::{add_to_linker as add_03_to_linker, incoming_03};

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
/// broker's and wasi:http's own (a guest setting one gets
/// `header-error.forbidden` at once), but for `content-length`, which
/// wasi:http gives the guest to declare.
#[derive(Default)]
struct Hooks;

impl WasiHttpHooks for Hooks {
    fn p2_outgoing_body_chunk_size(&mut self) -> usize {
        CHUNK_BYTES
    }

    fn forbidden_header_filter(&mut self) -> ForbiddenHeaderFilter {
        Arc::new(forbidden)
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

/// The broker's forbidden headers, but `content-length`; and those
/// wasi:http forbids of itself (`http2-settings` among them).
fn forbidden(name: &http::HeaderName) -> bool {
    (*name != http::header::CONTENT_LENGTH && crate::net::forbidden_header(name.as_str()))
        || wasmtime_wasi_http::DEFAULT_FORBIDDEN_HEADERS.contains(name)
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
         (req, options): (
            Resource<HostOutgoingRequest>,
            Option<Resource<RequestOptions>>,
        )| {
            // The options are the host's now (an own handle): dropped
            // here, or a guest passing them in a loop would fill the
            // table. Their connect and first-byte timeouts go with the
            // request (each used when shorter than the wall budget left).
            let timeouts = match options {
                Some(options) => timeouts(&store.data_mut().table.delete(options)?),
                None => Default::default(),
            };
            match store.data_mut().handle(req, timeouts) {
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
    /// decided when its body is whole, under the guest's `timeouts` and
    /// the wall budget left.
    fn handle(
        &mut self,
        request: Resource<HostOutgoingRequest>,
        timeouts: crate::net::RequestTimeouts,
    ) -> HttpResult<Resource<HostFutureIncomingResponse>> {
        let req = self.table.delete(request)?;
        let (mut head, body) = head(req)?;
        head.timeouts = timeouts;
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
    .map_err(parts_error)?;
    Ok((head, req.body))
}

/// A request's connect and first-byte timeouts as the broker takes them
/// (0.2's and 0.3's options alike).
fn timeouts(o: &RequestOptions) -> crate::net::RequestTimeouts {
    let ms = |d: Option<Duration>| d.map(|d| d.as_millis().min(u128::from(u64::MAX)) as u64);
    crate::net::RequestTimeouts {
        connect_ms: ms(o.connect_timeout),
        first_byte_ms: ms(o.first_byte_timeout),
    }
}

/// Why a request's parts cannot make a request, as wasi:http says it.
fn parts_error(e: crate::net::WasiHttpPartsError) -> ErrorCode {
    match e {
        crate::net::WasiHttpPartsError::Path | crate::net::WasiHttpPartsError::Authority => {
            ErrorCode::HttpRequestUriInvalid
        }
        _ => ErrorCode::HttpRequestHeaderSize(None),
    }
}
