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
    /// An allowed op's effect is starting (a fetch, a tool call, a file
    /// op through the gate): a UI can show it in flight until the op's
    /// `Decision` with the same `seq` says how it ended.
    Started {
        /// The op's sequence number in the run.
        seq: u64,
        /// The op (`net_fetch`, `tool_call`, ...).
        op: crate::OpName,
        /// What it is aimed at (bounded, as in the audit log).
        target: String,
    },
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
    sender: Tx,
    dropped: Arc<AtomicU64>,
    /// Send guest output as whole lines ([`EventSink::lines`]).
    lines: bool,
}

/// The channel events go into.
#[derive(Clone, Debug)]
enum Tx {
    Std(SyncSender<Event>),
    /// A tokio channel, for async callers: no `spawn_blocking` to read it.
    #[cfg(feature = "wasm")]
    Tokio(tokio::sync::mpsc::Sender<Event>),
}

impl EventSink {
    /// Events go to `sender`; make it with `std::sync::mpsc::sync_channel(n)`
    /// (a larger `n` drops fewer events from a chatty guest).
    pub fn new(sender: SyncSender<Event>) -> Self {
        EventSink {
            sender: Tx::Std(sender),
            dropped: Arc::new(AtomicU64::new(0)),
            lines: false,
        }
    }

    /// Events go to a tokio channel of `capacity`: read them from the
    /// receiver in async code (`recv().await`, or wrap it as a `Stream`).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// use sbx_wasm::events::EventSink;
    ///
    /// let (sink, mut events) = EventSink::channel(1024);
    /// // Give `sink` to a run (`RunOptions::events`); then, in a task:
    /// drop(sink);
    /// while let Some(event) = events.recv().await {
    ///     println!("{event:?}");
    /// }
    /// # });
    /// ```
    #[cfg(feature = "wasm")]
    pub fn channel(capacity: usize) -> (EventSink, tokio::sync::mpsc::Receiver<Event>) {
        let (tx, rx) = tokio::sync::mpsc::channel(capacity.max(1));
        let sink = EventSink {
            sender: Tx::Tokio(tx),
            dropped: Arc::new(AtomicU64::new(0)),
            lines: false,
        };
        (sink, rx)
    }

    /// Send the guest's stdout and stderr as whole lines: a write is held
    /// until its newline comes (or until 64 KiB are held), and what is
    /// left is sent when the run ends. Default: each write as it comes
    /// (`print("tick", 0)` may be several events).
    pub fn lines(mut self) -> Self {
        self.lines = true;
        self
    }

    /// Whether output goes as whole lines.
    #[cfg_attr(not(feature = "wasm"), allow(dead_code))]
    pub(crate) fn wants_lines(&self) -> bool {
        self.lines
    }

    /// Send `event` unless the channel is full: never waits.
    pub(crate) fn send(&self, event: Event) {
        let sent = match &self.sender {
            Tx::Std(s) => match s.try_send(event) {
                Ok(()) => true,
                Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => false,
            },
            #[cfg(feature = "wasm")]
            Tx::Tokio(s) => s.try_send(event).is_ok(),
        };
        if !sent {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Events dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}
