//! `sbx-wasm serve`: an HTTP app an agent wrote (a component exporting
//! `wasi:http/incoming-handler` 0.2 or `wasi:http/handler` 0.3), served on a loopback address. Each
//! request is a run of a fresh instance under the grant, with the grant's
//! budgets for that request alone and its decisions in the audit stream
//! (tagged `session: "serve"`, `call: "rN"`, `tool: "METHOD PATH"`).

use crate::mcp::audit::{AuditStream, CallTag};
use crate::output::AuditFormat;
use anyhow::{Context, Result, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use sbx_wasm::Capabilities;
use sbx_wasm::net::MAX_REQUEST_BODY_BYTES;
use sbx_wasm::wasm::{PreparedService, RunOptions, WasmHost};
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// How long a client has to send a request's head, then its body.
const HEADER_WAIT: std::time::Duration = std::time::Duration::from_secs(10);
const BODY_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

#[derive(clap::Args, Debug)]
pub(crate) struct ServeArgs {
    /// The grant each request runs under (its budgets are per request).
    #[arg(long, value_name = "FILE")]
    caps: PathBuf,
    /// Where to listen: a loopback address (`127.0.0.1:0` picks a free
    /// port; the address bound is printed).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// Append every request's decisions and its end to FILE (JSON lines,
    /// chained and sealed per request, as `mcp --audit`).
    #[arg(long, value_name = "FILE")]
    audit: Option<PathBuf>,
    /// Sign each seal of the audit stream with the Ed25519 key in FILE
    /// (`sbx-wasm audit keygen` makes one). It may not lie in a mount.
    #[arg(long, value_name = "FILE", requires = "audit")]
    audit_key: Option<PathBuf>,
    /// The audit stream's form: `jsonl` (the project's records) or `ocsf`
    /// (OCSF 1.8 events).
    #[arg(long, value_name = "FORM", default_value = "jsonl", requires = "audit")]
    audit_format: AuditFormat,
    /// Requests handled at once (each an instance with the grant's memory);
    /// more wait for a place, in the order they came. Default: one per core.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    max_concurrent: Option<u32>,
    /// Client connections open at once (each a socket and a task, idle or
    /// not); one more is closed as soon as it is accepted.
    #[arg(long, value_name = "N", default_value_t = 256,
          value_parser = clap::value_parser!(u32).range(1..=65536))]
    max_connections: u32,
    /// The component: it exports `wasi:http/incoming-handler` 0.2 or
    /// `wasi:http/handler` 0.3.
    component: PathBuf,
}

/// What every connection shares.
struct Server {
    host: WasmHost,
    /// A place per request handled at once.
    places: tokio::sync::Semaphore,
    /// A place per client connection open at once.
    connections: Arc<tokio::sync::Semaphore>,
    service: PreparedService,
    caps: Capabilities,
    audit: Option<AuditStream>,
    served: AtomicU64,
}

impl ServeArgs {
    pub(crate) fn execute(self) -> Result<i32> {
        if !self.addr.ip().is_loopback() {
            bail!(
                "--addr {}: only loopback addresses are served (the app would be \
                 reachable from other machines)",
                self.addr
            );
        }
        let caps = crate::common::load_caps(&self.caps)?;
        let places = self.max_concurrent.map_or_else(
            || std::thread::available_parallelism().map_or(1, |n| n.get()),
            |n| n as usize,
        );
        // A slot of instance memory per place, reserved once: a request's
        // instance reuses one instead of mapping its memory afresh (a
        // wall-only grant runs on the unmetered engine, unpooled).
        let host = if caps.budget().meter_fuel {
            let sizes = sbx_wasm::wasm::PoolSizes::for_caps(&caps, places as u32);
            WasmHost::with_pool(sizes)
                .map_err(|e| anyhow::anyhow!("cannot start the wasm engine: {e:#}"))?
        } else {
            crate::common::engine_for(&caps)?
        };
        let component = host
            .load(&self.component)
            .with_context(|| format!("cannot load {}", self.component.display()))?;
        let service = host.prepare_service(&component)?;
        let key = self
            .audit_key
            .as_deref()
            .map(|k| crate::output::audit_key(k, &caps))
            .transpose()?;
        let audit = match &self.audit {
            Some(path) => Some(AuditStream::open(
                path,
                &caps.to_toml(),
                key,
                self.audit_format,
            )?),
            None => None,
        };
        let server = Arc::new(Server {
            host,
            places: tokio::sync::Semaphore::new(places),
            connections: Arc::new(tokio::sync::Semaphore::new(self.max_connections as usize)),
            service,
            caps,
            audit,
            served: AtomicU64::new(0),
        });
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .context("cannot start the runtime")?;
        rt.block_on(listen(server, self.addr))?;
        Ok(0)
    }
}

