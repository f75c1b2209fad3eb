//! Events as they happen: guest output chunks and each gate decision, for
//! a UI or a streaming protocol. Opt-in, bounded, and never blocking the
//! run: events go into a bounded channel the caller made; when it is full
//! the event is dropped and counted, and the report's notes say how many.

use crate::report::AuditEvent;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};

/// One thing that happened during a run, in the order it happened.
// Decisions are most of the events: boxing one would add an allocation to
// each to save the bytes of the few output chunks.
#[allow(clippy::large_enum_variant)]
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// Bytes the guest wrote to stdout (after the output budget).
    Stdout(Vec<u8>),
    /// Bytes the guest wrote to stderr (after the output budget).
    Stderr(Vec<u8>),
    /// A gate decision, as the audit log records it.
    Decision(AuditEvent),
}

/// Where a run sends its [`Event`]s: a bounded channel, and the count of
/// events dropped because it was full (or its receiver gone).
///
/// # Examples
///
/// ```
/// use sbx_wasm::events::{Event, EventSink};
///
/// let (tx, rx) = std::sync::mpsc::sync_channel(1024);
/// let sink = EventSink::new(tx);
/// # let _ = (sink, rx);
/// // Give `sink` to a run (`RunOptions::events`, `SandboxBuilder::events`),
/// // read `rx` on another thread or task.
/// ```
#[derive(Clone, Debug)]
pub struct EventSink {
    sender: SyncSender<Event>,
    dropped: Arc<AtomicU64>,
}

impl EventSink {
    /// Events go to `sender`; make it with `std::sync::mpsc::sync_channel(n)`
    /// (a larger `n` drops fewer events from a chatty guest).
    pub fn new(sender: SyncSender<Event>) -> Self {
        EventSink {
            sender,
            dropped: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Send `event` unless the channel is full: never waits.
    pub(crate) fn send(&self, event: Event) {
        match self.sender.try_send(event) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Events dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}
