//! `sbx-wasm mcp`: the MCP door. A Model Context Protocol server (the
//! official Rust SDK, `rmcp`) over stdio or streamable HTTP whose tools run
//! model-written Python and wasm components, and single ops, under one caps
//! file.
//!
//! - `door.rs`: what every session shares (the grant, the engine, the
//!   runner, the run slots, the audit stream); `session.rs`: each
//!   session's own state (scratch folder, totals).
//! - `listing.rs`: the tools listed, with their input schemas.
//! - `catalog/`: `--catalog FILE`, what the operator offers besides the
//!   door's own tools (script tools, client tools, prompts, resources).
//! - `handler.rs`: the `ServerHandler`: list, call, dispatch.
//! - `runs.rs`: `run_python` and `run_wasm` (streaming, cancel, capacity).
//! - `events.rs`: a run's events as the JSON a client is sent.
//! - `files.rs`: the files a run wrote, linked (and images inline) in its
//!   answer.
//! - `logging.rs`: a run's stderr and denials as log messages, for a
//!   client that set a level.
//! - `prompts.rs`: the `code_mode` and `code_mode_ts` prompts, the grant as
//!   an API; `typescript.rs`: the granted tools as a TypeScript declaration.
//! - `served.rs`: the catalog's templates, prompts and completions when
//!   a client asks for them.
//! - `ops.rs`: `read_file`, `write_file`, `list_files`, `fetch` and the
//!   granted tools, one op each through the gate.
//! - `resources.rs`: the grant's folders as resources, read through the
//!   gate.
//! - `subscriptions.rs`: resource subscriptions, noticed after a call
//!   that writes.
//! - `uris.rs`: resource URIs and the guest paths they name.
//! - `reply.rs`: the result shapes (text and structured content).
//! - `audit.rs`: one audit stream for every call, tagged with session and
//!   call ids.
//! - `http.rs`: the HTTP transport (loopback by default, bearer token,
//!   `Origin` and `Host` checks, size limit, graceful shutdown).
//! - `body.rs`: an HTTP POST body read whole before rmcp: the 413 a client
//!   can read, and JSON-RPC errors for what is not one message.
//! - `browser.rs`: the `Origin` and `Host` rules.
//! - `workspaces.rs`: what sessionless (2026-07-28) requests are served
//!   in, so their totals and `/scratch` hold across calls.

mod approve;
pub(crate) mod audit;
mod body;
mod browser;
mod catalog;
mod door;
mod events;
mod files;
mod handler;
mod http;
mod listing;
mod logging;
mod metrics;
mod ops;
mod programs;
mod prompts;
mod reply;
mod resources;
mod runs;
mod served;
mod session;
mod subscriptions;
mod tasks;
mod typescript;
mod uris;
mod workspaces;

use crate::common::load_caps;
use anyhow::{Context, Result, bail};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(clap::Args, Debug)]
pub(crate) struct McpArgs {
    /// The caps file (TOML): the grant of every call (per-call budgets).
    #[arg(long, value_name = "FILE")]
    caps: PathBuf,
    /// Serve the streamable HTTP transport at ADDR (e.g. 127.0.0.1:8765)
    /// instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// The bearer token HTTP clients must send, read from FILE (required
    /// for a non-loopback --http address).
    #[arg(long, value_name = "FILE", conflicts_with = "token_env")]
    token_file: Option<PathBuf>,
    /// The bearer token HTTP clients must send, read from the environment
    /// variable VAR.
    #[arg(long, value_name = "VAR")]
    token_env: Option<String>,
    /// A browser origin allowed to call the HTTP transport (repeatable);
    /// by default a request with any `Origin` header is refused.
    #[arg(long, value_name = "ORIGIN")]
    allowed_origin: Vec<String>,
    /// A `Host` header value the HTTP transport answers (repeatable); by
    /// default localhost, 127.0.0.1 and ::1 on a loopback bind, any host
    /// behind a token otherwise.
    #[arg(long, value_name = "HOST")]
    allowed_host: Vec<String>,
    /// The URL this server is reached at directly (e.g. its pod's address,
    /// http://$(POD_IP):8765/mcp), told to a sessionless client with each
    /// workspace it issues, so the client's later requests reach the
    /// replica that holds the workspace whatever a load balancer does.
    #[arg(long, value_name = "URL", requires = "http")]
    advertise_url: Option<String>,
    /// Largest HTTP request body accepted, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 8 * 1024 * 1024)]
    max_request_bytes: usize,
    /// The folder `run_wasm` takes components from (a component is named
    /// by its file name in it); without it, `run_wasm` is not offered.
    #[arg(long, value_name = "DIR")]
    components: Option<PathBuf>,
    /// What the door offers besides its own tools (TOML): tools and
    /// resource templates that are Python scripts run under the grant,
    /// client tools (sampling, elicitation) the grant may allow, prompts,
    /// and guest files as resources (see docs/mcp.md, "The catalog").
    #[arg(long, value_name = "FILE")]
    catalog: Option<PathBuf>,
    /// The Python runner component (default: as `run` finds it); without
    /// one, `run_python` is not offered.
    #[arg(long, value_name = "FILE")]
    python_runner: Option<PathBuf>,
    /// The JavaScript runner component (default: as `run` finds it);
    /// without one, `run_javascript` is not offered.
    #[arg(long, value_name = "FILE")]
    js_runner: Option<PathBuf>,
    /// Offer `run_python_data`: Python in the data runner (numpy, pandas,
    /// matplotlib, scipy, scikit-learn; no network, no tools), found as
    /// `run --data` finds it. Its first load may compile it (minutes).
    #[arg(long)]
    data: bool,
    /// Give each session a scratch folder, mounted read-write at /scratch,
    /// kept between its calls and removed when the session ends.
    #[arg(long)]
    session_scratch: bool,
    /// Where session scratch folders are made (default: the system's temp
    /// folder).
    #[arg(long, value_name = "DIR", requires = "session_scratch")]
    scratch_root: Option<PathBuf>,
    /// Append every call's gated decisions to FILE (JSON lines, tagged with
    /// session and call ids).
    #[arg(long, value_name = "FILE")]
    audit: Option<PathBuf>,
    /// Sign each seal of the audit stream with the Ed25519 key in FILE
    /// (`sbx-wasm audit keygen` makes one). It may not lie in a mount.
    #[arg(long, value_name = "FILE", requires = "audit")]
    audit_key: Option<PathBuf>,
    /// The audit stream's form: `jsonl` (the project's records) or `ocsf`
    /// (OCSF 1.8 events; each call's start and end among them).
    #[arg(long, value_name = "FORM", default_value = "jsonl", requires = "audit")]
    audit_format: crate::output::AuditFormat,
    /// Protocol log to FILE instead of stderr.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Runs at the same time, over all sessions (default: the number of
    /// cores).
    #[arg(long, value_name = "N")]
    max_concurrent: Option<usize>,
    /// How long a call waits for a free run slot before it is answered
    /// `busy`, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    queue_wait_ms: u64,
    /// Sessions open at once (HTTP); a new one past it is refused. Idle
    /// sessions close after 5 minutes.
    #[arg(long, value_name = "N", default_value_t = 256)]
    max_sessions: usize,
    /// At SIGINT or SIGTERM, how long running calls may finish before they
    /// are cancelled, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    shutdown_grace_ms: u64,
    /// Calls one session may make in all.
    #[arg(long, value_name = "N", default_value_t = 1_000)]
    session_max_calls: u64,
    /// Wall time one session's calls may use in all, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 600_000)]
    session_max_wall_ms: u64,
    /// Output bytes one session's calls may return in all.
    #[arg(long, value_name = "BYTES", default_value_t = 256 * 1024 * 1024)]
    session_max_output_bytes: u64,
    /// A program call (run_python, run_wasm, a catalog script) from a
    /// client that declared the tasks extension becomes a task when it is
    /// still running after MS milliseconds (0: at once).
    #[arg(long, value_name = "MS", default_value_t = 1_000)]
    task_after_ms: u64,
    /// How long a task is kept for its client to poll, past its run's
    /// wall budget (so at least this long after it ended), in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 300_000)]
    task_keep_ms: u64,
}