async fn listen(server: Arc<Server>, addr: SocketAddr) -> Result<()> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let bound = listener.local_addr()?;
    // As `wasmtime serve` says it, on stderr: a caller reads the port here.
    eprintln!("Serving HTTP on http://{bound}/");
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("cannot watch for SIGTERM")?;
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = tokio::signal::ctrl_c() => return Ok(()),
            _ = term.recv() => return Ok(()),
        };
        let Ok((stream, _)) = accepted else { continue };
        // Past the bound a connection is closed at once (dropped): idle
        // connections cost the host a socket and a task each.
        let Ok(open) = server.connections.clone().try_acquire_owned() else {
            continue;
        };
        let server = server.clone();
        tokio::spawn(async move {
            let _open = open;
            let service = service_fn(move |req| {
                let server = server.clone();
                async move { Ok::<_, std::convert::Infallible>(handle(&server, req).await) }
            });
            // A client gets HEADER_WAIT to send its request's head (a slow
            // one holds a connection, never a place).
            let _ = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_WAIT)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// One request: its body read (at most the broker's request bound), a run
/// of the service, its records, its answer.
async fn handle(server: &Server, req: hyper::Request<Incoming>) -> hyper::Response<Full<Bytes>> {
    let n = server.served.fetch_add(1, Ordering::SeqCst) + 1;
    let what = format!("{} {}", req.method(), req.uri().path());
    let (parts, body) = req.into_parts();
    let body = Limited::new(body, MAX_REQUEST_BODY_BYTES).collect();
    let body = match tokio::time::timeout(BODY_WAIT, body).await {
        Ok(Ok(b)) => b.to_bytes(),
        Ok(Err(_)) => {
            eprintln!(
                "r{n} {}: request body over {MAX_REQUEST_BODY_BYTES} bytes or cut: 413",
                printable(&what)
            );
            return plain(413, "request body too large or cut short\n");
        }
        Err(_) => {
            eprintln!("r{n} {}: request body too slow: 408", printable(&what));
            return plain(408, "request body not sent in time\n");
        }
    };
    // A place, once the request is whole: a slow client holds none.
    let Ok(_place) = server.places.acquire().await else {
        return plain(503, "the server is stopping\n");
    };
    let req = hyper::Request::from_parts(parts, body);
    let opts = RunOptions::new(server.caps.clone());
    let served = server
        .host
        .serve_request(&server.service, opts, hyper::http::uri::Scheme::HTTP, req)
        .await;
    let served = match served {
        Ok(s) => s,
        Err(e) => {
            eprintln!("r{n} {}: {e}", printable(&what));
            return plain(500, "the sandboxed service could not be started\n");
        }
    };
    let report = &served.run.report;
    if let Some(audit) = &server.audit {
        let tag = CallTag {
            session: "serve",
            call: &format!("r{n}"),
            tool: &what,
        };
        let end = serde_json::json!({
            "status": report.status,
            "violation": report.violation,
            "http_status": served.response.status().as_u16(),
            "usage": report.usage,
        });
        audit.record(&tag, &served.run.audit, end);
    }
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(&served.run.stdout);
    let _ = err.write_all(&served.run.stderr);
    let _ = writeln!(
        err,
        "r{n} {}: {} ({}{}, {} denials)",
        printable(&what),
        served.response.status().as_u16(),
        report.status,
        report
            .violation
            .map(|v| format!(" {v}"))
            .unwrap_or_default(),
        report.denials.len()
    );
    // Why a trapped request trapped (the guest's own failure, not a limit).
    if let Some(trap) = &served.run.trap {
        let _ = writeln!(err, "r{n}   trap: {}", printable(trap));
    }
    served.response.map(Full::new)
}

fn plain(status: u16, text: &'static str) -> hyper::Response<Full<Bytes>> {
    let mut r = hyper::Response::new(Full::new(Bytes::from_static(text.as_bytes())));
    *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::BAD_REQUEST);
    r
}

/// A client's request line, safe to print (no terminal escapes), at most
/// 200 characters.
fn printable(s: &str) -> String {
    sbx_wasm::bound::shorten(&sbx_wasm::bound::printable(s), 200)
}
