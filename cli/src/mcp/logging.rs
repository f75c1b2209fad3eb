//! Log messages (`logging/setLevel`, `notifications/message`): a run's
//! guest stderr and denials, for a client that set a level (or, in the
//! sessionless revision, named one in its request's `_meta`).
//!
//! MCP logging is deprecated from revision 2026-07-28 (SEP-2577, so rmcp
//! marks it deprecated) but is part of 2025-06-18 and 2025-11-25, which
//! this door serves; the deprecation is allowed here, in one place.
#![allow(deprecated)]

pub(crate) use rmcp::model::SetLevelRequestParams;
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam, RequestMetaObject};
use rmcp::service::{Peer, RoleServer};
use sbx_wasm::events::Event;
use std::sync::{Arc, Mutex};

/// The least severe log message a client wants: none until it sets a
/// level (shared by the clones of one session's handler).
#[derive(Clone, Default)]
pub(crate) struct Level(Arc<Mutex<Option<LoggingLevel>>>);

impl Level {
    pub(crate) fn set(&self, request: &SetLevelRequestParams) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(request.level);
    }

    /// Where a run's log messages go, if the client asked for them: the
    /// level its request's `_meta` names (`io.modelcontextprotocol/logLevel`,
    /// the 2026-07-28 opt-in, for that request alone), else the session's
    /// (`logging/setLevel`).
    pub(crate) fn log(&self, peer: &Peer<RoleServer>, meta: &RequestMetaObject) -> Option<Log> {
        let set = *self.0.lock().unwrap_or_else(|p| p.into_inner());
        let level = meta.log_level().or(set)?;
        Some(Log {
            peer: peer.clone(),
            level,
        })
    }
}

/// Where log messages go, when the client set a level (`logging/setLevel`):
/// guest stderr at `info` (logger `stderr`), each denial at `warning`
/// (logger `sbx`), those at or above `level`.
pub(crate) struct Log {
    peer: Peer<RoleServer>,
    level: LoggingLevel,
}

impl Log {
    /// Send `event`'s log messages (none if it has none at the level).
    pub(crate) fn send(&self, handle: &tokio::runtime::Handle, event: &Event) {
        for param in log_messages(event, self.level) {
            let _ = handle.block_on(self.peer.notify_logging_message(param));
        }
    }
}

/// The server's capabilities: tools, prompts (with completions of their
/// arguments), resources (with subscriptions), logging (here, where its
/// deprecation is allowed) and the tasks extension.
pub(crate) fn capabilities() -> rmcp::model::ServerCapabilities {
    rmcp::model::ServerCapabilities::builder()
        .enable_tools()
        .enable_prompts()
        .enable_resources()
        .enable_resources_subscribe()
        .enable_logging()
        .enable_completions()
        .enable_tasks()
        .build()
}

/// The order of the log levels, least severe first.
fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// An event as log messages at or above `least`: stderr text (in 16 KiB
/// pieces) at `info`, a denial at `warning`; nothing else is logged.
fn log_messages(event: &Event, least: LoggingLevel) -> Vec<LoggingMessageNotificationParam> {
    let (level, logger) = match event {
        Event::Stderr(_) => (LoggingLevel::Info, "stderr"),
        Event::Decision(d) if d.decision != sbx_wasm::Decision::Allowed => {
            (LoggingLevel::Warning, "sbx")
        }
        _ => return Vec::new(),
    };
    if severity(level) < severity(least) {
        return Vec::new();
    }
    (super::events::messages(event).into_iter())
        .filter_map(|m| m.as_object()?.values().next().cloned())
        .map(|data| LoggingMessageNotificationParam::new(level, data).with_logger(logger))
        .collect()
}
