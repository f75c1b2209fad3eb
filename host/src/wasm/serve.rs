//! Services: components that export `wasi:http/incoming-handler` 0.2 or
//! `wasi:http/handler` 0.3 (an HTTP app an agent wrote). Each request is
//! handled by a fresh instance under the grant, as one run: its own gate,
//! budgets and audit records; the request's body is handed in whole, and
//! the answer is read whole (its body charged to `max_output_bytes` as it
//! arrives) before any of it is sent, so a service that breaks a budget
//! answers 500, never half an answer.

use super::outcome::{End, classify, finish};
use super::{LoadError, WasmHost, WasmRun, setup};
use crate::budget::OutputMeter;
use crate::violation::Violation;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use wasmtime::Engine;
use wasmtime::component::Component;
use wasmtime_wasi_http::WasiHttpView;
use wasmtime_wasi_http::p2::bindings::ProxyPre;
use wasmtime_wasi_http::p2::bindings::http::types::Scheme;
use wasmtime_wasi_http::p3::bindings::ServicePre;

use super::HostState;
use super::options::RunOptions;

/// A service component linked once, handling many requests
/// ([`WasmHost::prepare_service`]).
#[derive(Clone)]
pub struct PreparedService {
    pre: Exported,
    engine: Engine,
}

/// What a service exports: 0.2's handler or 0.3's.
#[derive(Clone)]
enum Exported {
    P2(ProxyPre<HostState>),
    P3(ServicePre<HostState>),
}

/// A request served: the answer (status, headers, whole body), and the
/// run that made it (report, audit, the guest's stdout and stderr).
pub struct Served {
    /// What goes back to the client: the service's answer, or 500 when it
    /// gave none (a trap, a budget, an error code).
    pub response: http::Response<Bytes>,
    /// The request's run.
    pub run: WasmRun,
}

impl WasmHost {
    /// Link a component that exports `wasi:http/incoming-handler` 0.2 or
    /// `wasi:http/handler` 0.3 for [`WasmHost::serve_request`]. Its imports
    /// are what a command may import (wasi:http's outgoing requests
    /// through the egress rules included).
    pub fn prepare_service(&self, component: &Component) -> Result<PreparedService, LoadError> {
        let pre = self.linked(component, "component")?;
        let not_one = |e: wasmtime::Error| LoadError::Rejected {
            path: "component".to_string(),
            message: format!(
                "not a wasi:http service (no wasi:http/incoming-handler 0.2 or \
                 wasi:http/handler 0.3 export): {e:#}"
            ),
        };
        // Only a component on the 0.3 engine can export 0.3's handler (an
        // async export does not validate on the 0.2 one).
        let pre = if Engine::same(component.engine(), &self.shared.engine) {
            Exported::P2(ProxyPre::new(pre).map_err(not_one)?)
        } else {
            Exported::P3(ServicePre::new(pre).map_err(not_one)?)
        };
        Ok(PreparedService {
            pre,
            engine: component.engine().clone(),
        })
    }

    /// Handle one request with a fresh instance of `service` under `opts`
    /// (its grant and budgets apply to this request alone). `scheme` is
    /// what the service is told the request came in on.
    pub async fn serve_request(
        &self,
        service: &PreparedService,
        opts: RunOptions,
        scheme: http::uri::Scheme,
        request: http::Request<Bytes>,
    ) -> Result<Served, LoadError> {
        let begun = self.begin(&service.engine, "service", opts)?;
        if begun.confine.is_some() {
            return Err(setup(
                "a service's requests share the server's process: serve it without a \
                 kernel wall per request"
                    .into(),
            ));
        }
        let (meter, cancel, budget) = (begun.meter, begun.cancel, begun.budget);
        let mut store = self.store_on(&service.engine, begun.state, begun.deterministic)?;
        let both: Answered<'_> = match &service.pre {
            Exported::P2(pre) => Box::pin(answer_02(pre, &mut store, scheme, request, &meter)),
            Exported::P3(pre) => Box::pin(answer_03(pre, &mut store, scheme, request, &meter)),
        };
        let cancelled = async {
            match &cancel {
                Some(c) => c.cancelled().await,
                None => std::future::pending().await,
            }
        };
        let (end, response) = tokio::select! {
            biased;
            () = cancelled => (End::Limit(Violation::Cancelled), None),
            timed = tokio::time::timeout(budget.max_wall, both) => match timed {
                Err(_) => (End::Limit(Violation::MaxWall), None),
                Ok((Ok(()), response)) => (End::Exit(0), response),
                Ok((Err(e), response)) => (classify(&e, &store), response),
            },
        };
        // An answer cut short by the budget is no answer.
        let (end, response) = match (end, response) {
            (End::Exit(0), _) if meter.breached() => (End::Limit(Violation::MaxOutputBytes), None),
            other => other,
        };
        let fuel_left = store.get_fuel().unwrap_or(0);
        let mut run = finish(
            fuel_left,
            store.into_data(),
            end,
            &meter,
            None,
            begun.header,
        );
        for (_, output) in begun.closed {
            output.flush_events();
        }
        (run.stdout, run.stderr) = begun.capture.take();
        let response = response.unwrap_or_else(|| {
            let mut r = http::Response::new(Bytes::from_static(
                b"the sandboxed service gave no answer\n",
            ));
            *r.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
            r
        });
        Ok(Served { response, run })
    }
}

