//! `run_python` and `run_wasm`: a whole program under the grant, in a run
//! slot, its output and denials streamed as progress notifications when
//! the client asked for progress (and its stderr and denials as log
//! messages when the client set a log level), cancelled by the client's
//! cancellation or by shutdown.

use super::door::Door;
use super::reply::{self, Ids};
use super::session::Session;
use super::{events, files, logging};
use crate::common::registry;
use rmcp::model::{CallToolResult, ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RoleServer};
use sbx_wasm::events::{Event, EventSink};
use sbx_wasm::wasm::{PreparedAgent, RunOptions};

use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// What a program call asks for.
pub(crate) struct Program {
    pub(crate) agent: PreparedAgent,
    /// `python` or the component's file name.
    pub(crate) name: String,
    pub(crate) args: Vec<String>,
    pub(crate) stdin: Vec<u8>,
    /// For `run_python`: the source, handed to the runner as its script.
    pub(crate) source: Option<String>,
}

/// Where progress goes, when the client asked for it.
pub(crate) struct Progress {
    pub(crate) peer: Peer<RoleServer>,
    pub(crate) token: ProgressToken,
}

/// Who hears of a run's events as they happen.
pub(crate) struct Listeners {
    pub(crate) progress: Option<Progress>,
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
    listeners: Listeners,
    client_cancel: CancellationToken,
) -> CallToolResult {
    let caps = session.caps.clone();
    let mut opts = RunOptions::new(caps.clone())
        .program_name(program.name.clone())
        .args(program.args)
        .stdin(program.stdin)
        .services(session.services().tools(registry(&caps)));
    if let (Some(source), Some(python)) = (&program.source, &door.python) {
        opts = match python.source_options(source, "snippet.py", opts) {
            Ok(o) => o,
            Err(e) => return door.turn_away(ids, tool, "refused", &e.to_string()),
        };
    }
    let cancel_files = client_cancel.clone();
    let (cancel, _watch) = door.cancel_switch(client_cancel);
    opts = opts.cancel(cancel);
    let mut forwarder = None;
    if listeners.progress.is_some() || listeners.log.is_some() {
        let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE);
        opts = opts.events(EventSink::new(tx));
        forwarder = Some(forward(rx, listeners));
    }
    let result = door.host.run_prepared_async(&program.agent, opts).await;
    if let Some(f) = forwarder {
        // Every chunk and denial is sent before the result.
        let _ = tokio::task::spawn_blocking(move || f.join()).await;
    }
    match result {
        Ok(run) => {
            door.finish_call(session, ids, tool, &run.report, &run.audit);
            door.count_ran();
            let mut answer = reply::run(&run, ids);
            let written = files::written(&run.audit);
            files::attach(
                &mut answer,
                &written,
                (door, session, ids, tool),
                cancel_files,
            )
            .await;
            answer
        }
        Err(e) => door.turn_away(ids, tool, "refused", &e.to_string()),
    }
}

/// Send each event to the client as progress notifications and log
/// messages, from a thread of its own (the run's sink is a blocking
/// channel), until the run drops its sink. A client that is gone is not
/// sent more; the channel is drained so the run never notices.
fn forward(rx: std::sync::mpsc::Receiver<Event>, to: Listeners) -> std::thread::JoinHandle<()> {
    let handle = tokio::runtime::Handle::current();
    std::thread::spawn(move || {
        let mut n = 0u64;
        for event in rx {
            if let Some(p) = &to.progress {
                for message in events::messages(&event) {
                    n += 1;
                    let mut param = ProgressNotificationParam::new(p.token.clone(), n as f64);
                    param.message = Some(message.to_string());
                    let _ = handle.block_on(p.peer.notify_progress(param));
                }
            }
            if let Some(log) = &to.log {
                log.send(&handle, &event);
            }
        }
    })
}
