//! Deciding a wasi:http request once its body is whole: through the
//! gate, on the guest's own thread, its answer put into the guest's
//! future (only if that future is still the one it was handed).

use super::body::whole_now;
use super::{ErrorCode, HostFutureIncomingResponse, HostState, WasiBody};
use crate::capability::{Op, Output};
use crate::net::FetchRequest;
use crate::op::{ErrorKind, Failure};
use crate::wasm::HardLimit;
use bytes::Bytes;
use http_body_util::BodyExt;
use std::sync::Arc;
use tokio::sync::Notify;
use wasmtime::component::Resource;
use wasmtime_wasi::runtime::spawn;

impl HostState {
    /// Before a wait: decide every request whose body is whole; if some
    /// are still arriving, what tells the wait that one has (it then stops
    /// waiting, and this runs again).
    pub(super) fn before_wait(&mut self) -> wasmtime::Result<Option<Arc<Notify>>> {
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
    pub(super) fn decide_arrived(&mut self) -> wasmtime::Result<()> {
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
    pub(super) fn send(
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
            // A time limit the guest set: the code its client expects.
            Err(Failure::Error(e)) if e.kind == ErrorKind::TimedOut => {
                if e.message.starts_with("connect") {
                    Err(ErrorCode::ConnectionTimeout)
                } else {
                    Err(ErrorCode::ConnectionReadTimeout)
                }
            }
            Err(Failure::Error(e)) => Err(ErrorCode::InternalError(Some(e.message))),
        })
    }
}

/// A decided request's future, ready.
pub(super) fn ready(
    answer: Result<http::Response<WasiBody>, ErrorCode>,
) -> HostFutureIncomingResponse {
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