/// How a request's handling ended: the guest's call, and its answer if it
/// gave a whole one within the output budget.
type Handled = (wasmtime::Result<()>, Option<http::Response<Bytes>>);

/// A request's handling, under way.
type Answered<'a> = std::pin::Pin<Box<dyn Future<Output = Handled> + Send + 'a>>;

/// A 0.2 service's handling: the request handed in as an incoming request,
/// the answer read from the response outparam while the guest writes it.
async fn answer_02(
    pre: &ProxyPre<HostState>,
    store: &mut wasmtime::Store<HostState>,
    scheme: http::uri::Scheme,
    request: http::Request<Bytes>,
    meter: &OutputMeter,
) -> Handled {
    let scheme = if scheme == http::uri::Scheme::HTTPS {
        Scheme::Https
    } else {
        Scheme::Http
    };
    let (tx, rx) = tokio::sync::oneshot::channel();
    let incoming = {
        let mut view = store.data_mut().http();
        let req = view.new_incoming_request(scheme, request.map(Full::new));
        let out = view.new_response_outparam(tx);
        match (req, out) {
            (Ok(req), Ok(out)) => (req, out),
            (Err(e), _) | (_, Err(e)) => return (Err(e), None),
        }
    };
    let call = async {
        let proxy = pre.instantiate_async(&mut *store).await?;
        proxy
            .wasi_http_incoming_handler()
            .call_handle(&mut *store, incoming.0, incoming.1)
            .await
    };
    // The answer is read while the guest writes it (its body goes
    // through a small channel), charged to the output budget.
    let answer = async {
        let Ok(Ok(resp)) = rx.await else {
            return None;
        };
        read_charged(resp, meter).await
    };
    tokio::join!(call, answer)
}

/// A 0.3 service's handling: `handle` called inside the store's event
/// loop, and the response's body read there too (the guest may write it
/// after it has answered).
async fn answer_03(
    pre: &ServicePre<HostState>,
    store: &mut wasmtime::Store<HostState>,
    scheme: http::uri::Scheme,
    request: http::Request<Bytes>,
    meter: &OutputMeter,
) -> Handled {
    store.set_max_component_handles(super::wasi03::MAX_WASI03_HANDLES);
    let service = match pre.instantiate_async(&mut *store).await {
        Ok(s) => s,
        Err(e) => return (Err(e), None),
    };
    let request = with_authority(scheme, request);
    let ran = store
        .run_concurrent(async |a| {
            let req = a.with(|mut s| super::imports::incoming_03(s.data_mut(), request));
            let resp = match service.handle(a, req).await? {
                Ok(resp) => resp,
                // The guest's own error code: no answer of its.
                Err(_) => return Ok(None),
            };
            let resp = a.with(|mut s| resp.into_http(&mut s, async { Ok(()) }))?;
            wasmtime::Result::Ok(read_charged(resp, meter).await)
        })
        .await;
    match ran {
        Ok(Ok(answer)) => (Ok(()), answer),
        Ok(Err(e)) | Err(e) => (Err(e), None),
    }
}

/// The request's URI made whole for a 0.3 guest, which reads its scheme
/// and authority from it: `scheme`, and the `host` header as authority
/// (none when that is not one).
fn with_authority(
    scheme: http::uri::Scheme,
    request: http::Request<Bytes>,
) -> http::Request<Bytes> {
    let (mut parts, body) = request.into_parts();
    let authority = parts
        .headers
        .get(http::header::HOST)
        .and_then(|h| http::uri::Authority::try_from(h.as_bytes()).ok());
    let mut uri = parts.uri.clone().into_parts();
    uri.scheme = Some(scheme);
    uri.authority = authority.or(uri.authority);
    if uri.path_and_query.is_none() {
        uri.path_and_query = Some(http::uri::PathAndQuery::from_static("/"));
    }
    if uri.authority.is_some()
        && let Ok(whole) = http::Uri::from_parts(uri)
    {
        parts.uri = whole;
    }
    http::Request::from_parts(parts, body)
}

/// A response's body read whole, each frame charged to the output budget
/// as it arrives; `None` past the budget or on a failed body.
async fn read_charged<B>(
    resp: http::Response<B>,
    meter: &OutputMeter,
) -> Option<http::Response<Bytes>>
where
    B: http_body::Body<Data = Bytes> + Unpin,
{
    let (parts, mut body) = resp.into_parts();
    let mut got = Vec::new();
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else { return None };
        if let Ok(data) = frame.into_data() {
            if !meter.try_charge(data.len() as u64) {
                return None;
            }
            got.extend_from_slice(&data);
        }
    }
    Some(http::Response::from_parts(parts, Bytes::from(got)))
}
