//! wasi:http 0.3's client (`wasi:http/client@0.3.0`'s `send`), through
//! the same gate as 0.2's `handle`: each request one [`Op::Net`] decided
//! whole on the guest's own thread (rules, resolved-address checks, the
//! pinned dial, secret slots, output charging, audit); wasmtime-wasi-http's
//! own sender is never reached.
//!
//! 0.3's `send` is an async call: the guest may write the request's body
//! after it has called `send`. So the body is collected first (by the
//! bounded collector 0.2's bodies use: each body by the broker's limit,
//! the bodies of a run together, and how many at once), while the guest
//! runs on, and the gate is asked once it is whole.
//!
//! [`Op::Net`]: crate::capability::Op::Net

use super::MAX_BODIES;
use super::body::Collected;
use crate::net::FetchRequest;
use crate::wasm::HostState;
use http_body_util::BodyExt;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::sync::oneshot;
use wasmtime::component::{Accessor, Linker, Resource};
use wasmtime_wasi_http::p2::bindings::http::types::ErrorCode as Code02;
use wasmtime_wasi_http::p3::bindings::http::types::{self, ErrorCode};
use wasmtime_wasi_http::p3::{Request, Response};
use wasmtime_wasi_http::{WasiHttp, WasiHttpView};

/// The client interface as this wasmtime-wasi-http links it.
const CLIENT: &str = "wasi:http/client@0.3.0";

/// Link wasi:http 0.3: its types from wasmtime-wasi-http, `send` from
/// this door.
pub(crate) fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    types::add_to_linker::<_, WasiHttp>(linker, HostState::http)?;
    linker.instance(CLIENT)?.func_wrap_concurrent(
        "send",
        |store: &Accessor<HostState>, (req,): (Resource<Request>,)| {
            Box::pin(async move { Ok((send(store, req).await?,)) })
        },
    )?;
    Ok(())
}

/// `client.send`: the body collected, then the request decided by the
/// gate; a refusal is `HTTP-request-denied`, a hard limit traps.
async fn send(
    store: &Accessor<HostState>,
    req: Resource<Request>,
) -> wasmtime::Result<Result<Resource<Response>, ErrorCode>> {
    // What the guest's future from `request.new` says of the request's
    // transmission: told once the gate has decided.
    let (sent_tx, sent_rx) = oneshot::channel::<Result<(), wasmtime_wasi_http::Error>>();
    let sent = async { sent_rx.await.unwrap_or(Ok(())) };
    let taken = store.with(|mut access| -> wasmtime::Result<_> {
        let state = access.data_mut();
        let req = state.table.delete(req)?;
        let head = head(&req);
        let held = state.http.held.get_or_insert_with(Default::default).clone();
        if held.bodies.load(Ordering::SeqCst) >= MAX_BODIES {
            // Dropped through wasmtime-wasi-http, which closes the body's
            // stream in the store.
            let code =
                ErrorCode::InternalError(Some(format!("more than {MAX_BODIES} requests at once")));
            let unsent = Err(code.clone().into());
            let _ = req.into_http(&mut access, async { unsent });
            return Ok(Err(code));
        }
        let body = match req.into_http(&mut access, sent) {
            Ok((http, _)) => http.into_body(),
            Err(e) => return Ok(Err(e.downcast()?)),
        };
        let arrived = Arc::new(tokio::sync::Notify::new());
        Ok(Ok((head, Collected::start(body, held, arrived))))
    })?;
    let (head, body) = match taken {
        Ok(t) => t,
        Err(code) => return Ok(Err(code)),
    };
    // The guest writes its body while this waits (its store runs on).
    let body = match body.collect().await {
        Ok(b) => b.to_bytes().to_vec(),
        Err(e) => {
            let code = to_03(super::body::failed(e));
            let _ = sent_tx.send(Err(code.clone().into()));
            return Ok(Err(code));
        }
    };
    store.with(|mut access| {
        let state = access.data_mut();
        let mut head = match head {
            Ok(h) => h,
            Err(code) => {
                let code = to_03(code);
                let _ = sent_tx.send(Err(code.clone().into()));
                return Ok(Err(code));
            }
        };
        head.body = body;
        let answer = state.send(head)?.map_err(to_03);
        let _ = sent_tx.send(match &answer {
            Ok(_) => Ok(()),
            Err(code) => Err(code.clone().into()),
        });
        match answer {
            Ok(resp) => {
                let (resp, _io) = Response::from_http(&mut state.http.hooks, resp);
                Ok(Ok(state.table.push(resp)?))
            }
            Err(code) => Ok(Err(code)),
        }
    })
}

/// The request's method, URL, headers and time limits as the broker takes
/// them ([`crate::net::wasi_http_request`]), or why it cannot be sent.
fn head(req: &Request) -> Result<FetchRequest, Code02> {
    // The broker's forbidden headers never got in (the fields refuse
    // them), and `host` is not set yet: it is the broker's to set.
    let headers = req
        .headers
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_bytes()));
    let mut head = crate::net::wasi_http_request(
        req.method.as_str(),
        req.scheme.as_ref().map(|s| s.as_str()),
        req.authority.as_ref().map(|a| a.as_str()),
        req.path_with_query.as_ref().map(|p| p.as_str()),
        headers,
    )
    .map_err(super::parts_error)?;
    if let Some(o) = &req.options {
        head.timeouts = super::timeouts(o);
    }
    Ok(head)
}

/// The codes the gate's answer can carry (0.2's, as the door shares them
/// with 0.2's `handle`) in 0.3's type, which has the same cases.
fn to_03(code: Code02) -> ErrorCode {
    match code {
        Code02::HttpRequestDenied => ErrorCode::HttpRequestDenied,
        Code02::ConnectionTimeout => ErrorCode::ConnectionTimeout,
        Code02::ConnectionReadTimeout => ErrorCode::ConnectionReadTimeout,
        Code02::HttpRequestUriInvalid => ErrorCode::HttpRequestUriInvalid,
        Code02::HttpRequestHeaderSize(_) => ErrorCode::HttpRequestHeaderSize(None),
        Code02::HttpRequestBodySize(n) => ErrorCode::HttpRequestBodySize(n),
        Code02::InternalError(m) => ErrorCode::InternalError(m),
        other => ErrorCode::InternalError(Some(format!("{other:?}"))),
    }
}

/// A request served to a 0.3 service, as its `handle` takes it (headers
/// the door forbids left out, as for requests the guest makes).
pub(crate) fn incoming_03(state: &mut HostState, req: http::Request<bytes::Bytes>) -> Request {
    let req = req.map(|b| {
        http_body_util::Full::new(b).map_err(
            |never: std::convert::Infallible| -> wasmtime_wasi_http::Error { match never {} },
        )
    });
    Request::from_http(&mut state.http.hooks, req).0
}
