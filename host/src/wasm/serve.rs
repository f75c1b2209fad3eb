//! Services: components that export `wasi:http/incoming-handler` 0.2 (an
//! HTTP app an agent wrote). Each request is handled by a fresh instance
//! under the grant, as one run: its own gate, budgets and audit records;
//! the request's body is handed in whole, and the answer is read whole
//! (its body charged to `max_output_bytes` as it arrives) before any of it
//! is sent, so a service that breaks a budget answers 500, never half an
//! answer.

use super::outcome::{End, classify, finish};
use super::{LoadError, WasmHost, WasmRun, setup};
use crate::violation::Violation;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use wasmtime::Engine;
use wasmtime::component::Component;
use wasmtime_wasi_http::WasiHttpView;
use wasmtime_wasi_http::p2::bindings::ProxyPre;
use wasmtime_wasi_http::p2::bindings::http::types::Scheme;

use super::HostState;
use super::options::RunOptions;

/// A service component linked once, handling many requests
/// ([`WasmHost::prepare_service`]).
#[derive(Clone)]
pub struct PreparedService {
    pre: ProxyPre<HostState>,
    engine: Engine,
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
    /// Link a component that exports `wasi:http/incoming-handler` 0.2 for
    /// [`WasmHost::serve_request`]. Its imports are what a command may
    /// import (wasi:http's outgoing requests through the egress rules
    /// included).
    pub fn prepare_service(&self, component: &Component) -> Result<PreparedService, LoadError> {
        if !Engine::same(component.engine(), &self.shared.engine) {
            return Err(LoadError::Rejected {
                path: "component".to_string(),
                message: "a WASI 0.3 component: services are served for WASI 0.2's \
                          wasi:http/incoming-handler only (yet); build it for WASI 0.2"
                    .to_string(),
            });
        }
        let pre = self.linked(component, "component")?;
        let pre = ProxyPre::new(pre).map_err(|e| LoadError::Rejected {
            path: "component".to_string(),
            message: format!(
                "not a wasi:http service (no wasi:http/incoming-handler export): {e:#}"
            ),
        })?;
        Ok(PreparedService {
            pre,
            engine: self.shared.engine.clone(),
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
        let mut store = self.store(begun.state, begun.deterministic)?;
        let scheme = if scheme == http::uri::Scheme::HTTPS {
            Scheme::Https
        } else {
            Scheme::Http
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        let incoming = {
            let mut view = store.data_mut().http();
            let req = request.map(Full::new);
            let req = view
                .new_incoming_request(scheme, req)
                .map_err(|e| setup(format!("the request cannot be handed in: {e:#}")))?;
            let out = view
                .new_response_outparam(tx)
                .map_err(|e| setup(format!("the request cannot be handed in: {e:#}")))?;
            (req, out)
        };
        let call = async {
            let proxy = service.pre.instantiate_async(&mut store).await?;
            proxy
                .wasi_http_incoming_handler()
                .call_handle(&mut store, incoming.0, incoming.1)
                .await
        };
        // The answer is read while the guest writes it (its body goes
        // through a small channel), charged to the output budget.
        let answer = async {
            let Ok(Ok(resp)) = rx.await else {
                return None;
            };
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
        };
        let cancelled = async {
            match &cancel {
                Some(c) => c.cancelled().await,
                None => std::future::pending().await,
            }
        };
        let both = async { tokio::join!(call, answer) };
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
        for (_, _, output) in begun.closed {
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
