//! `run_python`, `run_javascript` and `run_wasm`: a whole program under the grant, in a run
//! slot, its output and denials streamed as progress notifications when
//! the client asked for progress (and its stderr and denials as log
//! messages when the client set a log level), cancelled by the client's
//! cancellation or by shutdown.

use super::catalog::{self, OutputKind};
use super::door::Door;
use super::reply::{self, Ids};
use super::session::Session;
use super::{approve, events, files, logging};
use crate::common::registry;
use crate::scripts::Lang;
use rmcp::model::{CallToolResult, ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RoleServer};
use sbx_wasm::events::{Event, EventSink};
use sbx_wasm::wasm::{PreparedAgent, RunOptions, WasmRun};

use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// What a program call asks for.
pub(crate) struct Program {
    pub(crate) agent: PreparedAgent,
    /// `python` or the component's file name.
    pub(crate) name: String,
    pub(crate) args: Vec<String>,
    pub(crate) stdin: Vec<u8>,
    /// For `run_python`, `run_javascript` and catalog scripts (Python): the
    /// script's language and source, handed to its runner as its script.
    pub(crate) source: Option<(Lang, String)>,
    /// How a catalog script tool answers; `None` for the run's report.
    pub(crate) shape: Option<OutputKind>,
    /// Labels the call's code or input carries (its `labels` argument).
    pub(crate) labels: sbx_wasm::flow::Mark,
}

/// The client a call came from: who hears of a run's events as they
/// happen (progress, when it asked for it; log messages, when it set a
/// level), and who the catalog's client tools ask.
pub(crate) struct Client {
    pub(crate) peer: Peer<RoleServer>,
    pub(crate) progress: Option<ProgressToken>,
    pub(crate) log: Option<logging::Log>,
}

/// Events queued for the client before the run's sink drops them (the
/// run never waits for a slow client).
const QUEUE: usize = 1024;

/// Run `program` for `session` (its slot already held), answering with the
/// run's result.
pub(crate) async fn run(
    door: &Arc<Door>,
    session: &Session,
    ids: &Ids<'_>,
    tool: &str,
    program: Program,
    client: Client,
    client_cancel: CancellationToken,
) -> CallToolResult {
    let shape = program.shape;
    let run = match execute(
        door,
        session,
        ids,
        tool,
        program,
        client,
        client_cancel.clone(),
    )
    .await
    {
        Ok(run) => run,
        Err(turned_away) => return turned_away,
    };
    if let Some(shape) = shape {
        return reply::script(&run, ids, shape);
    }
    let mut answer = reply::run(&run, ids);
    reply::labels(&mut answer, session.caps.flow(), &run.report.labels);
    let written = files::written(&run.audit);
    files::attach(
        &mut answer,
        &written,
        (door, session, ids, tool),
        client_cancel,
    )
    .await;
    answer
}

/// Run `program` for `session` (its slot already held) and put the call
/// on record: the run, or the answer that turned it away.
pub(crate) async fn execute(
    door: &Arc<Door>,
    session: &Session,
    ids: &Ids<'_>,
    tool: &str,
    program: Program,
    client: Client,
    client_cancel: CancellationToken,
) -> Result<WasmRun, CallToolResult> {
    let caps = session.caps.clone();
    let mut tools = registry(&caps);
    let asked = &session.asked;
    catalog::client_tools(&door.catalog.client_tools, &mut tools, &client.peer, asked);
    let mut services = session.services().tools(tools);
    if let Some(a) = approve::approver(&caps, &client.peer) {
        services = services.approver(a);
    }
    let mut opts = RunOptions::new(caps.clone())
        .program_name(program.name.clone())
        .args(program.args)
        .stdin(program.stdin)
        .labels(session.labels_with(&program.labels))
        .services(services);
    if let Some((lang, source)) = &program.source {
        // A catalog script's traceback names its tool.
        let file = match program.shape {
            Some(_) => format!("{}.py", program.name),
            None => lang.snippet().into(),
        };
        let set = match (lang, &door.python, &door.js, &door.data) {
            (Lang::Python, Some(python), _, _) => python.source_options(source, &file, opts),
            (Lang::JavaScript, _, Some(js), _) => js.source_options(source, &file, opts),
            (Lang::Data, _, _, Some(data)) => data.source_options(source, &file, opts),
            _ => return Err(door.turn_away(ids, tool, "refused", "no runner for this language")),
        };
        opts = set.map_err(|e| door.turn_away(ids, tool, "refused", &e.to_string()))?;
    }
    let (cancel, _watch) = door.cancel_switch(client_cancel);
    opts = opts.cancel(cancel);
    let mut forwarder = None;
    if client.progress.is_some() || client.log.is_some() {
        let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE);
        opts = opts.events(EventSink::new(tx));
        forwarder = Some(forward(rx, client));
    }
    let result = door.host.run_prepared_async(&program.agent, opts).await;
    if let Some(f) = forwarder {
        // Every chunk and denial is sent before the result.
        let _ = tokio::task::spawn_blocking(move || f.join()).await;
    }
    let run = result.map_err(|e| door.turn_away(ids, tool, "refused", &e.to_string()))?;
    door.finish_call(session, ids, tool, &run.report, &run.audit);
    door.count_ran();
    Ok(run)
}

/// Send each event to the client as progress notifications and log
/// messages, from a thread of its own (the run's sink is a blocking
/// channel), until the run drops its sink. A client that is gone is not
/// sent more; the channel is drained so the run never notices.
fn forward(rx: std::sync::mpsc::Receiver<Event>, to: Client) -> std::thread::JoinHandle<()> {
    let handle = tokio::runtime::Handle::current();
    std::thread::spawn(move || {
        let mut n = 0u64;
        for event in rx {
            if let Some(token) = &to.progress {
                for message in events::messages(&event) {
                    n += 1;
                    let mut param = ProgressNotificationParam::new(token.clone(), n as f64);
                    param.message = Some(message.to_string());
                    let _ = handle.block_on(to.peer.notify_progress(param));
                }
            }
            if let Some(log) = &to.log {
                log.send(&handle, &event);
            }
        }
    })
}
