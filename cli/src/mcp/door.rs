//! What the MCP door's sessions share.
//!
//! One `Door` per server process: the grant, the engine (and its artifact
//! cache), the Python runner, the run slots, the audit stream. It makes one
//! `Session` (`session.rs`) per MCP session (one for stdio; one per
//! `Mcp-Session-Id` over HTTP) and per workspace (sessionless requests:
//! `workspaces.rs`). Every call's budgets are the caps file's; the session
//! totals stop one client from taking the host for itself.

use super::McpArgs;
use super::audit::AuditStream;
use super::catalog::{self, Catalog};
use super::reply::{self, Ids};
use super::session::{OpenSession, Session, SessionLimits};
use super::tasks::TaskPolicy;
use super::workspaces::Workspaces;
use crate::common::{cached, engine_for, registry};
use crate::scripts::Lang;
use anyhow::{Context, Result, bail};
use rmcp::model::CallToolResult;

use sbx_wasm::tools::ToolDefinition;
use sbx_wasm::wasm::{DataRunner, JsRunner, PreparedAgent, PythonRunner, WasmHost};
use sbx_wasm::{AuditEvent, RunReport};
use sbx_wasm::{CancelHandle, Capabilities};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// The guest path of a session's scratch folder.
pub(crate) const SCRATCH_GUEST: &str = "/scratch";

/// What every session shares.
pub(crate) struct Door {
    pub(crate) caps: Capabilities,
    pub(crate) host: WasmHost,
    pub(crate) python: Option<PythonRunner>,
    pub(crate) js: Option<JsRunner>,
    /// The data runner, when `--data` asks for it.
    pub(crate) data: Option<DataRunner>,
    /// The folder `run_wasm` takes components from (canonical).
    pub(crate) components: Option<PathBuf>,
    /// Where session scratch folders are made, when sessions have one.
    pub(crate) scratch_root: Option<PathBuf>,
    pub(crate) granted_tools: Vec<ToolDefinition>,
    /// What `--catalog` offers (empty without one).
    pub(crate) catalog: Catalog,
    pub(crate) limits: SessionLimits,
    /// When a program call becomes a task.
    pub(crate) tasks: TaskPolicy,
    pub(crate) audit: Option<AuditStream>,
    slots: Arc<Semaphore>,
    pub(crate) max_concurrent: usize,
    queue_wait: Duration,
    /// Thrown at shutdown: running calls are cancelled.
    pub(crate) stop: CancellationToken,
    /// How long running calls may finish at shutdown.
    grace: Duration,
    pub(super) inflight: AtomicUsize,
    /// Calls answered since start: ran, and turned away.
    pub(super) ran: AtomicU64,
    pub(super) turned_away: AtomicU64,
    idle: Notify,
    pub(super) sessions: AtomicU64,
    /// Sessions open now, and the most allowed at once.
    pub(super) open: Arc<AtomicUsize>,
    pub(super) max_sessions: usize,
    prepared: Mutex<HashMap<PathBuf, (SystemTime, u64, PreparedAgent)>>,
    /// What sessionless (2026-07-28) requests are served in.
    pub(crate) workspaces: Workspaces<Session>,
    /// OpenTelemetry export (nothing without `--features otel` and an
    /// endpoint).
    pub(crate) telemetry: sbx_wasm::telemetry::Telemetry,
}

