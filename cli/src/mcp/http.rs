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
//! - SIGINT/SIGTERM: stop accepting, let running calls finish
//!   (`--shutdown-grace-ms`, 10 s), then
//!   cancel the rest (their audit is written), then close.

use super::door::Door;
use super::handler::Handler;
use anyhow::{Context, Result, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
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
const MAX_CONNECTIONS: usize = 1024;

pub(crate) struct HttpOptions {
    pub(crate) addr: SocketAddr,
    pub(crate) token: Option<String>,
    pub(crate) allowed_origins: Vec<String>,
    pub(crate) allowed_hosts: Vec<String>,
    pub(crate) max_request_bytes: usize,
}

type Service = StreamableHttpService<Handler, LocalSessionManager>;
type Reply = Response<BoxBody<Bytes, Infallible>>;

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
        move || Handler::new(door.clone()).map_err(std::io::Error::other)
    };
    let sessions = Arc::new(LocalSessionManager::default());
    let service: Service = StreamableHttpService::new(factory, sessions.clone(), config);
    // The one line a supervisor (or a test) waits for, with the real port.
    eprintln!("sbx-wasm mcp: listening on http://{local}{PATH}");
    let token: Option<Arc<str>> = o.token.map(Arc::from);
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
}

async fn answer(service: &Service, at: &At, token: Option<&str>, req: Request<Incoming>) -> Reply {
    if req.uri().path() != PATH {
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
    // A request that would open a session when the door holds its most:
    // 503 with a time to come back, not the 500 the session factory's
    // refusal would become. (The factory's count stays the hard limit.)
    let session = req
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(Arc::<str>::from);
    let opens_session = req.method() == hyper::Method::POST && session.is_none();
    if opens_session && at.door.sessions_full() {
        let mut r = plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "busy: the server holds as many sessions as it takes (--max-sessions); try again later",
        );
        r.headers_mut().insert(
            hyper::header::RETRY_AFTER,
            hyper::header::HeaderValue::from_static("5"),
        );
        return r;
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
