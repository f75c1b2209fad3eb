//! The streamable HTTP transport at `/mcp`: rmcp's service, served by
//! hyper, behind the checks a network listener needs.
//!
//! - A non-loopback bind needs a bearer token (from a file or the
//!   environment); when a token is set, every request must carry it.
//! - `Origin`: a request carrying one is refused unless it is listed
//!   (`--allowed-origin`), and `Host` must be a listed name (DNS
//!   rebinding protection; by default the loopback names on a loopback
//!   bind).
//! - Bodies over `--max-request-bytes` are refused; headers must arrive
//!   within 10 s; at most 1,024 connections at once.
//! - `GET /metrics`: the door's gauges and counters (runs in flight,
//!   sessions open, calls), under the same token, `Origin` and `Host`
//!   rules, for an autoscaler.
//! - `POST /mcp/workspaces` issues a workspace for sessionless clients
//!   (`workspaces.rs`), under the same token, `Origin` and `Host` rules.
//! - SIGINT/SIGTERM: stop accepting, let running calls finish
//!   (`--shutdown-grace-ms`, 10 s), then
//!   cancel the rest (their audit is written), then close.

use super::body::{self, Reply};
use super::browser::Browser;
use super::door::Door;
use super::handler::{Handler, Transport};
use super::workspaces;
use anyhow::{Context, Result, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::SessionManager as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// The path the transport answers at.
pub(crate) const PATH: &str = "/mcp";
/// The path the door's metrics are read at (Prometheus text).
const METRICS: &str = "/metrics";
/// The path workspaces are issued and closed at.
const WORKSPACES: &str = "/mcp/workspaces";
const MAX_CONNECTIONS: usize = 1024;

pub(crate) struct HttpOptions {
    pub(crate) addr: SocketAddr,
    pub(crate) token: Option<String>,
    pub(crate) allowed_origins: Vec<String>,
    pub(crate) allowed_hosts: Vec<String>,
    pub(crate) max_request_bytes: usize,
    /// `--advertise-url`: told with each workspace issued.
    pub(crate) advertise_url: Option<String>,
}

type Service = StreamableHttpService<Handler, LocalSessionManager>;

pub(crate) async fn serve(door: Arc<Door>, o: HttpOptions) -> Result<()> {
    let loopback = o.addr.ip().is_loopback();
    if !loopback && o.token.is_none() {
        bail!(
            "--http {} is not a loopback address: a bearer token is required \
             (--token-file FILE or --token-env VAR)",
            o.addr
        );
    }
    let listener = tokio::net::TcpListener::bind(o.addr)
        .await
        .with_context(|| format!("cannot listen on {}", o.addr))?;
    let local = listener.local_addr()?;
    let closing = CancellationToken::new();
    let mut config = StreamableHttpServerConfig::default()
        .with_max_request_body_bytes(o.max_request_bytes)
        .with_cancellation_token(closing.child_token());
    config = if !o.allowed_origins.is_empty() {
        config.with_allowed_origins(o.allowed_origins.clone())
    } else if loopback {
        // A page the server itself serves, or a client that names the
        // server's own address, is no rebinding attack: its Origin is the
        // bound address. Every other origin stays refused.
        let port = local.port();
        let own = match local.ip() {
            std::net::IpAddr::V4(ip) => format!("http://{ip}:{port}"),
            std::net::IpAddr::V6(ip) => format!("http://[{ip}]:{port}"),
        };
        config.with_allowed_origins([own, format!("http://localhost:{port}")])
    } else {
        config.enforce_origin_validation()
    };
    if !o.allowed_hosts.is_empty() {
        config = config.with_allowed_hosts(o.allowed_hosts.clone());
    } else if !loopback {
        // Behind a token, any name a load balancer sends.
        config = config.disable_allowed_hosts();
    }
    let factory = {
        let door = door.clone();
        move || Ok(Handler::new(door.clone(), Transport::Http))
    };
    let sessions = Arc::new(LocalSessionManager::default());
    let browser = Arc::new(Browser {
        origins: config.allowed_origins.clone(),
        hosts: config.allowed_hosts.clone(),
    });
    let service: Service = StreamableHttpService::new(factory, sessions.clone(), config);
    let advertise: Option<Arc<str>> = o.advertise_url.map(Arc::from);
    // The one line a supervisor (or a test) waits for, with the real port.
    eprintln!("sbx-wasm mcp: listening on http://{local}{PATH}");
    let token: Option<Arc<str>> = o.token.map(Arc::from);
    // Idle workspaces are closed in the background (idle sessions by
    // rmcp's session manager).
    tokio::spawn({
        let (door, closing) = (door.clone(), closing.clone());
        async move {
            let mut tick = tokio::time::interval(Duration::from_secs(30));
            loop {
                tokio::select! {
                    _ = tick.tick() => door.workspaces.reap(),
                    () = closing.cancelled() => break,
                }
            }
        }
    });
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let connections = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let stop = super::shutdown_signal();
    tokio::pin!(stop);
    loop {
        let permit = tokio::select! {
            p = connections.clone().acquire_owned() => p?,
            () = &mut stop => break,
        };
        let stream = tokio::select! {
            a = listener.accept() => match a {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let (service, token) = (service.clone(), token.clone());
        let at = At {
            door: door.clone(),
            sessions: sessions.clone(),
            browser: browser.clone(),
            max_request_bytes: o.max_request_bytes,
            advertise_url: advertise.clone(),
        };
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(Duration::from_secs(10))
            .serve_connection(
                TokioIo::new(stream),
                hyper::service::service_fn(move |req| {
                    let (service, token, at) = (service.clone(), token.clone(), at.clone());
                    async move {
                        Ok::<_, Infallible>(answer(&service, &at, token.as_deref(), req).await)
                    }
                }),
            );
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
            drop(permit);
        });
    }
    drop(listener);
    tracing::info!("shutting down: finishing running calls");
    door.shut_down().await;
    closing.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(5), graceful.shutdown()).await;
    Ok(())
}