impl McpArgs {
    pub(crate) fn execute(&self) -> Result<i32> {
        init_log(self.log.as_deref())?;
        let caps = load_caps(&self.caps)?;
        let door = door::Door::open(self, caps)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("sbx-mcp")
            .build()
            .context("cannot start the async runtime")?;
        runtime.block_on(async {
            match self.http {
                Some(addr) => {
                    let token = self.token()?;
                    let opts = http::HttpOptions {
                        addr,
                        token,
                        allowed_origins: self.allowed_origin.clone(),
                        allowed_hosts: self.allowed_host.clone(),
                        max_request_bytes: self.max_request_bytes,
                        advertise_url: self.advertise_url()?,
                    };
                    http::serve(Arc::new(door), opts).await
                }
                None => handler::serve_stdio(Arc::new(door)).await,
            }
        })?;
        Ok(crate::exit::EXIT_OK)
    }

    /// `--advertise-url`, checked: an http(s) URL of at most 2 KiB.
    fn advertise_url(&self) -> Result<Option<String>> {
        let Some(text) = &self.advertise_url else {
            return Ok(None);
        };
        let url = url::Url::parse(text).with_context(|| format!("--advertise-url {text:?}"))?;
        if !matches!(url.scheme(), "http" | "https") || text.len() > 2048 || url.host().is_none() {
            bail!("--advertise-url {text:?}: an http or https URL with a host, at most 2 KiB");
        }
        Ok(Some(url.to_string()))
    }

    /// The bearer token, from a file or the environment, never a flag value
    /// (a flag shows in `ps`).
    fn token(&self) -> Result<Option<String>> {
        let token = if let Some(path) = &self.token_file {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the token file {}", path.display()))?;
            Some(text.trim().to_string())
        } else if let Some(var) = &self.token_env {
            let value = std::env::var(var)
                .with_context(|| format!("--token-env {var}: the variable is not set"))?;
            Some(value.trim().to_string())
        } else {
            None
        };
        if let Some(t) = &token
            && (t.len() < 16 || !t.bytes().all(|b| b.is_ascii_graphic()))
        {
            bail!("the bearer token must be at least 16 printable ASCII characters without spaces");
        }
        Ok(token)
    }
}

/// Protocol logging: to `file`, else stderr; never stdout (in stdio mode
/// stdout is the protocol).
fn init_log(file: Option<&std::path::Path>) -> Result<()> {
    let builder = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO);
    match file {
        Some(path) => {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("cannot open the log file {}", path.display()))?;
            builder.with_writer(Arc::new(f)).init();
        }
        None => builder.with_writer(std::io::stderr).init(),
    }
    Ok(())
}

/// The first SIGINT or SIGTERM (either transport's end).
pub(crate) async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => {}
        _ = term.recv() => {}
    }
}