impl Door {
    pub(crate) fn open(args: &McpArgs, caps: Capabilities) -> Result<Door> {
        // The door's own run slots (--max-concurrent) admit calls: the
        // host takes none of its own.
        let (host, no_cache) = cached(engine_for(&caps)?.unlimited());
        if let Some(e) = no_cache {
            tracing::warn!("no artifact cache ({e:#}); compiling in memory");
        }
        let python = match Lang::Python.find_runner(args.python_runner.as_deref()) {
            // One instance kept ready: a run_python call starts with the
            // snippet, not with instantiating CPython.
            Ok(path) => Some(
                PythonRunner::load(&host, &path)
                    .and_then(|p| p.keep_warm(1))
                    .with_context(|| format!("cannot load the Python runner {}", path.display()))?,
            ),
            Err(e) if args.python_runner.is_some() => return Err(e),
            Err(e) => {
                tracing::warn!("run_python is not offered: {e:#}");
                None
            }
        };
        let js = match Lang::JavaScript.find_runner(args.js_runner.as_deref()) {
            // One instance kept ready, as for Python.
            Ok(path) => Some(
                JsRunner::load(&host, &path)
                    .and_then(|p| p.keep_warm(1))
                    .with_context(|| {
                        format!("cannot load the JavaScript runner {}", path.display())
                    })?,
            ),
            Err(e) if args.js_runner.is_some() => return Err(e),
            Err(e) => {
                tracing::warn!("run_javascript is not offered: {e:#}");
                None
            }
        };
        let data =
            match args.data {
                true => {
                    let path = Lang::Data.find_or_build_runner(None)?;
                    Some(DataRunner::load(&host, &path).with_context(|| {
                        format!("cannot load the data runner {}", path.display())
                    })?)
                }
                false => None,
            };
        let components = match &args.components {
            Some(dir) => Some(
                dir.canonicalize()
                    .with_context(|| format!("--components {}", dir.display()))?,
            ),
            None => None,
        };
        let scratch_root = if args.session_scratch {
            let root = args.scratch_root.clone().unwrap_or_else(std::env::temp_dir);
            // A mount of the caps file over the scratch root (or inside it)
            // would let one session reach every other's /scratch.
            sbx_wasm::ProtectedPaths::new()
                .with(&root, "the sessions' scratch root")
                .check(&caps)
                .context("--scratch-root")?;
            // A clash with a mount of the caps file is a start-up error,
            // not every session's.
            let probe = tempfile::Builder::new()
                .prefix("sbx-mcp-probe-")
                .tempdir_in(&root)
                .with_context(|| format!("cannot make scratch folders in {}", root.display()))?;
            caps.to_builder()?
                .write_mount(probe.path(), SCRATCH_GUEST)
                .build()
                .context("the session scratch mount does not fit the caps file")?;
            Some(root)
        } else {
            None
        };
        let max_concurrent = args.max_concurrent.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get)
        });
        if max_concurrent == 0 {
            bail!("--max-concurrent must be at least 1");
        }
        let granted_tools = registry(&caps).definitions(caps.tools());
        if let Some(clash) = granted_tools
            .iter()
            .find(|d| super::listing::built_in(&d.name))
        {
            bail!(
                "the caps file grants a tool named {:?}, which is a tool of the MCP door itself; rename it",
                clash.name
            );
        }
        let catalog = match &args.catalog {
            Some(path) => {
                let taken = |n: &str| {
                    super::listing::built_in(n) || granted_tools.iter().any(|d| d.name == n)
                };
                let scratch = scratch_root.is_some().then_some(SCRATCH_GUEST);
                catalog::load_for_grant(path, &caps, python.is_some(), scratch, &taken)?
            }
            None => Catalog::default(),
        };
        let audit = match &args.audit {
            Some(path) => {
                let key = args
                    .audit_key
                    .as_deref()
                    .map(|k| crate::output::audit_key(k, &caps))
                    .transpose()?;
                Some(AuditStream::open(
                    path,
                    &caps.to_toml(),
                    key,
                    args.audit_format,
                )?)
            }
            None => None,
        };
        tracing::info!(
            max_concurrent,
            memory_bound_mib = (max_concurrent as u64 * caps.budget().max_memory_bytes) >> 20,
            "sbx-wasm mcp ready"
        );
        Ok(Door {
            telemetry: sbx_wasm::telemetry::Telemetry::from_env(),
            host,
            python,
            js,
            data,
            components,
            scratch_root,
            granted_tools,
            catalog,
            limits: SessionLimits {
                calls: args.session_max_calls,
                wall: Duration::from_millis(args.session_max_wall_ms),
                output_bytes: args.session_max_output_bytes,
            },
            tasks: TaskPolicy {
                after: Duration::from_millis(args.task_after_ms),
                keep: Duration::from_millis(args.task_keep_ms),
            },
            audit,
            slots: Arc::new(Semaphore::new(max_concurrent)),
            max_concurrent,
            queue_wait: Duration::from_millis(args.queue_wait_ms),
            stop: CancellationToken::new(),
            grace: Duration::from_millis(args.shutdown_grace_ms),
            inflight: AtomicUsize::new(0),
            ran: AtomicU64::new(0),
            turned_away: AtomicU64::new(0),
            idle: Notify::new(),
            sessions: AtomicU64::new(0),
            open: Arc::new(AtomicUsize::new(0)),
            max_sessions: args.max_sessions,
            prepared: Mutex::new(HashMap::new()),
            workspaces: Workspaces::default(),
            caps,
        })
    }

    /// What the tool listing shows: the grant and what is offered.
    pub(crate) fn offer(&self) -> super::listing::Offer<'_> {
        super::listing::Offer {
            caps: &self.caps,
            scratch: self.scratch_root.is_some(),
            python: self.python.is_some(),
            js: self.js.is_some(),
            data: self.data.is_some(),
            components: self.components.is_some(),
            granted_tools: &self.granted_tools,
            catalog: &self.catalog,
        }
    }

    /// A run slot, or `None` after waiting `queue_wait` or once shutdown
    /// has cancelled the running calls (the call is answered `busy`).
    pub(crate) async fn slot(&self) -> Option<OwnedSemaphorePermit> {
        let wait = tokio::time::timeout(self.queue_wait, self.slots.clone().acquire_owned());
        tokio::select! {
            got = wait => got.ok()?.ok(),
            () = self.stop.cancelled() => None,
        }
    }

    /// Count a call as running until the guard drops.
    pub(crate) fn enter(self: &Arc<Self>) -> Inflight {
        self.inflight.fetch_add(1, Ordering::SeqCst);
        Inflight(self.clone())
    }

    /// Wait until no call is running.
    pub(crate) async fn drained(&self) {
        loop {
            let idle = self.idle.notified();
            if self.inflight.load(Ordering::SeqCst) == 0 {
                return;
            }
            idle.await;
        }
    }

    /// Shutdown: let running calls finish for up to the grace period, then
    /// cancel the rest and wait for them (each still writes its audit).
    pub(crate) async fn shut_down(&self) {
        if tokio::time::timeout(self.grace, self.drained())
            .await
            .is_err()
        {
            tracing::info!("cancelling the calls still running");
            self.stop.cancel();
            self.drained().await;
        }
    }

    /// A call answered without running (`busy`, `refused`): its end
    /// record, then the answer.
    pub(crate) fn turn_away(
        &self,
        ids: &Ids<'_>,
        tool: &str,
        status: &str,
        reason: &str,
    ) -> CallToolResult {
        self.turned_away.fetch_add(1, Ordering::Relaxed);
        if let Some(audit) = &self.audit {
            let end = serde_json::json!({ "status": status, "reason": reason });
            audit.record(&ids.tag(tool), &[], end);
        }
        reply::refused(status, reason, ids)
    }

    /// A call that ran (a program or one op): charge the session, log it,
    /// and write its decisions and end record.
    pub(crate) fn finish_call(
        &self,
        session: &Session,
        ids: &Ids<'_>,
        tool: &str,
        report: &RunReport,
        decisions: &[AuditEvent],
    ) {
        session.charge(report.usage.wall_us, report.usage.output_bytes);
        session.note_writes(decisions);
        session.add_labels(&report.labels, ids.call);
        self.telemetry.run(&sbx_wasm::telemetry::RunInfo {
            kind: tool,
            program: tool,
            start: std::time::SystemTime::now()
                - std::time::Duration::from_micros(report.usage.wall_us),
            report,
            audit: decisions,
            call: Some((ids.session, ids.call)),
        });
        tracing::info!(
            session = ids.session, call = ids.call, tool,
            status = ?report.status, violation = ?report.violation, "call ended"
        );
        if let Some(audit) = &self.audit {
            let end = serde_json::json!({
                "status": report.status,
                "exit_code": report.exit_code,
                "violation": report.violation,
                "usage": report.usage,
                "at_ms": crate::output::epoch_ms(std::time::SystemTime::now()),
            });
            audit.record(&ids.tag(tool), decisions, end);
        }
    }

    /// A cancel switch for one call, thrown by the client's cancellation
    /// (`client`) or by shutdown; the watch ends when the guard drops.
    pub(crate) fn cancel_switch(&self, client: CancellationToken) -> (CancelHandle, Watch) {
        let cancel = CancelHandle::new();
        let (switch, stop) = (cancel.clone(), self.stop.clone());
        let task = tokio::spawn(async move {
            tokio::select! {
                () = client.cancelled() => {}
                () = stop.cancelled() => {}
            }
            switch.cancel();
        });
        (cancel, Watch(task))
    }

    /// Count a call that ran (once per call: a follow-up of the same call,
    /// such as reading back the images it wrote, is not counted again).
    pub(crate) fn count_ran(&self) {
        self.ran.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether as many sessions are open as `--max-sessions` allows.
    pub(crate) fn sessions_full(&self) -> bool {
        self.open.load(Ordering::SeqCst) >= self.max_sessions
    }

    /// A new MCP session: its id (`s1`, `s2`, ...), its grant, its
    /// scratch folder.
    pub(crate) fn session(&self) -> Result<Session> {
        self.open_session("s")
    }

    /// A new workspace for sessionless requests (its audit id `w1`, `w2`,
    /// ...), and its handle.
    pub(crate) fn issue_workspace(&self) -> Result<String> {
        self.workspaces.issue(|| self.open_session("w"))
    }

    /// The default workspace, opened when there is none.
    pub(crate) fn shared_workspace(&self) -> Result<Arc<Session>> {
        self.workspaces.shared(|| self.open_session("w"))
    }

    fn open_session(&self, prefix: &str) -> Result<Session> {
        let open = OpenSession::count(&self.open, self.max_sessions)?;
        let n = self.sessions.fetch_add(1, Ordering::Relaxed) + 1;
        let id = format!("{prefix}{n}");
        let (caps, scratch) = match &self.scratch_root {
            Some(root) => {
                let dir = tempfile::Builder::new()
                    .prefix(&format!("sbx-mcp-{id}-"))
                    .tempdir_in(root)
                    .with_context(|| {
                        format!("cannot make a scratch folder in {}", root.display())
                    })?;
                let mut b = self
                    .caps
                    .to_builder()?
                    .write_mount(dir.path(), SCRATCH_GUEST);
                // Every label may reach /scratch: it lives as long as the
                // session, whose mark carries every label its calls read,
                // so what is written there cannot leave by it.
                for label in self.caps.flow().allowed().keys() {
                    b = b.flow(label.clone(), [SCRATCH_GUEST]);
                }
                let caps = b.build()?;
                (caps, Some(dir))
            }
            None => (self.caps.clone(), None),
        };
        Ok(Session::new(open, id, caps, scratch))
    }

    /// The component `name` from the components folder, compiled and
    /// linked once per file version. A name is a file name in that folder:
    /// no path, nothing reached through a link that leaves it.
    pub(crate) fn component(&self, name: &str) -> std::result::Result<PreparedAgent, String> {
        let Some(dir) = &self.components else {
            return Err("no components folder was given to this server (--components)".into());
        };
        let plain = !name.is_empty()
            && name.len() <= 255
            && !name.starts_with('.')
            && !name.contains(['/', '\\', '\0'])
            && name.ends_with(".wasm");
        if !plain {
            return Err(format!(
                "{name:?} is not a component name: a file name ending in .wasm in the components folder"
            ));
        }
        let path = dir.join(name);
        let real = path
            .canonicalize()
            .map_err(|_| format!("no component {name:?} in the components folder"))?;
        if real.parent() != Some(dir.as_path()) {
            return Err(format!("{name:?} leads out of the components folder"));
        }
        let meta = std::fs::metadata(&real).map_err(|e| format!("{name}: {e}"))?;
        let stamp = (
            meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            meta.len(),
        );
        {
            let prepared = self.prepared.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((m, l, agent)) = prepared.get(&real)
                && (*m, *l) == stamp
            {
                return Ok(agent.clone());
            }
        }
        // Compiled without the lock (other sessions' calls go on), in a
        // bounded child: a hostile component costs this server nothing
        // past the bounds. Two sessions asking at once may both compile.
        let bounds = crate::compile::CompileBounds::default();
        let (agent, _) = crate::compile::load_bounded(&self.host, &real, &bounds, false)
            .map_err(|e| format!("{name}: {}", crate::exit::describe(&e)))?;
        let mut prepared = self.prepared.lock().unwrap_or_else(|p| p.into_inner());
        prepared.insert(real, (stamp.0, stamp.1, agent.clone()));
        Ok(agent)
    }
}

/// Watches for a call's cancellation until dropped.
pub(crate) struct Watch(tokio::task::JoinHandle<()>);

impl Drop for Watch {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A running call, counted until dropped.
pub(crate) struct Inflight(Arc<Door>);

impl Drop for Inflight {
    fn drop(&mut self) {
        if self.0.inflight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}