/// What `answer` checks a request against besides rmcp's service.
#[derive(Clone)]
struct At {
    door: Arc<Door>,
    sessions: Arc<LocalSessionManager>,
    browser: Arc<Browser>,
    max_request_bytes: usize,
    advertise_url: Option<Arc<str>>,
}

/// `POST /mcp/workspaces` issues a workspace (201, its handle as JSON and
/// in the `Sbx-Workspace` header, and with `--advertise-url` the URL to
/// send its requests to, as `url` and in `Sbx-Workspace-Url`);
/// `DELETE /mcp/workspaces/HANDLE` closes one (204; 404 if it is not open).
fn workspace_endpoint(at: &At, rest: &str, req: &Request<Incoming>) -> Reply {
    match (req.method(), rest.strip_prefix('/')) {
        (&hyper::Method::POST, None | Some("")) => match at.door.issue_workspace() {
            Ok(handle) => {
                let mut body = serde_json::json!({ "workspace": handle });
                if let Some(url) = &at.advertise_url {
                    body["url"] = url.as_ref().into();
                }
                let body = body.to_string();
                let mut r = Response::new(Full::new(Bytes::from(body)).boxed());
                *r.status_mut() = StatusCode::CREATED;
                let h = r.headers_mut();
                h.insert(
                    hyper::header::CONTENT_TYPE,
                    hyper::header::HeaderValue::from_static("application/json"),
                );
                if let Ok(v) = hyper::header::HeaderValue::from_str(&handle) {
                    h.insert(workspaces::HEADER, v);
                }
                let url = at.advertise_url.as_deref();
                if let Some(v) = url.and_then(|u| hyper::header::HeaderValue::from_str(u).ok()) {
                    h.insert("sbx-workspace-url", v);
                }
                r
            }
            Err(_) => busy(),
        },
        (&hyper::Method::DELETE, Some(handle)) if !handle.is_empty() => {
            if at.door.workspaces.close(handle) {
                let mut r = plain(StatusCode::NO_CONTENT, "");
                *r.body_mut() = Full::new(Bytes::new()).boxed();
                r
            } else {
                plain(StatusCode::NOT_FOUND, "no such workspace")
            }
        }
        (_, None | Some("")) => plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "POST /mcp/workspaces issues a workspace",
        ),
        _ => plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "DELETE /mcp/workspaces/HANDLE closes a workspace",
        ),
    }
}

/// 503 with a time to come back: the server holds its most sessions.
fn busy() -> Reply {
    let mut r = plain(
        StatusCode::SERVICE_UNAVAILABLE,
        "busy: the server holds as many sessions as it takes (--max-sessions); try again later",
    );
    r.headers_mut().insert(
        hyper::header::RETRY_AFTER,
        hyper::header::HeaderValue::from_static("5"),
    );
    r
}

async fn answer(service: &Service, at: &At, token: Option<&str>, req: Request<Incoming>) -> Reply {
    let path = req.uri().path();
    if path != PATH && path != METRICS && !path.starts_with(WORKSPACES) {
        return plain(StatusCode::NOT_FOUND, "not found: the MCP endpoint is /mcp");
    }
    if let Some(expected) = token {
        let given = req
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if !given.is_some_and(|g| same(g.as_bytes(), expected.as_bytes())) {
            let mut r = plain(StatusCode::UNAUTHORIZED, "a valid bearer token is required");
            r.headers_mut().insert(
                hyper::header::WWW_AUTHENTICATE,
                hyper::header::HeaderValue::from_static("Bearer"),
            );
            return r;
        }
    }
    if let Some(why) = at.browser.refuses(req.headers()) {
        return plain(StatusCode::FORBIDDEN, why);
    }
    if path == METRICS {
        if req.method() != hyper::Method::GET {
            return plain(StatusCode::METHOD_NOT_ALLOWED, "GET /metrics");
        }
        let mut r = Response::new(Full::new(Bytes::from(at.door.metrics())).boxed());
        r.headers_mut().insert(
            hyper::header::CONTENT_TYPE,
            hyper::header::HeaderValue::from_static("text/plain; version=0.0.4"),
        );
        return r;
    }
    if let Some(rest) = path.strip_prefix(WORKSPACES) {
        if rest.is_empty() || rest.starts_with('/') {
            return workspace_endpoint(at, rest, &req);
        }
        return plain(StatusCode::NOT_FOUND, "not found: the MCP endpoint is /mcp");
    }
    let header = |name| req.headers().get(name).and_then(|v| v.to_str().ok());
    // A request naming a workspace that is not open: 404, as for a
    // session.
    let workspace = header(workspaces::HEADER);
    if let Some(handle) = workspace
        && !at.door.workspaces.has(handle)
    {
        return plain(StatusCode::NOT_FOUND, "no such workspace");
    }
    // A handshake when the door holds its most sessions: 503 with a time
    // to come back, not the error the session's refusal would become.
    // (The count in `Door` stays the hard limit; a sessionless request
    // carries its revision in a header and opens no session.)
    let session = header("mcp-session-id").map(Arc::<str>::from);
    let sessionless = header("mcp-protocol-version").is_some_and(|v| v >= "2026-07-28");
    let opens_session = req.method() == hyper::Method::POST
        && session.is_none()
        && workspace.is_none()
        && !sessionless;
    if opens_session && at.door.sessions_full() {
        return busy();
    }
    if req.method() == hyper::Method::DELETE {
        // Ending a session no one has (never opened, or already ended)
        // is 404, as for any request naming it; ending one is 204.
        if let Some(id) = &session
            && !at.sessions.has_session(id).await.unwrap_or(false)
        {
            return plain(StatusCode::NOT_FOUND, "no such session");
        }
        let mut r = service.handle(req).await;
        if r.status() == StatusCode::ACCEPTED {
            *r.status_mut() = StatusCode::NO_CONTENT;
            *r.body_mut() = Full::new(Bytes::new()).boxed();
        }
        return r;
    }
    let json = header(hyper::header::CONTENT_TYPE.as_str()).is_some_and(|t| {
        t.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .eq_ignore_ascii_case("application/json")
    });
    if req.method() == hyper::Method::POST && json {
        let declared = header(hyper::header::CONTENT_LENGTH.as_str()).and_then(|n| n.parse().ok());
        let (parts, incoming) = req.into_parts();
        let bytes = match body::whole(incoming, declared, at.max_request_bytes).await {
            Ok(b) => b,
            Err(r) => return r,
        };
        if let Some(r) = body::not_one_message(&bytes) {
            return r;
        }
        return service
            .handle(Request::from_parts(parts, Full::new(bytes)))
            .await;
    }
    service.handle(req).await
}

/// Compare without an early exit, so timing says nothing of the token.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn plain(status: StatusCode, text: &'static str) -> Reply {
    let mut r = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *r.status_mut() = status;
    r
}
